/**
 * Deduplication of proposed rules (issue 15): the same rule said twice, by normalised text or as a
 * near duplicate (word-set similarity), is one rule. Pure.
 */

/** Two rules whose word sets have at least this Jaccard similarity are the same rule. */
export const NEAR_DUPLICATE_SIMILARITY = 0.8

/** Lowercase, punctuation out, whitespace collapsed (Unicode letters and digits kept). */
export const normaliseText = (text: string): string =>
  text.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim()

const words = (text: string): ReadonlySet<string> => new Set(normaliseText(text).split(" ").filter((w) => w !== ""))

/** Jaccard similarity of the two texts' word sets (1 for two empty texts). */
export const similarity = (a: string, b: string): number => {
  const x = words(a)
  const y = words(b)
  if (x.size === 0 && y.size === 0) return 1
  let shared = 0
  for (const w of x) if (y.has(w)) shared++
  return shared / (x.size + y.size - shared)
}

export const isDuplicate = (a: string, b: string): boolean =>
  normaliseText(a) === normaliseText(b) || similarity(a, b) >= NEAR_DUPLICATE_SIMILARITY

/** The first of `texts`' owners that `text` duplicates. */
export const findDuplicate = <A>(items: ReadonlyArray<A>, textOf: (a: A) => string, text: string): A | undefined =>
  items.find((a) => isDuplicate(textOf(a), text))
