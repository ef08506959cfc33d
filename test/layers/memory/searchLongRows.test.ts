/**
 * Phrases in rows past PostgreSQL's limits (domain/search/tsvector.ts): a vector keeps positions up
 * to 16,383 and 256 per word, so a quoted phrase — or a CJK word of three letters or more, a phrase
 * of letter pairs — that a message or a summary holds only past its 16,383rd word, or past the
 * 256th occurrence of one of its words, is found through its words and checked against the row's
 * text. Both databases give the same hits: a phrase found, its words apart not found, `NOT` of it
 * leaving out exactly the rows that hold it (in a search and in a listing by filters). On
 * PostgreSQL, migrations/pg/0009 marks the rows written before it that hit a limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { SearchOptions, SearchScope } from "../../../src/domain/memory/types.ts"
import { CAPPED_TOKEN, MAX_POSITION } from "../../../src/domain/search/tsvector.ts"
import { pgMigrationsDir } from "../../../src/layers/sql/Postgres.ts"
import { loadSqlMigrations } from "../../../src/layers/sql/Sqlite.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { lcmOn, sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"
import { T0 } from "../../support/memory.ts"

const KEY = "a1:cli:u1:long"
const session: SearchScope = { _tag: "Session", sessionKey: KEY }

/** More words than PostgreSQL keeps positions for, none of them the tests' words. */
const DEEP = Array.from({ length: MAX_POSITION + 20 }, (_, i) => `w${i % 97}x`).join(" ")
/** `alpha` 300 times: past the 256 positions a word keeps. */
const MANY = "alpha gamma ".repeat(300)

/** Messages by seq (1, 2, …). */
const MESSAGES = [
  `${DEEP} the zebra crossing is closed`, // 1: the phrase past position 16,383
  `${DEEP} a crossing zebra walked by`, // 2: its words there, apart
  `${MANY}alpha beta`, // 3: the phrase after alpha's 300th occurrence
  `${MANY}beta alpha`, // 4: its words there, apart
  `${DEEP} 我们的数据库很快`, // 5: a CJK word of three letters past position 16,383
  `${DEEP} 数据 和 据库`, // 6: its letter pairs there, apart
  "a short note: the zebra crossing by the school" // 7: within the limits
]

const seqs = (q: string, options: Partial<SearchOptions> = {}) =>
  Effect.gen(function*() {
    const hits = yield* (yield* Searcher).search(q, { scope: session, limit: 20, ...options })
    // A message as its seq, a summary as minus its id (`sum_<n>`).
    return hits.map((h) => h.kind === "message" ? h.seq ?? 0 : -Number(h.id.replace("sum_", ""))).sort((a, b) => a - b)
  })

const put = Effect.flatMap(MemoryProvider, (memory) =>
  memory.append(
    sessionRefFromKey(KEY),
    MESSAGES.map((content, i) => ({ role: "user" as const, content, createdAt: T0 + i * 1000 }))
  ))

