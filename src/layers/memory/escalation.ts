/**
 * The summarization escalation both compactions share (seed: "Summarization escalation"), as a
 * typed pipeline: normal → aggressive when the text passes 150 % of its target → a deterministic
 * cut of the aggressive text. LCM cuts at a sentence boundary; a handoff summary is cut section by
 * section so that all seven headings survive.
 *
 * A summarizer failure that no further model call can fix (the provider refused the credentials or
 * the request, the request does not fit the model, the provider is missing or disabled) goes
 * straight to the deterministic rung: the extractive summary of the deterministic summarizer, cut
 * the same way, with one warning. So does an outage (rate limit, server, network: the transport has
 * already retried those, and the summarizer's breaker has opened on it) and a call the breaker did
 * not make (`SummarizerCircuitOpen`), quietly: the breaker warned once when it opened, and a warning
 * per step would be one per turn. Any other failure (no cause: storage, an empty response) fails the
 * step, as it always did.
 */
import { Effect } from "effect"
import { type SummarizerCause, SummarizerError, SummaryTooLong } from "../../domain/memory/errors.ts"
import { truncateSections } from "../../domain/memory/handoffText.ts"
import { truncateAtSentence } from "../../domain/memory/summaryText.ts"
import { estimateTextTokens } from "../../domain/message.ts"
import type { Summarizer, SummaryRequest } from "../../services/Summarizer.ts"
import { summarizeText } from "./DeterministicSummarizer.ts"

/** A summary result is acceptable up to 150 % of its target. */
export const TOLERANCE = 1.5

export interface Summarized {
  readonly content: string
  readonly mode: "normal" | "aggressive" | "truncated"
}

/**
 * Why compaction goes on without the model after `cause`: a warning for the causes that another
 * model call cannot fix, "quiet" for an outage (the summarizer's breaker has warned).
 */
const withoutModelBecause = (cause: SummarizerCause): string | "quiet" => {
  switch (cause._tag) {
    case "ProviderAuthError":
      return `provider ${cause.provider} refused the credentials`
    case "InvalidRequest":
      return `provider ${cause.provider} rejected the request`
    case "ContextOverflow":
      return `the request does not fit the context window of provider ${cause.provider}'s model`
    case "ProviderNotFound":
      return `provider ${cause.id} is not configured`
    case "ProviderDisabled":
      return `provider ${cause.id} is disabled`
    case "ProviderRateLimited":
    case "ProviderServerError":
    case "ProviderNetworkError":
    case "SummarizerCircuitOpen":
      return "quiet"
  }
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
  const truncated = (text: string): Summarized => ({ content: cut(text, request.targetTokens), mode: "truncated" })
  const withoutModel = (e: SummarizerError): Effect.Effect<Summarized, SummarizerError> => {
    if (e.cause === undefined) return Effect.fail(e)
    const why = withoutModelBecause(e.cause)
    const log = why === "quiet"
      ? Effect.logDebug(`summarizer: ${e.cause.message} (${e.cause._tag}); using deterministic truncation`)
      : Effect.logWarning(`summarizer: ${why} (${e.cause._tag}); using deterministic truncation`)
    return log.pipe(Effect.as(truncated(summarizeText({ ...request, mode: "normal" }))))
  }
  return attempt("normal").pipe(
    Effect.catchTag("SummaryTooLong", () => attempt("aggressive")),
    Effect.catchTag("SummaryTooLong", (e) => Effect.succeed(truncated(e.text))),
    Effect.catchTag("SummarizerError", withoutModel),
    // A summary is derived text: U+0000 (a message may hold one; PostgreSQL's text cannot) is dropped
    // here, before its context cost is measured, so the stored summary is the one measured.
    Effect.map((s): Summarized => (s.content.includes("\u0000") ? { ...s, content: s.content.replaceAll("\u0000", "") } : s))
  )
}
