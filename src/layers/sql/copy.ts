/**
 * `anna db copy` (issue 26): a whole SQLite database into an empty PostgreSQL one, all or nothing.
 *
 * - What is copied: every table of the SQLite schema, except SQLite's own (`sqlite_*`), effect's
 *   migration log, the FTS5 search index (virtual and shadow tables) and its queue — the target's
 *   own index is rebuilt from the copied rows instead. Two tables are *derived*, kept by the target
 *   itself, and compared rather than copied: `ctx_search_counts` (rows per conversation, computed
 *   after the rows are in) and `config_version` (a change counter its triggers bump). A source table or column that has no
 *   counterpart on the target refuses the copy before anything is written (`plan`): nothing is ever
 *   dropped silently.
 * - Empty target: after its migrations, no table holds a row, except the rows migrations seed and no
 *   store has touched since (`plugins` and `channels` rows whose `updated_at` is still 0) and the
 *   `config_version` counter. Seeded rows are replaced by the source's.
 * - One snapshot of the source (a read transaction on SQLite: a gateway may keep writing) read table
 *   by table in batches (bounded memory), into one PostgreSQL transaction holding anna's write lock.
 *   Ids and times are inserted as they are (SQLite's implicit rowid goes to the target's `rowid`
 *   identity), then every identity sequence is moved past the largest id (or SQLite's AUTOINCREMENT
 *   high-water mark). Tables go in foreign-key order, read from the target's catalog.
 * - The triggers that count rows per conversation for search are off while rows go in (one counter
 *   row updated per inserted row is quadratic in one transaction); the counts are computed after.
 * - Before the commit: row counts equal table by table, derived tables equal, the search index
 *   built (the target's insert triggers queued every copied row; the queue is drained here, in the
 *   same transaction, with progress), and memory's verify (the store's integrity check
 *   and each session's lossless/DAG check) clean on the target. Any failure rolls everything back.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { CopyFailed, CopyRefused } from "../../domain/database/errors.ts"
import { verifySession } from "../../domain/memory/verify.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import * as SqliteMemoryStore from "../memory/SqliteMemoryStore.ts"
import { makeSearchIndex } from "../memory/searchIndex.ts"
import { type CopyPlan, plan, quote, type TablePlan } from "./copyPlan.ts"
import { WRITE_LOCK } from "./Sqlite.ts"

/** Tables migrations seed, and which of their rows a store has written (a seeded row's updated_at is 0). */
const SEEDED: Readonly<Record<string, string>> = { plugins: "updated_at <> 0", channels: "updated_at <> 0" }

/** Target tables an empty target may hold rows in (besides the seeds above). */
const TARGET_BOOKKEEPING = new Set(["effect_sql_migrations", "config_version"])

/** At most this many rows per statement, and this many parameters. */
const BATCH_ROWS = 1_000
const BATCH_PARAMS = 30_000

export type CopyEvent =
  | { readonly _tag: "Table"; readonly table: string; readonly done: number; readonly total: number }
  | { readonly _tag: "Index"; readonly done: number; readonly total: number }
  | { readonly _tag: "Verify" }

export interface CopySummary {
  readonly tables: ReadonlyArray<{ readonly table: string; readonly rows: number }>
  readonly rows: number
  /** Rows the target's search index was built for (0 when the target has no full-text search). */
  readonly indexed: number
  readonly sessions: number
  readonly seconds: number
  /** Seconds spent copying rows (with the checks of counts), building the search index, verifying. */
  readonly phases: { readonly copy: number; readonly index: number; readonly verify: number }
  readonly verified: true
}

