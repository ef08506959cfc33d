/**
 * Handoff summaries without a model: the seven sections of seed 003 filled from extracted lines
 * (Goal = the first user request, Progress = what the assistant said it did, Key Decisions = lines
 * about deciding, Files Changed = paths mentioned, Current State = the assistant's last word,
 * Blockers / Gotchas = errors and failures, Next Steps = the last user request), carrying a
 * previous handoff summary forward section by section. Also the per-section truncation that is the
 * last rung of a handoff summary's escalation: cutting the text as a whole would drop its last
 * sections (Next Steps first), so every section keeps a share instead.
 */
import { estimateTextTokens } from "../message.ts"
import { formatSections, HANDOFF_SECTIONS, type HandoffSection, isHandoff, parseSections, sectionOf } from "./handoff.ts"
import type { SummaryInput } from "./summary.ts"
import { firstSentence, truncateAtSentence } from "./summaryText.ts"

type LeafInput = Extract<SummaryInput, { readonly kind: "leaf" }>

const PATH = /(?:^|[\s`'"([{,:=])((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z]\w{0,7})(?=$|[\s`'"),:;\]}]|\.(?:\s|$))/g
const NOT_PATHS = new Set(["e.g", "i.e", "etc", "vs"])
const DECISION = /decid|decision|\bchose\b|\bchoose\b|\bagreed\b|settled on|going with|\bwill use\b/i
const BLOCKER = /\berror|\bfail|\bbug\b|broken|\bblock|gotcha|careful|warning|cannot|can't|won't work|doesn't work|timed? ?out|crash/i

const sentences = (text: string): Array<string> =>
  text.replace(/\s+/g, " ").trim().split(/(?<=[.!?。！？])\s+/).filter((s) => s.length > 0)

/** The prose of a message: its lines that are not tool calls or tool results. */
const prose = (text: string): string =>
  text.split("\n").filter((l) => !/^\[tool (call|result|error)\b/.test(l)).join("\n").trim()

const pathsIn = (text: string): Array<string> =>
  [...text.matchAll(PATH)].flatMap((m) => (m[1] === undefined || NOT_PATHS.has(m[1].toLowerCase()) ? [] : [m[1]]))

/** Bullet lines of a previous summary's section ("None." and blank lines dropped). */
const previousItems = (previous: string | undefined, section: HandoffSection): Array<string> =>
  (previous === undefined ? undefined : sectionOf(previous, section))?.split("\n")
    .map((l) => l.replace(/^\s*[-*•]\s*/, "").trim())
    .filter((l) => l.length > 0 && !/^none\.?$/i.test(l)) ?? []

/** The later occurrence wins, so the most recently mentioned items end the list. */
const dedupe = (items: ReadonlyArray<string>): Array<string> => {
  const seen = new Set<string>()
  const out: Array<string> = []
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]
    if (item === undefined || seen.has(item)) continue
    seen.add(item)
    out.unshift(item)
  }
  return out
}

interface Extracted {
  readonly goal: string | undefined
  readonly lists: Readonly<Record<"Progress" | "Key Decisions" | "Files Changed" | "Blockers / Gotchas", ReadonlyArray<string>>>
  readonly state: string | undefined
  readonly next: string | undefined
}

const extract = (input: LeafInput): Extracted => {
  const previous = input.previousSummary
  const structured = previous !== undefined && isHandoff(previous)
  const users = input.messages.filter((m) => m.role === "user").map((m) => prose(m.text)).filter((t) => t !== "")
  const replies = input.messages.filter((m) => m.role === "assistant").map((m) => prose(m.text)).filter((t) => t !== "")
  const all = input.messages.map((m) => prose(m.text))
  const earlier = previous !== undefined && !structured ? [`Earlier: ${previous}`] : []
  const toolErrors = input.messages.flatMap((m) => m.text.split("\n").filter((l) => l.startsWith("[tool error]")))
  const decisions = all.flatMap(sentences).filter((s) => DECISION.test(s))
  return {
    goal: (structured ? previousItems(previous, "Goal").join(" ") : "") || users[0],
    lists: {
      Progress: [...previousItems(previous, "Progress"), ...earlier, ...replies],
      "Key Decisions": dedupe([
        ...previousItems(previous, "Key Decisions"),
        ...decisions
      ]),
      "Files Changed": dedupe([
        ...previousItems(previous, "Files Changed"),
        ...input.messages.flatMap((m) => pathsIn(m.text))
      ]),
      "Blockers / Gotchas": dedupe([
        ...previousItems(previous, "Blockers / Gotchas"),
        // A decision that mentions an error ("no error handling") is a decision, not a blocker.
        ...[...all.flatMap(sentences), ...toolErrors].filter((s) => BLOCKER.test(s) && !decisions.includes(s))
      ])
    },
    state: replies[replies.length - 1] ?? previousItems(previous, "Current State").join(" "),
    next: users[users.length - 1] ?? previousItems(previous, "Next Steps").join(" ")
  }
}

const NONE = "None."

const build = (x: Extracted, items: number, lineTokens: number): string => {
  const line = (text: string | undefined) =>
    text === undefined || text.trim() === "" ? NONE : firstSentence(text, lineTokens)
  const bullets = (list: ReadonlyArray<string>) =>
    list.length === 0 ? NONE : list.slice(-items).map((t) => `- ${firstSentence(t, lineTokens)}`).join("\n")
  const body = (section: HandoffSection): string => {
    switch (section) {
      case "Goal":
        return line(x.goal)
      case "Current State":
        return line(x.state)
      case "Next Steps":
        return x.next === undefined || x.next.trim() === "" ? NONE : `- ${firstSentence(x.next, lineTokens)}`
      default:
        return bullets(x.lists[section])
    }
  }
  return formatSections(HANDOFF_SECTIONS.map((heading) => ({ heading, body: body(heading) })))
}

/**
 * The seven sections, deterministically, within `targetTokens` when the headings leave room: list
 * sections keep their most recent items, and items and line lengths halve until the whole fits.
 */
export const handoffSummary = (input: LeafInput, targetTokens: number, aggressive: boolean): string => {
  const x = extract(input)
  let items = aggressive ? 5 : 10
  let lineTokens = aggressive ? 24 : 48
  for (;;) {
    const text = build(x, items, lineTokens)
    if (estimateTextTokens(text) <= targetTokens) return text
    if (items > 1) items = Math.floor(items / 2)
    else if (lineTokens > 6) lineTokens = Math.floor(lineTokens / 2)
    else return truncateSections(text, targetTokens)
  }
}

/**
 * Cuts a structured summary to at most `maxTokens`, sharing the room fairly among the sections
 * (short ones stay whole, long ones are cut at a sentence boundary), so every heading survives.
 * Text without sections, or a budget too small for the headings, is truncated as a whole.
 */
export const truncateSections = (text: string, maxTokens: number): string => {
  const trimmed = text.trim()
  if (estimateTextTokens(trimmed) <= maxTokens) return trimmed
  const sections = parseSections(trimmed)
  const frame = estimateTextTokens(formatSections(sections.map((s) => ({ heading: s.heading, body: "" }))))
  let room = maxTokens - frame
  if (sections.length < 2 || room < 2 * sections.length) return truncateAtSentence(trimmed, maxTokens)
  // Water-filling, shortest first: each gets its whole body or an equal share of what is left.
  const share = new Map<number, number>()
  const order = sections.map((s, i) => ({ i, tokens: estimateTextTokens(s.body) })).sort((a, b) => a.tokens - b.tokens)
  order.forEach(({ i, tokens }, k) => {
    const give = Math.min(tokens, Math.floor(room / (order.length - k)))
    share.set(i, give)
    room -= give
  })
  const out = formatSections(sections.map((s, i) => ({
    heading: s.heading,
    body: s.body === "" ? "" : truncateAtSentence(s.body, Math.max(1, share.get(i) ?? 1))
  })))
  return estimateTextTokens(out) <= maxTokens ? out : truncateAtSentence(out, maxTokens)
}
