/** What a summarizer is asked: a chunk of conversation (leaf) or a run of summaries (condensed). */
import type { Role } from "../message.ts"

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
