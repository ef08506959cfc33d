/**
 * MemoryStore — the persistence port of memory: conversations, immutable raw messages, the live
 * context items, the summary DAG, full-text search and profiles. Owns every SQL statement of the
 * memory subsystem (so a PostgreSQL store is one new layer). Does not own policy: what to compact,
 * what to assemble, and locking are decided above it.
 *
 * Layers: `SqliteMemoryStore.layer` (src/layers/memory/SqliteMemoryStore.ts).
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { ItemMeta } from "../domain/memory/context.ts"
import type { InvalidInput, SessionNotFound, StaleContext } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { SessionRef } from "../domain/memory/session.ts"
import type { DenseQuery, SearchCoverage, SearchScope } from "../domain/memory/types.ts"
import type { VerifyInput } from "../domain/memory/verify.ts"
import type { Message, NewMessage, Role } from "../domain/message.ts"
import type { SearchPlan } from "../domain/search/query.ts"

export interface Conversation {
  readonly id: number
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
  readonly createdAt: number
  readonly updatedAt: number
  readonly reviewedSeq: number
  readonly info: Readonly<Record<string, unknown>>
}

/** What `itemsNewest` read: the items newest first, and the content it read with them. */
export interface NewestItems {
  readonly items: ReadonlyArray<ItemMeta>
  readonly messages: ReadonlyArray<StoredMessage>
  readonly summaries: ReadonlyArray<StoredSummary>
}

export interface StoredMessage {
  readonly id: number
  readonly seq: number
  readonly role: Role
  readonly message: Message
  readonly tokens: number
  readonly createdAt: number
}

export interface StoredSummary {
  readonly id: number
  readonly conversationId: number
  readonly sessionKey: string
  readonly userId: string
  readonly kind: "leaf" | "condensed"
  readonly depth: number
  readonly mode: "normal" | "aggressive" | "truncated"
  readonly content: string
  readonly tokenCount: number
  readonly sourceTokenCount: number
  readonly earliestAt: number
  readonly latestAt: number
  readonly firstSeq: number
  readonly lastSeq: number
  readonly createdAt: number
}

export interface NewSummary {
  readonly kind: "leaf" | "condensed"
  readonly depth: number
  readonly mode: "normal" | "aggressive" | "truncated"
  readonly content: string
  readonly sourceTokenCount: number
  readonly earliestAt: number
  readonly latestAt: number
  readonly firstSeq: number
  readonly lastSeq: number
  /** The contiguous live items this summary replaces, in order; all must still be live. */
  readonly replaces: ReadonlyArray<ItemMeta>
}

export interface RawHit {
  readonly kind: "message" | "summary"
  readonly id: number
  readonly sessionKey: string
  readonly snippet: string
  readonly score: number
  readonly createdAt: number
  /** Query terms the row matches, as typed (empty when the query only filtered). */
  readonly matched: ReadonlyArray<string>
  /** Messages: position in the session and role. */
  readonly seq?: number | undefined
  readonly role?: Role | undefined
  /** Summaries: the raw messages below the summary. */
  readonly covers?: SearchCoverage | undefined
  /** Messages, with `context` > 0: the neighbouring messages, in order (the hit itself left out). */
  readonly context?: ReadonlyArray<RawContextMessage> | undefined
  /** With `SearchRequest.dense`: cosine similarity to the query, when the dense side found the row. */
  readonly similarity?: number | undefined
  /** A second-hop hit (ranked search): the best hit's words that found it. */
  readonly hop?: ReadonlyArray<string> | undefined
}

export interface RawContextMessage {
  readonly id: number
  readonly seq: number
  readonly role: Role
  readonly createdAt: number
  readonly text: string
}

export interface SearchRequest {
  readonly limit: number
  /** Messages before and after each message hit to add (0: none). */
  readonly context: number
  /** Match rows together with their neighbouring turns (ranked plans only; default true). */
  readonly neighbours?: boolean | undefined
  /** Fuse with the nearest vectors of this model in the scope (layers/memory/denseSearch.ts). */
  readonly dense?: DenseQuery | undefined
}

