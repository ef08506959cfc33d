/**
 * Summarizer — turns a chunk of conversation (leaf) or a run of summaries (condensed) into one
 * summary text of about `targetTokens`. Owns only the text; the compaction engine owns escalation
 * (normal → aggressive → deterministic truncation), storage and the DAG.
 */
import { Context, type Effect } from "effect"
import type { SummarizerError } from "../domain/memory/errors.ts"
import type { Role } from "../domain/message.ts"

export type SummaryMode = "normal" | "aggressive"

export type SummaryInput =
  | {
    readonly kind: "leaf"
    readonly messages: ReadonlyArray<{ readonly role: Role; readonly text: string; readonly createdAt: number }>
  }
  | {
    readonly kind: "condensed"
    /** Depth of the summaries being condensed (the result is one deeper). */
    readonly depth: number
    readonly summaries: ReadonlyArray<
      { readonly id: string; readonly content: string; readonly earliestAt: number; readonly latestAt: number }
    >
  }

export interface SummaryRequest {
  readonly sessionKey: string
  readonly mode: SummaryMode
  readonly targetTokens: number
  readonly input: SummaryInput
}

export class Summarizer extends Context.Service<Summarizer, {
  readonly summarize: (request: SummaryRequest) => Effect.Effect<string, SummarizerError>
}>()("anna/Summarizer") {}
