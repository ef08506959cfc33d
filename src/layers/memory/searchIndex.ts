/**
 * The part of the search index that SQL cannot write (part of SqliteMemoryStore), queued in
 * ctx_search_backlog by the insert triggers (migrations/0010_search.sql, 0028_memory_calls_search.sql):
 * rows with CJK letters, because cutting them into letters and bigrams (domain/search/text.ts) is
 * TypeScript's job, and messages that may hold the memory tool's own calls or results, because
 * telling those blocks apart needs the message's JSON blocks (domain/search/memoryCalls.ts): they go
 * to the `memory` columns, and the rest of the message to ctx_message_search_text too.
 * `indexQueued` runs inside the transaction that inserted the rows, so a committed row is always in
 * the index or, if something else inserted it, in the queue; `drainQueue` empties the queue (the rows
 * a migration queued, on the first start after it).
 */
import { Effect, Result, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { Content } from "../../domain/message.ts"
import { MEMORY_CALL_MARK, memoryCallIds, type SearchText, searchText } from "../../domain/search/memoryCalls.ts"
import { indexColumns } from "../../domain/search/text.ts"
import type { EncodedMessage } from "./rows.ts"
import { scopeTokens, tsvectorOf } from "../../domain/search/tsvector.ts"
import { isPostgres, jsonIdsSql, placeholders } from "../sql/dialect.ts"

/** The `scope` column of a row of conversation `c` (the same expression as the migration's). */
export const scopeColumnSql = (c: string): string =>
  `'c' || ${c}.id || CASE WHEN length(CAST(${c}.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(${c}.user_id)) || '0' ELSE '' END`

/**
 * Whether message row `m` may hold a memory tool call, or results answering one (the assistant
 * message before it calls the tool): the same condition as the triggers of
 * migrations/0028_memory_calls_search.sql, never NULL. Such rows are indexed by TypeScript.
 */
export const mayHoldMemoryCallsSql = (m: string, postgres = false): string => {
  // SQLite's instr is PostgreSQL's strpos.
  const find = postgres ? "strpos" : "instr"
  return `(${m}.blocks IS NOT NULL AND (${find}(${m}.text, '${MEMORY_CALL_MARK}') > 0 OR (${m}.has_tool_results = 1
    AND coalesce(${find}((SELECT p.text FROM ctx_messages p WHERE p.conversation_id = ${m}.conversation_id AND p.seq < ${m}.seq
      AND p.role = 'assistant' ORDER BY p.seq DESC LIMIT 1), '${MEMORY_CALL_MARK}'), 0) > 0)))`
}

const BATCH = 256

const decodeContent = Schema.decodeUnknownResult(Schema.fromJsonString(Content))

/**
 * A message's searchable text, from its stored columns and the blocks of the assistant message it
 * answers. Without memory blocks it is the stored text, exactly as indexed before; blocks that do
 * not decode (a damaged row) leave the text whole too.
 */
export const messageSearchText = (text: string, blocks: string | null, answered: string | null): SearchText => {
  const whole = { body: text, memory: "" }
  if (blocks === null) return whole
  const content = decodeContent(blocks)
  if (Result.isFailure(content)) return whole
  const previous = answered === null ? undefined : decodeContent(answered)
  const ids = previous === undefined || Result.isFailure(previous) ? [] : memoryCallIds(previous.success)
  const split = searchText(content.success, ids)
  return split.memory === "" ? whole : split
}

/**
 * The `blocks` and `answered` columns read to index rows of `source` (`t`): a message's blocks, and
 * those of the assistant message its results answer, when it may hold memory tool calls or results.
 */
export const blocksColumnsSql = (source: "message" | "summary", postgres: boolean): string =>
  source === "message"
    ? `, CASE WHEN ${mayHoldMemoryCallsSql("t", postgres)} THEN t.blocks END AS blocks,
       CASE WHEN t.has_tool_results = 1 AND ${mayHoldMemoryCallsSql("t", postgres)} THEN (SELECT p.blocks FROM ctx_messages p
         WHERE p.conversation_id = t.conversation_id AND p.seq < t.seq AND p.role = 'assistant' ORDER BY p.seq DESC LIMIT 1)
       END AS answered`
    : ", NULL AS blocks, NULL AS answered"

const SOURCES = {
  message: { table: "ctx_messages", fts: "ctx_messages_search", text: "text" },
  summary: { table: "ctx_summaries", fts: "ctx_summaries_search", text: "content" }
} as const

type Source = keyof typeof SOURCES

/**
 * PostgreSQL's index (migrations/pg/0005_search.sql): every row is written by TypeScript, as a
 * `tsvector` (domain/search/tsvector.ts); the insert trigger queues every row the inserting
 * statement did not index itself.
 */
const makePgIndexRows = (sql: SqlClient) => (source: Source, ids: ReadonlyArray<number>): Effect.Effect<void, SqlError> =>
  Effect.gen(function*() {
    if (ids.length === 0) return
    const s = SOURCES[source]
    const list = jsonIdsSql(sql)
    const blocks = blocksColumnsSql(source, true)
    const rows = yield* sql.unsafe<
      { id: number; text: string; conversation_id: number; user_id: string; blocks: string | null; answered: string | null }
    >(
      `SELECT t.id, t.${s.text} AS text, c.id AS conversation_id, c.user_id${blocks}
       FROM ${s.table} t JOIN ctx_conversations c ON c.id = t.conversation_id WHERE t.id IN (${placeholders(sql, list)})`,
      [JSON.stringify(ids)]
    )
    const vectors: Array<unknown> = []
    const apart: Array<unknown> = []
    for (const r of rows) {
      const split = messageSearchText(r.text, r.blocks, r.answered)
      vectors.push(r.id, tsvectorOf(split, scopeTokens(r.conversation_id, r.user_id)))
      // PostgreSQL's text holds no NUL (a block's text may).
      if (split.memory !== "") apart.push(r.id, split.body.trim() === "" ? "" : split.body.replaceAll("\u0000", ""))
    }
    const values = (n: number, row: string) =>
      Array.from({ length: n }, (_, i) => row.replace(/\$(\d)/gu, (_m, k: string) => `$${i * 2 + Number(k)}`)).join(", ")
    if (vectors.length > 0) {
      yield* sql.unsafe(
        `INSERT INTO ${s.fts} (id, terms) VALUES ${values(vectors.length / 2, "($1, CAST($2 AS tsvector))")}
         ON CONFLICT (id) DO UPDATE SET terms = excluded.terms`,
        vectors
      )
    }
    if (apart.length > 0) {
      yield* sql.unsafe(
        `INSERT INTO ctx_message_search_text (message_id, body) VALUES ${values(apart.length / 2, "($1, $2)")}
         ON CONFLICT (message_id) DO UPDATE SET body = excluded.body`,
        apart
      )
    }
    yield* sql.unsafe(placeholders(sql, `DELETE FROM ctx_search_backlog WHERE source = ? AND id IN (${list})`), [
      source,
      JSON.stringify(ids)
    ])
  })

export const makeSearchIndex = (sql: SqlClient) => {
  const indexRows = isPostgres(sql) ? makePgIndexRows(sql) : (source: Source, ids: ReadonlyArray<number>): Effect.Effect<void, SqlError> =>
    Effect.gen(function*() {
      if (ids.length === 0) return
      const s = SOURCES[source]
      const blocks = blocksColumnsSql(source, false)
      const rows = yield* sql.unsafe<{ id: number; text: string; scope: string; blocks: string | null; answered: string | null }>(
        `SELECT t.id, t.${s.text} AS text, ${scopeColumnSql("c")} AS scope${blocks}
         FROM ${s.table} t JOIN ctx_conversations c ON c.id = t.conversation_id
         WHERE t.id IN (SELECT value FROM json_each(?))`,
        [JSON.stringify(ids)]
      )
      if (rows.length > 0) {
        const params: Array<unknown> = []
        const apart: Array<unknown> = []
        for (const r of rows) {
          const split = messageSearchText(r.text, r.blocks, r.answered)
          const text = indexColumns(split.body)
          const memory = indexColumns(split.memory)
          params.push(r.id, text.body, text.cjk, r.scope, memory.body, memory.cjk)
          if (split.memory !== "") apart.push(r.id, split.body.trim() === "" ? "" : split.body)
        }
        yield* sql.unsafe(
          `INSERT INTO ${s.fts} (rowid, body, cjk, scope, memory, memory_cjk) VALUES ${rows.map(() => "(?, ?, ?, ?, ?, ?)").join(", ")}`,
          params
        )
        if (apart.length > 0) {
          yield* sql.unsafe(
            `INSERT OR REPLACE INTO ctx_message_search_text (message_id, body) VALUES ${
              Array.from({ length: apart.length / 2 }, () => "(?, ?)").join(", ")
            }`,
            apart
          )
        }
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

/**
 * PostgreSQL: the vectors of the messages an append inserts (at seqs `firstSeq`, …), made without a
 * read, so the append stays one statement. Left out (the insert trigger queues them, and the append
 * indexes the queue): a message holding the memory tool's own calls or results, which also needs its
 * row in ctx_message_search_text, and results answering a stored message that may call the tool
 * (`lastAnswersMemory`: whether the conversation's last stored assistant message does; unknown when
 * undefined).
 */
export const inlineVectors = (
  encoded: ReadonlyArray<EncodedMessage>,
  firstSeq: number,
  conversationId: number,
  userId: string,
  lastAnswersMemory: boolean | undefined
): Array<{ readonly seq: number; readonly terms: string }> => {
  const scope = scopeTokens(conversationId, userId)
  const out: Array<{ readonly seq: number; readonly terms: string }> = []
  /** The nearest assistant message before, within the batch. */
  let assistant: EncodedMessage | undefined
  encoded.forEach((e, i) => {
    const whole: SearchText = { body: e.text, memory: "" }
    let text: SearchText | undefined = whole
    if (e.blocks !== null && (e.text.includes(MEMORY_CALL_MARK) || e.hasToolResults)) {
      const unknown = e.hasToolResults && assistant === undefined && lastAnswersMemory !== false
      const ids = e.hasToolResults && assistant !== undefined ? memoryCallIds(assistant.message.content) : []
      text = unknown || searchText(e.message.content, ids).memory !== "" ? undefined : whole
    }
    if (text !== undefined) out.push({ seq: firstSeq + i, terms: tsvectorOf(text, scope) })
    if (e.role === "assistant") assistant = e
  })
  return out
}
