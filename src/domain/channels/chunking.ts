/**
 * The cutting engine behind `split.ts` (pure): where a long text ends its chunks. A chunk ends at
 * the best boundary that keeps it fitting — a blank line, else a line break, else a sentence end,
 * else a space, else anywhere — never inside a shield (a block to keep whole), a surrogate pair, a
 * character reference, and preferably not inside a link, a code span, a character cluster or right
 * after bare block markers. How a chunk's edges sit in the text (mid-line, in a paragraph, at a
 * guarded block, inside a code span) is recorded, so its Markdown can be fixed up (`chunkEdges.ts`).
 */
import { safeEnd } from "../text.ts"
import type { CodeSpan } from "./structure.ts"

export interface Range {
  readonly start: number
  readonly end: number
}

/** A place to end a chunk: it ends at `end`, the next one starts from `next` (after the separator). */
interface Cut {
  readonly end: number
  readonly next: number
}

/** What the cutting knows of a Markdown text's structure (all ranges sorted, disjoint within a list). */
export interface Structure {
  /** Ranges no cut may fall strictly inside (blocks that fit in one chunk: code, tables, headings…). */
  readonly shields: ReadonlyArray<Range>
  /** Top-level paragraphs: a chunk starting inside one starts in running text. */
  readonly paragraphs: ReadonlyArray<Range>
  /** Inline code spans, and links and images: cut inside only when nothing else fits. */
  readonly spans: ReadonlyArray<CodeSpan>
  readonly links: ReadonlyArray<Range>
}

/** The text being split, with its structure (none for plain text) and facts derived from it. */
interface Layout extends Structure {
  readonly text: string
  /** Whether the text is Markdown (has character references, block syntax). */
  readonly markdown: boolean
  /** Where the text's first chunk starts (after leading white space). */
  readonly textStart: number
  /** Where each line starts (sorted). */
  readonly lineStarts: ReadonlyArray<number>
  readonly shieldStarts: ReadonlySet<number>
  readonly shieldEnds: ReadonlySet<number>
}

/** A chunk of the source: its range without trailing white space, and how its edges sit in the text. */
export interface Chunk extends Range {
  /** It starts at the start of the text, or ends at its end: no cut there, nothing to escape. */
  readonly first: boolean
  readonly last: boolean
  /** It starts inside running text (mid-line, or a later line of a paragraph), not at a block start. */
  readonly continues: boolean
  /** It starts after other text on its line, and that line is a quote's (starts with `>`). */
  readonly startsMidLine: boolean
  readonly quoted: boolean
  /** It starts where a guarded block (code, table, heading, link definition) starts. */
  readonly guardedStart: boolean
  /** It stops before the end of its last line. */
  readonly stopsMidLine: boolean
  /** It stops where a guarded block ends. */
  readonly guardedEnd: boolean
  /** Backticks to reopen the code span it starts inside, and to close the one it stops inside (0: none). */
  readonly openRun: number
  readonly closeRun: number
}

// ---------------------------------------------------------------------------------------------
// Small helpers

/** Space, tab, line feed: white space to Markdown's block structure (\r is gone by then). */
const isSpace = (s: string, i: number): boolean => {
  const c = s.charAt(i)
  return c === " " || c === "\t" || c === "\n"
}

/**
 * `[start, end)` without the blank lines and line break at its end. Spaces ending its last line
 * stay: they can matter (`- ` is a list item where `-` may be a table row).
 */
const trimmed = (s: string, start: number, end: number): Range => {
  let e = end
  while (e > start && isSpace(s, e - 1)) e--
  while (e < end && (s.charAt(e) === " " || s.charAt(e) === "\t")) e++
  return { start, end: e }
}

/** The range of sorted, disjoint `shields` that `p` falls strictly inside, if any. */
export const shieldAround = <R extends Range>(shields: ReadonlyArray<R>, p: number): R | undefined => {
  let lo = 0
  let hi = shields.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const s = shields[mid]
    if (s === undefined) return undefined
    if (p <= s.start) hi = mid - 1
    else if (p >= s.end) lo = mid + 1
    else return s
  }
  return undefined
}

/** The largest n in [1, max] with ok(n), assuming ok holds up to some point and fails after; 0 if ok(1) fails. */
export const largest = (max: number, ok: (n: number) => boolean): number => {
  if (max < 1 || !ok(1)) return 0
  let good = 1
  let bad = max + 1
  for (let probe = 2; probe <= max; probe *= 2) {
    if (!ok(probe)) {
      bad = probe
      break
    }
    good = probe
  }
  while (bad - good > 1) {
    const mid = Math.floor((good + bad) / 2)
    if (ok(mid)) good = mid
    else bad = mid
  }
  return good
}

