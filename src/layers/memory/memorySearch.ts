/**
 * Full-text search over messages and summaries (part of SqliteMemoryStore). The plan comes from
 * `planSearch`, which has already reduced user input to safe, quoted FTS5 expressions; scope is
 * applied through the owning conversation, so a user scope can only see that user's rows.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { StorageError } from "../../domain/storage/errors.ts"
import type { SearchScope } from "../../domain/memory/types.ts"
import { makeSnippet, type SearchPlan } from "../../domain/search/query.ts"
import { MARK_CLOSE, MARK_OPEN, snippetAround } from "../../domain/search/snippet.ts"
import type { RawHit } from "../../services/MemoryStore.ts"

interface Source {
  readonly kind: "message" | "summary"
  readonly table: string
  readonly porter: string
  readonly trigram: string
  readonly column: string
  /** When the hit happened: a message's time, or the end of a summary's time range. */
  readonly time: string
}

const SOURCES: ReadonlyArray<Source> = [
  { kind: "message", table: "ctx_messages", porter: "ctx_messages_fts", trigram: "ctx_messages_cjk", column: "text", time: "created_at" },
  { kind: "summary", table: "ctx_summaries", porter: "ctx_summaries_fts", trigram: "ctx_summaries_cjk", column: "content", time: "latest_at" }
]

const scopeClause = (scope: SearchScope): readonly [string, ReadonlyArray<unknown>] => {
  switch (scope._tag) {
    case "Session":
      return ["c.session_key = ?", [scope.sessionKey]]
    case "User":
      return ["c.user_id = ?", [scope.userId]]
    case "All":
      return ["1 = 1", []]
  }
}

interface Row {
  readonly id: number
  readonly session_key: string
  readonly created_at: number
  readonly snippet: string
  readonly score: number
}

export const makeSearch = (sql: SqlClient) =>
(plan: SearchPlan, scope: SearchScope, limit: number): Effect.Effect<ReadonlyArray<RawHit>, StorageError> => {
  if (plan._tag === "Empty" || limit <= 0) return Effect.succeed([])
  const [scopeSql, scopeParams] = scopeClause(scope)
  const one = (src: Source): Effect.Effect<ReadonlyArray<RawHit>, StorageError> => {
    const col = `t.${src.column}`
    const clauses = plan._tag === "Cjk" ? plan.substrings : []
    // Each clause: one of its alternatives occurs (case-insensitively for Latin letters).
    const filterSql = clauses
      .map((alts) => ` AND (${alts.map(() => `instr(lower(${col}), ?) > 0`).join(" OR ")})`)
      .join("")
    const filterParams = clauses.flat()
    let query: Effect.Effect<ReadonlyArray<Row>, unknown>
    if (plan._tag === "Latin" || plan.match !== null) {
      const fts = plan._tag === "Latin" ? src.porter : src.trigram
      const match = plan._tag === "Latin" ? plan.match : plan.match ?? ""
      // The whole text with its matches marked, cut around the first match here (not FTS5's
      // snippet(), which can end right after the match: see domain/search/snippet.ts). SQLite
      // computes it for the rows within the limit only, after sorting.
      query = sql.unsafe<Row>(
        `SELECT t.id, c.session_key, t.${src.time} AS created_at,
           highlight(${fts}, 0, ?, ?) AS snippet, -bm25(${fts}) AS score
         FROM ${fts} f JOIN ${src.table} t ON t.id = f.rowid JOIN ctx_conversations c ON c.id = t.conversation_id
         WHERE ${fts} MATCH ? AND ${scopeSql}${filterSql}
         ORDER BY score DESC, t.id DESC LIMIT ?`,
        [MARK_OPEN, MARK_CLOSE, match, ...scopeParams, ...filterParams, limit]
      ).pipe(Effect.map((rows) => rows.map((r) => ({ ...r, snippet: snippetAround(r.snippet) }))))
    } else {
      // Only short terms (e.g. two-character Chinese words): scan the scope's CJK rows, rank by
      // number of occurrences, then recency.
      const needles = clauses.flat()
      const occurrences = needles
        .map(() => `(length(${col}) - length(replace(lower(${col}), ?, ''))) / max(length(?), 1)`)
        .join(" + ")
      query = sql.unsafe<Row & { readonly body: string }>(
        `SELECT t.id, c.session_key, t.${src.time} AS created_at, ${col} AS body, '' AS snippet, (${occurrences}) AS score
         FROM ${src.table} t JOIN ctx_conversations c ON c.id = t.conversation_id
         WHERE t.has_cjk = 1 AND ${scopeSql}${filterSql}
         ORDER BY score DESC, t.id DESC LIMIT ?`,
        [...needles.flatMap((s) => [s, s]), ...scopeParams, ...filterParams, limit]
      ).pipe(Effect.map((rows) => rows.map((r) => ({ ...r, snippet: makeSnippet(r.body, needles) }))))
    }
    return query.pipe(
      Effect.map((rows) =>
        rows.map((r): RawHit => ({
          kind: src.kind,
          id: r.id,
          sessionKey: r.session_key,
          snippet: r.snippet.replace(/\s+/g, " ").trim(),
          score: Number(r.score),
          createdAt: r.created_at
        }))
      ),
      Effect.mapError((e) => new StorageError({ operation: "search", reason: e instanceof Error ? e.message : String(e) }))
    )
  }
  return Effect.all(SOURCES.map(one)).pipe(
    Effect.map((lists) =>
      lists.flat().sort((a, b) => b.score - a.score || b.createdAt - a.createdAt || b.id - a.id).slice(0, limit)
    )
  )
}
