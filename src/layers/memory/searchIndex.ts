/**
 * The part of the search index that SQL cannot write (part of SqliteMemoryStore): rows with CJK
 * letters, which the insert triggers of migrations/0010_search.sql queue in ctx_search_backlog
 * because cutting them into letters and bigrams (domain/search/text.ts) is TypeScript's job.
 * `indexQueued` runs inside the transaction that inserted the rows, so a committed row is always in
 * the index or, if something else inserted it, in the queue; `drainQueue` empties the queue (the rows
 * the migration queued, on the first start after it).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { indexColumns } from "../../domain/search/text.ts"

/** The `scope` column of a row of conversation `c` (the same expression as the migration's). */
export const scopeColumnSql = (c: string): string =>
  `'c' || ${c}.id || CASE WHEN length(CAST(${c}.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(${c}.user_id)) || '0' ELSE '' END`

const BATCH = 256

const SOURCES = {
  message: { table: "ctx_messages", fts: "ctx_messages_search", text: "text" },
  summary: { table: "ctx_summaries", fts: "ctx_summaries_search", text: "content" }
} as const

type Source = keyof typeof SOURCES

export const makeSearchIndex = (sql: SqlClient) => {
  const indexRows = (source: Source, ids: ReadonlyArray<number>): Effect.Effect<void, SqlError> =>
    Effect.gen(function*() {
      if (ids.length === 0) return
      const s = SOURCES[source]
      const rows = yield* sql.unsafe<{ id: number; text: string; scope: string }>(
        `SELECT t.id, t.${s.text} AS text, ${scopeColumnSql("c")} AS scope
         FROM ${s.table} t JOIN ctx_conversations c ON c.id = t.conversation_id
         WHERE t.id IN (SELECT value FROM json_each(?))`,
        [JSON.stringify(ids)]
      )
      if (rows.length > 0) {
        const params: Array<unknown> = []
        for (const r of rows) {
          const { body, cjk } = indexColumns(r.text)
          params.push(r.id, body, cjk, r.scope)
        }
        yield* sql.unsafe(
          `INSERT INTO ${s.fts} (rowid, body, cjk, scope) VALUES ${rows.map(() => "(?, ?, ?, ?)").join(", ")}`,
          params
        )
      }
      yield* sql.unsafe(
        "DELETE FROM ctx_search_backlog WHERE source = ? AND id IN (SELECT value FROM json_each(?))",
        [source, JSON.stringify(ids)]
      )
    })

  /** Indexes one batch of the queue; whether it was empty. Call inside a write transaction. */
  const indexBatch: Effect.Effect<boolean, SqlError> = Effect.gen(function*() {
    const queued = yield* sql<{ source: Source; id: number }>`SELECT source, id FROM ctx_search_backlog LIMIT ${BATCH}`
    if (queued.length === 0) return true
    yield* indexRows("message", queued.filter((q) => q.source === "message").map((q) => q.id))
    yield* indexRows("summary", queued.filter((q) => q.source === "summary").map((q) => q.id))
    return false
  })

  /** Indexes everything queued; call inside the write transaction that queued it. */
  const indexQueued: Effect.Effect<void, SqlError> = Effect.gen(function*() {
    let empty = false
    while (!empty) empty = yield* indexBatch
  })

  /**
   * Empties the queue in transactions of one batch each (`transaction` opens one). Cheap when empty:
   * one read.
   */
  const drainQueue = (
    transaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  ): Effect.Effect<void, SqlError> =>
    Effect.gen(function*() {
      const any = yield* sql<{ n: number }>`SELECT 1 AS n FROM ctx_search_backlog LIMIT 1`
      if (any.length === 0) return
      let empty = false
      while (!empty) empty = yield* transaction(indexBatch)
    })

  return { indexQueued, drainQueue }
}