/**
 * The largest n in [0, max] with size(n) ≤ limit, size growing with n (size(0) is taken as 0).
 * Sizes are rendered lengths, close to proportional to n, so each probe interpolates between the
 * bracket's ends; a bisection step follows any probe that did not halve the bracket, which keeps
 * the worst case logarithmic. Rendering is the costly part: a handful of probes instead of twenty.
 */
export const largestWithin = (max: number, limit: number, size: (n: number) => number): number => {
  if (max < 1) return 0
  const whole = size(max)
  if (whole <= limit) return max
  let lo = 0
  let loSize = 0
  let hi = max
  let hiSize = whole
  let bisect = false
  while (hi - lo > 1) {
    const span = hi - lo
    const guess = bisect
      ? lo + Math.floor(span / 2)
      : lo + Math.floor((span * (limit - loSize)) / Math.max(1, hiSize - loSize))
    const p = Math.min(hi - 1, Math.max(lo + 1, guess))
    const s = size(p)
    if (s <= limit) {
      lo = p
      loSize = s
    } else {
      hi = p
      hiSize = s
    }
    bisect = !bisect && hi - lo > span / 2
  }
  return lo
}

// ---------------------------------------------------------------------------------------------
// Boundaries, best first

/** The cuts a pattern finds with `end` in (from, to] (looking a little past `to` for what follows). */
const scan = (pattern: RegExp, cut: (m: RegExpExecArray) => Cut) => (s: string, from: number, to: number): Array<Cut> => {
  const re = new RegExp(pattern.source, "g")
  const window = s.slice(from, to + 16)
  const out: Array<Cut> = []
  for (let m = re.exec(window); m !== null && m.index < to - from; m = re.exec(window)) {
    const c = cut(m)
    const shifted = { end: c.end + from, next: c.next + from }
    if (shifted.end > from && shifted.end <= to) out.push(shifted)
    if (m[0] === "") re.lastIndex++
  }
  return out
}

/** Blank line (paragraph break) > line break > sentence end > space. "Anywhere" comes last, apart. */
const LEVELS = [
  scan(/\n[ \t]*\n(?:[ \t]*\n)*/, (m) => ({ end: m.index, next: m.index + m[0].length })),
  scan(/\n/, (m) => ({ end: m.index, next: m.index + 1 })),
  // Bounded runs: `[.!?]+` would retry at every dot of a long run of them, quadratically.
  scan(/([.!?…]{1,8}["'”’)\]]{0,4})[ \t]+|([。！？；]{1,8}[」』”’）]{0,4})[ \t]*/, (m) => ({
    end: m.index + (m[1] ?? m[2] ?? "").length,
    next: m.index + m[0].length
  })),
  scan(/[ \t\u3000]+/, (m) => ({ end: m.index, next: m.index + m[0].length }))
]

const ENTITY_AT = /^&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});/
const JOINS_PREVIOUS = /^(?:\p{M}|\u200D|[\uFE00-\uFE0F]|[\u{1F3FB}-\u{1F3FF}]|[\u{E0020}-\u{E007F}])/u

/** `p` moved left off the inside of a character reference (`&amp;`, `&#65;`). */
const outsideEntity = (s: string, p: number): number => {
  const near = Math.max(0, p - 40)
  const found = s.slice(near, p).lastIndexOf("&")
  const amp = found < 0 ? -1 : near + found
  if (amp < 0) return p
  const m = ENTITY_AT.exec(s.slice(amp, amp + 41))
  return m !== null && amp + m[0].length > p ? amp : p
}

/** `p` moved left while the character at it joins the one before (combining mark, ZWJ, selector, skin tone). */
const outsideCluster = (s: string, p: number, floor: number): number => {
  let q = p
  for (let steps = 0; steps < 32 && q > floor; steps++) {
    const joins = JOINS_PREVIOUS.test(s.slice(q, q + 2)) || s.charAt(q - 1) === "\u200D"
    if (!joins) return q
    q = safeEnd(s, q - 1)
  }
  return q > floor ? q : p
}

/** `q` moved off the backticks that open or close a code span: before the span, or to the end of its content. */
const outsideRuns = (layout: Layout, start: number, q: number): number => {
  const span = shieldAround(layout.spans, q)
  if (span === undefined) return q
  if (q < span.start + span.run) return span.start > start ? span.start : -1
  return Math.min(q, span.end - span.run)
}

/** `q` moved before the link or code span it falls inside (-1 if that is not after `start`). */
const outsideInline = (layout: Layout, start: number, q: number): number => {
  const atom = shieldAround(layout.links, q) ?? shieldAround(layout.spans, q)
  return atom === undefined ? q : atom.start > start ? atom.start : -1
}

