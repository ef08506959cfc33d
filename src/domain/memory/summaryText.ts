/**
 * Deterministic text reduction: the last rung of the summarization escalation (truncation at a
 * sentence boundary) and the extractive summary used by the deterministic summarizer layer (its
 * handoff-style summary is in handoffText.ts).
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

/** First sentence of `text` (CJK marks end a sentence without a following space), within `maxTokens`. */
export const firstSentence = (text: string, maxTokens: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  const m = /^(.+?(?:[.!?](?=\s|$)|[。！？]))/.exec(flat)
  const s = m?.[1] ?? flat
  return estimateTextTokens(s) <= maxTokens ? s : prefixWithin(s, Math.max(1, maxTokens - 1)).trimEnd() + "…"
}

const STOP = new Set(
  "the a an and or but if then of to in on at for with is are was were be been it this that these those i you we they he she my your our not no yes do does did have has had will would can could should from by as so".split(
    " "
  )
)

/** Longer "words" are runs without spaces (CJK clauses, hashes, URLs), not keywords: 32 bytes. */
const MAX_KEYWORD_TOKENS = 8

/** Most frequent content words, for the "Expand for details about" line. */
export const keywords = (text: string, n: number): Array<string> => {
  const counts = new Map<string, number>()
  for (const raw of text.toLowerCase().match(/[\p{L}\p{N}_./-]{3,}/gu) ?? []) {
    // "docker." at the end of a sentence is the word "docker"; paths such as src/main.ts stay whole.
    const w = raw.replace(/^[./-]+|[./-]+$/g, "")
    if (w.length < 3 || estimateTextTokens(w) > MAX_KEYWORD_TOKENS || STOP.has(w)) continue
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
  // The footer gets at most a quarter of the target, so the entries keep most of it.
  const words = keywords(all, aggressive ? 4 : 8)
  const footerOf = (ws: ReadonlyArray<string>) =>
    `Expand for details about: ${ws.join(", ") || "this part of the conversation"}`
  while (words.length > 0 && estimateTextTokens(footerOf(words)) > targetTokens / 4) words.pop()
  const footer = footerOf(words)
  const room = Math.max(1, targetTokens - estimateTextTokens(footer) - 1)
  // Budgets are in tokens (not characters), so CJK entries are shortened as evenly as Latin ones.
  const perEntry = Math.floor(room / Math.max(1, entries.length))
  const lines = entries.map((e) => {
    const prefix = `- ${e.label}: `
    const tokens = Math.max(6, perEntry - estimateTextTokens(prefix) - 1)
    return prefix + firstSentence(e.text, aggressive ? Math.max(6, Math.floor(tokens / 2)) : tokens)
  })
  const body = truncateAtSentence(lines.join("\n"), room)
  return truncateAtSentence(`${body}\n${footer}`, targetTokens)
}
