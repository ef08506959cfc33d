/**
 * What a summarizer is asked: a chunk of conversation (leaf) or a run of summaries (condensed).
 * `style: "handoff"` (memory/simple, seed 003) asks for one self-contained structured summary in
 * the seven sections of domain/memory/handoff.ts instead of LCM's prose summary of one chunk.
 */
import type { Role } from "../message.ts"

export type SummaryMode = "normal" | "aggressive"

export type SummaryInput =
  | {
    readonly kind: "leaf"
    readonly messages: ReadonlyArray<{ readonly role: Role; readonly text: string; readonly createdAt: number }>
    /**
     * Handoff only: the text of the newest live summary before these messages, so the new summary
     * carries it forward (the new summary still links only to `messages`).
     */
    readonly previousSummary?: string | undefined
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
  /** Absent: LCM's summary of one chunk. "handoff": seed 003's structured summary (leaf input only). */
  readonly style?: "handoff" | undefined
}