/** A row to embed: a message (its text without memory tool calls) or a summary, of an agent's sessions. */
export interface PendingEmbedding {
  readonly source: VectorSource
  readonly id: number
  readonly sessionKey: string
  readonly text: string
}

export type VectorSource = "message" | "summary"

/** A stored vector of a message, by its position (export and import). */
export interface MessageVector {
  readonly seq: number
  readonly model: string
  readonly vector: Float32Array
}

export interface ConversationStats {
  readonly messages: number
  readonly messageTokens: number
  readonly firstMessageAt: number | null
  readonly lastMessageAt: number | null
  readonly summaries: number
  readonly maxDepth: number
  readonly contextItems: number
  readonly contextTokens: number
}

/** Which sessions `browseConversations` returns; absent fields do not filter. */
export interface ConversationFilter {
  readonly agentId?: string | undefined
  readonly userId?: string | undefined
  /** The platform part of the session key (`{agentId}:{platform}:{userId}:{context}`). */
  readonly platform?: string | undefined
  /** Case-insensitive part of the session key or of its title (`info.title`). */
  readonly text?: string | undefined
  /** Only these sessions (e.g. the live ones). */
  readonly onlyKeys?: ReadonlyArray<string> | undefined
  /** None of these sessions (e.g. not the live ones). */
  readonly exceptKeys?: ReadonlyArray<string> | undefined
}

/** A session as a list shows it: the conversation and what its messages add up to. */
export interface ConversationOverview extends Conversation {
  readonly messages: number
  readonly messageTokens: number
  readonly lastMessageAt: number | null
}

/** A summary as the DAG listing shows it: where it sits (its parent) and whether it is in the live context. */
export interface SummaryNode extends StoredSummary {
  readonly parent: number | null
  readonly live: boolean
}

export class MemoryStore extends Context.Service<MemoryStore, {
  /** Get or create the conversation of a session (ids are cached: the mapping never changes). */
  readonly ensureConversation: (session: SessionRef) => Effect.Effect<Conversation, StorageError>
  readonly findConversation: (sessionKey: string) => Effect.Effect<Option.Option<Conversation>, StorageError>
  /** Cached: `info` and `reviewedSeq` may be stale; use `loadConversation` for those. */
  readonly getConversation: (sessionKey: string) => Effect.Effect<Conversation, StorageError | SessionNotFound>
  /** Read afresh from the database (a session gone since it was cached is forgotten: SessionNotFound). */
  readonly loadConversation: (sessionKey: string) => Effect.Effect<Conversation, StorageError | SessionNotFound>
  readonly listConversations: (filter: {
    readonly agentId?: string | undefined
    readonly userId?: string | undefined
    readonly limit?: number | undefined
  }) => Effect.Effect<ReadonlyArray<Conversation & { readonly messages: number }>, StorageError>
  /**
   * A page of sessions, most recently active first, with the number matching the filter (for
   * paging). Reads the page's rows, not every message of every session.
   */
  readonly browseConversations: (
    filter: ConversationFilter,
    page: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly total: number; readonly rows: ReadonlyArray<ConversationOverview> }, StorageError>
  /** Every summary of a session (the DAG), oldest first, each with its parent and whether it is live. */
  readonly summaryNodes: (conversationId: number) => Effect.Effect<ReadonlyArray<SummaryNode>, StorageError>
  /** How many messages a session holds (cheap: no pass over them, unlike `stats`). */
  readonly messageCount: (conversationId: number) => Effect.Effect<number, StorageError>
  /**
   * Turns started (user messages stored) per hour or day (UTC, `YYYY-MM-DDTHH` / `YYYY-MM-DD`) in
   * [since, until), of one user's sessions or all; only buckets with turns, in order.
   */
  readonly turnCounts: (
    filter: { readonly since: number; readonly until: number; readonly userId?: string | undefined },
    bucket: "hour" | "day"
  ) => Effect.Effect<ReadonlyArray<{ readonly bucket: string; readonly turns: number }>, StorageError>
  readonly saveInfo: (conversationId: number, info: Readonly<Record<string, unknown>>) => Effect.Effect<void, StorageError>
  readonly setReviewedSeq: (conversationId: number, seq: number) => Effect.Effect<void, StorageError>

