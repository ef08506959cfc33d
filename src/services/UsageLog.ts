/**
 * UsageLog — every model call's token usage (chat, summaries and embeddings, failed calls included), and the
 * counts the summarization spend guard needs. Costs are computed when read, from the prices
 * ProviderStore keeps (`model_prices`), so a price set today also prices last month's calls.
 *
 * Layers: `SqliteUsageLog.layer` (src/layers/config/SqliteUsageLog.ts).
 */
import { Context, type Effect } from "effect"
import type { StorageError } from "../domain/storage/errors.ts"
import type { Usage } from "../domain/model/types.ts"

/** What a model call was for: a turn, a summary (or reflection), or embeddings (dense retrieval, issue 25). */
export type UsagePurpose = "chat" | "summary" | "embedding"

export interface UsageEntry {
  readonly providerId: string
  readonly model: string
  readonly purpose: UsagePurpose
  readonly sessionKey: string
  readonly agentId: string
  /** The anna user the call was made for ('' when none, e.g. a summary run from the CLI). */
  readonly userId?: string | undefined
  readonly usage: Usage
  /** Set when the call failed. */
  readonly error?: string | undefined
}

export interface UsageTotals {
  readonly providerId: string
  readonly model: string
  readonly purpose: UsagePurpose
  readonly calls: number
  readonly failed: number
  readonly inputTokens: number
  readonly outputTokens: number
  /** USD of the priced calls; null when none is priced. */
  readonly cost: number | null
  /** Calls with tokens but no price for their model (cost then covers the others only). */
  readonly unpricedCalls: number
}

/** Every field narrows the totals; absent fields do not filter. */
export interface UsageFilter {
  readonly sessionKey?: string | undefined
  readonly userId?: string | undefined
  readonly agentId?: string | undefined
  /** Only calls at or after this time (ms). */
  readonly since?: number | undefined
  /** Only calls before this time (ms). */
  readonly until?: number | undefined
}

/** What `breakdown` groups by: user, agent, `provider/model`, UTC day (`YYYY-MM-DD`) or hour (`YYYY-MM-DDTHH`). */
export type UsageDimension = "user" | "agent" | "model" | "day" | "hour"

/** Calls and tokens of one group of a breakdown (chat and summaries together). */
export interface UsageBucket {
  readonly key: string
  readonly calls: number
  readonly failed: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheWriteTokens: number
  /**
   * USD of the bucket's priced calls (tokens × the model's price per million; cache reads and
   * writes at their own price, else the input price); null when no call of it is priced.
   */
  readonly cost: number | null
  /** Calls with tokens but no price: when above 0 and cost is not null, the cost is partial. */
  readonly unpricedCalls: number
}

export class UsageLog extends Context.Service<UsageLog, {
  readonly record: (entry: UsageEntry) => Effect.Effect<void, StorageError>
  /** Summarizer calls (failed ones too) for a session since a time (ms). */
  readonly summaryCallsSince: (sessionKey: string, since: number) => Effect.Effect<number, StorageError>
  /** Embedding calls (failed ones too) made for an agent since a time (ms): the embedding spend guard's count. */
  readonly embeddingCallsSince: (agentId: string, since: number) => Effect.Effect<number, StorageError>
  readonly totals: (filter?: UsageFilter) => Effect.Effect<
    ReadonlyArray<UsageTotals>,
    StorageError
  >
  /** Calls and tokens grouped by one dimension, in key order (the admin API's usage reports and charts). */
  readonly breakdown: (by: UsageDimension, filter?: UsageFilter) => Effect.Effect<ReadonlyArray<UsageBucket>, StorageError>
  /**
   * Moves a removed user's calls to the id they are removed as (their session keys too:
   * domain/config/removedUser.ts), so spend stays accounted and a later user of the id starts at
   * nothing; how many.
   */
  readonly retireUser: (userId: string, removedAs: string) => Effect.Effect<number, StorageError>
}>()("anna/UsageLog") {}
