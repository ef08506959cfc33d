/**
 * The summarization escalation both compactions share (seed: "Summarization escalation"), as a
 * typed pipeline: normal → aggressive when the text passes 150 % of its target → a deterministic
 * cut of the aggressive text. LCM cuts at a sentence boundary; a handoff summary is cut section by
 * section so that all seven headings survive.
 */
import { Effect } from "effect"
import { SummarizerError, SummaryTooLong } from "../../domain/memory/errors.ts"
import { truncateSections } from "../../domain/memory/handoffText.ts"
import { truncateAtSentence } from "../../domain/memory/summaryText.ts"
import { estimateTextTokens } from "../../domain/message.ts"
import type { Summarizer, SummaryRequest } from "../../services/Summarizer.ts"

/** A summary result is acceptable up to 150 % of its target. */
export const TOLERANCE = 1.5

export interface Summarized {
  readonly content: string
  readonly mode: "normal" | "aggressive" | "truncated"
}

export const summarizeEscalating = (summarizer: Summarizer["Service"], request: Omit<SummaryRequest, "mode">) => {
  const attempt = (mode: "normal" | "aggressive") =>
    summarizer.summarize({ ...request, mode }).pipe(
      Effect.flatMap((raw): Effect.Effect<Summarized, SummarizerError | SummaryTooLong> => {
        const text = raw.trim()
        if (text.length === 0) return Effect.fail(new SummarizerError({ reason: "empty summary response" }))
        const tokens = estimateTextTokens(text)
        return tokens > TOLERANCE * request.targetTokens
          ? Effect.fail(new SummaryTooLong({ mode, tokens, target: request.targetTokens, text }))
          : Effect.succeed({ content: text, mode })
      })
    )
  const cut = request.style === "handoff" ? truncateSections : truncateAtSentence
  return attempt("normal").pipe(
    Effect.catchTag("SummaryTooLong", () => attempt("aggressive")),
    Effect.catchTag("SummaryTooLong", (e) =>
      Effect.succeed<Summarized>({ content: cut(e.text, request.targetTokens), mode: "truncated" }))
  )
}
