import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import { MAX_MESSAGE_BYTES } from "../../../src/domain/memory/types.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
import { estimateMessageTokens, type NewMessage } from "../../../src/domain/message.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { MemoryStore, type NewSummary } from "../../../src/services/MemoryStore.ts"
import { SessionManager } from "../../../src/services/SessionManager.ts"
import { lcmOn, sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const T0 = 1_700_000_000_000

/** Every content shape the message model allows. */
const ALL_SHAPES: ReadonlyArray<NewMessage> = [
  { role: "user", content: "plain string with ünïcödé, 中文 and 😀", createdAt: T0 },
  { role: "user", content: "", createdAt: T0 + 1 },
  { role: "user", content: [{ type: "text", text: "a text block" }, { type: "text", text: "" }], createdAt: T0 + 2 },
  {
    role: "user",
    content: [
      { type: "text", text: "look at these" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" } },
      { type: "image", source: { type: "url", url: "https://example.test/cat.jpg?size=large&x=1" } }
    ],
    createdAt: T0 + 3
  },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Running two tools." },
      {
        type: "tool_use",
        id: "toolu_01",
        name: "bash",
        input: { cmd: "ls -la", env: { A: "1", nested: { deep: [1, 2.5, -3, { x: null, y: true, z: "😀" }] } }, list: [] }
      },
      { type: "tool_use", id: "toolu_02", name: "noop", input: null },
      { type: "tool_use", id: "toolu_03", name: "scalar", input: "just a string" }
    ],
    createdAt: T0 + 4
  },
  {
    role: "tool_result",
    content: [
      { type: "tool_result", tool_use_id: "toolu_01", content: "total 0\ndrwxr-xr-x  2 root root" },
      {
        type: "tool_result",
        tool_use_id: "toolu_02",
        content: [
          { type: "text", text: "partial output" },
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } }
        ],
        is_error: true
      },
      { type: "tool_result", tool_use_id: "toolu_03", content: [], is_error: false }
    ],
    createdAt: T0 + 5
  },
  { role: "assistant", content: [], createdAt: T0 + 6 }
]

const leafSummary = (replaces: NewSummary["replaces"], over: Partial<NewSummary> = {}): NewSummary => ({
  kind: "leaf",
  depth: 0,
  mode: "normal",
  content: "summary of the start",
  sourceTokenCount: replaces.reduce((n, it) => n + it.tokens, 0),
  earliestAt: T0,
  latestAt: T0 + 100,
  firstSeq: 1,
  lastSeq: replaces.length,
  replaces,
  ...over
})

const texts = (n: number, from = 0): Array<NewMessage> =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: `message ${from + i}: some words to give it a size`,
    createdAt: T0 + (from + i) * 1000
  }))

