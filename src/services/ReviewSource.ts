/**
 * ReviewSource — capability: feeds the self-improving memory review (seed 004): which sessions have
 * messages not yet reviewed, a transcript of them, and marking them reviewed.
 *
 * Layers: `LcmMemory.layer` (src/layers/memory/LcmMemory.ts).
 */
import { Context, type Effect } from "effect"
import type { SessionNotFound } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { ReviewBatch, ReviewContext } from "../domain/memory/types.ts"

export class ReviewSource extends Context.Service<ReviewSource, {
  readonly listUnreviewed: (options?: {
    readonly minMessages?: number | undefined
    readonly limit?: number | undefined
  }) => Effect.Effect<ReadonlyArray<ReviewBatch>, StorageError>
  /**
   * Transcript of the unreviewed messages, oldest first, stopping at a message boundary before it
   * passes `maxTokens` (default 8,000; the first message is always included). `toSeq` is the last
   * message included, so marking it reviewed lets the next call continue where this one stopped.
   */
  readonly buildReviewContext: (
    sessionKey: string,
    options?: { readonly maxTokens?: number | undefined }
  ) => Effect.Effect<ReviewContext, StorageError | SessionNotFound>
  /** Marks messages up to `toSeq` reviewed (never moves backwards). */
  readonly markReviewed: (sessionKey: string, toSeq: number) => Effect.Effect<void, StorageError | SessionNotFound>
}>()("anna/ReviewSource") {}