/** The target tables that hold rows an empty (freshly migrated) database would not. */
export const nonEmptyTables = (target: SqlClient.SqlClient): Effect.Effect<ReadonlyArray<string>, SqlError> =>
  Effect.gen(function*() {
    const tables = yield* target<{ table_name: string }>`SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`
    const found: Array<string> = []
    for (const { table_name: t } of tables) {
      if (TARGET_BOOKKEEPING.has(t)) continue
      const written = SEEDED[t]
      const rows = yield* target.unsafe<{ any: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ${quote(t)}${written === undefined ? "" : ` WHERE ${written}`}) AS any`
      )
      if (rows[0]?.any === true) found.push(t)
    }
    return found
  })

/** Reads `table` in batches (keyset on rowid or the primary key) and inserts each batch. */
const copyTable = (
  source: SqlClient.SqlClient,
  target: SqlClient.SqlClient,
  table: TablePlan,
  onBatch: (done: number, total: number) => Effect.Effect<void>
): Effect.Effect<number, SqlError> =>
  Effect.gen(function*() {
    const [count] = yield* source.unsafe<{ n: number }>(`SELECT count(*) AS n FROM ${quote(table.name)}`)
    const total = Number(count?.n ?? 0)
    const order = table.hasRowid ? ["rowid"] : table.key
    // Selected: the columns, then SQLite's rowid when copied, then the keyset's columns.
    const selected = [...table.columns.map(quote), ...(table.copiesRowid ? ["rowid"] : []), ...order.map((c) => c === "rowid" ? "rowid" : quote(c))]
    const written = table.columns.length + (table.copiesRowid ? 1 : 0)
    const insertColumns = [...table.columns, ...(table.copiesRowid ? ["rowid"] : [])].map(quote).join(", ")
    const batch = Math.max(1, Math.min(BATCH_ROWS, Math.floor(BATCH_PARAMS / written)))
    const orderSql = order.map((c) => c === "rowid" ? "rowid" : quote(c))
    const after = `(${orderSql.join(", ")}) > (${order.map(() => "?").join(", ")})`
    let last: ReadonlyArray<unknown> | undefined
    let done = 0
    yield* onBatch(0, total)
    while (true) {
      const rows = yield* source.unsafe(
        `SELECT ${selected.join(", ")} FROM ${quote(table.name)}${last === undefined ? "" : ` WHERE ${after}`}
         ORDER BY ${orderSql.join(", ")} LIMIT ${batch}`,
        last === undefined ? [] : [...last]
      ).values.pipe(Effect.provideService(SqlClient.SafeIntegers, true))
      if (rows.length === 0) break
      const params: Array<unknown> = []
      const tuples: Array<string> = []
      for (const row of rows) {
        const start = params.length
        for (let i = 0; i < written; i++) params.push(row[i] ?? null)
        tuples.push(`(${Array.from({ length: written }, (_, i) => `$${start + i + 1}`).join(", ")})`)
      }
      yield* target.unsafe(
        `INSERT INTO ${quote(table.name)} (${insertColumns})${table.overriding ? " OVERRIDING SYSTEM VALUE" : ""} VALUES ${tuples.join(", ")}`,
        params
      )
      done += rows.length
      last = (rows[rows.length - 1] ?? []).slice(written)
      yield* onBatch(done, total)
      if (rows.length < batch) break
    }
    return done
  })

/** What went wrong in a failed statement: the database's own words, under the driver's wrappers. */
export const sqlDetail = (e: unknown): string => {
  const messages: Array<string> = []
  let at: unknown = e
  for (let depth = 0; depth < 6 && at instanceof Error; depth++) {
    if (at.message !== "" && !messages.includes(at.message)) messages.push(at.message)
    at = at.cause
  }
  return messages.at(-1) ?? String(e)
}

const count = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(sql.unsafe<{ n: number | bigint }>(`SELECT count(*) AS n FROM ${quote(table)}`), (r) => Number(r[0]?.n ?? 0))

/** Every identity sequence past the copied ids (and past SQLite's AUTOINCREMENT marks). */
const advanceSequences = (source: SqlClient.SqlClient, target: SqlClient.SqlClient, copy: CopyPlan) =>
  Effect.gen(function*() {
    const marks = new Map<string, number>()
    const hasSequence = yield* source<{ n: number }>`SELECT count(*) AS n FROM sqlite_schema WHERE name = 'sqlite_sequence'`
    if ((hasSequence[0]?.n ?? 0) > 0) {
      for (const r of yield* source<{ name: string; seq: number }>`SELECT name, seq FROM sqlite_sequence`) marks.set(r.name, Number(r.seq))
    }
    for (const { table, column } of copy.identities) {
      const [max] = yield* target.unsafe<{ m: number | null }>(`SELECT max(${quote(column)}) AS m FROM ${quote(table)}`)
      const high = Math.max(Number(max?.m ?? 0), column === "rowid" ? 0 : marks.get(table) ?? 0)
      yield* target.unsafe(`SELECT setval(pg_get_serial_sequence($1, $2), $3, $4)`, [quote(table), column, Math.max(high, 1), high > 0])
    }
  })

/**
 * The triggers that keep ctx_search_counts: each inserted row updates its conversation's one counter
 * row, and within one transaction every update adds a row version the next must walk past — copying
 * a 50,000-message session took 3× as long per row as ten of 5,000. They are off during the copy
 * (inside its transaction, so a failure restores them) and the counts are computed at once after.
 */
const countTriggers = (target: SqlClient.SqlClient) =>
  target<{ table: string; name: string }>`SELECT c.relname AS table, t.tgname AS name
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE p.proname = 'anna_search_count' AND NOT t.tgisinternal AND n.nspname = current_schema()
    ORDER BY c.relname, t.tgname`

/** ctx_search_counts as search reads it (zero counts are no counts). */
const searchCounts = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ conversation_id: number; source: string; n: number }>`SELECT conversation_id, source, n FROM ctx_search_counts WHERE n <> 0`,
    (rows) => rows.map((r) => `${Number(r.conversation_id)}/${r.source}=${Number(r.n)}`).sort()
  )

/** The target's search queue emptied (when the target has full-text search), with progress. */
const rebuildSearch = (target: SqlClient.SqlClient, onEvent: (e: CopyEvent) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const has = yield* target<{ n: number }>`SELECT count(*) AS n FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_name = 'ctx_search_backlog'`
    if ((has[0]?.n ?? 0) === 0) return 0
    const total = yield* count(target, "ctx_search_backlog")
    yield* onEvent({ _tag: "Index", done: 0, total })
    // Statistics of the rows just copied (ANALYZE counts the transaction's own rows), or PostgreSQL
    // plans the index's reads for the empty tables it last saw; and the GIN indexes built once at the
    // end from all the vectors (as they were defined), not entry by entry.
    yield* target`ANALYZE`
    const gin = yield* target<{ name: string; definition: string }>`SELECT indexname AS name, indexdef AS definition
      FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN ('ctx_messages_search', 'ctx_summaries_search')
        AND indexdef LIKE '%USING gin%' ORDER BY indexname`
    for (const i of gin) yield* target.unsafe(`DROP INDEX ${i.name}`)
    // Batches run inside the copy's transaction: `transaction` only reports how far it got, counting
    // what is left at most once a second (a count per batch of a million-row queue would dominate).
    let counted = yield* Clock.currentTimeMillis
    yield* makeSearchIndex(target).drainQueue((batch) =>
      Effect.tap(batch, () =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          if (now - counted < 1_000) return
          counted = now
          const left = yield* count(target, "ctx_search_backlog")
          yield* onEvent({ _tag: "Index", done: total - left, total })
        }))
    )
    for (const i of gin) yield* target.unsafe(i.definition)
    const left = yield* count(target, "ctx_search_backlog")
    if (left > 0) return yield* new CopyFailed({ reason: `${left} rows were left unindexed for search` })
    yield* onEvent({ _tag: "Index", done: total, total })
    return total
  })

/** memory verify's checks on the target, inside the copy's transaction. */
const verifyMemory = (target: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const problems = [...yield* store.integrityCheck]
    const conversations = yield* store.listConversations({})
    for (const c of conversations) problems.push(...verifySession(yield* store.verifyInput(c.id, c.sessionKey)))
    if (problems.length > 0) {
      return yield* new CopyFailed({
        reason: `memory verify found ${problems.length} problem(s) on the target: ${problems.slice(0, 5).join("; ")}`
      })
    }
    return conversations.length
  }).pipe(
    Effect.provideServiceEffect(MemoryStore, SqliteMemoryStore.make),
    Effect.provideService(SqlClient.SqlClient, target)
  )

/**
 * Copies `source` (SQLite) into `target` (PostgreSQL, migrated); see the header. `onEvent` hears the
 * progress.
 */
export const copyDatabase = (
  source: SqlClient.SqlClient,
  target: SqlClient.SqlClient,
  onEvent: (e: CopyEvent) => Effect.Effect<void> = () => Effect.void
) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const copy = yield* plan(source, target)
    const run = Effect.gen(function*() {
      yield* target`SELECT pg_advisory_xact_lock(${WRITE_LOCK})`
      const busy = yield* nonEmptyTables(target)
      if (busy.length > 0) {
        return yield* new CopyRefused({
          reason: `the target database is not empty (rows in ${busy.join(", ")}); anna db copy writes only into an empty database`
        })
      }
      for (const t of Object.keys(SEEDED)) yield* target.unsafe(`DELETE FROM ${quote(t)}`)
      const counting = yield* countTriggers(target)
      for (const t of counting) yield* target.unsafe(`ALTER TABLE ${quote(t.table)} DISABLE TRIGGER ${quote(t.name)}`)
      const tables: Array<{ table: string; rows: number }> = []
      for (const t of copy.tables) {
        const rows = yield* copyTable(source, target, t, (done, total) => onEvent({ _tag: "Table", table: t.name, done, total })).pipe(
          Effect.mapError((e) => new CopyFailed({ reason: `copying ${t.name}: ${sqlDetail(e)}` }))
        )
        tables.push({ table: t.name, rows })
      }
      yield* advanceSequences(source, target, copy)
      if (counting.length > 0) {
        yield* target`INSERT INTO ctx_search_counts (conversation_id, source, n)
          SELECT conversation_id, 'message', count(*) FROM ctx_messages GROUP BY conversation_id
          UNION ALL SELECT conversation_id, 'summary', count(*) FROM ctx_summaries GROUP BY conversation_id`
        for (const t of counting) yield* target.unsafe(`ALTER TABLE ${quote(t.table)} ENABLE TRIGGER ${quote(t.name)}`)
      }
      for (const t of copy.tables) {
        const [from, to] = [yield* count(source, t.name), yield* count(target, t.name)]
        if (from !== to) return yield* new CopyFailed({ reason: `${t.name}: ${from} rows in the source, ${to} on the target` })
      }
      const [before, after] = [yield* searchCounts(source), yield* searchCounts(target)]
      if (before.join() !== after.join()) {
        return yield* new CopyFailed({ reason: "ctx_search_counts: the target's counts differ from the source's" })
      }
      const copied = yield* Clock.currentTimeMillis
      const indexed = yield* rebuildSearch(target, onEvent).pipe(
        Effect.catchTag("SqlError", (e) => Effect.fail(new CopyFailed({ reason: `rebuilding the search index: ${sqlDetail(e)}` })))
      )
      const built = yield* Clock.currentTimeMillis
      yield* onEvent({ _tag: "Verify" })
      const sessions = yield* verifyMemory(target)
      const verified = yield* Clock.currentTimeMillis
      const phases = { copy: (copied - started) / 1000, index: (built - copied) / 1000, verify: (verified - built) / 1000 }
      return { tables, indexed, sessions, phases }
    })
    const done = yield* source.withTransaction(target.withTransaction(run)).pipe(
      Effect.catchTag("SqlError", (e) => Effect.fail(new CopyFailed({ reason: sqlDetail(e) })))
    )
    const seconds = ((yield* Clock.currentTimeMillis) - started) / 1000
    const summary: CopySummary = {
      tables: done.tables,
      rows: done.tables.reduce((n, t) => n + t.rows, 0),
      indexed: done.indexed,
      sessions: done.sessions,
      seconds,
      phases: done.phases,
      verified: true
    }
    return summary
  })
