/**
 * Dense retrieval's storage and fusion (part of SqliteMemoryStore; issue 25). Vectors live in
 * `ctx_vectors` (migrations/0031), one per (row, model); the embedding worker writes them, the
 * ranked search reads them. No model SDK here: vectors come in and go out as Float32Arrays.
 *
 * Fusion. With `SearchRequest.dense`, a ranked search runs the lexical search (memorySearch.ts)
 * for a pool of hits (twice the limit, 20 to 100) and a brute-force cosine scan over the scope's
 * newest SCAN_CAP vectors of the model for as many nearest rows, and fuses the two rankings by
 * reciprocal rank (k = 60, domain/search/dense.ts). Hits of the dense side only are read here (the
 * lexical search never saw them); they have no matched terms, and a `similarity`. A plan the dense
 * side cannot honour (strict mode, filters only, tool filters or excluded terms) stays lexical.
 *
 * Scan cost, measured on the 2-core machine (node:sqlite, read + cosine + sort, median of 7): 2,600
 * vectors of 256 dims 7.5 ms; 10,000 vectors of 256 / 768 / 1,536 dims 42 / 60 / 99 ms, of which
 * reading the rows is 41 / 60 / 80 ms (the keys come ordered from the covering index, the vectors by
 * rowid: a sort that carried the blobs was ~7× slower). The bound keeps one search's
 * scan at SCAN_CAP vectors (the scope's newest) whatever the scope's size; older rows are still
 * found by the lexical side. An index (HNSW, sqlite-vec) is the next step past that.
 */
