/**
 * Summarizer — turns a chunk of conversation (leaf) or a run of summaries (condensed) into one
 * summary text of about `targetTokens`. Owns only the text; the compaction engine owns escalation
 * (normal → aggressive → deterministic truncation), storage and the DAG.
 *
 * Layers: `ModelSummarizer.layer` (the configured summary model) and `DeterministicSummarizer.layer` (src/layers/memory/).
 */
import { Context, type Effect } from "effect"
import type { SpendGuardExceeded, SummarizerError } from "../domain/memory/errors.ts"
import type { SummaryRequest } from "../domain/memory/summary.ts"

export type { SummaryInput, SummaryMode, SummaryRequest } from "../domain/memory/summary.ts"

export class Summarizer extends Context.Service<Summarizer, {
  /** Fails with SpendGuardExceeded (before calling anything) when the session is over its limit. */
  readonly summarize: (request: SummaryRequest) => Effect.Effect<string, SummarizerError | SpendGuardExceeded>
}>()("anna/Summarizer") {}
