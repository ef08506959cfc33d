/**
 * A Summarizer that needs no model: extractive summaries (first sentence of each source, an
 * "Expand for details about" line) within the requested target, or for `style: "handoff"` the seven
 * sections of seed 003 filled from extracted lines (domain/memory/handoffText.ts). Used by tests,
 * benchmarks, and as the summarizer of last resort.
 */
import { Effect, Layer } from "effect"
import { handoffSummary } from "../../domain/memory/handoffText.ts"
import { extractiveSummary } from "../../domain/memory/summaryText.ts"
import { Summarizer, type SummaryRequest } from "../../services/Summarizer.ts"

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ")

export const summarizeText = (request: SummaryRequest): string => {
  const aggressive = request.mode === "aggressive"
  if (request.input.kind === "leaf" && request.style === "handoff") {
    return handoffSummary(request.input, request.targetTokens, aggressive)
  }
  const entries = request.input.kind === "leaf"
    ? request.input.messages.map((m) => ({ label: `${m.role} ${iso(m.createdAt)}`, text: m.text }))
    : request.input.summaries.map((s) => ({ label: `${s.id} ${iso(s.earliestAt)}–${iso(s.latestAt)}`, text: s.content }))
  return extractiveSummary(entries, request.targetTokens, aggressive)
}

export const layer = Layer.succeed(
  Summarizer,
  Summarizer.of({
    summarize: Effect.fn("Summarizer.summarize")(function*(request: SummaryRequest) {
      return yield* Effect.sync(() => summarizeText(request))
    })
  })
)