for (const db of testDatabases(sqliteTemp)) {
  describe(`SqliteMemoryStore (${db.name})`, () => {
    it.effect("gives back every content shape exactly", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const sessions = yield* SessionManager
        const c = yield* store.ensureConversation(sessionRefFromKey("a1:cli:u1:shapes"))
        const seqs = yield* store.appendMessages(c.id, ALL_SHAPES)
        assert.deepStrictEqual(seqs, { firstSeq: 1, lastSeq: ALL_SHAPES.length })
        const history = yield* sessions.loadHistory("a1:cli:u1:shapes")
        assert.strictEqual(history.length, ALL_SHAPES.length)
        history.forEach((stored, i) => {
          const original = ALL_SHAPES[i]
          assert.isDefined(original)
          if (original === undefined) return
          assert.deepStrictEqual(stored.message, { role: original.role, content: original.content })
          assert.strictEqual(stored.role, original.role)
          assert.strictEqual(stored.seq, i + 1)
          assert.strictEqual(stored.createdAt, original.createdAt)
          assert.strictEqual(stored.tokens, estimateMessageTokens(original))
        })
        // byte-exact too: the same JSON as what went in
        assert.strictEqual(JSON.stringify(history.map((h) => h.message.content)), JSON.stringify(ALL_SHAPES.map((m) => m.content)))
        const byIds = yield* store.messagesByIds(history.map((h) => h.id).reverse())
        assert.deepStrictEqual(byIds, history)
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("a string or a block holding U+0000 comes back exactly (PostgreSQL's text cannot hold it)", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(sessionRefFromKey("a:cli:u:nul"))
        const shapes: ReadonlyArray<NewMessage> = [
          { role: "user", content: "before\u0000after", createdAt: T0 },
          { role: "assistant", content: [{ type: "text", text: "a\u0000b" }], createdAt: T0 + 1 },
          { role: "user", content: "\u0000", createdAt: T0 + 2 }
        ]
        yield* store.appendMessages(c.id, shapes)
        const back = yield* store.messagesBySeq(c.id, 1, 10)
        assert.deepStrictEqual(back.map((m) => m.message.content), shapes.map((m) => m.content))
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("refuses an oversized message and stores nothing of its batch", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(sessionRefFromKey("a1:cli:u1:big"))
        const huge = "x".repeat(MAX_MESSAGE_BYTES + 1)
        const error = yield* store.appendMessages(c.id, [...texts(2), { role: "user", content: huge }]).pipe(Effect.flip)
        assert.strictEqual(error._tag, "InvalidInput")
        assert.include(error.message, "message 3")
        assert.include(error.message, "MiB")
        const blocks = yield* store.appendMessages(c.id, [{ role: "user", content: [{ type: "text", text: huge }] }]).pipe(
          Effect.flip
        )
        assert.strictEqual(blocks._tag, "InvalidInput")
        const stats = yield* store.stats(c.id)
        assert.strictEqual(stats.messages, 0)
        assert.strictEqual(stats.contextItems, 0)
        // the limit is in UTF-8 bytes: 3 Mi CJK characters are 9 MiB
        const cjk = yield* store.appendMessages(c.id, [{ role: "user", content: "记".repeat(3 * 1024 * 1024) }]).pipe(
          Effect.flip
        )
        assert.strictEqual(cjk._tag, "InvalidInput")
        assert.include(cjk.message, "9.0 MiB")
        assert.strictEqual((yield* store.stats(c.id)).messages, 0)
        // a message just under the limit is accepted, as a string or as a text block
        const ok = yield* store.appendMessages(c.id, [{ role: "user", content: "y".repeat(MAX_MESSAGE_BYTES - 16) }])
        assert.deepStrictEqual(ok, { firstSeq: 1, lastSeq: 1 })
        const block = yield* store.appendMessages(c.id, [{
          role: "user",
          content: [{ type: "text", text: "z".repeat(MAX_MESSAGE_BYTES - 64) }]
        }])
        assert.deepStrictEqual(block, { firstSeq: 2, lastSeq: 2 })
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("refuses an invalid timestamp", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(sessionRefFromKey("a1:cli:u1:time"))
        const error = yield* store.appendMessages(c.id, [{ role: "user", content: "x", createdAt: Number.NaN }]).pipe(Effect.flip)
        assert.strictEqual(error._tag, "InvalidInput")
        assert.strictEqual((yield* store.stats(c.id)).messages, 0)
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("appends consecutive seqs across calls and marks tool results as continuing the unit", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(sessionRefFromKey("a1:cli:u1:seq"))
        assert.deepStrictEqual(yield* store.appendMessages(c.id, []), { firstSeq: 0, lastSeq: 0 })
        assert.deepStrictEqual(yield* store.appendMessages(c.id, texts(3)), { firstSeq: 1, lastSeq: 3 })
        yield* store.appendMessages(c.id, [
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "x", input: {} }] }
        ])
        // the tool result arrives in a later call: it still continues the assistant's unit
        yield* store.appendMessages(c.id, [
          { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: "r" }] },
          { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: "r2" }] },
          { role: "user", content: "thanks" }
        ])
        const items = yield* store.items(c.id)
        assert.deepStrictEqual(items.map((it) => it.position), [1, 2, 3, 4, 5, 6, 7])
        assert.deepStrictEqual(items.map((it) => it.continuesUnit), [false, false, false, false, true, true, false])
        assert.isTrue(items.every((it) => it.kind === "message" && it.depth === -1))
        const metas = yield* store.messageMetas(c.id)
        assert.deepStrictEqual(metas, items)
        const page = yield* store.messagesBySeq(c.id, 3, 2)
        assert.deepStrictEqual(page.map((m) => m.seq), [3, 4])
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("commitSummary replaces the planned items atomically", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(sessionRefFromKey("a1:cli:u1:commit"))
        yield* store.appendMessages(c.id, texts(12))
        const items = yield* store.items(c.id)
        const plan = items.slice(0, 10)
        const { summaryId, itemTokens } = yield* store.commitSummary(
          c.id,
          leafSummary(plan, { latestAt: T0 + 9000 }),
          () => 77
        )
        assert.strictEqual(itemTokens, 77)
        const after = yield* store.items(c.id)
        assert.strictEqual(after.length, 3)
        assert.deepStrictEqual(after[0], { position: 1, kind: "summary", refId: summaryId, tokens: 77, continuesUnit: false, depth: 0 })
        const links = yield* store.summaryLinks(summaryId)
        assert.deepStrictEqual(links.sourceMessages, plan.map((it) => it.refId))
        assert.deepStrictEqual(links.parents, [])
        assert.isTrue(links.live)
        const problems = verifySession(yield* store.verifyInput(c.id, "a1:cli:u1:commit"))
        assert.deepStrictEqual(problems, [])
        assert.deepStrictEqual(yield* store.integrityCheck, [])
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("commitSummary with a stale plan fails with StaleContext and changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const sql = yield* SqlClient.SqlClient
        const c = yield* store.ensureConversation(sessionRefFromKey("a1:cli:u1:stale"))
        yield* store.appendMessages(c.id, texts(12))
        const plan = (yield* store.items(c.id)).slice(0, 10)
        yield* store.commitSummary(c.id, leafSummary(plan), () => 10)
        const itemsBefore = yield* store.items(c.id)
        const countRows = Effect.gen(function*() {
          const [s] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_summaries`
          const [l] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_summary_messages`
          return { summaries: s?.n, links: l?.n }
        })
        const rowsBefore = yield* countRows
        // the same plan again: its items are no longer live
        const again = yield* store.commitSummary(c.id, leafSummary(plan), () => 10).pipe(Effect.flip)
        assert.strictEqual(again._tag, "StaleContext")
        // a plan whose positions exist but hold other rows
        const wrongRef = (yield* store.items(c.id)).slice(1, 3).map((it) => ({ ...it, refId: it.refId + 1000 }))
        const mismatch = yield* store.commitSummary(c.id, leafSummary(wrongRef), () => 10).pipe(Effect.flip)
        assert.strictEqual(mismatch._tag, "StaleContext")
        // a plan with a missing position
        const gap = (yield* store.items(c.id)).filter((_, i) => i !== 1).slice(0, 2)
        const gapped = yield* store.commitSummary(c.id, leafSummary(gap), () => 10).pipe(Effect.flip)
        assert.strictEqual(gapped._tag, "StaleContext")
        assert.deepStrictEqual(yield* store.items(c.id), itemsBefore)
        assert.deepStrictEqual(yield* countRows, rowsBefore)
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("maps a session to one conversation, cached and shared across store instances", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const sql = yield* SqlClient.SqlClient
        const ref = sessionRefFromKey("agent1:telegram:user9:chat")
        assert.deepStrictEqual(ref, { key: "agent1:telegram:user9:chat", agentId: "agent1", userId: "user9" })
        assert.isTrue(Option.isNone(yield* store.findConversation(ref.key)))
        const missing = yield* store.getConversation(ref.key).pipe(Effect.flip)
        assert.strictEqual(missing._tag, "SessionNotFound")
        const a = yield* store.ensureConversation(ref)
        const b = yield* store.ensureConversation(ref)
        assert.strictEqual(a.id, b.id)
        assert.strictEqual(a.agentId, "agent1")
        assert.strictEqual(a.userId, "user9")
        const [rows] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_conversations WHERE session_key = ${ref.key}`
        assert.strictEqual(rows?.n, 1)
        // another store (another process, in effect) on the same database sees the same id
        const other = yield* SqliteMemoryStore.make
        assert.strictEqual((yield* other.ensureConversation(ref)).id, a.id)
        assert.strictEqual((yield* other.getConversation(ref.key)).id, a.id)
        // info written through one store is read afresh by loadConversation in the other
        yield* store.saveInfo(a.id, { title: "hello" })
        assert.deepStrictEqual((yield* other.loadConversation(ref.key)).info, { title: "hello" })
        // concurrent ensures of a new session create one row
        const ids = yield* Effect.all(
          Array.from({ length: 10 }, () => other.ensureConversation(sessionRefFromKey("x:y:z:new"))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(new Set(ids.map((c) => c.id)).size, 1)
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("lists conversations filtered by agent and user, with limit and message counts", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const make = (key: string, n: number) =>
          Effect.flatMap(store.ensureConversation(sessionRefFromKey(key)), (c) => store.appendMessages(c.id, texts(n)))
        yield* make("a1:cli:u1:one", 3)
        yield* make("a1:cli:u2:two", 1)
        yield* make("a2:cli:u1:three", 0)
        yield* make("a2:tg:u1:four", 5)
        const keys = (cs: ReadonlyArray<{ readonly sessionKey: string }>) => cs.map((c) => c.sessionKey).sort()
        assert.strictEqual((yield* store.listConversations({})).length, 4)
        assert.deepStrictEqual(keys(yield* store.listConversations({ agentId: "a1" })), ["a1:cli:u1:one", "a1:cli:u2:two"])
        assert.deepStrictEqual(keys(yield* store.listConversations({ userId: "u1" })), [
          "a1:cli:u1:one",
          "a2:cli:u1:three",
          "a2:tg:u1:four"
        ])
        assert.deepStrictEqual(keys(yield* store.listConversations({ agentId: "a2", userId: "u1" })), [
          "a2:cli:u1:three",
          "a2:tg:u1:four"
        ])
        assert.deepStrictEqual(yield* store.listConversations({ agentId: "nobody" }), [])
        assert.strictEqual((yield* store.listConversations({ limit: 2 })).length, 2)
        const counts = Object.fromEntries((yield* store.listConversations({})).map((c) => [c.sessionKey, c.messages]))
        assert.deepStrictEqual(counts, { "a1:cli:u1:one": 3, "a1:cli:u2:two": 1, "a2:cli:u1:three": 0, "a2:tg:u1:four": 5 })
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("never moves the reviewed mark backwards", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(sessionRefFromKey("a:b:c:d"))
        yield* store.setReviewedSeq(c.id, 5)
        yield* store.setReviewedSeq(c.id, 2)
        assert.strictEqual((yield* store.loadConversation("a:b:c:d")).reviewedSeq, 5)
        yield* store.setReviewedSeq(c.id, 8)
        assert.strictEqual((yield* store.loadConversation("a:b:c:d")).reviewedSeq, 8)
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("a storage failure is a StorageError that says what SQLite said", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const sql = yield* SqlClient.SqlClient
        const c = yield* store.ensureConversation(sessionRefFromKey("a:b:c:d"))
        if (db.name === "SQLite") {
          yield* sql`CREATE TRIGGER simulated_full BEFORE INSERT ON ctx_items
            BEGIN SELECT RAISE(ABORT, 'disk is full (simulated)'); END`
        } else {
          yield* sql.unsafe(`CREATE FUNCTION simulated_full() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'disk is full (simulated)'; END $$`)
          yield* sql`CREATE TRIGGER simulated_full BEFORE INSERT ON ctx_items FOR EACH ROW EXECUTE FUNCTION simulated_full()`
        }
        const e = yield* store.appendMessages(c.id, texts(3)).pipe(Effect.flip)
        assert.strictEqual(e._tag, "StorageError")
        if (e._tag !== "StorageError") return
        assert.strictEqual(e.operation, "append messages")
        assert.include(e.reason, "disk is full (simulated)")
        // the transaction rolled back: the messages inserted before the failure are gone too
        assert.strictEqual((yield* store.stats(c.id)).messages, 0)
        yield* sql`DROP TABLE ctx_agent_memory`
        const read = yield* store.getProfile("u", "a").pipe(Effect.flip)
        assert.include(read.reason, db.name === "SQLite" ? "no such table: ctx_agent_memory" : "relation \"ctx_agent_memory\" does not exist")
      }).pipe(Effect.provide(lcmOn(db.layer))))

    it.effect("stores profiles per user and agent", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        assert.strictEqual(yield* store.getProfile("u1", "a1"), "")
        yield* store.setProfile("u1", "a1", "likes tea")
        yield* store.setProfile("u1", "a2", "likes coffee")
        yield* store.setProfile("u1", "a1", "likes green tea")
        assert.strictEqual(yield* store.getProfile("u1", "a1"), "likes green tea")
        assert.strictEqual(yield* store.getProfile("u1", "a2"), "likes coffee")
        assert.strictEqual(yield* store.getProfile("u2", "a1"), "")
      }).pipe(Effect.provide(SqliteMemoryStore.layer), Effect.provide(db.layer)))
  })
}
