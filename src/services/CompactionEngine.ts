/**
 * CompactionEngine — leaf and condensed passes over a session's live context (seed: Compaction),
 * incremental (one leaf + one condensed pass) or full (repeat, at most 10 iterations), with the
 * summarization escalation normal → aggressive → deterministic truncation. Each step (one summary)
 * is one transaction. Owns the policy; storage is the MemoryStore's, text is the Summarizer's.
 *
 * Layers: `DagCompactionEngine.layer` (src/layers/memory/DagCompactionEngine.ts), used by LcmMemory.
 */
import { Context, type Effect } from "effect"
import type { CompactionFailed } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { CompactionReport, CompactOptions } from "../domain/memory/types.ts"
import type { ItemMeta } from "../domain/memory/context.ts"
import type { Conversation } from "./MemoryStore.ts"

export interface CompactionConfig {
  readonly threshold: number
  readonly freshTail: number
  readonly leafMinMessages: number
  readonly condensedMin: number
  readonly condensedFanIn: number
  readonly chunkTokens: number
  readonly maxIterations: number
}

export class CompactionEngine extends Context.Service<CompactionEngine, {
  readonly config: CompactionConfig
  readonly compact: (
    conversation: Conversation,
    options: CompactOptions
  ) => Effect.Effect<CompactionReport, CompactionFailed | StorageError>
  /**
   * What compacting these live items with `budget` would save, estimated from its plan (each
   * summary at its target): what `Compactor.worthCompacting` weighs against the least gain.
   */
  readonly estimateGain: (items: ReadonlyArray<ItemMeta>, budget: number) => number
}>()("anna/CompactionEngine") {}
