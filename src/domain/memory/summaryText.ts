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

/** Words that say nothing about a topic: function words, chat fillers, and the roles. */
const STOP = new Set(
  ("the a an and or but if then of to in on at for with is are was were be been it this that these those i you we they he she " +
    "my your our not no yes do does did have has had will would can could should from by as so " +
    "about above after again all also any because before being below between both each few further here how into its " +
    "just more most much must now off once only other over own same some such than their them there through too under " +
    "until very what when where which while who whom why yet " +
    "okay ok please thanks thank sure well like get got make made use used using need want know think see look let " +
    "one two three first last next new good right still even really maybe something anything thing things way " +
    "user assistant tool_result")
    .split(" ")
)

/** Longer "words" are runs without spaces (CJK clauses, hashes, URLs), not keywords: 32 bytes. */
const MAX_KEYWORD_TOKENS = 8

/** Dates, times and plain numbers are when, not what. */
const NOT_A_TOPIC = /^(?:\d+(?:[-./:]\d+)*|\d{4}-\d{2}-\d{2}t[\d:.]*z?)$/

/** Identifiers, paths, file names, versions (FACT-3003, src/main.ts, v2.1, max_tokens): the most specific words. */
const identifierLike = (w: string) => /[./_]/.test(w) || (/\p{N}/u.test(w) && /\p{L}/u.test(w))

/**
 * The most distinctive words of `text`, for the "Expand for details about" line: content words by
 * frequency, identifiers, paths and file names counting double; never stop words, roles, dates or
 * plain numbers. Each is shown in its most frequent spelling.
 */
export const keywords = (text: string, n: number): Array<string> => {
  const found = new Map<string, { count: number; spellings: Map<string, number> }>()
  for (const raw of text.match(/[\p{L}\p{N}_./-]{3,}/gu) ?? []) {
    // "docker." at the end of a sentence is the word "docker"; paths such as src/main.ts and
    // /srv/backups stay whole.
    const spelling = raw.replace(/[./-]+$/, "").replace(/^[./-]+/, () => /^\/[^/]+\/./.test(raw) ? "/" : "")
    const w = spelling.toLowerCase()
    if (w.length < 3 || estimateTextTokens(w) > MAX_KEYWORD_TOKENS || STOP.has(w) || NOT_A_TOPIC.test(w)) continue
    const entry = found.get(w) ?? { count: 0, spellings: new Map<string, number>() }
    entry.count++
    entry.spellings.set(spelling, (entry.spellings.get(spelling) ?? 0) + 1)
    found.set(w, entry)
  }
  const score = (w: string, count: number) => count * (identifierLike(w) ? 2 : 1)
  return [...found.entries()]
    .map(([w, e]) => ({ w, score: score(w, e.count), shown: [...e.spellings].sort((a, b) => b[1] - a[1])[0]?.[0] ?? w }))
    .sort((a, b) => b.score - a.score || (a.w < b.w ? -1 : 1))
    .slice(0, n)
    .map((k) => k.shown)
}

/**
 * The scaffolding of the extractive summaries below, which a condensed summary reads back in its
 * sources: entry labels (`- user 2026-03-01 09:30: `, `- sum_4 2026-03-01 09:30–2026-03-01 10:10: `,
 * nested at the start of a line) and the footer's lead-in. They name roles, ids and dates, not topics.
 */
const DATE = String.raw`\d{4}-\d{2}-\d{2} \d{2}:\d{2}`
const LABELS = new RegExp(String.raw`^(?:- [^\n:]{0,40}?${DATE}(?:–${DATE})?: )+`, "gm")
const FOOTER_LEAD = /^Expand for details about: /gm
const withoutScaffolding = (text: string) => text.replace(LABELS, "").replace(FOOTER_LEAD, "")

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
  const all = entries.map((e) => withoutScaffolding(e.text)).join("\n")
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
