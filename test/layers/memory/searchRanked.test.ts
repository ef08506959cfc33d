/**
 * Search that answers questions (issue 11), over real SQLite files: a question finds the message
 * that answers it; ASCII glued to Chinese is found; short CJK terms are index lookups (a row whose
 * index entry is gone is not found, so nothing scans the table); summary hits name the messages they
 * cover and message hits come with their neighbours; role:, tool: and NOT filter; rows queued for the
 * index before the store started are indexed when it starts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { SearchScope } from "../../../src/domain/memory/types.ts"
import type { NewMessage } from "../../../src/domain/message.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as MemoryTool from "../../../src/layers/tools/memory.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { Explorer } from "../../../src/services/Explorer.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { lcmOn, sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"
import { chat, lcmWith, T0 } from "../../support/memory.ts"

const KEY = "a1:cli:caroline:main"
const session: SearchScope = { _tag: "Session", sessionKey: KEY }

const say = (texts: ReadonlyArray<string>, from = 0): Array<NewMessage> =>
  texts.map((content, i) => ({ role: (from + i) % 2 === 0 ? "user" : "assistant", content, createdAt: T0 + (from + i) * 60_000 }))

const put = (key: string, messages: ReadonlyArray<NewMessage>) =>
  Effect.flatMap(MemoryProvider, (memory) => memory.append(sessionRefFromKey(key), messages))

const FILLER = [
  "Good morning! Did you sleep well?",
  "I slept fine, thanks. The weather looks nice today.",
  "Can you help me plan the groceries for the week?",
  "Sure: vegetables, rice, eggs, and some fruit for the kids.",
  "My sister called about the family dinner on Sunday.",
  "That sounds lovely, will you cook or order in?"
]

for (const db of testDatabases(sqliteTemp)) {
const lcmTemp = lcmOn(db.layer)

describe(`ranked search answers questions (${db.name})`, () => {
  it.effect("a question finds the message that answers it; strict still wants every word", () =>
    Effect.gen(function*() {
      yield* put(KEY, say([...FILLER, "I went to a LGBTQ support group yesterday. It was so powerful.", "That's great, how did it feel?", ...FILLER], 0))
      const searcher = yield* Searcher
      const question = "When did Caroline go to the LGBTQ support group?"
      const hits = yield* searcher.search(question, { scope: session })
      assert.include(hits[0]?.snippet ?? "", "«LGBTQ» «support» «group» yesterday")
      assert.deepStrictEqual(hits[0]?.matched, ["LGBTQ", "support", "group"])
      assert.strictEqual(hits[0]?.role, "user")
      assert.strictEqual(hits[0]?.seq, 7)
      // every word required: nothing, as before
      assert.deepStrictEqual(yield* searcher.search(question, { scope: session, mode: "strict" }), [])
      assert.strictEqual((yield* searcher.search("Caroline support group", { scope: session, mode: "strict" })).length, 0)
      assert.strictEqual((yield* searcher.search("LGBTQ support group", { scope: session, mode: "strict" })).length, 1)
      // the memory tool uses the same engine
      const tool = yield* MemoryTool.make
      const out = yield* tool.execute({ action: "search", query: question }, { sessionKey: KEY, userId: "caroline", agentId: "a1" })
      assert.match(out.split("\n")[0] ?? "", /^msg_\d+ \[message, .*«LGBTQ» «support» «group» yesterday/)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("ranks documents with more of the query, phrases and nearby words higher; recency breaks ties", () =>
    Effect.gen(function*() {
      yield* put(KEY, say([
        "the deploy failed again",
        "staging database migration notes",
        "we moved the staging database to a new host; the migration ran overnight",
        "database database database database",
        "the migration of the staging area, then the database",
        "the deploy failed again"
      ]))
      const searcher = yield* Searcher
      const hits = yield* searcher.search("staging database migration", { scope: session })
      // all three words close together first, then all three apart, then fewer words
      assert.deepStrictEqual(hits.slice(0, 3).map((h) => h.seq), [2, 3, 5])
      assert.deepStrictEqual(hits.slice(0, 3).map((h) => h.matched.length), [3, 3, 3])
      assert.strictEqual(hits[3]?.seq, 4)
      // identical texts: the newer first
      const same = yield* searcher.search("deploy failed", { scope: session, neighbours: false })
      assert.deepStrictEqual(same.map((h) => h.seq), [6, 1])
      // a quoted phrase ranks the exact sequence first
      const phrase = yield* searcher.search(`"staging database" host`, { scope: session })
      assert.strictEqual(phrase[0]?.seq, 3)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("finds ASCII glued to Chinese (40 planted facts, both modes), and Chinese in mixed queries", () =>
    Effect.gen(function*() {
      const templates = [
        (id: string) => `记住${id}备份存储桶是 s3://backup-${id.toLowerCase()}。`,
        (id: string) => `${id}：服务器的端口是${id.slice(5)}，别忘了。`,
        (id: string) => `请记住 ${id} 是数据库的密码`,
        (id: string) => `我们的会议编号是${id}，明天上午十点。`,
        (id: string) => `Remember ${id} for the 测试环境 deploy.`
      ]
      const ids = Array.from({ length: 40 }, (_, i) => `FACT-${9600 + i * 7}`)
      yield* put(KEY, say([...FILLER, ...ids.map((id, i) => (templates[i % templates.length] ?? String)(id)), ...FILLER]))
      const searcher = yield* Searcher
      for (const id of ids) {
        for (const mode of ["ranked", "strict"] as const) {
          const hits = yield* searcher.search(id, { scope: session, mode })
          assert.strictEqual(hits.length, 1, `${id} (${mode})`)
          assert.include(hits[0]?.snippet ?? "", `«${id}»`, `${id} (${mode})`)
        }
      }
      // the example, as a mixed query
      const mixed = yield* searcher.search("FACT-9600 备份存储桶", { scope: session })
      assert.include(mixed[0]?.snippet ?? "", "记住«FACT-9600备份存储桶»是")
      assert.strictEqual((yield* searcher.search("记住FACT-9600备份", { scope: session, mode: "strict" })).length, 1)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("looks short CJK terms up in the index, at scale and in scope All", () =>
    Effect.gen(function*() {
      const words = ["配置", "服务器", "数据库", "日志", "端口", "缓存", "测试", "部署"]
      for (let s = 0; s < 4; s++) {
        yield* put(
          `a1:cli:u${s}:main`,
          say(Array.from({ length: 600 }, (_, i) => `第${i}条：${words[i % words.length]}和${words[(i * 3 + s) % words.length]}的问题`))
        )
      }
      const searcher = yield* Searcher
      const sql = yield* SqlClient.SqlClient
      const all: SearchScope = { _tag: "All" }
      const hits = yield* searcher.search("配置", { scope: all, limit: 100 })
      assert.strictEqual(hits.length, 100)
      for (const h of hits) assert.include(h.snippet, "«配置»")
      assert.strictEqual((yield* searcher.search("志", { scope: all, limit: 5 })).length, 5)
      // Found through the index only: a row taken out of it is not found any more (no table scan).
      const target = hits[0]
      const rowid = Number(target?.id.slice(4))
      // (FTS5 names the row by rowid, PostgreSQL's table by id.)
      yield* sql`DELETE FROM ctx_messages_search WHERE ${sql.literal(db.name === "SQLite" ? "rowid" : "id")} = ${rowid}`
      const again = yield* searcher.search("配置", { scope: all, limit: 100 })
      assert.notInclude(again.map((h) => h.id), target?.id)
      // and verify notices the missing entry
      const problems = yield* (yield* MemoryStore).integrityCheck
      assert.isTrue(problems.some((p) => p.includes("ctx_messages_search")), problems.join("\n"))
    }).pipe(Effect.provide(lcmTemp)))
})

describe(`hits that lead on (${db.name})`, () => {
  it.effect("a summary hit names the messages it covers; expand is one step away", () =>
    Effect.gen(function*() {
      yield* put(KEY, chat(200))
      yield* (yield* Compactor).compact(KEY, { full: true })
      const searcher = yield* Searcher
      const explorer = yield* Explorer
      // only the deterministic summaries say "Expand for details about"
      const hits = yield* searcher.search("expand details", { scope: session, limit: 20 })
      const summaries = hits.filter((h) => h.kind === "summary")
      assert.isAbove(summaries.length, 0)
      for (const h of summaries) {
        const d = yield* explorer.describe(h.id)
        assert.deepStrictEqual(h.covers, {
          firstSeq: d.sourceRange.firstSeq,
          lastSeq: d.sourceRange.lastSeq,
          earliestAt: d.earliestAt,
          latestAt: d.latestAt
        })
        assert.strictEqual(h.seq, undefined)
      }
    }).pipe(Effect.provide(lcmWith({ config: { chunkTokens: 600 }, database: db.layer }))))

  it.effect("a message hit comes with its neighbours when asked (context), in order, within its session", () =>
    Effect.gen(function*() {
      yield* put(KEY, say(["What is the wifi password at the cabin?", "It is on the fridge: tangerine-42.", "Thanks!", "Anything else?"]))
      yield* put("a1:cli:caroline:other", say(["the cabin again"]))
      const searcher = yield* Searcher
      const [hit] = yield* searcher.search("cabin wifi", { scope: session, context: 1 })
      assert.strictEqual(hit?.seq, 1)
      assert.deepStrictEqual(hit?.context?.map((m) => [m.seq, m.role, m.text]), [[2, "assistant", "It is on the fridge: tangerine-42."]])
      assert.match(hit?.context?.[0]?.id ?? "", /^msg_\d+$/)
      const [wide] = yield* searcher.search("fridge", { scope: session, context: 5 })
      assert.deepStrictEqual(wide?.context?.map((m) => m.seq), [1, 3, 4])
      // no context unless asked
      assert.strictEqual((yield* searcher.search("fridge", { scope: session }))[0]?.context, undefined)
      // the tool shows the answer after the question
      const tool = yield* MemoryTool.make
      const out = yield* tool.execute({ action: "search", query: "cabin wifi password", context: 1 }, { sessionKey: KEY, userId: "", agentId: "a1" })
      assert.match(out, /^msg_\d+ \[message, .*\n {2}after: msg_\d+ \[assistant\] It is on the fridge: tangerine-42\.\n/)
      // the answer is a hit too, found through the question before it (issue 25), and says so
      assert.match(out, /\nmsg_\d+ \[message, [^\]]*, by the turns around it\] It is on the fridge: tangerine-42\.\n/)
    }).pipe(Effect.provide(lcmTemp)))
})

describe(`filters (${db.name})`, () => {
  it.effect("role:, tool:, kind: and NOT", () =>
    Effect.gen(function*() {
      const messages: Array<NewMessage> = [
        { role: "user", content: "restart the docker container please", createdAt: T0 },
        {
          role: "assistant",
          content: [{ type: "text", text: "Restarting docker." }, { type: "tool_use", id: "t1", name: "bash", input: { command: "docker restart web" } }],
          createdAt: T0 + 1
        },
        { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: "web (docker)" }], createdAt: T0 + 2 },
        { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "read", input: { path: "docker-compose.yml" } }], createdAt: T0 + 3 },
        { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t2", content: "services: docker web" }], createdAt: T0 + 4 },
        { role: "assistant", content: "Docker is running again.", createdAt: T0 + 5 }
      ]
      yield* put(KEY, messages)
      const searcher = yield* Searcher
      const seqs = (q: string, mode: "ranked" | "strict" = "ranked") =>
        Effect.map(searcher.search(q, { scope: session, mode }), (hits) => hits.map((h) => h.seq).sort())
      assert.deepStrictEqual(yield* seqs("docker tool:bash"), [2, 3])
      assert.deepStrictEqual(yield* seqs("docker tool:read"), [4, 5])
      assert.deepStrictEqual(yield* seqs("docker role:assistant"), [2, 4, 6])
      assert.deepStrictEqual(yield* seqs("docker role:tool_result NOT tool:bash", "strict"), [5])
      assert.deepStrictEqual(yield* seqs("docker NOT restart"), [3, 4, 5, 6])
      // filters only: the newest rows that pass them
      const listed = yield* searcher.search("role:user", { scope: session })
      assert.deepStrictEqual(listed.map((h) => [h.seq, h.score]), [[1, 0]])
      assert.deepStrictEqual(yield* seqs("kind:summary docker"), [])
      assert.deepStrictEqual(yield* seqs("role:nobody docker"), [])
    }).pipe(Effect.provide(lcmTemp)))
})

describe(`the index queue (${db.name})`, () => {
  it.effect("deleting a session takes its messages and summaries out of the index", () =>
    Effect.gen(function*() {
      yield* put(KEY, [...chat(60), ...say(["配置文件在这里", "kiwi 猕猴桃"], 60)])
      yield* put("a1:cli:other:main", say(["kiwi 猕猴桃 too"]))
      yield* (yield* Compactor).compact(KEY, { full: true })
      const store = yield* MemoryStore
      const searcher = yield* Searcher
      const sql = yield* SqlClient.SqlClient
      const all: SearchScope = { _tag: "All" }
      assert.isAbove((yield* searcher.search("topic", { scope: all })).length, 0)
      yield* store.deleteConversation(KEY)
      assert.deepStrictEqual(yield* store.integrityCheck, [])
      const [counts] = yield* sql<{ m: number; s: number }>`SELECT (SELECT count(*) FROM ctx_messages_search) AS m,
        (SELECT count(*) FROM ctx_summaries_search) AS s`
      assert.deepStrictEqual(counts, { m: 1, s: 0 })
      assert.deepStrictEqual(yield* searcher.search("topic", { scope: all }), [])
      assert.deepStrictEqual((yield* searcher.search("猕猴桃 kiwi", { scope: all })).map((h) => h.sessionKey), ["a1:cli:other:main"])
    }).pipe(Effect.provide(lcmWith({ config: { chunkTokens: 600 }, database: db.layer }))))

  it.effect("rows queued before the store started (migration, raw inserts) are indexed when it starts", () =>
    Effect.gen(function*() {
      const opened = yield* db.open
      // A CJK row written behind the store's back waits in the queue.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO ctx_conversations (id, session_key, user_id, created_at, updated_at) VALUES (1, ${KEY}, 'caroline', 0, 0)`
        yield* sql`INSERT INTO ctx_messages (conversation_id, seq, role, text, token_count, has_cjk, created_at)
          VALUES (1, 1, 'user', '备份在FACT-7777桶里', 5, 1, 0)`
        const queued = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_search_backlog`
        assert.strictEqual(queued[0]?.n, 1)
      }).pipe(Effect.provide(opened.layer))
      const memory = LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer), Layer.provideMerge(opened.layer))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const queued = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_search_backlog`
        assert.strictEqual(queued[0]?.n, 0)
        const hits = yield* (yield* Searcher).search("FACT-7777", { scope: { _tag: "User", userId: "caroline" } })
        assert.deepStrictEqual(hits.map((h) => h.snippet), ["备份在«FACT-7777»桶里"])
        assert.deepStrictEqual(yield* (yield* MemoryStore).integrityCheck, [])
      }).pipe(Effect.provide(memory))
    }))
})
}
