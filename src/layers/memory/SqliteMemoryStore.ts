/**
 * MemoryStore on SQLite (see migrations/0001_memory.sql). Writes that read-then-write run in
 * `BEGIN IMMEDIATE` transactions so two processes (gateway and CLI) never interleave on a session.
 *
 * Hot paths (items, append) map rows by hand instead of through Schema: the columns come from our
 * own CHECK-constrained schema, and Schema decoding would dominate reading 100k items.
 * Message content is still decoded with Schema, so a damaged row is an error, not a wrong answer.
 */
import { Clock, Effect, Layer, Option, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { InvalidInput, SessionNotFound, StaleContext } from "../../domain/memory/errors.ts"
import { StorageError } from "../../domain/storage/errors.ts"
import { CurrentFence, type Fence, FENCED_REASON, FENCED_SQLSTATE } from "../../domain/cluster/fence.ts"
import type { SessionRef } from "../../domain/memory/session.ts"
import type { SearchScope } from "../../domain/memory/types.ts"
import { continuesUnit, estimateMessageTokens, hasCjk, type NewMessage, type Role } from "../../domain/message.ts"
import { MEMORY_CALL_MARK } from "../../domain/search/memoryCalls.ts"
import type { SearchPlan } from "../../domain/search/query.ts"
import { type Conversation, MemoryStore, type NewSummary, type SearchRequest, type StoredSummary } from "../../services/MemoryStore.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import { isPostgres, jsonValues } from "../sql/dialect.ts"
import { makeBrowse } from "./browse.ts"
import { makeVectors } from "./denseSearch.ts"
import { makeSearch } from "./memorySearch.ts"
import { makeRetireUser } from "./retireUser.ts"
import { inlineVectors, makeSearchIndex } from "./searchIndex.ts"
import {
  decodeConversation,
  decodeConversationRows,
  type EncodedMessage,
  encodeMessage,
  INSERT_BATCH,
  type MessageRow,
  storageError,
  type SummaryRow,
  toItem,
  toStoredMessages,
  toSummary
} from "./rows.ts"

interface LastMessage {
  readonly seq: number
  readonly role: Role
  readonly has_tool_results: number
}

/**
 * PostgreSQL: a conversation's last stored message as this process wrote it, and what an append after
 * it needs to know (whose it is, whether its last assistant message may call the memory tool).
 */
interface Tail {
  readonly seq: number
  readonly role: Role
  readonly hasToolResults: boolean
  readonly answersMemory: boolean
  readonly userId: string
}

/** The search index of each source (SQLite's FTS5 tables, PostgreSQL's tsvector tables: same names). */
const SEARCH_SOURCES = [["ctx_messages", "message", "ctx_messages_search"], ["ctx_summaries", "summary", "ctx_summaries_search"]] as const

/** Imported messages from which an import on PostgreSQL gathers the tables' statistics at its end. */
const ANALYZE_AFTER = 1_000
/** Items `itemsNewest` reads the content of, at most (the newest of the page within its tokens). */
export const CONTENT_ITEMS = 64

/** A write refused by the session's fence. */
const fenced = new StorageError({ operation: "write to the conversation", reason: FENCED_REASON })

/** Whether a driver error is the fence's refusal (anna_append_fenced's SQLSTATE). */
const isFenced = (e: unknown): boolean => {
  for (let x: unknown = e, depth = 0; x !== null && typeof x === "object" && depth < 6; depth++) {
    if ((x as { code?: unknown }).code === FENCED_SQLSTATE) return true
    x = (x as { cause?: unknown }).cause
  }
  return false
}

/** Conversation ids never change once created; the cache is bounded so a long-lived gateway stays small. */
const CACHE_LIMIT = 10_000

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const postgres = isPostgres(sql)
  const locked = Sqlite.immediate(sql)
  /**
   * A write under the write lock; on a cluster, inside a session's turn (CurrentFence), refused when
   * another node has taken the session since (src/domain/cluster/fence.ts).
   */
  const immediate = <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.flatMap(Effect.service(CurrentFence), (fence) =>
      fence === undefined || !postgres
        ? locked(self)
        : locked(Effect.andThen(
          sql<{ ok: number }>`SELECT 1 AS ok FROM session_fences WHERE entity_id = ${fence.entityId} AND epoch = ${fence.epoch}`.pipe(
            Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(fenced) : Effect.void)
          ),
          self
        )))
  const searchIndex = makeSearchIndex(sql)
  const ids = (list: ReadonlyArray<number>) => jsonValues(sql, JSON.stringify(list), "bigint")
  /** Multi-row INSERT (nothing for no rows); `returning` adds a RETURNING clause. */
  const insertRows = <A extends object = never>(
    table: string,
    rows: ReadonlyArray<Record<string, unknown>>,
    returning?: string
  ): Effect.Effect<ReadonlyArray<A>, SqlError> => {
    const [head, ...rest] = rows
    if (head === undefined) return Effect.succeed([])
    return returning === undefined
      ? sql<A>`INSERT INTO ${sql(table)} ${sql.insert([head, ...rest])}`
      : sql<A>`INSERT INTO ${sql(table)} ${sql.insert([head, ...rest])} RETURNING ${sql.literal(returning)}`
  }
  /** A conversation's last message, as appending reads it (none for an empty conversation). */
  const lastMessage = (conversationId: number) =>
    sql<LastMessage>`SELECT seq, role, has_tool_results
      FROM ctx_messages WHERE conversation_id = ${conversationId} ORDER BY seq DESC LIMIT 1`
  const cache = new Map<string, Conversation>()
  /** The session key each cached id stood for: SQLite may give a deleted conversation's id to a new one. */
  const keyById = new Map<number, string>()
  /** PostgreSQL: each cached conversation's tail, as the last append here left it (appendAfter). */
  const tails = new Map<number, Tail>()
  const forget = (sessionKey: string) => {
    const c = cache.get(sessionKey)
    if (c !== undefined && keyById.get(c.id) === sessionKey) keyById.delete(c.id)
    if (c !== undefined) tails.delete(c.id)
    cache.delete(sessionKey)
  }
  const remember = (c: Conversation) => {
    if (cache.size >= CACHE_LIMIT) {
      const oldest = cache.keys().next()
      if (oldest.done !== true) forget(oldest.value)
    }
    cache.set(c.sessionKey, c)
    keyById.set(c.id, c.sessionKey)
    return c
  }

  const selectConversation = (sessionKey: string) =>
    sql`SELECT * FROM ctx_conversations WHERE session_key = ${sessionKey}`.pipe(
      Effect.flatMap(decodeConversationRows),
      Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), decodeConversation)),
      Effect.mapError(storageError("read conversation"))
    )

  const findConversation = Effect.fn("MemoryStore.findConversation")(function*(sessionKey: string) {
    const hit = cache.get(sessionKey)
    if (hit !== undefined) return Option.some(hit)
    const found = yield* selectConversation(sessionKey)
    return Option.isSome(found) ? Option.some(remember(found.value)) : found
  })

  const ensureConversation = Effect.fn("MemoryStore.ensureConversation")(function*(session: SessionRef) {
    const found = yield* findConversation(session.key)
    if (Option.isSome(found)) return found.value
    const now = yield* Clock.currentTimeMillis
    yield* sql`INSERT INTO ctx_conversations (session_key, agent_id, user_id, created_at, updated_at)
      VALUES (${session.key}, ${session.agentId}, ${session.userId}, ${now}, ${now})
      ON CONFLICT (session_key) DO NOTHING`.pipe(Effect.mapError(storageError("create conversation")))
    const created = yield* selectConversation(session.key)
    if (Option.isNone(created)) {
      return yield* new StorageError({ operation: "create conversation", reason: "the row vanished after insert" })
    }
    return remember(created.value)
  })

  const loadConversation = Effect.fn("MemoryStore.loadConversation")(function*(sessionKey: string) {
    const found = yield* selectConversation(sessionKey)
    if (Option.isNone(found)) {
      // Deleted, or moved away with its removed user, by another process: the cache must not keep it.
      forget(sessionKey)
      return yield* new SessionNotFound({ sessionKey })
    }
    return remember(found.value)
  })

  const getConversation = Effect.fn("MemoryStore.getConversation")(function*(sessionKey: string) {
    const found = yield* findConversation(sessionKey)
    if (Option.isNone(found)) return yield* new SessionNotFound({ sessionKey })
    return found.value
  })

  const listConversations = Effect.fn("MemoryStore.listConversations")(function*(filter: {
    readonly agentId?: string | undefined
    readonly userId?: string | undefined
    readonly limit?: number | undefined
  }) {
    const rows = yield* sql<{ readonly messages: number }>`SELECT c.*,
        coalesce((SELECT max(seq) FROM ctx_messages m WHERE m.conversation_id = c.id), 0) AS messages
      FROM ctx_conversations c
      WHERE (CAST(${filter.agentId ?? null} AS TEXT) IS NULL OR c.agent_id = ${filter.agentId ?? null})
        AND (CAST(${filter.userId ?? null} AS TEXT) IS NULL OR c.user_id = ${filter.userId ?? null})
      ORDER BY c.updated_at DESC, c.id DESC ${filter.limit === undefined ? sql`` : sql`LIMIT ${filter.limit}`}`.pipe(
      Effect.mapError(storageError("list conversations"))
    )
    const convs = yield* decodeConversationRows(rows).pipe(Effect.mapError(storageError("list conversations")))
    return convs.map((c, i) => ({ ...decodeConversation(c), messages: rows[i]?.messages ?? 0 }))
  })

  const saveInfo = Effect.fn("MemoryStore.saveInfo")(function*(conversationId: number, info: Readonly<Record<string, unknown>>) {
    const now = yield* Clock.currentTimeMillis
    yield* sql`UPDATE ctx_conversations SET info = ${JSON.stringify(info)}, updated_at = ${now} WHERE id = ${conversationId}`
  }, Effect.mapError(storageError("save session info")))

  const setReviewedSeq = Effect.fn("MemoryStore.setReviewedSeq")(function*(conversationId: number, seq: number) {
    yield* sql`UPDATE ctx_conversations SET reviewed_seq = ${seq} WHERE id = ${conversationId} AND reviewed_seq < ${seq}`
  }, Effect.mapError(storageError("mark reviewed")))

  /**
   * Inserts encoded messages after the conversation's last one, and their live-context items; call
   * inside a write transaction. Few, large statements on purpose: SQLite opens a statement savepoint
   * for each multi-row INSERT into these tables (constraints, triggers, foreign keys), and FTS5 writes
   * its pending terms to disk as a new index segment at every savepoint, so every statement costs a
   * segment (and the merges it brings) whatever its size. So the messages go in INSERT_BATCH rows at
   * a time, then all their items in one INSERT … SELECT (an item copies its message's id, seq, tokens
   * and unit flag): one flush per call of up to INSERT_BATCH messages, where a statement per 500
   * messages and another per 500 items made two per 1,000 (BENCHMARKS.md, 2026-11-25).
   *
   * No generator (Effect.gen) here or in the import's per-batch step: V8 keeps whatever a generator
   * object references alive through minor collections until the next full one, so a batch held by
   * one survived and was promoted, growing the young generation to its maximum (measured: about
   * 60 MiB of peak RSS in `anna memory import`).
   */
  const insertEncoded = (
    conversationId: number,
    encoded: ReadonlyArray<EncodedMessage>,
    now: number,
    known?: ReadonlyArray<LastMessage>,
    owner?: { readonly userId: string; readonly lastAnswersMemory?: boolean | undefined }
  ) =>
    (known === undefined ? lastMessage(conversationId) : Effect.succeed(known)).pipe(
      Effect.flatMap((last) => {
        let prev = last[0] === undefined ? undefined : { role: last[0].role, hasToolResults: last[0].has_tool_results === 1 }
        const firstSeq = (last[0]?.seq ?? 0) + 1
        const lastSeq = firstSeq + encoded.length - 1
        if (encoded.length === 0) return Effect.succeed({ firstSeq, lastSeq })
        const starts = Array.from({ length: Math.ceil(encoded.length / INSERT_BATCH) }, (_, i) => i * INSERT_BATCH)
        const rowsFrom = (start: number) =>
          encoded.slice(start, start + INSERT_BATCH).map((e, i) => {
              const cont = e.hasToolResults && continuesUnit(e.message, prev)
              prev = { role: e.role, hasToolResults: e.hasToolResults }
              return {
                conversation_id: conversationId,
                seq: firstSeq + start + i,
                role: e.role,
                blocks: e.blocks,
                text: e.text,
                token_count: e.tokens,
                has_tool_results: e.hasToolResults ? 1 : 0,
                continues_unit: cont ? 1 : 0,
                has_cjk: e.hasCjk ? 1 : 0,
                created_at: e.createdAt
              }
            })
        const [head, ...more] = rowsFrom(0)
        if (postgres && head !== undefined && encoded.length <= INSERT_BATCH) {
          // PostgreSQL: the messages, their items, their search vectors and the conversation's time in
          // one statement (each statement is a round trip there; a turn's append was eight of them).
          // A message whose vector cannot be made here is queued by the insert trigger and indexed next.
          const vectors = owner === undefined ? [] : inlineVectors(encoded, firstSeq, conversationId, owner.userId, owner.lastAnswersMemory)
          return sql`WITH m AS (INSERT INTO ctx_messages ${sql.insert([head, ...more])} RETURNING id, seq, token_count, continues_unit),
              i AS (INSERT INTO ctx_items (conversation_id, position, message_id, summary_id, tokens, continues_unit, depth)
                SELECT ${conversationId}, seq, id, NULL, token_count, continues_unit, -1 FROM m),
              s AS (INSERT INTO ctx_messages_search (id, terms)
                SELECT m.id, CAST(v.terms AS tsvector) FROM m JOIN json_to_recordset(CAST(${JSON.stringify(vectors)} AS json))
                  AS v(seq bigint, terms text) ON v.seq = m.seq)
            UPDATE ctx_conversations SET updated_at = ${now} WHERE id = ${conversationId}`.pipe(
            Effect.andThen(vectors.length < encoded.length ? searchIndex.indexQueued : Effect.void),
            Effect.as({ firstSeq, lastSeq })
          )
        }
        // The first batch's rows are made already (making them moves `prev` on).
        const first = head === undefined ? [] : [head, ...more]
        const insertFrom = (start: number) => Effect.suspend(() => insertRows("ctx_messages", start === 0 ? first : rowsFrom(start)))
        return Effect.forEach(starts, insertFrom, { discard: true }).pipe(
          Effect.andThen(sql`INSERT INTO ctx_items (conversation_id, position, message_id, summary_id, tokens, continues_unit, depth)
            SELECT conversation_id, seq, id, NULL, token_count, continues_unit, -1 FROM ctx_messages
            WHERE conversation_id = ${conversationId} AND seq BETWEEN ${firstSeq} AND ${lastSeq} ORDER BY seq`),
          // Rows with CJK letters were queued by the insert trigger: index them in this transaction.
          Effect.andThen(searchIndex.indexQueued),
          Effect.andThen(sql`UPDATE ctx_conversations SET updated_at = ${now} WHERE id = ${conversationId}`),
          Effect.as({ firstSeq, lastSeq })
        )
      })
    )

  /** Encodes for storage; the first message that cannot be stored fails (`offset` numbers it in a longer input). */
  const encodeAll = (messages: ReadonlyArray<NewMessage>, now: number, offset = 0) => {
    const encoded: Array<EncodedMessage> = []
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]
      if (m === undefined) continue
      const e = encodeMessage(m, now, offset + i)
      if (e instanceof InvalidInput) return e
      encoded.push(e)
    }
    return encoded
  }

  const appendMessages = Effect.fn("MemoryStore.appendMessages")(function*(
    conversationId: number,
    messages: ReadonlyArray<NewMessage>
  ) {
    if (messages.length === 0) return { firstSeq: 0, lastSeq: 0 }
    const now = yield* Clock.currentTimeMillis
    const encoded = encodeAll(messages, now)
    if (encoded instanceof InvalidInput) return yield* encoded
    if (!postgres) return (yield* appendLocked(conversationId, encoded, now)).range
    // PostgreSQL: one round trip after a tail this process wrote, else the locked path (which learns the tail).
    const tail = tails.get(conversationId)
    const sessionKey = keyById.get(conversationId)
    tails.delete(conversationId)
    const fence = yield* CurrentFence
    const fast = tail === undefined || sessionKey === undefined ? undefined : yield* appendAfter(conversationId, sessionKey, tail, encoded, now, fence)
    const { range, before } = fast !== undefined && tail !== undefined
      ? { range: fast, before: tail }
      : yield* appendLocked(conversationId, encoded, now)
    if (before !== undefined && keyById.has(conversationId)) tails.set(conversationId, tailAfter(encoded, range.lastSeq, before))
    return range
  })

  /**
   * PostgreSQL: an append in one round trip (migrations/pg/0008_append_function.sql), made from the
   * conversation's tail as this process last wrote it; undefined when the function found the
   * conversation changed since (another process appended, deleted or moved it) and wrote nothing, or
   * when the append needs the locked path (vectors that only the search queue can make, timestamps
   * that are not whole milliseconds, more rows than one statement takes).
   */
  const appendAfter = (
    conversationId: number,
    sessionKey: string,
    tail: Tail,
    encoded: ReadonlyArray<EncodedMessage>,
    now: number,
    fence: Fence | undefined
  ) =>
    Effect.suspend(() => {
      const firstSeq = tail.seq + 1
      const vectors = inlineVectors(encoded, firstSeq, conversationId, tail.userId, tail.answersMemory)
      if (vectors.length < encoded.length || encoded.length > INSERT_BATCH || !encoded.every((e) => Number.isSafeInteger(e.createdAt))) {
        return Effect.succeed(undefined)
      }
      let prev: { readonly role: Role; readonly hasToolResults: boolean } = tail
      const continues = encoded.map((e) => {
        const cont = e.hasToolResults && continuesUnit(e.message, prev)
        prev = e
        return cont ? 1 : 0
      })
      // Every number of an int8 array as a bigint: the driver types a small number int4 and refuses mixed arrays.
      const int8 = (ns: ReadonlyArray<number>) => ns.map((n) => BigInt(n))
      const call = fence === undefined
        ? sql`anna_append_messages(`
        : sql`anna_append_fenced(${fence.entityId}, ${BigInt(fence.epoch)}, `
      return sql<{ appended: boolean }>`SELECT ${call}
          ${BigInt(conversationId)}, ${sessionKey}, ${tail.userId}, ${BigInt(tail.seq)}, ${BigInt(now)},
          ${int8(encoded.map((_, i) => firstSeq + i))}, ${encoded.map((e) => e.role)}, ${encoded.map((e) => e.blocks ?? "")},
          ${encoded.map((e) => e.text)}, ${int8(encoded.map((e) => e.tokens))}, ${encoded.map((e) => (e.hasToolResults ? 1 : 0))},
          ${continues}, ${encoded.map((e) => (e.hasCjk ? 1 : 0))}, ${int8(encoded.map((e) => e.createdAt))},
          ${int8(vectors.map((v) => v.seq))}, ${vectors.map((v) => v.terms)}) AS appended`.pipe(
        Effect.map((rows) => (rows[0]?.appended === true ? { firstSeq, lastSeq: firstSeq + encoded.length - 1 } : undefined)),
        Effect.mapError((e) => (isFenced(e) ? fenced : storageError("append messages")(e)))
      )
    })

  /** The tail after `encoded` was stored up to `lastSeq`, after what was known `before` it. */
  const tailAfter = (
    encoded: ReadonlyArray<EncodedMessage>,
    lastSeq: number,
    before: { readonly userId: string; readonly answersMemory: boolean }
  ): Tail => {
    const last = encoded[encoded.length - 1]
    const assistant = encoded.findLast((e) => e.role === "assistant")
    return {
      seq: lastSeq,
      role: last?.role ?? "user",
      hasToolResults: last?.hasToolResults ?? false,
      // As the locked path reads it: whether the last assistant message's text carries the memory tool's call mark.
      answersMemory: assistant === undefined ? before.answersMemory : assistant.text.includes(MEMORY_CALL_MARK),
      userId: before.userId
    }
  }

  /** The append under the write lock: reads the conversation and its last message, then writes after it. */
  const appendLocked = (conversationId: number, encoded: ReadonlyArray<EncodedMessage>, now: number) =>
    immediate(Effect.gen(function*() {
      // Another process may have deleted the session (`anna memory delete`) since its id was cached,
      // and SQLite may even have given that id to a new session: never append into someone else's.
      const expected = keyById.get(conversationId)
      // The session's key and its last message, in one read.
      // On PostgreSQL also whether the last assistant message may call the memory tool (inlineVectors).
      const answers = postgres
        ? sql`, (SELECT strpos(a.text, ${MEMORY_CALL_MARK}) > 0 FROM ctx_messages a
            WHERE a.conversation_id = c.id AND a.role = 'assistant' ORDER BY a.seq DESC LIMIT 1) AS answers_memory`
        : sql``
      const row = yield* sql<{ session_key: string; user_id: string; answers_memory?: boolean | null } & Partial<LastMessage>>`SELECT
          c.session_key, c.user_id, m.seq, m.role, m.has_tool_results${answers}
        FROM ctx_conversations c LEFT JOIN (SELECT seq, role, has_tool_results FROM ctx_messages
          WHERE conversation_id = ${conversationId} ORDER BY seq DESC LIMIT 1) m ON 1 = 1
        WHERE c.id = ${conversationId}`
      const actual = row[0]?.session_key
      if (actual === undefined || (expected !== undefined && actual !== expected)) {
        if (expected !== undefined) forget(expected)
        return yield* new StorageError({
          operation: "append messages",
          reason: "the session was deleted meanwhile; the next message starts it afresh"
        })
      }
      const r = row[0]
      const last: ReadonlyArray<LastMessage> = r?.seq === undefined || r.seq === null || r.role === undefined || r.has_tool_results === undefined
        ? []
        : [{ seq: r.seq, role: r.role, has_tool_results: r.has_tool_results }]
      const owner = r === undefined ? undefined : { userId: r.user_id, lastAnswersMemory: r.answers_memory === null ? false : r.answers_memory }
      const range = yield* insertEncoded(conversationId, encoded, now, last, owner)
      const answersMemory = owner?.lastAnswersMemory
      return { range, before: owner === undefined || answersMemory === undefined ? undefined : { userId: owner.userId, answersMemory } }
    })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storageError("append messages")(e))))

  const importMessages = Effect.fn("MemoryStore.importMessages")(function*<E>(
    session: SessionRef,
    batches: Stream.Stream<ReadonlyArray<NewMessage>, E>,
    options: { readonly append: boolean; readonly onBatch: (imported: number) => Effect.Effect<void> }
  ) {
    const now = yield* Clock.currentTimeMillis
    const result = yield* immediate(Effect.gen(function*() {
      // The conversation is created inside the transaction too: a crash leaves no empty session.
      yield* sql`INSERT INTO ctx_conversations (session_key, agent_id, user_id, created_at, updated_at)
        VALUES (${session.key}, ${session.agentId}, ${session.userId}, ${now}, ${now})
        ON CONFLICT (session_key) DO NOTHING`
      const found = yield* sql<{ id: number; user_id: string; messages: number }>`SELECT c.id, c.user_id,
          coalesce((SELECT max(seq) FROM ctx_messages m WHERE m.conversation_id = c.id), 0) AS messages
        FROM ctx_conversations c WHERE c.session_key = ${session.key}`
      const conversation = found[0]
      if (conversation === undefined) return yield* Effect.die(new Error("importMessages: the conversation row vanished"))
      if (conversation.messages > 0 && !options.append) {
        return yield* new InvalidInput({
          reason: `session ${session.key} already has ${conversation.messages} messages; pass --append to add these after them`
        })
      }
      let imported = 0
      yield* Stream.runForEach(batches, (batch) =>
        Effect.suspend((): Effect.Effect<void, SqlError | InvalidInput> => {
          const encoded = encodeAll(batch, now, imported)
          if (encoded instanceof InvalidInput) return Effect.fail(encoded)
          return insertEncoded(conversation.id, encoded, now, undefined, { userId: conversation.user_id }).pipe(
            Effect.andThen(Effect.suspend(() => {
              imported += encoded.length
              return options.onBatch(imported)
            }))
          )
        }))
      return { firstSeq: conversation.messages + 1, lastSeq: conversation.messages + imported, imported }
    })).pipe(Effect.catchIf(isSqlError, (e) => Effect.fail(storageError("import messages")(e))))
    forget(session.key)
    // PostgreSQL plans by statistics its autovacuum gathers a minute or so later: until then, tables
    // it last saw empty are planned as empty (`anna memory verify` right after a 60,000-message import
    // into a new database took 8.5 minutes of nested loops). A large import gathers them itself.
    if (postgres && result.imported >= ANALYZE_AFTER) {
      yield* sql`ANALYZE ctx_conversations, ctx_messages, ctx_items, ctx_messages_search, ctx_search_counts, ctx_search_backlog`.pipe(
        Effect.catchIf(isSqlError, (e) => Effect.logWarning(`memory import: statistics not gathered (autovacuum will): ${e.message}`))
      )
    }
    return result
  })

  const deleteConversation = Effect.fn("MemoryStore.deleteConversation")(function*(sessionKey: string) {
    const result = yield* immediate(Effect.gen(function*() {
      const found = yield* sql<{ id: number; messages: number; summaries: number }>`SELECT c.id,
          (SELECT count(*) FROM ctx_messages m WHERE m.conversation_id = c.id) AS messages,
          (SELECT count(*) FROM ctx_summaries s WHERE s.conversation_id = c.id) AS summaries
        FROM ctx_conversations c WHERE c.session_key = ${sessionKey}`
      const c = found[0]
      if (c === undefined) return yield* new SessionNotFound({ sessionKey })
      // The mark that lets the DELETE trigger pass (migrations/0006); it goes with the row below.
      yield* sql`UPDATE ctx_conversations SET deleting = 1 WHERE id = ${c.id}`
      yield* sql`DELETE FROM ctx_items WHERE conversation_id = ${c.id}`
      yield* sql`DELETE FROM ctx_summary_parents WHERE condensed_id IN (SELECT id FROM ctx_summaries WHERE conversation_id = ${c.id})`
      yield* sql`DELETE FROM ctx_summary_messages WHERE summary_id IN (SELECT id FROM ctx_summaries WHERE conversation_id = ${c.id})`
      yield* sql`DELETE FROM ctx_summaries WHERE conversation_id = ${c.id}`
      yield* sql`DELETE FROM ctx_messages WHERE conversation_id = ${c.id}`
      yield* sql`DELETE FROM ctx_conversations WHERE id = ${c.id}`
      return { sessionKey, messages: c.messages, summaries: c.summaries }
    })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storageError("delete session")(e))))
    forget(sessionKey)
    return result
  })

  // `text` only where it is the content (blocks NULL): for a message with blocks it is derived search
  // text, often as long as the blocks, and SQLite then never reads it (nor its overflow pages).
  const messageColumns = sql`id, seq, role, blocks, CASE WHEN blocks IS NULL THEN text ELSE '' END AS text, token_count, created_at`
  const messagesByIds = Effect.fn("MemoryStore.messagesByIds")(function*(list: ReadonlyArray<number>) {
    if (list.length === 0) return []
    const rows = yield* sql<MessageRow>`SELECT ${messageColumns} FROM ctx_messages
      WHERE id IN (${ids(list)}) ORDER BY conversation_id, seq`.pipe(
      Effect.mapError(storageError("read messages"))
    )
    return yield* toStoredMessages(rows)
  })

  const messagesBySeq = Effect.fn("MemoryStore.messagesBySeq")(function*(conversationId: number, fromSeq: number, limit: number) {
    const rows = yield* sql<MessageRow>`SELECT ${messageColumns} FROM ctx_messages
      WHERE conversation_id = ${conversationId} AND seq >= ${fromSeq} ORDER BY seq ${limit < 0 ? sql`` : sql`LIMIT ${limit}`}`.pipe(
      Effect.mapError(storageError("read messages"))
    )
    return yield* toStoredMessages(rows)
  })

  const messageMetas = Effect.fn("MemoryStore.messageMetas")(function*(conversationId: number) {
    const rows = yield* sql`SELECT seq, id, NULL, token_count, continues_unit, -1 FROM ctx_messages
      WHERE conversation_id = ${conversationId} ORDER BY seq`.values
    return rows.map(toItem)
  }, Effect.mapError(storageError("read messages")))

  const messageMetasNewest = Effect.fn("MemoryStore.messageMetasNewest")(function*(
    conversationId: number,
    beforeSeq: number | null,
    limit: number
  ) {
    const rows = yield* sql`SELECT seq, id, NULL, token_count, continues_unit, -1 FROM ctx_messages
      WHERE conversation_id = ${conversationId} AND seq < ${beforeSeq ?? Number.MAX_SAFE_INTEGER}
      ORDER BY seq DESC LIMIT ${limit}`.values
    return rows.map(toItem)
  }, Effect.mapError(storageError("read messages")))

  const items = Effect.fn("MemoryStore.items")(function*(conversationId: number) {
    const rows = yield* sql`SELECT position, message_id, summary_id, tokens, continues_unit, depth FROM ctx_items
      WHERE conversation_id = ${conversationId} ORDER BY position`.values
    return rows.map(toItem)
  }, Effect.mapError(storageError("read context")))

  const itemsNewest = Effect.fn("MemoryStore.itemsNewest")(function*(
    conversationId: number,
    beforePosition: number | null,
    limit: number,
    contentTokens = 0
  ) {
    const before = beforePosition ?? Number.MAX_SAFE_INTEGER
    if (contentTokens <= 0) {
      const rows = yield* sql`SELECT position, message_id, summary_id, tokens, continues_unit, depth FROM ctx_items
        WHERE conversation_id = ${conversationId} AND position < ${before}
        ORDER BY position DESC LIMIT ${limit}`.values.pipe(Effect.mapError(storageError("read context")))
      return { items: rows.map(toItem), messages: [], summaries: [] }
    }
    // The page (an index range read), then the running sum of its tokens from the newest, then the
    // content of the items within `contentTokens`: one statement, whatever the page's size. Each
    // item's content is read by its key: SQLite joins that way; PostgreSQL is made to by LATERAL
    // subqueries with a LIMIT (with plain joins its generic plan, the LIMIT unknown, hashed whole tables).
    // At most CONTENT_ITEMS of them: each is a lookup by key, which for a page of raw messages costs
    // more than reading their seq range as rendering does (PostgreSQL: 976 lookups, ~4 ms).
    const page = sql`(SELECT p.*, CASE WHEN row_number() OVER (ORDER BY p.position DESC) <= ${CONTENT_ITEMS}
          THEN sum(p.tokens) OVER (ORDER BY p.position DESC ROWS UNBOUNDED PRECEDING) END AS running
        FROM (SELECT position, message_id, summary_id, tokens, continues_unit, depth FROM ctx_items
          WHERE conversation_id = ${conversationId} AND position < ${before}
          ORDER BY position DESC LIMIT ${limit}) p) w`
    const rows = yield* (postgres
      ? sql`SELECT w.position, w.message_id, w.summary_id, w.tokens, w.continues_unit, w.depth,
          m.seq, m.role, m.blocks, m.text, m.token_count, m.created_at,
          s.kind, s.mode, s.content, s.token_count, s.source_token_count, s.earliest_at, s.latest_at,
          s.first_seq, s.last_seq, s.created_at, s.session_key, s.user_id
        FROM ${page}
        LEFT JOIN LATERAL (SELECT m.seq, m.role, m.blocks, CASE WHEN m.blocks IS NULL THEN m.text ELSE '' END AS text,
          m.token_count, m.created_at FROM ctx_messages m WHERE m.id = w.message_id AND w.running <= ${contentTokens} LIMIT 1) m ON TRUE
        LEFT JOIN LATERAL (SELECT s.kind, s.mode, s.content, s.token_count, s.source_token_count, s.earliest_at, s.latest_at,
          s.first_seq, s.last_seq, s.created_at, c.session_key, c.user_id FROM ctx_summaries s JOIN ctx_conversations c ON c.id = s.conversation_id
          WHERE s.id = w.summary_id AND w.running <= ${contentTokens} LIMIT 1) s ON TRUE
        ORDER BY w.position DESC`
      : sql`SELECT w.position, w.message_id, w.summary_id, w.tokens, w.continues_unit, w.depth,
          m.seq, m.role, m.blocks, CASE WHEN m.blocks IS NULL THEN m.text ELSE '' END, m.token_count, m.created_at,
          s.kind, s.mode, s.content, s.token_count, s.source_token_count, s.earliest_at, s.latest_at,
          s.first_seq, s.last_seq, s.created_at, c.session_key, c.user_id
        FROM ${page}
        LEFT JOIN ctx_messages m ON w.running <= ${contentTokens} AND m.id = w.message_id
        LEFT JOIN ctx_summaries s ON w.running <= ${contentTokens} AND s.id = w.summary_id
        LEFT JOIN ctx_conversations c ON c.id = s.conversation_id
        ORDER BY w.position DESC`).values.pipe(Effect.mapError(storageError("read context")))
    const messageRows: Array<MessageRow> = []
    const summaries: Array<StoredSummary> = []
    for (const r of rows) {
      if (r[1] !== null && r[6] !== null) {
        messageRows.push({
          id: r[1] as number,
          seq: r[6] as number,
          role: r[7] as Role,
          blocks: r[8] as string | null,
          text: r[9] as string,
          token_count: r[10] as number,
          created_at: r[11] as number
        })
      } else if (r[2] !== null && r[12] !== null) {
        summaries.push(toSummary({
          id: r[2] as number,
          conversation_id: conversationId,
          session_key: r[22] as string,
          user_id: r[23] as string,
          kind: r[12] as SummaryRow["kind"],
          depth: r[5] as number,
          mode: r[13] as SummaryRow["mode"],
          content: r[14] as string,
          token_count: r[15] as number,
          source_token_count: r[16] as number,
          earliest_at: r[17] as number,
          latest_at: r[18] as number,
          first_seq: r[19] as number,
          last_seq: r[20] as number,
          created_at: r[21] as number
        }))
      }
    }
    return { items: rows.map(toItem), messages: yield* toStoredMessages(messageRows), summaries }
  })

  // ctx_items_live_summaries (migrations/0011) holds exactly these columns of the summary items.
  const liveSummaries = Effect.fn("MemoryStore.liveSummaries")(function*(conversationId: number) {
    const rows = yield* sql`SELECT i.position, NULL, i.summary_id, i.tokens, i.continues_unit, i.depth, s.last_seq
      FROM ctx_items i JOIN ctx_summaries s ON s.id = i.summary_id
      WHERE i.conversation_id = ${conversationId} AND i.summary_id IS NOT NULL ORDER BY i.position`.values
    return rows.map((r) => ({ item: toItem(r), lastSeq: r[6] as number }))
  }, Effect.mapError(storageError("read context")))

  const stats = Effect.fn("MemoryStore.stats")(function*(conversationId: number) {
    const rows = yield* sql<{
      messages: number
      message_tokens: number
      first_at: number | null
      last_at: number | null
      summaries: number
      max_depth: number
      items: number
      item_tokens: number
    }>`SELECT
        (SELECT count(*) FROM ctx_messages WHERE conversation_id = ${conversationId}) AS messages,
        (SELECT CAST(coalesce(sum(token_count), 0) AS BIGINT) FROM ctx_messages WHERE conversation_id = ${conversationId}) AS message_tokens,
        (SELECT min(created_at) FROM ctx_messages WHERE conversation_id = ${conversationId}) AS first_at,
        (SELECT max(created_at) FROM ctx_messages WHERE conversation_id = ${conversationId}) AS last_at,
        (SELECT count(*) FROM ctx_summaries WHERE conversation_id = ${conversationId}) AS summaries,
        (SELECT coalesce(max(depth), -1) FROM ctx_summaries WHERE conversation_id = ${conversationId}) AS max_depth,
        (SELECT count(*) FROM ctx_items WHERE conversation_id = ${conversationId}) AS items,
        (SELECT CAST(coalesce(sum(tokens), 0) AS BIGINT) FROM ctx_items WHERE conversation_id = ${conversationId}) AS item_tokens`
    const r = rows[0]
    return {
      messages: r?.messages ?? 0,
      messageTokens: r?.message_tokens ?? 0,
      firstMessageAt: r?.first_at ?? null,
      lastMessageAt: r?.last_at ?? null,
      summaries: r?.summaries ?? 0,
      maxDepth: r?.max_depth ?? -1,
      contextItems: r?.items ?? 0,
      contextTokens: r?.item_tokens ?? 0
    }
  }, Effect.mapError(storageError("read statistics")))

  const contextTokens = Effect.fn("MemoryStore.contextTokens")(function*(conversationId: number, afterPosition: number = 0) {
    const rows = yield* sql<{ n: number }>`SELECT CAST(coalesce(sum(tokens), 0) AS BIGINT) AS n FROM ctx_items
      WHERE conversation_id = ${conversationId} AND position > ${afterPosition}`
    return rows[0]?.n ?? 0
  }, Effect.mapError(storageError("read context")))

  // Indexed check first: a session without summaries (most Simple sessions) costs no scan of its
  // items. With summaries, the backward scan stops at the newest one, past only the messages after it.
  const lastSummaryItem = Effect.fn("MemoryStore.lastSummaryItem")(function*(conversationId: number) {
    const anySummary = yield* sql`SELECT 1 FROM ctx_summaries WHERE conversation_id = ${conversationId} LIMIT 1`.values
    if (anySummary.length === 0) return Option.none()
    const rows = yield* sql`SELECT position, message_id, summary_id, tokens, continues_unit, depth
      FROM ctx_items WHERE conversation_id = ${conversationId} AND summary_id IS NOT NULL
      ORDER BY position DESC LIMIT 1`.values
    return Option.fromNullishOr(rows[0]).pipe(Option.map(toItem))
  }, Effect.mapError(storageError("read context")))

  const summariesByIds = Effect.fn("MemoryStore.summariesByIds")(function*(list: ReadonlyArray<number>) {
    if (list.length === 0) return []
    const rows = yield* sql<SummaryRow>`SELECT s.*, c.session_key, c.user_id
      FROM ctx_summaries s JOIN ctx_conversations c ON c.id = s.conversation_id
      WHERE s.id IN (${ids(list)})`
    const byId = new Map(rows.map((r) => [r.id, toSummary(r)]))
    return list.flatMap((id) => {
      const s = byId.get(id)
      return s === undefined ? [] : [s]
    })
  }, Effect.mapError(storageError("read summaries")))

  const summaryLinks = Effect.fn("MemoryStore.summaryLinks")(function*(summaryId: number) {
    const r = yield* Effect.all({
      parents: sql<{ id: number }>`SELECT condensed_id AS id FROM ctx_summary_parents WHERE constituent_id = ${summaryId}`,
      constituents: sql<{ id: number }>`SELECT constituent_id AS id FROM ctx_summary_parents
        WHERE condensed_id = ${summaryId} ORDER BY ord`,
      sources: sql<{ id: number }>`SELECT message_id AS id FROM ctx_summary_messages WHERE summary_id = ${summaryId} ORDER BY ord`,
      live: sql<{ n: number }>`SELECT count(*) AS n FROM ctx_items WHERE summary_id = ${summaryId}`
    })
    return {
      parents: r.parents.map((x) => x.id),
      constituents: r.constituents.map((x) => x.id),
      sourceMessages: r.sources.map((x) => x.id),
      live: (r.live[0]?.n ?? 0) > 0
    }
  }, Effect.mapError(storageError("read summary links")))

  const commitSummary = Effect.fn("MemoryStore.commitSummary")(function*(
    conversationId: number,
    summary: NewSummary,
    contextTokensOf: (summaryId: number) => number
  ) {
    const first = summary.replaces[0]
    const last = summary.replaces[summary.replaces.length - 1]
    if (first === undefined || last === undefined) {
      return yield* Effect.die(new Error("commitSummary: a summary must replace at least one item"))
    }
    const now = yield* Clock.currentTimeMillis
    return yield* immediate(Effect.gen(function*() {
      const current = yield* sql`SELECT position, message_id, summary_id FROM ctx_items
        WHERE conversation_id = ${conversationId} AND position BETWEEN ${first.position} AND ${last.position}
        ORDER BY position`.values
      const intact = current.length === summary.replaces.length && current.every((row, i) => {
        const want = summary.replaces[i]
        return want !== undefined && row[0] === want.position &&
          (want.kind === "message" ? row[1] === want.refId : row[2] === want.refId)
      })
      if (!intact) return yield* new StaleContext({ conversationId })
      const inserted = yield* sql<{ id: number }>`INSERT INTO ctx_summaries ${
        sql.insert({
          conversation_id: conversationId,
          kind: summary.kind,
          depth: summary.depth,
          mode: summary.mode,
          // Summaries come without U+0000 (./escalation.ts), which PostgreSQL's text cannot hold.
          content: summary.content,
          token_count: estimateMessageTokens({ role: "user", content: summary.content }),
          source_token_count: summary.sourceTokenCount,
          earliest_at: summary.earliestAt,
          latest_at: summary.latestAt,
          first_seq: summary.firstSeq,
          last_seq: summary.lastSeq,
          has_cjk: hasCjk(summary.content) ? 1 : 0,
          created_at: now
        })
      } RETURNING id`
      const summaryId = inserted[0]?.id
      if (summaryId === undefined) return yield* Effect.die(new Error("INSERT … RETURNING gave no id"))
      yield* searchIndex.indexQueued
      if (summary.kind === "leaf") {
        yield* insertRows(
          "ctx_summary_messages",
          summary.replaces.map((it, ord) => ({ summary_id: summaryId, message_id: it.refId, ord }))
        )
      } else {
        yield* insertRows(
          "ctx_summary_parents",
          summary.replaces.map((it, ord) => ({ condensed_id: summaryId, constituent_id: it.refId, ord }))
        )
      }
      yield* sql`DELETE FROM ctx_items WHERE conversation_id = ${conversationId}
        AND position BETWEEN ${first.position} AND ${last.position}`
      const itemTokens = contextTokensOf(summaryId)
      yield* sql`INSERT INTO ctx_items ${
        sql.insert({
          conversation_id: conversationId,
          position: first.position,
          message_id: null,
          summary_id: summaryId,
          tokens: itemTokens,
          continues_unit: 0,
          depth: summary.depth
        })
      }`
      return { summaryId, itemTokens }
    })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storageError("commit summary")(e))))
  })

  const verifyInput = Effect.fn("MemoryStore.verifyInput")(function*(conversationId: number, sessionKey: string) {
    const [messages, summaries, summaryMessages, summaryParents, liveItems] = yield* Effect.all([
      sql`SELECT id, seq, created_at FROM ctx_messages WHERE conversation_id = ${conversationId} ORDER BY seq`.values,
      sql<SummaryRow>`SELECT s.*, '' AS session_key, '' AS user_id FROM ctx_summaries s
        WHERE s.conversation_id = ${conversationId}`,
      sql`SELECT l.summary_id, l.message_id FROM ctx_summary_messages l JOIN ctx_summaries s ON s.id = l.summary_id
        WHERE s.conversation_id = ${conversationId} ORDER BY l.summary_id, l.ord`.values,
      sql`SELECT l.condensed_id, l.constituent_id FROM ctx_summary_parents l JOIN ctx_summaries s ON s.id = l.condensed_id
        WHERE s.conversation_id = ${conversationId} ORDER BY l.condensed_id, l.ord`.values,
      sql`SELECT position, message_id, summary_id FROM ctx_items WHERE conversation_id = ${conversationId}
        ORDER BY position`.values
    ]).pipe(Effect.mapError(storageError("read for verification")))
    return {
      sessionKey,
      messages: messages.map((r) => ({ id: r[0] as number, seq: r[1] as number, createdAt: r[2] as number })),
      summaries: summaries.map(toSummary),
      summaryMessages: summaryMessages.map((r) => ({ summaryId: r[0] as number, messageId: r[1] as number })),
      summaryParents: summaryParents.map((r) => ({ condensedId: r[0] as number, constituentId: r[1] as number })),
      items: liveItems.map((r) => ({
        position: r[0] as number,
        messageId: r[1] as number | null,
        summaryId: r[2] as number | null
      }))
    }
  })

  const integrityCheck = Effect.gen(function*() {
    const problems: Array<string> = []
    if (postgres) {
      // PostgreSQL checks its own pages; what is ours: the immutability trigger and the marks.
      const trigger = yield* sql<{ n: number }>`SELECT count(*) AS n FROM pg_trigger WHERE tgname = 'ctx_messages_immutable' AND NOT tgisinternal`
      if ((trigger[0]?.n ?? 0) !== 1) problems.push("the trigger that keeps raw messages immutable is missing")
      const marked = yield* sql<{ session_key: string }>`SELECT session_key FROM ctx_conversations WHERE deleting = 1`
      for (const r of marked) problems.push(`${r.session_key}: marked as being deleted outside a deletion (its messages are unprotected)`)
      for (const r of yield* miscounted) problems.push(`${r.session_key}: ${r.kept} ${r.source} rows counted for search, ${r.real} stored`)
      // Every row is in its search index or queued for it, and the index holds no row that is gone.
      for (const [table, source, fts] of SEARCH_SOURCES) {
        // Set differences, not anti-joins: those are planned by statistics, and a database restored
        // from a dump or filled by an import has none until autovacuum runs — planned as empty, the
        // anti-joins became nested loops (8.5 minutes for 60,000 messages).
        const [counts] = yield* sql.unsafe<{ missing: number; stale: number }>(
          `SELECT (SELECT count(*) FROM (SELECT id FROM ${table} EXCEPT SELECT id FROM ${fts}
               EXCEPT SELECT id FROM ctx_search_backlog WHERE source = $1) d) AS missing,
             (SELECT count(*) FROM (SELECT id FROM ${fts} EXCEPT SELECT id FROM ${table}) d) AS stale`,
          [source]
        )
        if (counts !== undefined && counts.missing > 0) problems.push(`${fts}: ${counts.missing} rows of ${table} neither indexed nor queued`)
        if (counts !== undefined && counts.stale > 0) problems.push(`${fts}: ${counts.stale} entries for rows no longer in ${table}`)
      }
      return problems
    }
    const quick = yield* sql<{ quick_check: string }>`PRAGMA quick_check`
    for (const r of quick) if (r.quick_check !== "ok") problems.push(`sqlite: ${r.quick_check}`)
    const triggers = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'trigger'
      AND name IN ('ctx_messages_immutable_update', 'ctx_messages_immutable_delete')`
    if (triggers.length !== 2) problems.push("the triggers that keep raw messages immutable are missing")
    const marked = yield* sql<{ session_key: string }>`SELECT session_key FROM ctx_conversations WHERE deleting = 1`
    for (const r of marked) problems.push(`${r.session_key}: marked as being deleted outside a deletion (its messages are unprotected)`)
    // The search indexes are contentless (migrations/0010): their own structure is checked, and
    // every row must be in its index or queued for it.
    for (const [table, source, fts] of SEARCH_SOURCES) {
      yield* sql.unsafe(`INSERT INTO ${fts} (${fts}, rank) VALUES ('integrity-check', 0)`).pipe(
        Effect.catchTag("SqlError", (e) => Effect.sync(() => problems.push(`${fts}: ${e.message}`)))
      )
      const [counts] = yield* sql.unsafe<{ rows: number; indexed: number; queued: number }>(
        `SELECT (SELECT count(*) FROM ${table}) AS rows, (SELECT count(*) FROM ${fts}) AS indexed,
           (SELECT count(*) FROM ctx_search_backlog WHERE source = ?) AS queued`,
        [source]
      )
      if (counts !== undefined && counts.rows !== counts.indexed + counts.queued) {
        problems.push(`${fts}: ${counts.indexed} rows indexed and ${counts.queued} queued for ${counts.rows} in ${table}`)
      }
    }
    for (const r of yield* miscounted) problems.push(`${r.session_key}: ${r.kept} ${r.source} rows counted for search, ${r.real} stored`)
    return problems
  }).pipe(Effect.mapError(storageError("integrity check")))

  // The row counts search keeps per conversation (migrations/0030) must be the rows there are.
  const miscounted = sql<{ session_key: string; source: string; kept: number; real: number }>`
      WITH real AS (
        SELECT conversation_id, 'message' AS source, count(*) AS n FROM ctx_messages GROUP BY conversation_id
        UNION ALL SELECT conversation_id, 'summary', count(*) FROM ctx_summaries GROUP BY conversation_id
      ), kept AS (SELECT conversation_id, source, n FROM ctx_search_counts WHERE n <> 0),
      pairs AS (SELECT conversation_id, source FROM real UNION SELECT conversation_id, source FROM kept)
      SELECT coalesce(c.session_key, '#' || p.conversation_id) AS session_key, p.source,
        coalesce(k.n, 0) AS kept, coalesce(r.n, 0) AS real
      FROM pairs p LEFT JOIN real r USING (conversation_id, source) LEFT JOIN kept k USING (conversation_id, source)
        LEFT JOIN ctx_conversations c ON c.id = p.conversation_id
      WHERE coalesce(k.n, 0) <> coalesce(r.n, 0)`

  const getProfile = Effect.fn("MemoryStore.getProfile")(function*(userId: string, agentId: string) {
    const rows = yield* sql<{ content: string }>`SELECT content FROM ctx_agent_memory WHERE user_id = ${userId} AND agent_id = ${agentId}`
    return rows[0]?.content ?? ""
  }, Effect.mapError(storageError("read profile")))

  const setProfile = Effect.fn("MemoryStore.setProfile")(function*(userId: string, agentId: string, content: string) {
    const now = yield* Clock.currentTimeMillis
    yield* sql`INSERT INTO ctx_agent_memory (user_id, agent_id, content, updated_at) VALUES (${userId}, ${agentId}, ${content}, ${now})
      ON CONFLICT (user_id, agent_id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at`
  }, Effect.mapError(storageError("save profile")))

  const deleteProfiles = Effect.fn("MemoryStore.deleteProfiles")(function*(userId: string) {
    const rows = yield* sql<{ agent_id: string }>`DELETE FROM ctx_agent_memory WHERE user_id = ${userId} RETURNING agent_id`
    return rows.length
  }, Effect.mapError(storageError("delete profiles")))

  const retireRows = makeRetireUser(sql, searchIndex.indexQueued)
  const retireUser = Effect.fn("MemoryStore.retireUser")(function*(userId: string, removedAs: string) {
    // Not a turn's write: a user's removal is the operator's, never fenced.
    const retired = yield* locked(retireRows(userId, removedAs)).pipe(Effect.mapError(storageError("move a removed user's sessions")))
    for (const s of retired.sessions) forget(s.from)
    return retired
  })

  const vectors = makeVectors(sql)
  // Lexical search (memorySearch.ts), fused with the nearest vectors when the request has a query vector.
  const searchRows = vectors.fused(makeSearch(sql))
  const search = Effect.fn("MemoryStore.search")(function*(plan: SearchPlan, scope: SearchScope, request: SearchRequest) {
    return yield* searchRows(plan, scope, request)
  })

  // Rows queued for the search index by migration 0010 (or inserted by something other than this
  // store) are indexed before the store is used; a failure leaves them queued for the next append.
  yield* searchIndex.drainQueue(locked).pipe(
    Effect.catch((e) => Effect.logWarning(`memory: could not index queued rows for search: ${e.message}`))
  )

  return MemoryStore.of({
    ...makeBrowse(sql),
    ensureConversation,
    findConversation,
    getConversation,
    loadConversation,
    listConversations,
    saveInfo,
    setReviewedSeq,
    appendMessages,
    importMessages,
    deleteConversation,
    messagesByIds,
    messagesBySeq,
    messageMetas,
    messageMetasNewest,
    items,
    itemsNewest,
    liveSummaries,
    stats,
    contextTokens,
    lastSummaryItem,
    summariesByIds,
    summaryLinks,
    commitSummary,
    search,
    pendingEmbeddings: vectors.pendingEmbeddings,
    embeddingCeiling: vectors.ceiling,
    putVectors: vectors.putVectors,
    hasVectors: vectors.hasVectors,
    messageVectors: vectors.messageVectors,
    putMessageVectors: vectors.putMessageVectors,
    verifyInput,
    integrityCheck,
    getProfile,
    setProfile,
    deleteProfiles,
    retireUser
  })
})

export const layer = Layer.effect(MemoryStore, make)
