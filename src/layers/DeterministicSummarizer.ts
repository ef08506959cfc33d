/**
 * A Summarizer that needs no model: extractive summaries (first sentence of each source, an
 * "Expand for details about" line) within the requested target. Used by tests, benchmarks, and as
 * the summarizer of last resort; the model-backed one arrives with the providers.
 */
import { Effect, Layer } from "effect"
import { extractiveSummary } from "../domain/memory/summaryText.ts"
import { Summarizer, type SummaryRequest } from "../services/Summarizer.ts"

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ")

export const summarizeText = (request: SummaryRequest): string => {
  const entries = request.input.kind === "leaf"
    ? request.input.messages.map((m) => ({ label: `${m.role} ${iso(m.createdAt)}`, text: m.text }))
    : request.input.summaries.map((s) => ({ label: `${s.id} ${iso(s.earliestAt)}–${iso(s.latestAt)}`, text: s.content }))
  return extractiveSummary(entries, request.targetTokens, request.mode === "aggressive")
}

export const layer = Layer.succeed(Summarizer, Summarizer.of({ summarize: (r) => Effect.sync(() => summarizeText(r)) }))
