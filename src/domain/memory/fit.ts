/**
 * How memory fits a context window of any size, from 2k tokens (a local model) to 1M: the shares of
 * the assembly budget that the fresh tail, one summary and one summarizer input may take, and when
 * a compaction is worth its summarizer calls. Pure; the assembler, both compactors and the runtime
 * use it, so what compaction protects is what assembly shows verbatim.
 *
 * - The fresh tail is the newest messages up to `freshTail` (20) AND up to TAIL_SHARE of the
 *   budget, in whole units (a tool_use with its results), but always at least the newest unit.
 *   A fixed 20 messages can fill a small window alone, which left compaction nothing to gain.
 * - A summary's target is a third of its source, at most SUMMARY_SHARE of the budget: the summaries
 *   of the oldest history must fit beside the tail, whatever the depth of the DAG.
 * - A summarizer input is at most CHUNK_SHARE of the budget (the summary model is assumed to have
 *   about the chat model's window).
 * - Compaction before a turn runs only when a plan of it gains at least MIN_GAIN_SHARE of the budget
 *   (or the context no longer fits and it gains anything), goes on until that much below the
 *   threshold (`compactionTarget`), and after a run that gained less, does not run again until the
 *   context has grown by that much (`worthCompacting`).
 */

export const TAIL_SHARE = 0.4
export const SUMMARY_SHARE = 0.1
export const CHUNK_SHARE = 0.5
export const MIN_GAIN_SHARE = 0.1
/** No summary is asked to be smaller than this (a summary this small still says something). */
export const MIN_SUMMARY_TOKENS = 64
/** No summarizer input is cut smaller than this. */
export const MIN_CHUNK_TOKENS = 500

/** The fresh tail's token cap for a budget. */
export const tailTokensOf = (budget: number, share: number = TAIL_SHARE): number => Math.max(1, Math.floor(budget * share))

/** The largest summary target for a budget. */
export const summaryCapOf = (budget: number): number => Math.max(MIN_SUMMARY_TOKENS, Math.floor(budget * SUMMARY_SHARE))

/** The summarizer input cap for a budget, never above the configured one. */
export const chunkCapOf = (budget: number, configured: number): number =>
  Math.min(configured, Math.max(MIN_CHUNK_TOKENS, Math.floor(budget * CHUNK_SHARE)))

/** The least gain that makes a compaction worth its summarizer calls. */
export const minGainOf = (budget: number): number => Math.max(1, Math.floor(budget * MIN_GAIN_SHARE))

/** Target of a summary of `sourceTokens`: a third of its source, capped by the budget when there is one. */
export const summaryTarget = (sourceTokens: number, budget: number | undefined): number =>
  Math.max(1, Math.min(Math.floor(sourceTokens / 3), budget === undefined ? Number.MAX_SAFE_INTEGER : summaryCapOf(budget)))

export interface WorthInput {
  /** Live context tokens now. */
  readonly tokens: number
  readonly budget: number
  readonly threshold: number
  /** What a plan of the compaction would save (an estimate: summaries assumed at their target). */
  readonly gain: number
  /** Context tokens right after the last compaction of this session that gained less than the minimum, if any. */
  readonly futileAt: number | undefined
}

/**
 * Whether compaction before a turn is worth it: the context is over threshold × budget, it has grown
 * by the minimum gain since a compaction that gained less (never twice in a row for nothing), and a
 * plan gains at least the minimum — or, when the context no longer fits the budget, anything (then
 * the "grown since" rule does not hold it back either: what does not fit would be lost).
 */
export const worthCompacting = (w: WorthInput): boolean => {
  if (w.tokens <= w.threshold * w.budget) return false
  const min = minGainOf(w.budget)
  // A context that no longer fits loses its oldest history at assembly unless compaction goes on:
  // then any gain is worth it, even right after a run that gained little.
  const overflowing = w.tokens > w.budget
  if (!overflowing && w.futileAt !== undefined && w.tokens < w.futileAt + min) return false
  return w.gain >= min || (overflowing && w.gain > 0)
}

/**
 * Where compaction before a turn stops: the least gain below threshold × budget. It starts above
 * threshold × budget, so a compaction that gets there gained at least that much, and the turns after
 * it have room before the next one (without it, each compaction stopped just under the threshold,
 * the leaf pass alone did that, and ever more leaves made every compaction gain less).
 */
export const compactionTarget = (budget: number, threshold: number): number =>
  Math.max(0, Math.floor(threshold * budget) - minGainOf(budget))

/** Whether a compaction that went from `before` to `after` tokens gained too little (what `futileAt` records). */
export const gainedTooLittle = (before: number, after: number, budget: number): boolean => before - after < minGainOf(budget)
