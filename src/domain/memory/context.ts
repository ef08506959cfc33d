/**
 * Pure logic over a session's context items: the fresh tail, atomic units, the choice of what to
 * assemble within a budget, and the planning of leaf and condensed compaction chunks.
 *
 * A context item is a live message or a live summary, in position order. An atomic unit is an item
 * plus the items that continue it (an assistant tool_use turn and its tool_result messages); no
 * selection or chunk ever cuts a unit, which is what keeps tool calls paired.
 *
 * The fresh tail is bounded by a message count and, with a budget, by a share of it (./fit.ts); the
 * same rule decides what assembly shows verbatim and what compaction leaves alone.
 */

export interface ItemMeta {
  readonly position: number
  readonly kind: "message" | "summary"
  /** Message id or summary id. */
  readonly refId: number
  /** Tokens this item costs in an assembled context. */
  readonly tokens: number
  /** Messages only: whether it continues the unit of the item before it. */
  readonly continuesUnit: boolean
  /** Summaries only: 0 for leaf, n + 1 for a condensed summary of depth-n summaries; -1 for messages. */
  readonly depth: number
}

export interface Span {
  /** Index of the first item (inclusive). */
  readonly start: number
  /** Index after the last item (exclusive). */
  readonly end: number
}

const sumTokens = (items: ReadonlyArray<ItemMeta>, span: Span): number => {
  let n = 0
  for (let i = span.start; i < span.end; i++) n += items[i]?.tokens ?? 0
  return n
}

/** Index after the unit that starts at `start`. */
const unitEnd = (items: ReadonlyArray<ItemMeta>, start: number): number => {
  let end = start + 1
  while (end < items.length && items[end]?.continuesUnit === true) end++
  return end
}

/**
 * Index where the fresh tail starts: at the `freshTail`-th message item from the end (or the first
 * message item when there are fewer), moved back so the tail never starts inside a unit; then, while
 * the tail costs more than `maxTokens`, moved forward a whole unit at a time, but never past the
 * newest unit (the turn's own message, or a tool call still waiting for its results).
 */
export const freshTailStart = (
  items: ReadonlyArray<ItemMeta>,
  freshTail: number,
  maxTokens: number = Number.POSITIVE_INFINITY
): number => {
  let start = items.length
  let seen = 0
  for (let i = items.length - 1; i >= 0 && seen < freshTail; i--) {
    if (items[i]?.kind === "message") {
      seen++
      start = i
    }
  }
  while (start > 0 && start < items.length && items[start]?.continuesUnit === true) start--
  if (maxTokens === Number.POSITIVE_INFINITY) return start
  let tokens = sumTokens(items, { start, end: items.length })
  while (tokens > maxTokens) {
    const next = unitEnd(items, start)
    if (next >= items.length) break
    tokens -= sumTokens(items, { start, end: next })
    start = next
  }
  return start
}

/** Splits `[from, to)` into atomic units. */
export const unitsOf = (items: ReadonlyArray<ItemMeta>, from: number, to: number): Array<Span> => {
  const units: Array<Span> = []
  let start = from
  for (let i = from + 1; i <= to; i++) {
    if (i === to || items[i]?.continuesUnit !== true) {
      if (i > start) units.push({ start, end: i })
      start = i
    }
  }
  return units
}

export interface Selection {
  /** Indices of the chosen items, ascending (chronological). */
  readonly indices: ReadonlyArray<number>
  readonly tailStart: number
  readonly tokens: number
  readonly omitted: number
}

const isSummaryUnit = (items: ReadonlyArray<ItemMeta>, unit: Span): boolean => {
  for (let i = unit.start; i < unit.end; i++) if (items[i]?.kind !== "summary") return false
  return true
}

/**
 * Assembly choice (seed: "Context Assembly", issue 11): the fresh tail always, whatever the budget
 * (capped at `tailTokens` when given, see `freshTailStart`); then the summaries older than it,
 * oldest first, each while it fits — they hold everything before the raw messages, so they are the
 * last thing given up; then the raw units before the tail, newest first, as long as they fit, with
 * no gap (the first unit that does not fit ends the window, so the model reads a contiguous recent
 * history, and a reader of the newest items only can stop as soon as the budget is spent).
 */