/** Block markers with nothing after them: `- `, `1. `, `> `, `## `, `- [ ] ` (or part of its box), nested. */
const MARKERS_ONLY = /^[ \t]*(?:>[ \t]*|(?:[-*+]|\d{1,9}[.)]|#{1,6})(?:[ \t]+|$))+(?:\[(?:[ xX]\]?)?[ \t]*)?$/

/** Whether a chunk ending at `end` would end with a line of bare block markers (an empty item, quote or heading). */
const endsOnMarkers = (layout: Layout, start: number, end: number): boolean => {
  if (!layout.markdown) return false
  const lineStart = Math.max(start, lineStartOf(layout, end))
  return MARKERS_ONLY.test(layout.text.slice(lineStart, end))
}

/**
 * How choosy a cut "anywhere" is: whether it keeps out of links and code spans, out of character
 * clusters (a base and its combining marks, ZWJ sequences), and from ending on bare block markers.
 */
interface Choosy {
  readonly inline: boolean
  readonly clusters: boolean
  readonly markers: boolean
}

/** The passes of a cut "anywhere", choosiest first. */
const PASSES: ReadonlyArray<Choosy> = [
  { inline: true, clusters: true, markers: true },
  { inline: false, clusters: true, markers: true },
  { inline: false, clusters: false, markers: true },
  { inline: false, clusters: false, markers: false }
]

/**
 * The end to use for a cut "anywhere" at `p`: at or before p (or past a shield that starts the
 * chunk); -1 if none. `choosy` keeps cuts out of links and code spans, and bare block markers
 * from ending a chunk.
 */
const legalEnd = (layout: Layout, start: number, p: number, choosy: Choosy): number => {
  const s = layout.text
  const p1 = safeEnd(s, p)
  const p2 = layout.markdown ? outsideEntity(s, p1) : p1
  let q = choosy.clusters ? outsideCluster(s, p2, start) : p2
  q = safeEnd(s, q)
  const shield = shieldAround(layout.shields, q)
  if (shield !== undefined) q = shield.start > start ? shield.start : shield.end
  q = choosy.inline ? outsideInline(layout, start, q) : outsideRuns(layout, start, q)
  if (choosy.markers && q > start && shield === undefined && endsOnMarkers(layout, start, q)) {
    const lineStart = lineStartOf(layout, q)
    q = lineStart > start ? lineStart : -1
  }
  return q > start ? q : -1
}

// ---------------------------------------------------------------------------------------------
// The cutting loop

/** The start of the line `p` is on (binary search in the line starts). */
const lineStartOf = (layout: Pick<Layout, "lineStarts">, p: number): number => {
  let lo = 0
  let hi = layout.lineStarts.length - 1
  let found = 0
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const at = layout.lineStarts[mid] ?? 0
    if (at <= p) {
      found = at
      lo = mid + 1
    } else hi = mid - 1
  }
  return found
}

/** Whether `s` has other than white space in [from, to). */
const inkBefore = (s: string, from: number, to: number): boolean => {
  for (let i = to - 1; i >= from; i--) if (!isSpace(s, i)) return true
  return false
}

/** Where the next chunk starts: after white space, but at the start of a shield it would enter. */
const begin = (layout: Pick<Layout, "text" | "shields">, p: number): number => {
  let q = p
  while (q < layout.text.length && isSpace(layout.text, q)) q++
  const shield = shieldAround(layout.shields, q)
  return shield !== undefined ? shield.start : q
}

/** Whether a chunk starting at `q` starts in running text: after other text on its line, or on a later line of a paragraph. */
const continuesAt = (layout: Layout, q: number): boolean => {
  const s = layout.text
  if (layout.shieldStarts.has(q)) return false
  return inkBefore(s, lineStartOf(layout, q), q) || shieldAround(layout.paragraphs, q) !== undefined
}

/** The chunk `[start, end)`: trimmed, with its edges described. */
const chunkOf = (layout: Layout, start: number, end: number): Chunk => {
  const s = layout.text
  const r = trimmed(s, start, end)
  let after = r.end
  while (after < s.length && (s.charAt(after) === " " || s.charAt(after) === "\t")) after++
  return {
    ...r,
    first: start === layout.textStart,
    last: trimmed(s, r.end, s.length).end === r.end,
    continues: start > 0 && continuesAt(layout, start),
    startsMidLine: inkBefore(s, lineStartOf(layout, start), start),
    quoted: /^[ \t]*>/.test(s.slice(lineStartOf(layout, start), Math.min(start, lineStartOf(layout, start) + 8))),
    guardedStart: layout.shieldStarts.has(start),
    stopsMidLine: after < s.length && s.charAt(after) !== "\n",
    guardedEnd: layout.shieldEnds.has(r.end),
    openRun: reopenRun(layout, r.start),
    closeRun: reopenRun(layout, r.end)
  }
}