for (const db of testDatabases(sqliteTemp)) {
  const lcmTemp = lcmOn(db.layer)

  describe(`search: phrases past PostgreSQL's limits (${db.name})`, () => {
    it.effect("a phrase past word 16,383 or past a word's 256th occurrence is found, its words apart are not", () =>
      Effect.gen(function*() {
        yield* put
        for (const mode of ["strict", "ranked"] as const) {
          assert.deepStrictEqual(yield* seqs("\"zebra crossing\"", { mode }), [1, 7], mode)
          assert.deepStrictEqual(yield* seqs("\"crossing zebra\"", { mode }), [2], mode)
          assert.deepStrictEqual(yield* seqs("\"alpha beta\"", { mode }), [3], mode)
          assert.deepStrictEqual(yield* seqs("\"beta alpha\"", { mode }), [4], mode)
          // The words are there, the phrase is not.
          assert.deepStrictEqual(yield* seqs("\"zebra closed\"", { mode }), [], mode)
          assert.deepStrictEqual(yield* seqs("\"beta gamma\"", { mode }), [], mode)
          assert.deepStrictEqual(yield* seqs("\"walked crossing\"", { mode }), [], mode)
        }
        // With the memory tool's own calls, in the user's and the whole scope, with another word.
        assert.deepStrictEqual(yield* seqs("\"zebra crossing\"", { includeMemoryCalls: true }), [1, 7])
        assert.deepStrictEqual(yield* seqs("\"zebra crossing\"", { scope: { _tag: "User", userId: "u1" } }), [1, 7])
        assert.deepStrictEqual(yield* seqs("\"alpha beta\"", { scope: { _tag: "All" } }), [3])
        assert.deepStrictEqual(yield* seqs("\"zebra crossing\" AND closed", { mode: "strict" }), [1])
        assert.deepStrictEqual(yield* seqs("\"zebra crossing\" OR \"beta alpha\"", { mode: "strict" }), [1, 4, 7])
      }).pipe(Effect.provide(lcmTemp)))

    it.effect("a CJK word of three letters past word 16,383 is found, its letter pairs apart are not", () =>
      Effect.gen(function*() {
        yield* put
        assert.deepStrictEqual(yield* seqs("数据库", { mode: "strict" }), [5])
        assert.deepStrictEqual(yield* seqs("\"数据库\""), [5])
        assert.deepStrictEqual(yield* seqs("\"数据库很快\""), [5])
        assert.deepStrictEqual(yield* seqs("据库很", { mode: "strict" }), [5])
        // The pairs 数据 and 据库 are both in message 6, not one after the other.
        assert.deepStrictEqual(yield* seqs("数据", { mode: "strict" }), [5, 6])
        assert.deepStrictEqual(yield* seqs("据库", { mode: "strict" }), [5, 6])
      }).pipe(Effect.provide(lcmTemp)))

    it.effect("NOT of such a phrase leaves out exactly the rows that hold it", () =>
      Effect.gen(function*() {
        yield* put
        for (const mode of ["strict", "ranked"] as const) {
          assert.deepStrictEqual(yield* seqs("w5x NOT \"zebra crossing\"", { mode }), [2, 5, 6], mode)
          assert.deepStrictEqual(yield* seqs("w5x NOT \"crossing zebra\"", { mode }), [1, 5, 6], mode)
          assert.deepStrictEqual(yield* seqs("gamma NOT \"alpha beta\"", { mode }), [4], mode)
          assert.deepStrictEqual(yield* seqs("gamma NOT \"beta gamma\"", { mode }), [3, 4], mode)
          assert.deepStrictEqual(yield* seqs("w5x NOT 数据库", { mode }), [1, 2, 6], mode)
        }
        // A listing by filters (no words): the same rows left out.
        assert.deepStrictEqual(yield* seqs("role:user NOT \"zebra crossing\""), [2, 3, 4, 5, 6])
        assert.deepStrictEqual(yield* seqs("role:user NOT \"alpha beta\" NOT 数据库"), [1, 2, 4, 6, 7])
        assert.deepStrictEqual(yield* seqs("role:user NOT \"beta gamma\""), [1, 2, 3, 4, 5, 6, 7])
        assert.deepStrictEqual(yield* seqs("role:user NOT \"zebra crossing\"", { limit: 2 }), [5, 6])
        // The newest two are 7 and 6, and 6 holds the phrase (past word 16,383): 7 and 5.
        assert.deepStrictEqual(yield* seqs("role:user NOT \"和 据库\"", { limit: 2 }), [5, 7])
        assert.deepStrictEqual(yield* seqs("role:user NOT \"据库 和\"", { limit: 2 }), [6, 7])
      }).pipe(Effect.provide(lcmTemp)))

    it.effect("a summary's phrase past word 16,383 is found, its words apart are not", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(sessionRefFromKey(KEY))
        yield* store.appendMessages(c.id, [
          { role: "user", content: "first", createdAt: T0 },
          { role: "assistant", content: "second", createdAt: T0 + 1000 }
        ])
        const items = yield* store.items(c.id)
        const { summaryId } = yield* store.commitSummary(c.id, {
          kind: "leaf",
          depth: 0,
          mode: "normal",
          content: `${DEEP} then the zebra crossing, then a crossing.`,
          sourceTokenCount: items.reduce((n, it) => n + it.tokens, 0),
          earliestAt: T0,
          latestAt: T0 + 1000,
          firstSeq: 1,
          lastSeq: items.length,
          replaces: items
        }, () => 100)
        assert.deepStrictEqual(yield* seqs("\"zebra crossing\" kind:summary"), [-summaryId])
        assert.deepStrictEqual(yield* seqs("\"crossing zebra\" kind:summary"), [])
        assert.deepStrictEqual(yield* seqs("crossing NOT \"zebra crossing\" kind:summary"), [])
        assert.deepStrictEqual(yield* seqs("crossing NOT \"crossing zebra\" kind:summary"), [-summaryId])
      }).pipe(Effect.provide(lcmTemp)))
  })
}