  /** Appends in one transaction; messages get consecutive seqs and become live items. */
  readonly appendMessages: (
    conversationId: number,
    messages: ReadonlyArray<NewMessage>
  ) => Effect.Effect<{ readonly firstSeq: number; readonly lastSeq: number }, StorageError | InvalidInput>
  /**
   * A whole import in one transaction: creates the conversation if needed, refuses one that already
   * has messages unless `append`, and appends every batch of the stream; a failure (or a crash) at
   * any point leaves nothing of it. `onBatch` gets the number imported so far after each batch.
   */
  readonly importMessages: <E>(
    session: SessionRef,
    batches: Stream.Stream<ReadonlyArray<NewMessage>, E>,
    options: { readonly append: boolean; readonly onBatch: (imported: number) => Effect.Effect<void> }
  ) => Effect.Effect<
    { readonly firstSeq: number; readonly lastSeq: number; readonly imported: number },
    E | StorageError | InvalidInput
  >
  /**
   * Deletes a session for good, in one transaction: its raw messages (the one deliberate way past
   * their immutability), summaries, DAG links, live context, search rows and the conversation.
   */
  readonly deleteConversation: (sessionKey: string) => Effect.Effect<
    { readonly sessionKey: string; readonly messages: number; readonly summaries: number },
    StorageError | SessionNotFound
  >
  readonly messagesByIds: (ids: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<StoredMessage>, StorageError>
  readonly messagesBySeq: (
    conversationId: number,
    fromSeq: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<StoredMessage>, StorageError>
  /** Every message as an item (position = seq), for sliding-window assembly that ignores summaries. */
  readonly messageMetas: (conversationId: number) => Effect.Effect<ReadonlyArray<ItemMeta>, StorageError>
  /** At most `limit` message items with seq < `beforeSeq` (all when null), newest first. */
  readonly messageMetasNewest: (
    conversationId: number,
    beforeSeq: number | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<ItemMeta>, StorageError>

  /** Every live item, in position order (what compaction plans over; assembly reads less, below). */
  readonly items: (conversationId: number) => Effect.Effect<ReadonlyArray<ItemMeta>, StorageError>
  /**
   * At most `limit` live items with position < `beforePosition` (all when null), newest first: an
   * indexed range read, so assembly reads what the budget needs, not the whole live context. With
   * `contentTokens`, the same statement also reads the content of the newest items (a few dozen at
   * most) whose tokens, summed from the newest, stay within it (what assembly will most likely
   * choose): on PostgreSQL that saves assembly a round trip when they are all it needs (a compacted
   * session). Items past them come without content (read them by id or seq range).
   */
  readonly itemsNewest: (
    conversationId: number,
    beforePosition: number | null,
    limit: number,
    contentTokens?: number
  ) => Effect.Effect<NewestItems, StorageError>
  /**
   * The live summary items in position order, each with the last seq it covers (a summary item's
   * position is its first seq), from a partial index of summary items: cheap however long the session.
   */
  readonly liveSummaries: (conversationId: number) => Effect.Effect<
    ReadonlyArray<{ readonly item: ItemMeta; readonly lastSeq: number }>,
    StorageError
  >
  readonly stats: (conversationId: number) => Effect.Effect<ConversationStats, StorageError>
  /**
   * Sum of the live items' tokens (one indexed range read; cheap enough for every turn); with
   * `afterPosition`, of the items after that position only.
   */
  readonly contextTokens: (conversationId: number, afterPosition?: number) => Effect.Effect<number, StorageError>
  /** The live summary item with the greatest position (the newest), if any (memory/simple's view starts there). */
  readonly lastSummaryItem: (conversationId: number) => Effect.Effect<Option.Option<ItemMeta>, StorageError>

  readonly summariesByIds: (ids: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<StoredSummary>, StorageError>
  readonly summaryLinks: (summaryId: number) => Effect.Effect<{
    readonly parents: ReadonlyArray<number>
    readonly constituents: ReadonlyArray<number>
    readonly sourceMessages: ReadonlyArray<number>
    readonly live: boolean
  }, StorageError>
  /**
   * One compaction step, atomically: the summary row, its links, the removal of the replaced items
   * and the new summary item commit together or not at all.
   */
  readonly commitSummary: (
    conversationId: number,
    summary: NewSummary,
    contextTokensOf: (summaryId: number) => number
  ) => Effect.Effect<{ readonly summaryId: number; readonly itemTokens: number }, StorageError | StaleContext>

  /**
   * Runs a search plan (domain/search/query.ts) inside `scope`: every hit belongs to it. Reads a
   * bounded number of rows whatever the database size (see layers/memory/memorySearch.ts).
   */
  readonly search: (
    plan: SearchPlan,
    scope: SearchScope,
    request: SearchRequest
  ) => Effect.Effect<ReadonlyArray<RawHit>, StorageError>

  /**
   * Dense retrieval's vectors (issue 25), one per (row, model); a row's go when it is deleted.
   * `pendingEmbeddings`: the newest rows of the agent's sessions with no vector of `model`, with id
   * above `afterId` (0: all) and below `beforeId` (when given), at most `limit`, newest first.
   */
  readonly pendingEmbeddings: (request: {
    readonly agentId: string
    readonly model: string
    readonly source: VectorSource
    readonly afterId: number
    readonly beforeId?: number | undefined
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<PendingEmbedding>, StorageError>
  /** The highest row id of a source: nothing below it is pending once `pendingEmbeddings` from 0 finds none. */
  readonly embeddingCeiling: (source: VectorSource) => Effect.Effect<number, StorageError>
  /** Stores vectors (a row's vector of the same model is replaced); rows gone meanwhile are skipped. */
  readonly putVectors: (
    model: string,
    vectors: ReadonlyArray<{ readonly source: VectorSource; readonly id: number; readonly vector: Float32Array }>
  ) => Effect.Effect<number, StorageError>
  /** Whether any vector of `model` is stored (cheap: one index probe). */
  readonly hasVectors: (model: string) => Effect.Effect<boolean, StorageError>
  /** The vectors of a session's messages with seq in [fromSeq, toSeq], by seq (export). */
  readonly messageVectors: (
    conversationId: number,
    fromSeq: number,
    toSeq: number
  ) => Effect.Effect<ReadonlyArray<MessageVector>, StorageError>
  /** Stores vectors of a session's messages given by seq (import); seqs without a message are skipped. */
  readonly putMessageVectors: (
    conversationId: number,
    vectors: ReadonlyArray<MessageVector>
  ) => Effect.Effect<number, StorageError>

  readonly verifyInput: (conversationId: number, sessionKey: string) => Effect.Effect<VerifyInput, StorageError>
  /** Database-wide checks (SQLite integrity, FTS indexes in step with their tables); problems as text. */
  readonly integrityCheck: Effect.Effect<ReadonlyArray<string>, StorageError>

  readonly getProfile: (userId: string, agentId: string) => Effect.Effect<string, StorageError>
  readonly setProfile: (userId: string, agentId: string, content: string) => Effect.Effect<void, StorageError>
  /** Deletes a user's profiles with every agent (`anna user remove --delete-sessions`); how many there were. */
  readonly deleteProfiles: (userId: string) => Effect.Effect<number, StorageError>
  /**
   * Moves a removed user's sessions (their owner and keys: domain/config/removedUser.ts) and the
   * agents' profiles of them to the id they are removed as, in one transaction, with the search
   * index following: a later user of the same id finds none of it (`anna user remove --keep-sessions`).
   */
  readonly retireUser: (userId: string, removedAs: string) => Effect.Effect<
    {
      readonly sessions: ReadonlyArray<{ readonly from: string; readonly to: string }>
      readonly profiles: number
    },
    StorageError
  >
}>()("anna/MemoryStore") {}
