/**
 * Search snippets cut from a whole text whose matches are already marked (FTS5 `highlight()`).
 * FTS5's own `snippet()` prefers a window that starts a sentence (or the text), so a match late in
 * a long sentence ends its snippet (`…«FACT»…`) and the words after it — often the answer, such as
 * the port after a host name — are lost. Here the window is placed around the first match, with
 * more room after it than before, and cut at word boundaries where the text has them (CJK text
 * has none; it is cut by characters).
 */

/** Marks for `highlight()`: control characters that ordinary text does not contain. */
export const MARK_OPEN = "\u0002"
export const MARK_CLOSE = "\u0003"

export interface SnippetWindow {
  /** Characters kept before the first match, at most (more when the text ends sooner after it). */
  readonly before: number
  /** Characters kept after the end of the first match, at most (more when it starts sooner). */
  readonly after: number
}

export const DEFAULT_WINDOW: SnippetWindow = { before: 48, after: 120 }

const isSpace = (c: string | undefined) => c !== undefined && /\s/.test(c)
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/**
 * The snippet of `marked` (matches between MARK_OPEN and MARK_CLOSE) around its first match, the
 * matches shown as «…», whitespace collapsed, and "…" where text was left out.
 */
export const snippetAround = (marked: string, window: SnippetWindow = DEFAULT_WINDOW): string => {
  const found = marked.indexOf(MARK_OPEN)
  // Without a mark (not expected from highlight()), the window starts the text.
  const at = Math.max(0, found)
  const firstEnd = found < 0 ? 0 : (marked.indexOf(MARK_CLOSE, at) + 1 || marked.length)
  // Room one side does not need goes to the other: a short text is shown whole.
  const before = window.before + Math.max(0, window.after - (marked.length - firstEnd))
  const after = window.after + Math.max(0, window.before - at)
  let start = Math.max(0, at - before)
  if (start > 0) {
    // Start on a word: after the first space in the margin, if there is one.
    let i = start
    while (i < at && !isSpace(marked[i - 1])) i++
    if (i < at) start = i
    if (isLowSurrogate(marked.charCodeAt(start))) start++
  }
  let end = Math.min(marked.length, firstEnd + after)
  if (end < marked.length) {
    // End on a word: before the last space in the margin, if there is one.
    let i = end
    while (i > firstEnd && !isSpace(marked[i])) i--
    if (i > firstEnd) end = i
    if (isHighSurrogate(marked.charCodeAt(end - 1))) end--
  }
  // A match cut in two would leave an unclosed mark: end before it instead.
  const lastOpen = marked.lastIndexOf(MARK_OPEN, end - 1)
  if (found >= 0 && lastOpen > at && marked.indexOf(MARK_CLOSE, lastOpen) >= end) end = lastOpen
  const body = marked.slice(start, end).replaceAll(MARK_OPEN, "«").replaceAll(MARK_CLOSE, "»").replace(/\s+/g, " ").trim()
  return `${start > 0 ? "…" : ""}${body}${end < marked.length ? "…" : ""}`
}
