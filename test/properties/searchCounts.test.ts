/**
 * The row counts search keeps per conversation and source (migrations/0030, read for a term's idf
 * by layers/memory/memorySearch.ts) stay the rows there are, whatever happens to the sessions:
 * random appends (some with CJK letters, which are indexed through the backlog), compactions (which
 * write summaries), deletions of whole sessions (whose ids SQLite gives to the next new session) and
 * removals of users (whose sessions move to the id they are removed as), in any order. After each
 * step the kept counts are compared with counts of the rows themselves, and `integrityCheck` (what
 * `anna memory verify` runs) finds nothing. A database written before the migration gets its counts
 * from the migration's backfill, and a wrong count is reported by `integrityCheck`. The first
 * property runs on SQLite and on PostgreSQL (where inserts are counted per statement,
 * migrations/pg/0006).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { NewMessage } from "../../src/domain/message.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { loadSqlMigrations, migrationsDir } from "../../src/layers/sql/Sqlite.ts"
import { MemoryStore } from "../../src/services/MemoryStore.ts"
import { sqliteTemp, tempDbFile } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { lcmOn } from "./support/layers.ts"
import { int, rng } from "./support/sessions.ts"

const KEYS = ["a1:cli:alice:one", "a1:cli:alice:two", "a1:cli:bob:one", "a1:tg:bob:two", "a1:cli:carol:one"]
const USERS = ["alice", "bob", "carol"]

interface Counted {
  readonly conversation_id: number
  readonly source: string
  readonly n: number
}

/** Kept counts (zeros left out: a deleted session's rows may leave one until its conversation goes) and real ones. */
const counts = Effect.gen(function*() {
  const sql = yield* SqlClient
  const kept = yield* sql<Counted>`SELECT conversation_id, source, n FROM ctx_search_counts WHERE n <> 0
    ORDER BY conversation_id, source`
  const real = yield* sql<Counted>`SELECT conversation_id, source, n FROM (
      SELECT conversation_id, 'message' AS source, count(*) AS n FROM ctx_messages GROUP BY conversation_id
      UNION ALL SELECT conversation_id, 'summary', count(*) FROM ctx_summaries GROUP BY conversation_id) AS x
    ORDER BY conversation_id, source`
  const orphans = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_search_counts k
    WHERE NOT EXISTS (SELECT 1 FROM ctx_conversations c WHERE c.id = k.conversation_id)`
  return { kept: kept.map((r) => ({ ...r })), real: real.map((r) => ({ ...r })), orphans: orphans[0]?.n ?? -1 }
})

const messages = (r: ReturnType<typeof rng>, n: number, at: number): Array<NewMessage> =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: `${r.pick(["deploy the docker image", "配置 内存泄漏", "zebra quartz", "the migration ran"])} ${r.int(0, 9999)} `.repeat(r.int(1, 30)),
    createdAt: at + i
  }))

const checkCounts = (step: string) =>
  Effect.gen(function*() {
    const { kept, orphans, real } = yield* counts
    assert.deepStrictEqual(kept, real, `after ${step}: kept counts differ from the rows stored`)
    assert.strictEqual(orphans, 0, `after ${step}: counts of a conversation that is gone`)
    const problems = yield* MemoryStore.use((s) => s.integrityCheck)
    assert.deepStrictEqual(problems, [], `after ${step}`)
  })

const databases = testDatabases(sqliteTemp)

describe("search counts", () => {
  it.effect.prop(
    "the counts kept per conversation are the rows stored, after any appends, compactions, deletions and user removals (both databases)",
    { seed: int(0, 2 ** 31 - 1), steps: int(4, 14) },
    ({ seed, steps }) =>
      Effect.scoped(Effect.forEach(databases, (db) => Effect.gen(function*() {
        const opened = yield* db.open
        const r = rng(seed)
        yield* Effect.gen(function*() {
          const memory = yield* MemoryProvider
          const compactor = yield* Compactor
          const store = yield* MemoryStore
          let at = 1_700_000_000_000
          for (let step = 0; step < steps; step++) {
            const op = r.int(0, 9)
            const key = r.pick(KEYS)
            if (op <= 4) {
              const n = r.int(1, 40)
              yield* memory.append(sessionRefFromKey(key), messages(r, n, at))
              at += n
              yield* checkCounts(`appending ${n} to ${key}`)
            } else if (op <= 6) {
              yield* compactor.compact(key, { full: true, freshTail: r.int(0, 4) }).pipe(Effect.catchTag("SessionNotFound", () => Effect.void))
              yield* checkCounts(`compacting ${key}`)
            } else if (op <= 8) {
              yield* store.deleteConversation(key).pipe(Effect.catchTag("SessionNotFound", () => Effect.void))
              yield* checkCounts(`deleting ${key}`)
            } else {
              const user = r.pick(USERS)
              yield* store.retireUser(user, `${user}~removed${step}`)
              yield* checkCounts(`removing ${user}`)
            }
          }
        }).pipe(Effect.provide(lcmOn(opened.layer), { local: true }))
      }), { discard: true })),
    { timeout: 120_000, arbitrary: { runs: 25 } }
  )

  it.effect("a database written before the counts gets them from the migration's backfill", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = yield* tempDbFile
      const r = rng(7)
      yield* Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const compactor = yield* Compactor
        for (const key of KEYS.slice(0, 3)) yield* memory.append(sessionRefFromKey(key), messages(r, 30, 1_700_000_000_000))
        yield* compactor.compact(KEYS[0] ?? "", { full: true, freshTail: 2 })
        // Back to the schema before migrations/0030.
        const sql = yield* SqlClient
        for (const t of ["ctx_messages_count_insert", "ctx_messages_count_delete", "ctx_summaries_count_insert", "ctx_summaries_count_delete"]) {
          yield* sql.unsafe(`DROP TRIGGER ${t}`)
        }
        yield* sql`DROP TABLE ctx_search_counts`
        // The migration itself, as the migrator runs it (later migrations are recorded, so it would not run again).
        const migration = loadSqlMigrations(migrationsDir()).find(([id]) => id === 30)
        assert.isDefined(migration, "migrations/0030 exists")
        for (const statement of migration?.[2] ?? []) yield* sql.unsafe(statement)
      }).pipe(Effect.provide(lcmOn(file), { local: true }))
      yield* Effect.gen(function*() {
        const { kept, real } = yield* counts
        assert.isAtLeast(real.filter((c) => c.source === "summary").length, 1, "the compaction wrote summaries")
        assert.deepStrictEqual(kept, real)
        yield* MemoryProvider.use((m) =>
          m.append(sessionRefFromKey(KEYS[4] ?? ""), [{ role: "user", content: "after the upgrade", createdAt: 1_800_000_000_000 }])
        )
        yield* checkCounts("the backfill and one more append")
        // A wrong count is what `anna memory verify` reports.
        const sql = yield* SqlClient
        yield* sql`UPDATE ctx_search_counts SET n = n + 1 WHERE source = 'message' AND conversation_id = (SELECT id FROM ctx_conversations WHERE session_key = ${KEYS[1] ?? ""})`
        const problems = yield* MemoryStore.use((s) => s.integrityCheck)
        assert.deepStrictEqual(problems, [`${KEYS[1]}: 31 message rows counted for search, 30 stored`])
      }).pipe(Effect.provide(lcmOn(file), { local: true }))
    })))
})
