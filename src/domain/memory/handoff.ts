/**
 * Handoff compaction (seed 003), the pure part: how memory/simple compacts and what it assembles.
 *
 * Simple's view of a session is its newest live summary (if any) followed by every message after
 * it. Compaction turns the messages of that view outside the fresh tail into ONE structured summary
 * (the seven sections below), stored as an ordinary leaf summary of exactly those messages, so the
 * DAG stays valid and LCM reads it as a depth-0 summary after a plugin switch. Assembly renders the
 * view's summary as a user message plus an assistant acknowledgement, the way seed 003 loads a
 * compaction entry, then the newest messages that fit.
 */
import { estimateMessageTokens, estimateTextTokens, type Message } from "../message.ts"
import { freshTailStart, type ItemMeta, type Span } from "./context.ts"
import { summaryCapOf } from "./fit.ts"

export const HANDOFF_SECTIONS = [
  "Goal",
  "Progress",
  "Key Decisions",
  "Files Changed",
  "Current State",
  "Blockers / Gotchas",
  "Next Steps"
] as const
export type HandoffSection = typeof HANDOFF_SECTIONS[number]

/** A handoff summary is asked for a third of its input, and never more than this. */
export const HANDOFF_MAX_TARGET = 2_000

export const HANDOFF_ACK = "Understood — continuing from the summary above."

/**
 * Target of a handoff summary: min(input / 3, 2000) tokens, input = messages + previous summary;
 * with a budget, also at most its summary share (fit.ts), but never below what the seven sections need.
 */
export const handoffTarget = (inputTokens: number, budget?: number): number => {
  const plain = Math.max(1, Math.min(Math.floor(inputTokens / 3), HANDOFF_MAX_TARGET))
  return budget === undefined ? plain : Math.min(plain, Math.max(HANDOFF_MIN_TARGET, summaryCapOf(budget)))
}

export interface HandoffSummary {
  readonly content: string
  readonly earliestAt: number
  readonly latestAt: number
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/:\d\d\.\d{3}Z$/, "Z")

/** The summary as the user message and assistant acknowledgement a model sees (seed 003, "Storage Format"). */
export const renderHandoff = (s: HandoffSummary): readonly [Message, Message] => [
  {
    role: "user",
    content: `The earlier part of this conversation (${iso(s.earliestAt)} to ${
      iso(s.latestAt)
    }) was compacted into this summary; the messages after it continue from there.\n\n<conversation-summary>\n${s.content}\n</conversation-summary>`
  },
  { role: "assistant", content: HANDOFF_ACK }
]

export const handoffContextTokens = (s: HandoffSummary): number =>
  renderHandoff(s).reduce((n, m) => n + estimateMessageTokens(m), 0)

/** What the frame costs whatever the text: a run this small is not worth a summary. */
export const HANDOFF_FRAME_TOKENS = handoffContextTokens({ content: "", earliestAt: 0, latestAt: 0 })

/**
 * The smallest target worth asking for: twice what the seven headings cost with "None." under each,
 * so every section has room. Smaller inputs are left as they are (the fresh tail grows them).
 */
export const HANDOFF_MIN_TARGET = 2 * estimateTextTokens(
  HANDOFF_SECTIONS.map((s) => `## ${s}\nNone.`).join("\n\n")
)

/** Whether a run of `runTokens` (after a previous summary of `previousTokens`) is worth a handoff summary. */
export const worthHandoff = (runTokens: number, previousTokens: number): boolean =>
  runTokens > 2 * HANDOFF_FRAME_TOKENS && handoffTarget(runTokens + previousTokens) >= HANDOFF_MIN_TARGET

/** Index where Simple's view starts: the newest live summary, or 0 when there is none. */
export const viewStart = (items: ReadonlyArray<ItemMeta>): number => {
  for (let i = items.length - 1; i >= 0; i--) if (items[i]?.kind === "summary") return i
  return 0
}

/** Context tokens of Simple's view, given the handoff cost of its summary (the items carry LCM's). */
export const viewTokens = (items: ReadonlyArray<ItemMeta>, summaryTokens: number): number => {
  const start = viewStart(items)
  let n = 0
  for (let i = start; i < items.length; i++) {
    const it = items[i]
    if (it !== undefined) n += it.kind === "summary" ? summaryTokens : it.tokens
  }
  return n
}

export interface HandoffPlan {
  /** The view's summary (index into items), carried forward into the new one. */
  readonly previous: number | undefined
  /** The message items to summarize: after the view's summary, before the fresh tail; may be empty. */
  readonly run: Span
}

/**
 * The one step of a handoff compaction: every message of the view outside the fresh tail
 * (`freshTailStart` over the view, capped at `tailTokens` when given, so the run ends on a unit
 * boundary and never separates a tool_use from its results).
 */
export const planHandoff = (items: ReadonlyArray<ItemMeta>, freshTail: number, tailTokens?: number): HandoffPlan => {
  const start = viewStart(items)
  const previous = items[start]?.kind === "summary" ? start : undefined
  const first = previous === undefined ? start : start + 1
  const end = first + freshTailStart(items.slice(first), freshTail, tailTokens)
  return { previous, run: { start: first, end } }
}

/** `## Heading` sections of a structured summary, in order; text before the first heading is dropped. */
export const parseSections = (text: string): Array<{ readonly heading: string; readonly body: string }> => {
  const sections: Array<{ heading: string; body: string }> = []
  for (const line of text.split("\n")) {
    const m = /^#{1,3}\s+(.+?)\s*$/.exec(line)
    const current = sections[sections.length - 1]
    if (m?.[1] !== undefined) sections.push({ heading: m[1], body: "" })
    else if (current !== undefined) current.body += (current.body === "" ? "" : "\n") + line
  }
  return sections.map((s) => ({ heading: s.heading, body: s.body.trim() }))
}

/** The body of `section` in a structured summary, or undefined when it has no such heading. */
export const sectionOf = (text: string, section: HandoffSection): string | undefined =>
  parseSections(text).find((s) => s.heading.toLowerCase() === section.toLowerCase())?.body

/** Whether `text` has all seven handoff sections (in any order). */
export const isHandoff = (text: string): boolean => HANDOFF_SECTIONS.every((s) => sectionOf(text, s) !== undefined)

export const formatSections = (sections: ReadonlyArray<{ readonly heading: string; readonly body: string }>): string =>
  sections.map((s) => `## ${s.heading}\n${s.body}`).join("\n\n")
