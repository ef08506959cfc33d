/**
 * Search answers the same on SQLite and on PostgreSQL (issue 26): the same random sessions (Latin,
 * Chinese, Japanese and Korean text, tool calls, emoji, control characters, compaction summaries)
 * appended to a fresh database of each, then the same queries — words of the sessions, phrases,
 * prefixes, `OR`, `AND`, `NOT`, filters, CJK runs, query-syntax soup — in both modes, with and
 * without the neighbouring turns and the memory tool's own calls, in a session's, a user's and the
 * whole scope: every hit (kind, session, seq or coverage, matched terms, snippet, score) is the same.
 *
 * SQLite's index is FTS5's own tokenizer over the text; PostgreSQL's is anna's tokenizer
 * (domain/search/tsvector.ts): this is where the two would drift apart. The known differences are
 * left out of the sessions (README, "Running on PostgreSQL"): FTS5's unicode61 takes a character
 * Unicode 6.1 had not assigned (🧪, the skin-tone modifiers, any code point unassigned then) as part
 * of a word, anna's tokenizer as a separator, so `guitar🧪sqlite` is one word on SQLite and two on
 * PostgreSQL. So the sessions have no random code units (`weird` 0: the other search properties run
 * them on both databases). Huge pastes (50–200 KB, `huge` 9–10) are in, with some of the queries'
 * phrases at their end: a vector keeps a word's first 256 positions and none past 16,383, so
 * PostgreSQL checks a phrase — or a CJK word of three letters or more, a phrase of letter pairs —
 * against such a row's text (domain/search/tsvector.ts), and finds what SQLite finds.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { SearchHit, SearchScope } from "../../src/domain/memory/types.ts"
import type { NewMessage } from "../../src/domain/message.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { Searcher } from "../../src/services/Searcher.ts"
import { sqliteTemp } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { lcmOn } from "./support/layers.ts"
import { buildSession, int, rng, type SessionSpec, sessionSpec } from "./support/sessions.ts"

const WORDS = [
  "docker", "memory", "summary", "deploy*", "kubern*", "\"container memory\"", "\"the docker\"", "tokyo", "berlin",
  "guitar", "recipe", "coffee", "记忆系统", "数据库", "记忆", "東京タワー", "ありがとう", "메모리", "검색", "咖啡",
  "OR", "AND", "NOT", "role:user", "role:assistant", "tool:shell", "kind:summary", "kind:message", "\"", "*",
  "😀", "restore", "schedule", "meeting", "tomorrow", "s1", "s2", "says", "test", "suite", "index"
] as const

const query = Arbitrary.array(Arbitrary.schema(Schema.Literals(WORDS)), { minLength: 1, maxLength: 5 }).pipe(
  Arbitrary.map((parts) => parts.join(" "))
)

const bothCase = Arbitrary.all({
  specs: Arbitrary.array(sessionSpec, { minLength: 3, maxLength: 3 }),
  compact: Arbitrary.array(Arbitrary.schema(Schema.Boolean), { minLength: 3, maxLength: 3 }),
  queries: Arbitrary.array(query, { minLength: 6, maxLength: 12 }),
  seed: Arbitrary.schema(int(0, 1_000_000))
})

const SESSIONS: ReadonlyArray<readonly [string, string]> = [
  ["agent:test:alice:one", "alice"],
  ["agent:test:bob:one", "bob"],
  ["agent:test:bob:two", "bob"]
]

/** The sessions' messages without the characters the two tokenizers read differently (see above). */
const NEWER_EMOJI = /\u{1F9EA}|[\u{1F3FB}-\u{1F3FF}]/gu
const withoutNewerEmoji = (messages: ReadonlyArray<NewMessage>): Array<NewMessage> =>
  JSON.parse(JSON.stringify(messages).replace(NEWER_EMOJI, "")) as Array<NewMessage>

/**
 * Phrases of the queries, put at the end of a huge paste (a repeated paragraph): there past its
 * 16,383rd word or past the 256th occurrence of a word, where PostgreSQL's vector has no position
 * for them and anna checks them against the text.
 */
