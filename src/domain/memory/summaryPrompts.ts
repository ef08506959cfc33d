/**
 * Prompts of the model-backed summarizer (seed: "Summarization escalation"): a leaf prompt for raw
 * conversation and depth-aware prompts for condensing summaries, each in a normal mode (keep
 * decisions, rationale, constraints) and an aggressive mode (durable facts only). Every summary must
 * stand alone for a reader who never saw the conversation and end with an "Expand for details
 * about: …" line, which tells a later model what it can ask `expand` for. The handoff prompt
 * (memory/simple, seed 003) asks instead for the seven sections of domain/memory/handoff.ts, folding
 * in the previous summary, with no expand line (Simple has no `expand`).
 */
import { HANDOFF_SECTIONS, type HandoffSection } from "./handoff.ts"
import type { SummaryRequest } from "./summary.ts"

const iso = (ms: number): string => new Date(ms).toISOString().slice(0, 16).replace("T", " ")

const KEEP =
  "Keep: decisions and their reasons, constraints and preferences the user stated, facts learned, file paths, commands, identifiers (names, ids, URLs, versions, numbers), errors and how they were resolved, commitments, and open questions or unfinished work."

const FORMAT = (target: number) =>
  `Write plain prose or terse bullet points, in the language of the conversation, at most about ${target} tokens. Do not invent anything; do not address the reader. End with one line: "Expand for details about: " followed by a comma-separated list of the specific topics whose details this summary leaves out.`

const leafSystem = (mode: "normal" | "aggressive", target: number): string =>
  [
    "You compress a part of a long conversation between a user and an AI assistant (with its tool calls) into a summary that replaces it in the assistant's memory. The original stays retrievable, so prefer what a future reader needs to continue the work.",
    mode === "normal"
      ? KEEP
      : "Be aggressive: keep only durable facts (decisions, constraints, identifiers, paths, unresolved problems); drop narration, reasoning, pleasantries and anything that was superseded.",
    FORMAT(target)
  ].join("\n\n")

const condensedSystem = (mode: "normal" | "aggressive", childDepth: number, target: number): string =>
  [
    `You merge ${childDepth === 0 ? "summaries of consecutive parts of a conversation" : `higher-level summaries (each already condensing several summaries, level ${childDepth})`} into one summary of the whole span, for an AI assistant's long-term memory. The sources stay retrievable by their ids.`,
    childDepth === 0
      ? "Produce a coherent account in time order: what was being done, what was decided and why, what state things are in."
      : "Stay at a high level: goals, major decisions, the state reached, and durable facts; leave step-by-step detail to the sources.",
    mode === "normal" ? KEEP : "Be aggressive: keep only durable facts, decisions, identifiers and open problems.",
    FORMAT(target)
  ].join("\n\n")

const SECTION_HINTS: Readonly<Record<HandoffSection, string>> = {
  Goal: "the original objective of the session",
  Progress: "what was completed or partially done",
  "Key Decisions": "decisions made and their rationale",
  "Files Changed": "file paths, each with what changed",
  "Current State": "what works and what does not",
  "Blockers / Gotchas": "open issues, errors and edge cases to watch",
  "Next Steps": "concrete, actionable tasks, the user's latest request first"
}

const handoffSystem = (mode: "normal" | "aggressive", target: number): string =>
  [
    "You write a handoff summary of a conversation between a user and an AI assistant (with its tool calls). It replaces the older part of the conversation in the assistant's context: the assistant will continue the work from this summary and the most recent messages only.",
    "The summary must be self-contained: it must make sense to a reader with no access to the prior conversation. Spell out names, paths, commands, identifiers, numbers and errors instead of referring to them.",
    `Use exactly these seven Markdown headings, each on a line of its own as written here, in this order, and write "None." under a heading with nothing to report:\n${
      HANDOFF_SECTIONS.map((s) => `## ${s}`).join("\n")
    }\nUnder each: ${HANDOFF_SECTIONS.map((s) => `${s}: ${SECTION_HINTS[s]}`).join("; ")}.`,
    "When an earlier summary is given, fold it in: keep what still holds, update what changed, drop what was superseded or resolved.",
    mode === "normal"
      ? KEEP
      : "Be aggressive: keep only durable facts (the goal, decisions, identifiers, paths, the current state, unresolved problems, next steps); drop narration and anything superseded.",
    `Write terse bullet points, in the language of the conversation, at most about ${target} tokens in all. Do not invent anything; do not address the reader.`
  ].join("\n\n")

export interface SummaryPrompt {
  readonly system: string
  readonly user: string
  /** Output cap: 150 % of the target (what the escalation accepts) plus room for the last line. */
  readonly maxTokens: number
}

export const summaryPrompt = (request: SummaryRequest): SummaryPrompt => {
  const target = Math.max(16, request.targetTokens)
  const maxTokens = Math.ceil(target * 1.5) + 64
  if (request.input.kind === "leaf") {
    const transcript = request.input.messages.map((m) => `[${m.role} ${iso(m.createdAt)}]\n${m.text}`).join("\n\n")
    const conversation = `Conversation to summarize:\n\n<conversation>\n${transcript}\n</conversation>`
    if (request.style !== "handoff") return { system: leafSystem(request.mode, target), user: conversation, maxTokens }
    const previous = request.input.previousSummary
    const earlier = previous === undefined
      ? ""
      : `Earlier summary (of the conversation before these messages):\n\n<earlier-summary>\n${previous}\n</earlier-summary>\n\n`
    return { system: handoffSystem(request.mode, target), user: earlier + conversation, maxTokens }
  }
  const sources = request.input.summaries
    .map((s) => `<summary id="${s.id}" from="${iso(s.earliestAt)}" to="${iso(s.latestAt)}">\n${s.content}\n</summary>`)
    .join("\n\n")
  return {
    system: condensedSystem(request.mode, request.input.depth, target),
    user: `Summaries to merge, oldest first:\n\n${sources}`,
    maxTokens
  }
}