import { Clock, Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { cosineBytes, normalized, reciprocalRankFusion, vectorBytes, vectorOf } from "../../domain/search/dense.ts"
import type { DenseQuery, SearchScope } from "../../domain/memory/types.ts"
import type { Role } from "../../domain/message.ts"
import type { QueryPlan, SearchPlan } from "../../domain/search/query.ts"
import { snippetAround } from "../../domain/search/snippet.ts"
import { isPostgres, jsonIdsSql, placeholders } from "../sql/dialect.ts"
import { readNeighbours } from "./memorySearch.ts"
import { StorageError } from "../../domain/storage/errors.ts"
import type {
  MessageVector,
  PendingEmbedding,
  RawHit,
  SearchRequest,
  VectorSource
} from "../../services/MemoryStore.ts"

/** At most this many vectors of a scope are scanned per search: the newest (by row id). */
export const SCAN_CAP = 10_000
/** Characters of a dense-only hit read for its snippet. */
const TEXT_CHARS = 1_000

const fail = (operation: string) => (e: unknown) =>
  new StorageError({ operation, reason: e instanceof Error ? e.message : String(e) })

/** The scope as a condition on a `conversation_id` column, with its parameters (null: no such session). */
const scopeCondition = (scope: SearchScope): readonly [string, ReadonlyArray<unknown>] => {
  switch (scope._tag) {
    case "Session":
      return ["conversation_id = (SELECT id FROM ctx_conversations WHERE session_key = ?)", [scope.sessionKey]]
    case "User":
      return ["conversation_id IN (SELECT id FROM ctx_conversations WHERE user_id = ?)", [scope.userId]]
    case "All":
      return ["1 = 1", []]
  }
}

/** Whether the dense side can serve this plan (else the search stays lexical). */
const denseServes = (plan: SearchPlan): plan is QueryPlan =>
  plan._tag === "Query" && plan.mode === "ranked" && plan.groups.length > 0 && plan.exclude.length === 0 &&
  plan.filters.tools.length === 0 && plan.filters.notTools.length === 0

const roleAllowed = (plan: QueryPlan, role: Role | undefined): boolean =>
  role === undefined ||
  ((plan.filters.roles === null || plan.filters.roles.includes(role)) && !plan.filters.notRoles.includes(role))

interface Near {
  readonly source: VectorSource
  readonly id: number
  readonly similarity: number
}

/** The vector of a row and model replaces the one stored (an upsert both databases accept). */
const REPLACE_VECTOR = `ON CONFLICT (source, row_id, model) DO UPDATE SET conversation_id = excluded.conversation_id,
  dims = excluded.dims, vector = excluded.vector, created_at = excluded.created_at`

export const makeVectors = (sql: SqlClient) => {
  const query = <A extends object>(text: string, params: ReadonlyArray<unknown>) => sql.unsafe<A>(placeholders(sql, text), [...params])
  const postgres = isPostgres(sql)

  const pendingEmbeddings = (request: {
    readonly agentId: string
    readonly model: string
    readonly source: VectorSource
    readonly afterId: number
    readonly beforeId?: number | undefined
    readonly limit: number
  }) =>
    Effect.gen(function*() {
      const text = request.source === "message"
        ? `SELECT m.id, c.session_key, substr(coalesce(s.body, m.text), 1, 20000) AS text
           FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
           LEFT JOIN ctx_message_search_text s ON s.message_id = m.id
           WHERE c.agent_id = ? AND m.id > ? AND m.id < ? AND trim(coalesce(s.body, m.text)) <> ''
             AND NOT EXISTS (SELECT 1 FROM ctx_vectors v WHERE v.source = 'message' AND v.row_id = m.id AND v.model = ?)
           ORDER BY m.id DESC LIMIT ?`
        : `SELECT t.id, c.session_key, substr(t.content, 1, 20000) AS text
           FROM ctx_summaries t JOIN ctx_conversations c ON c.id = t.conversation_id
           WHERE c.agent_id = ? AND t.id > ? AND t.id < ? AND trim(t.content) <> ''
             AND NOT EXISTS (SELECT 1 FROM ctx_vectors v WHERE v.source = 'summary' AND v.row_id = t.id AND v.model = ?)
           ORDER BY t.id DESC LIMIT ?`
      const rows = yield* query<{ id: number; session_key: string; text: string }>(
        text,
        [request.agentId, request.afterId, request.beforeId ?? Number.MAX_SAFE_INTEGER, request.model, request.limit]
      )
      return rows.map((r): PendingEmbedding => ({ source: request.source, id: r.id, sessionKey: r.session_key, text: r.text }))
    }).pipe(Effect.mapError(fail("read rows to embed")))

  /** The highest row id of a source (the worker's watermark once nothing below it is pending). */
  const ceiling = (source: VectorSource) =>
    query<{ n: number | null }>(`SELECT max(id) AS n FROM ${source === "message" ? "ctx_messages" : "ctx_summaries"}`, []).pipe(
      Effect.map((rows) => Number(rows[0]?.n ?? 0)),
      Effect.mapError(fail("read rows to embed"))
    )

  const putVectors = (
    model: string,
    vectors: ReadonlyArray<{ readonly source: VectorSource; readonly id: number; readonly vector: Float32Array }>
  ) =>
    Effect.gen(function*() {
      if (vectors.length === 0) return 0
      const now = yield* Clock.currentTimeMillis
      let stored = 0
      for (const v of vectors) {
        if (v.vector.length === 0) continue
        const table = v.source === "message" ? "ctx_messages" : "ctx_summaries"
        const rows = yield* query<{ n: number }>(
          `INSERT INTO ctx_vectors (source, row_id, model, conversation_id, dims, vector, created_at)
           SELECT CAST(? AS TEXT), id, CAST(? AS TEXT), conversation_id, CAST(? AS INTEGER), ?, CAST(? AS BIGINT) FROM ${table} WHERE id = ?
           ${REPLACE_VECTOR} RETURNING 1 AS n`,
          [v.source, model, v.vector.length, vectorBytes(v.vector), now, v.id]
        )
        stored += rows.length
      }
      return stored
    }).pipe(sql.withTransaction, Effect.mapError(fail("store vectors")))

  const hasVectors = (model: string) =>
    query<{ n: number }>("SELECT 1 AS n FROM ctx_vectors WHERE model = ? LIMIT 1", [model]).pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.mapError(fail("read vectors"))
    )

  const messageVectors = (conversationId: number, fromSeq: number, toSeq: number) =>
    query<{ seq: number; model: string; vector: Uint8Array }>(
      `SELECT m.seq, v.model, v.vector FROM ctx_messages m
       JOIN ctx_vectors v ON v.source = 'message' AND v.row_id = m.id
       WHERE m.conversation_id = ? AND m.seq BETWEEN ? AND ? ORDER BY m.seq, v.model`,
      [conversationId, fromSeq, toSeq]
    ).pipe(
      Effect.map((rows) =>
        rows.flatMap((r): Array<MessageVector> => {
          const vector = vectorOf(r.vector)
          return vector === undefined ? [] : [{ seq: r.seq, model: r.model, vector }]
        })
      ),
      Effect.mapError(fail("read vectors"))
    )

  const putMessageVectors = (conversationId: number, vectors: ReadonlyArray<MessageVector>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      let stored = 0
      for (const v of vectors) {
        if (v.vector.length === 0) continue
        const rows = yield* query<{ n: number }>(
          `INSERT INTO ctx_vectors (source, row_id, model, conversation_id, dims, vector, created_at)
           SELECT 'message', id, CAST(? AS TEXT), conversation_id, CAST(? AS INTEGER), ?, CAST(? AS BIGINT) FROM ctx_messages
           WHERE conversation_id = ? AND seq = ? ${REPLACE_VECTOR} RETURNING 1 AS n`,
          [v.model, v.vector.length, vectorBytes(v.vector), now, conversationId, v.seq]
        )
        stored += rows.length
      }
      return stored
    }).pipe(sql.withTransaction, Effect.mapError(fail("store vectors")))

  /** The `limit` rows of the scope nearest the query, among its newest SCAN_CAP vectors of the model. */
  const nearest = (scope: SearchScope, dense: DenseQuery, kinds: ReadonlyArray<VectorSource>, limit: number) =>
    Effect.gen(function*() {
      const [where, params] = scopeCondition(scope)
      // The newest keys first, from the covering index; then each vector by rowid (a sort that carried
      // the blobs cost ~7× more).
      // PostgreSQL reads the rows the index gives it in order without carrying them through a sort.
      const rows = yield* query<{ source: VectorSource; row_id: number; vector: Uint8Array }>(
        postgres
          ? `SELECT source, row_id, vector FROM ctx_vectors WHERE model = ? AND ${where} ORDER BY row_id DESC LIMIT ?`
          : `SELECT v.source, v.row_id, v.vector
             FROM (SELECT rowid AS r FROM ctx_vectors WHERE model = ? AND ${where} ORDER BY row_id DESC LIMIT ?) k
             JOIN ctx_vectors v ON v.rowid = k.r`,
        [dense.model, ...params, SCAN_CAP]
      )
      const q = normalized(dense.vector)
      const scored: Array<Near> = []
      for (const r of rows) {
        if (!kinds.includes(r.source)) continue
        const similarity = cosineBytes(q, r.vector)
        if (Number.isFinite(similarity)) scored.push({ source: r.source, id: r.row_id, similarity })
      }
      return scored.sort((a, b) => b.similarity - a.similarity || b.id - a.id).slice(0, limit)
    })

  /** Hits for rows only the dense side found (in scope, passing the plan's role filters). */
  const readHits = (plan: QueryPlan, scope: SearchScope, near: ReadonlyArray<Near>) =>
    Effect.gen(function*() {
      const list = (source: VectorSource) => JSON.stringify(near.filter((n) => n.source === source).map((n) => n.id))
      const ids = jsonIdsSql(sql)
      const [where, params] = scopeCondition(scope)
      const messages = yield* query<{
        id: number
        session_key: string
        created_at: number
        seq: number
        role: Role
        conversation_id: number
        text: string
      }>(
        `SELECT t.id, c.session_key, t.created_at, t.seq, t.role, t.conversation_id,
           substr(coalesce(s.body, t.text), 1, ${TEXT_CHARS + 1}) AS text
         FROM ctx_messages t JOIN ctx_conversations c ON c.id = t.conversation_id
         LEFT JOIN ctx_message_search_text s ON s.message_id = t.id
         WHERE t.id IN (${ids}) AND t.${where}`,
        [list("message"), ...params]
      )
      const summaries = yield* query<{
        id: number
        session_key: string
        first_seq: number
        last_seq: number
        earliest_at: number
        latest_at: number
        text: string
      }>(
        `SELECT t.id, c.session_key, t.first_seq, t.last_seq, t.earliest_at, t.latest_at,
           substr(t.content, 1, ${TEXT_CHARS + 1}) AS text
         FROM ctx_summaries t JOIN ctx_conversations c ON c.id = t.conversation_id
         WHERE t.id IN (${ids}) AND t.${where}`,
        [list("summary"), ...params]
      )
      const cut = (text: string) => snippetAround(text.length > TEXT_CHARS ? `${text.slice(0, TEXT_CHARS)}…` : text)
      const hits = new Map<string, RawHit & { readonly conversationId?: number }>()
      for (const m of messages) {
        if (!roleAllowed(plan, m.role)) continue
        hits.set(`message:${m.id}`, {
          kind: "message",
          id: m.id,
          sessionKey: m.session_key,
          snippet: cut(m.text),
          score: 0,
          createdAt: m.created_at,
          matched: [],
          seq: m.seq,
          role: m.role,
          conversationId: m.conversation_id
        })
      }
      for (const s of summaries) {
        if (plan.filters.roles !== null) continue
        hits.set(`summary:${s.id}`, {
          kind: "summary",
          id: s.id,
          sessionKey: s.session_key,
          snippet: cut(s.text),
          score: 0,
          createdAt: s.latest_at,
          matched: [],
          covers: { firstSeq: s.first_seq, lastSeq: s.last_seq, earliestAt: s.earliest_at, latestAt: s.latest_at }
        })
      }
      return hits
    })

  /**
   * The search with dense fusion when the request carries a query vector and the plan allows it;
   * `lexical` is memorySearch's search, called once (with a larger limit when fusing).
   */
  const fused = (
    lexical: (plan: SearchPlan, scope: SearchScope, request: SearchRequest) => Effect.Effect<ReadonlyArray<RawHit>, StorageError>
  ) =>
  (plan: SearchPlan, scope: SearchScope, request: SearchRequest): Effect.Effect<ReadonlyArray<RawHit>, StorageError> => {
    const dense = request.dense
    if (dense === undefined || !denseServes(plan) || request.limit <= 0) return lexical(plan, scope, request)
    return Effect.gen(function*() {
      const pool = Math.min(100, Math.max(20, request.limit * 2))
      const lexicalHits = yield* lexical(plan, scope, { ...request, limit: pool })
      const kinds = plan.filters.kinds.filter((k): k is VectorSource => k === "message" || k === "summary")
      const near = yield* nearest(scope, dense, kinds, pool).pipe(Effect.mapError(fail("dense search")))
      const key = (source: string, id: number) => `${source}:${id}`
      const similarity = new Map(near.map((n) => [key(n.source, n.id), n.similarity]))
      const byKey = new Map(lexicalHits.map((h) => [key(h.kind, h.id), h]))
      const ranking = reciprocalRankFusion([lexicalHits.map((h) => key(h.kind, h.id)), near.map((n) => key(n.source, n.id))])
      const top = ranking.slice(0, request.limit)
      const missing = near.filter((n) => !byKey.has(key(n.source, n.id)) && top.some((t) => t.key === key(n.source, n.id)))
      const denseOnly = missing.length === 0 ? new Map() : yield* readHits(plan, scope, missing).pipe(Effect.mapError(fail("dense search")))
      const context = yield* readNeighbours(
        sql,
        Array.from(denseOnly.values()).flatMap((h) =>
          h.kind === "message" && h.conversationId !== undefined && h.seq !== undefined
            ? [{ id: h.id, conversationId: h.conversationId, seq: h.seq }]
            : []
        ),
        request.context
      ).pipe(Effect.mapError(fail("dense search")))
      return top.flatMap(({ key: k, score }): Array<RawHit> => {
        const sim = similarity.get(k)
        const lexicalHit = byKey.get(k)
        if (lexicalHit !== undefined) return [{ ...lexicalHit, score, ...(sim === undefined ? {} : { similarity: sim }) }]
        const found = denseOnly.get(k)
        if (found === undefined) return []
        const { conversationId: _, ...hit } = found
        const around = context.get(found.id)
        return [{ ...hit, score, similarity: sim, ...(found.kind === "message" && around !== undefined ? { context: around } : {}) }]
      })
    })
  }

  return { pendingEmbeddings, ceiling, putVectors, hasVectors, messageVectors, putMessageVectors, nearest, fused }
}
