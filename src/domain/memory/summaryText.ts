/**
 * Deterministic text reduction: the last rung of the summarization escalation (truncation at a
 * sentence boundary) and the extractive summary used by the deterministic summarizer layer.
 */
import { estimateTextTokens } from "../message.ts"

const ELLIPSIS = " …"
const SENTENCE_END = /[.!?。！？\n](?=\s|$)|[。！？\n]/g

/** Longest prefix of `text` whose token estimate is at most `maxTokens` (binary search on length). */
const prefixWithin = (text: string, maxTokens: number): string => {
  if (estimateTextTokens(text) <= maxTokens) return text
  let lo = 0
  let hi = text.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (estimateTextTokens(text.slice(0, mid)) <= maxTokens) lo = mid
    else hi = mid - 1
  }
  // Never cut a surrogate pair in half.
  const last = text.charCodeAt(lo - 1)
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, lo - 1) : text.slice(0, lo)
}

/**
 * Cuts `text` to at most `maxTokens` tokens, ending at the last sentence boundary that fits (or the
 * last word boundary, or a hard cut when the first sentence alone is too long), marked with " …".
 * The result is never empty when the text is not, and never exceeds `maxTokens` (minimum 1).
 */
export const truncateAtSentence = (text: string, maxTokens: number): string => {
  const limit = Math.max(1, Math.floor(maxTokens))
  const trimmed = text.trim()
  if (estimateTextTokens(trimmed) <= limit) return trimmed
  const room = prefixWithin(trimmed, Math.max(1, limit - estimateTextTokens(ELLIPSIS)))
  let cut = -1
  for (const m of room.matchAll(SENTENCE_END)) cut = m.index + m[0].length
  if (cut <= 0) {
    const space = room.lastIndexOf(" ")
    cut = space > room.length / 2 ? space : room.length
  }
  const head = room.slice(0, cut).trimEnd()
  const candidate = head.length > 0 ? head + ELLIPSIS : prefixWithin(trimmed, limit)
  return estimateTextTokens(candidate) <= limit ? candidate : prefixWithin(trimmed, limit)
}

const firstSentence = (text: string, maxChars: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  const m = /^(.+?[.!?。！？])(\s|$)/.exec(flat)
  const s = m?.[1] ?? flat
  return s.length <= maxChars ? s : s.slice(0, maxChars).trimEnd() + "…"
}

const STOP = new Set(
  "the a an and or but if then of to in on at for with is are was were be been it this that these those i you we they he she my your our not no yes do does did have has had will would can could should from by as so".split(
    " "
  )
)

/** Most frequent content words, for the "Expand for details about" line. */
export const keywords = (text: string, n: number): Array<string> => {
  const counts = new Map<string, number>()
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}_./-]{3,}/gu) ?? []) {
    if (STOP.has(w)) continue
    counts.set(w, (counts.get(w) ?? 0) + 1)
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n).map(([w]) => w)
}

/**
 * Extractive summary: the first sentence of each entry, shortened evenly so that all entries keep
 * their place in order, then an "Expand for details about" line; the whole stays within
 * `targetTokens`.
 */
export const extractiveSummary = (
  entries: ReadonlyArray<{ readonly label: string; readonly text: string }>,
  targetTokens: number,
  aggressive: boolean
): string => {
  const all = entries.map((e) => e.text).join("\n")
  const footer = `Expand for details about: ${keywords(all, aggressive ? 4 : 8).join(", ") || "this part of the conversation"}`
  const room = Math.max(1, targetTokens - estimateTextTokens(footer) - 1)
  const perEntryChars = Math.max(24, Math.floor((room * 4) / Math.max(1, entries.length)) - 16)
  const lines = entries.map((e) => `- ${e.label}: ${firstSentence(e.text, aggressive ? perEntryChars / 2 : perEntryChars)}`)
  const body = truncateAtSentence(lines.join("\n"), room)
  return truncateAtSentence(`${body}\n${footer}`, targetTokens)
}