export const selectForBudget = (
  items: ReadonlyArray<ItemMeta>,
  budget: number,
  freshTail: number,
  tailTokens: number = Number.POSITIVE_INFINITY
): Selection => {
  const tailStart = freshTailStart(items, freshTail, tailTokens)
  let remaining = budget - sumTokens(items, { start: tailStart, end: items.length })
  const units = unitsOf(items, 0, tailStart)
  const chosen: Array<boolean> = []
  for (const unit of units) {
    if (!isSummaryUnit(items, unit)) continue
    const cost = sumTokens(items, unit)
    if (cost > remaining) continue
    remaining -= cost
    for (let i = unit.start; i < unit.end; i++) chosen[i] = true
  }
  for (let u = units.length - 1; u >= 0; u--) {
    const unit = units[u]
    if (unit === undefined || isSummaryUnit(items, unit)) continue
    const cost = sumTokens(items, unit)
    if (cost > remaining) break
    remaining -= cost
    for (let i = unit.start; i < unit.end; i++) chosen[i] = true
  }
  const indices: Array<number> = []
  for (let i = 0; i < tailStart; i++) if (chosen[i] === true) indices.push(i)
  const omitted = tailStart - indices.length
  for (let i = tailStart; i < items.length; i++) indices.push(i)
  return { indices, tailStart, tokens: budget - remaining, omitted }
}

export interface ChunkLimits {
  readonly freshTail: number
  /** The fresh tail's token cap (a share of the budget); none when compacting without a budget. */
  readonly tailTokens?: number | undefined
  /** Leaf: minimum messages per summary. Condensed: minimum summaries per summary. */
  readonly minItems: number
  /** Close a chunk once it reaches this many tokens (and `minItems`). */
  readonly maxTokens: number
  /** Condensed only: at most this many summaries per chunk. */
  readonly maxItems: number
  /**
   * Condensed only: runs of adjacent summaries whatever their depths (the condensed summary is one
   * deeper than the deepest). Compaction to fit a budget uses it when same-depth runs are used up,
   * so the summaries older than the tail always fold into fewer.
   */
  readonly anyDepth?: boolean | undefined
}

/**
 * Leaf pass plan: maximal runs of message items outside the fresh tail, cut into chunks of whole
 * units, each with at least `minItems` messages and closed once it reaches `maxTokens`. A remainder
 * shorter than `minItems` stays as it is for a later pass.
 */
export const planLeafChunks = (items: ReadonlyArray<ItemMeta>, limits: ChunkLimits): Array<Span> => {
  const tailStart = freshTailStart(items, limits.freshTail, limits.tailTokens)
  const chunks: Array<Span> = []
  let i = 0
  while (i < tailStart) {
    if (items[i]?.kind !== "message") {
      i++
      continue
    }
    let runEnd = i
    while (runEnd < tailStart && items[runEnd]?.kind === "message") runEnd++
    let chunkStart = i
    let count = 0
    let tokens = 0
    for (const unit of unitsOf(items, i, runEnd)) {
      count += unit.end - unit.start
      tokens += sumTokens(items, unit)
      if (count >= limits.minItems && tokens >= limits.maxTokens) {
        chunks.push({ start: chunkStart, end: unit.end })
        chunkStart = unit.end
        count = 0
        tokens = 0
      }
    }
    if (count >= limits.minItems) chunks.push({ start: chunkStart, end: runEnd })
    i = runEnd
  }
  return chunks
}

/**
 * Condensed pass plan: maximal runs of same-depth summary items outside the fresh tail (of any
 * depths with `anyDepth`), cut into chunks of `minItems`..`maxItems` summaries, each closed before
 * it would pass `maxTokens`.
 */
export const planCondensedChunks = (items: ReadonlyArray<ItemMeta>, limits: ChunkLimits): Array<Span> => {
  const tailStart = freshTailStart(items, limits.freshTail, limits.tailTokens)
  const sameRun = (it: ItemMeta | undefined, depth: number) =>
    it?.kind === "summary" && (limits.anyDepth === true || it.depth === depth)
  const chunks: Array<Span> = []
  let i = 0
  while (i < tailStart) {
    const first = items[i]
    if (first === undefined || first.kind !== "summary") {
      i++
      continue
    }
    let runEnd = i
    while (runEnd < tailStart && sameRun(items[runEnd], first.depth)) runEnd++
    let chunkStart = i
    let tokens = 0
    for (let j = i; j < runEnd; j++) {
      const t = items[j]?.tokens ?? 0
      const size = j - chunkStart
      if (size >= limits.minItems && (size >= limits.maxItems || tokens + t > limits.maxTokens)) {
        chunks.push({ start: chunkStart, end: j })
        chunkStart = j
        tokens = 0
      }
      tokens += t
    }
    if (runEnd - chunkStart >= limits.minItems) chunks.push({ start: chunkStart, end: runEnd })
    i = runEnd
  }
  return chunks
}

export const contextTokens = (items: ReadonlyArray<ItemMeta>): number => sumTokens(items, { start: 0, end: items.length })