/** The backticks of the code span `p` falls inside, to close it before `p` and reopen it after; 0 outside spans. */
const reopenRun = (layout: Layout, p: number): number => shieldAround(layout.spans, p)?.run ?? 0

/** A window end beyond which chunks surely do not fit: window sizes double from the limit until one fails. */
const probe = (layout: Layout, start: number, limit: number, measure: (c: Chunk) => number): number => {
  const n = layout.text.length
  for (let size = Math.max(limit, 16); ; size *= 2) {
    const end = Math.min(n, start + size)
    if (end >= n) return n
    if (measure(chunkOf(layout, start, safeEnd(layout.text, end))) > limit) return end
  }
}

const bestCut = (layout: Layout, start: number, hi: number, limit: number, measure: (c: Chunk) => number): Cut => {
  const s = layout.text
  const sizeTo = (end: number) => measure(chunkOf(layout, start, end))
  // Inside a code span (closed and reopened around the cut) only when nothing outside one fits,
  // and then only at a sentence end or a space of its content.
  const codeAllows = (c: Cut, code: boolean) => {
    const span = shieldAround(layout.spans, c.end)
    return span === undefined || (code && c.end > span.start + span.run && c.next < span.end - span.run)
  }
  const allowed = (code: boolean) => (c: Cut) =>
    shieldAround(layout.shields, c.end) === undefined && codeAllows(c, code) &&
    shieldAround(layout.links, c.end) === undefined && trimmed(s, start, c.end).end > start &&
    !endsOnMarkers(layout, start, c.end)
  const levels = [...LEVELS.map((level) => ({ level, code: false })), ...LEVELS.slice(2).map((level) => ({ level, code: true }))]
  for (const { level, code } of levels) {
    const cuts = level(s, start, hi).filter(allowed(code))
    const count = largestWithin(cuts.length, limit, (n) => sizeTo(cuts[n - 1]?.end ?? start))
    const cut = cuts[count - 1]
    if (cut !== undefined && sizeTo(cut.end) <= limit) return cut
  }
  for (const choosy of PASSES) {
    const end = anywhere(layout, start, hi, limit, sizeTo, choosy)
    if (end !== undefined) return { end, next: end }
  }
  const end = forcedEnd(layout, start)
  return { end, next: end }
}

/** The largest legal end in (start, hi] whose chunk fits; undefined if none. */
const anywhere = (
  layout: Layout,
  start: number,
  hi: number,
  limit: number,
  sizeTo: (end: number) => number,
  choosy: Choosy
): number | undefined => {
  // Positions with no legal end after `start` (inside the first character) count as empty.
  const steps = largestWithin(hi - start, limit, (n) => {
    const q = legalEnd(layout, start, start + n, choosy)
    return q <= start ? 0 : sizeTo(q)
  })
  const q = steps > 0 ? legalEnd(layout, start, start + steps, choosy) : -1
  return q > start && sizeTo(q) <= limit ? q : undefined
}

/** The shortest legal chunk from `start`: used only when nothing fits (a limit below one character's rendering). */
const forcedEnd = (layout: Layout, start: number): number => {
  for (let p = start + 1; p <= layout.text.length; p++) {
    const q = legalEnd(layout, start, p, { inline: false, clusters: false, markers: false })
    if (q > start) return q
  }
  return layout.text.length
}

/**
 * The chunks of `text` (Markdown with `structure`, or plain text), in order: each is the longest
 * whose `measure` (its rendered length) is at most `limit` at the best boundary, or the shortest
 * legal one when none is.
 */
export const chunksOf = (
  text: string,
  structure: Structure | undefined,
  limit: number,
  measure: (c: Chunk) => number
): Array<Chunk> => {
  const layout = layoutOf(text, structure)
  const n = text.length
  const out: Array<Chunk> = []
  for (let start = layout.textStart; start < n;) {
    const hi = probe(layout, start, limit, measure)
    const rest = chunkOf(layout, start, n)
    if (hi >= n && measure(rest) <= limit) {
      out.push(rest)
      break
    }
    const cut = bestCut(layout, start, hi, limit, measure)
    out.push(chunkOf(layout, start, cut.end))
    start = begin(layout, Math.max(cut.next, cut.end))
  }
  return out
}

const lineStartsOf = (text: string): Array<number> => {
  const out = [0]
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) out.push(i + 1)
  return out
}

const layoutOf = (text: string, structure: Structure | undefined): Layout => {
  const s = structure ?? { shields: [], paragraphs: [], spans: [], links: [] }
  return {
    ...s,
    text,
    markdown: structure !== undefined,
    textStart: begin({ text, shields: s.shields }, 0),
    lineStarts: lineStartsOf(text),
    shieldStarts: new Set(s.shields.map((r) => r.start)),
    shieldEnds: new Set(s.shields.map((r) => r.end))
  }
}