for (const db of testDatabases(sqliteTemp).filter((d) => d.name === "PostgreSQL")) {
  describe("migrations/pg/0009: vectors written before it", () => {
    it.effect("the rows that hit a limit get the token, the others are left as they are", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* MemoryStore
        yield* put
        const c = yield* store.ensureConversation(sessionRefFromKey(KEY))
        const items = (yield* store.items(c.id)).slice(0, 2)
        const { summaryId } = yield* store.commitSummary(c.id, {
          kind: "leaf",
          depth: 0,
          mode: "normal",
          content: `${DEEP} then the zebra crossing.`,
          sourceTokenCount: items.reduce((n, it) => n + it.tokens, 0),
          earliestAt: T0,
          latestAt: T0 + 1000,
          firstSeq: 1,
          lastSeq: 2,
          replaces: items
        }, () => 100)
        const token = `'${CAPPED_TOKEN}'`
        const marked = Effect.all([
          Effect.map(
            sql<{ seq: number }>`SELECT m.seq FROM ctx_messages_search f JOIN ctx_messages m ON m.id = f.id
              WHERE f.terms @@ CAST(${token} AS tsquery) ORDER BY m.seq`,
            (rows) => rows.map((r) => Number(r.seq))
          ),
          Effect.map(
            sql<{ n: number }>`SELECT count(*) AS n FROM ctx_summaries_search WHERE terms @@ CAST(${token} AS tsquery)`,
            (rows) => Number(rows[0]?.n)
          )
        ])
        assert.deepStrictEqual(yield* marked, [[1, 2, 3, 4, 5, 6], 1])
        // As written before the token: the phrase past the limits is not found.
        yield* sql`UPDATE ctx_messages_search SET terms = ts_delete(terms, ${CAPPED_TOKEN}::text)`
        yield* sql`UPDATE ctx_summaries_search SET terms = ts_delete(terms, ${CAPPED_TOKEN}::text)`
        assert.deepStrictEqual(yield* marked, [[], 0])
        assert.deepStrictEqual(yield* seqs("\"zebra crossing\"", { mode: "strict" }), [7])
        const migration = loadSqlMigrations(pgMigrationsDir()).find(([id]) => id === 9)
        assert.isDefined(migration)
        for (const statement of migration?.[2] ?? []) yield* sql.unsafe(statement)
        assert.deepStrictEqual(yield* marked, [[1, 2, 3, 4, 5, 6], 1])
        assert.deepStrictEqual(yield* seqs("\"zebra crossing\"", { mode: "strict" }), [-summaryId, 1, 7])
      }).pipe(Effect.provide(lcmOn(db.layer))))
  })
}
