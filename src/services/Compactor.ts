/**
 * Compactor — capability: shrink a session's live context into a DAG of summaries (seed:
 * NeedsCompaction, Compact). Never deletes or changes raw messages; never touches the fresh tail.
 *
 * Layers: `LcmMemory.layer` (the DAG, over CompactionEngine) and `SimpleMemory.layer` (one handoff summary, src/layers/memory/handoffCompactor.ts).
 */
import { Context, type Effect } from "effect"
import type { CompactionFailed, SessionNotFound } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { CompactionReport, CompactOptions } from "../domain/memory/types.ts"

export class Compactor extends Context.Service<Compactor, {
  /** Whether the live context exceeds threshold (default 0.75) × budget. */
  readonly needsCompaction: (
    sessionKey: string,
    budget: number,
    threshold?: number
  ) => Effect.Effect<boolean, StorageError | SessionNotFound>
  /**
   * Whether compacting before a turn is worth its summarizer calls (domain/memory/fit.ts
   * `worthCompacting`): over threshold × budget, a plan that gains a meaningful share of the budget
   * (anything when the context no longer fits), and not again after a compaction with this budget
   * that gained less, until the context has grown by that share.
   */
  readonly worthCompacting: (sessionKey: string, budget: number) => Effect.Effect<boolean, StorageError | SessionNotFound>
  readonly compact: (
    sessionKey: string,
    options?: CompactOptions
  ) => Effect.Effect<CompactionReport, CompactionFailed | StorageError | SessionNotFound>
}>()("anna/Compactor") {}