const TAILS = ["the docker", "container memory", "记忆系统", "数据库 记忆", "東京タワー ありがとう", "tokyo berlin", "the docker container memory"]
const withDeepTails = (messages: ReadonlyArray<NewMessage>, seed: number): Array<NewMessage> => {
  const r = rng(seed)
  const tail = (s: string) => (s.length > 40_000 ? `${s}\n${r.pick(TAILS)}. ${r.pick(TAILS)}` : s)
  return messages.map((m) => ({
    ...m,
    content: typeof m.content === "string" ? tail(m.content) : m.content.map((b) => (b.type === "text" ? { ...b, text: tail(b.text) } : b))
  }))
}

/** A hit as both databases must give it (scores to 9 digits: the same arithmetic on the same counts). */
const comparable = (h: SearchHit) => ({
  kind: h.kind,
  id: h.id,
  sessionKey: h.sessionKey,
  seq: h.seq,
  covers: h.covers,
  matched: h.matched,
  snippet: h.snippet,
  score: Number(h.score.toPrecision(9)),
  context: h.context?.map((c) => c.seq),
  hop: h.hop
})

const databases = testDatabases(sqliteTemp)

describe("memory properties: search on both databases", () => {
  it.live.prop(
    "the same sessions and queries give the same hits on SQLite and on PostgreSQL",
    { c: bothCase },
    ({ c }) =>
      Effect.scoped(Effect.gen(function*() {
        const results: Array<Array<unknown>> = []
        for (const db of databases) {
          const opened = yield* db.open
          const out: Array<unknown> = []
          results.push(out)
          yield* Effect.gen(function*() {
            const memory = yield* MemoryProvider
            const compactor = yield* Compactor
            const searcher = yield* Searcher
            for (let i = 0; i < SESSIONS.length; i++) {
              const [key, userId] = SESSIONS[i] ?? ["", ""]
              const spec: SessionSpec = c.specs[i] ?? { seed: i, length: 20, large: 0, tools: 2, cjk: 3, weird: 1, huge: 0 }
              yield* memory.append(sessionRefFromKey(key, { userId }), withDeepTails(withoutNewerEmoji(buildSession({ ...spec, length: spec.length % 90, weird: 0 }, `s${i + 1}`)), spec.seed))
              if (c.compact[i] === true) yield* compactor.compact(key, { full: true, freshTail: 4 })
            }
            const scopes: ReadonlyArray<SearchScope> = [
              { _tag: "Session", sessionKey: SESSIONS[0]?.[0] ?? "" },
              { _tag: "User", userId: "bob" },
              { _tag: "All" }
            ]
            const r = rng(c.seed)
            for (const q of c.queries) {
              for (const scope of scopes) {
                const mode = r.chance(0.3) ? "strict" : "ranked"
                const options = {
                  scope,
                  mode,
                  limit: r.int(1, 30),
                  context: r.int(0, 2),
                  neighbours: r.chance(0.8),
                  includeMemoryCalls: r.chance(0.2)
                } as const
                const hits = yield* searcher.search(q, options)
                out.push({ q, options, hits: hits.map(comparable) })
              }
            }
          }).pipe(Effect.provide(lcmOn(opened.layer), { local: true }))
        }
        const [sqlite, postgres] = results
        if (postgres === undefined) return
        for (let i = 0; i < (sqlite?.length ?? 0); i++) {
          const [a, b] = [JSON.stringify(sqlite?.[i]), JSON.stringify(postgres[i])]
          if (a !== b) {
            const at = Array.from(a).findIndex((ch, k) => b[k] !== ch)
            assert.fail(`differs at ${at}:\nSQLite:     ${a.slice(Math.max(0, at - 300), at + 300)}\nPostgreSQL: ${b.slice(Math.max(0, at - 300), at + 300)}`)
          }
        }
      })),
    { timeout: 170_000, arbitrary: { runs: 8, maxShrinks: 10 } }
  )
})
