/**
 * Text helpers (pure): for what people read (one-line summaries), and for what models read —
 * counting, cutting without splitting a character, keeping the head and tail of long output. JS
 * strings are UTF-16, so "never split a character" means never cut between the two halves of a
 * surrogate pair; a string cut that way would encode to U+FFFD and corrupt the last character the
 * model sees.
 */

/** `text` on one line (runs of white space folded), cut to `max` characters with an ellipsis. */
export const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : flat.slice(0, max - 1) + "…"
}


/** 12345 → "12,345": markers are read by models and people, digits grouped helps both. */
export const formatCount = (n: number): string => n.toLocaleString("en-US")

export const utf8Length = (s: string): number => Buffer.byteLength(s, "utf8")

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff

/** The largest end ≤ i such that `s.slice(0, end)` does not end inside a surrogate pair. */
export const safeEnd = (s: string, i: number): number => {
  if (i <= 0) return 0
  if (i >= s.length) return s.length
  return isHigh(s.charCodeAt(i - 1)) && isLow(s.charCodeAt(i)) ? i - 1 : i
}

/** The smallest start ≥ j such that `s.slice(start)` does not begin inside a surrogate pair. */
export const safeStart = (s: string, j: number): number => {
  if (j <= 0) return 0
  if (j >= s.length) return s.length
  return isLow(s.charCodeAt(j)) && isHigh(s.charCodeAt(j - 1)) ? j + 1 : j
}

export const omittedMarker = (bytes: number): string => `[… ${formatCount(bytes)} bytes omitted …]`

/**
 * `s` if it fits in `budget` characters; otherwise its head and tail (about half each) around an
 * omission marker. The tail matters as much as the head: errors and summaries come last. Cuts move
 * to a nearby line break so the kept parts are whole lines when that costs little.
 */
export const truncateMiddle = (s: string, budget: number): string => {
  if (s.length <= budget) return s
  const headBudget = Math.floor(budget / 2)
  let end = safeEnd(s, headBudget)
  let start = safeStart(s, s.length - (budget - headBudget))
  const slack = Math.floor(headBudget / 10)
  const lineEnd = end > 0 ? s.lastIndexOf("\n", end - 1) : -1
  if (lineEnd >= 0 && end - (lineEnd + 1) <= slack) end = lineEnd + 1
  const lineStart = s.indexOf("\n", start)
  if (lineStart >= 0 && lineStart + 1 - start <= slack) start = lineStart + 1
  const head = s.slice(0, end)
  return `${head}${head.endsWith("\n") || head === "" ? "" : "\n"}${omittedMarker(utf8Length(s.slice(end, start)))}\n${s.slice(start)}`
}

/** Shares `budget` between two texts: each gets what it needs, and a short one leaves the rest to the other. */
export const shareBudget = (a: number, b: number, budget: number): readonly [number, number] => {
  if (a + b <= budget) return [a, b]
  const half = Math.floor(budget / 2)
  if (a <= half) return [a, budget - a]
  if (b <= half) return [budget - b, b]
  return [half, budget - half]
}

/** Numbers of the lines (1-based) where each offset falls. */
export const lineNumbersAt = (text: string, offsets: ReadonlyArray<number>): Array<number> => {
  const result: Array<number> = []
  let line = 1
  let from = 0
  for (const offset of offsets) {
    for (let i = text.indexOf("\n", from); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
      line++
      from = i + 1
    }
    result.push(line)
  }
  return result
}
