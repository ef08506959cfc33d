/**
 * Long answers cut into messages a chat platform accepts (pure). Platforms cap a message's length
 * in UTF-16 code units (Telegram 4096, WeChat 2000), measured on what is sent — the rendered text —
 * so the Markdown SOURCE is split and each piece rendered on its own: every chunk is then whole,
 * valid markup, and no cut can fall inside a tag or an entity of the output.
 *
 * A chunk ends at the best boundary that keeps its rendering within the limit: a blank line between
 * paragraphs, else a line break, else a sentence end, else a space, else anywhere — but never
 * between the halves of a surrogate pair, inside a character reference of the Markdown (`&amp;`),
 * or before a combining mark. Top-level code blocks, tables and link definitions are never cut unless one alone
 * is too long; such a code block is cut at line boundaries with its fence closed and reopened (same
 * language) in each piece, a table is cut between rows with its header repeated (a table whose
 * header alone is too long becomes the aligned text it renders to, cut as code). Link reference
 * definitions travel with every chunk, so `[text][ref]` resolves wherever `[ref]: url` was written.
 */
import { safeEnd } from "../text.ts"
import { type CodeSpan, type SourceBlock, sourceBlocks, toPlainText, wellFormed } from "./markdown.ts"

/** Telegram's limit for a text message, in UTF-16 code units. */
export const TELEGRAM_TEXT_LIMIT = 4096

interface Range {
  readonly start: number
  readonly end: number
}

/** A place to end a chunk: it ends at `end`, the next one starts from `next` (after the separator). */
interface Cut {
  readonly end: number
  readonly next: number
}

/** The text being split, with what the cutting needs to know of its structure. */
interface Layout {
  readonly text: string
  /** Ranges (sorted, disjoint) no cut may fall strictly inside. */
  readonly shields: ReadonlyArray<Range>
  /** Top-level paragraphs (sorted): a chunk starting inside one starts in running text. */
  readonly paragraphs: ReadonlyArray<Range>
  /** Inline code spans of top-level paragraphs and headings (sorted): cut only when nothing else fits. */
  readonly spans: ReadonlyArray<CodeSpan>
  /** Links and images of top-level paragraphs and headings (sorted): cut only when nothing else fits. */
  readonly links: ReadonlyArray<Range>
  /** Whether the text is Markdown (has character references, block syntax). */
  readonly markdown: boolean
}

/** A chunk of the source: its range without trailing white space, and how its edges sit in the text. */
interface Chunk extends Range {
  /** It starts at the start of the text, or ends at its end: no cut there, nothing to escape. */
  readonly first: boolean
  readonly last: boolean
  /** It starts inside running text (mid-line, or a later line of a paragraph), not at a block start. */
  readonly continues: boolean
  /** It starts after other text on its line. */
  readonly startsMidLine: boolean
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

/** `[start, end)` without the white space at its end. */
const trimmed = (s: string, start: number, end: number): Range => {
  let e = end
  while (e > start && isSpace(s, e - 1)) e--
  return { start, end: e }
}

/** The range of sorted, disjoint `ranges` that `p` falls strictly inside, if any. */
const shieldAround = <R extends Range>(shields: ReadonlyArray<R>, p: number): R | undefined => {
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
const largest = (max: number, ok: (n: number) => boolean): number => {
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

/** The index of the last element of `items` with ok, by bisection; -1 if none was found. */
const lastOk = <A>(items: ReadonlyArray<A>, ok: (a: A) => boolean): number => {
  let lo = 0
  let hi = items.length - 1
  let found = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const item = items[mid]
    if (item !== undefined && ok(item)) {
      found = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  return found
}

// ---------------------------------------------------------------------------------------------
// Boundaries, best first

const scan = (pattern: RegExp, cut: (m: RegExpExecArray) => Cut) => (s: string, from: number, to: number): Array<Cut> => {
  const re = new RegExp(pattern.source, "g")
  re.lastIndex = from
  const out: Array<Cut> = []
  for (let m = re.exec(s); m !== null && m.index < to; m = re.exec(s)) {
    const c = cut(m)
    if (c.end > from && c.end <= to) out.push(c)
    if (m[0] === "") re.lastIndex++
  }
  return out
}

/** Blank line (paragraph break) > line break > sentence end > space. "Anywhere" comes last, apart. */
const LEVELS = [
  scan(/\n[ \t]*\n(?:[ \t]*\n)*/, (m) => ({ end: m.index, next: m.index + m[0].length })),
  scan(/\n/, (m) => ({ end: m.index, next: m.index + 1 })),
  scan(/([.!?…]+["'”’)\]]*)[ \t]+|([。！？；]+[」』”’）]*)[ \t]*/, (m) => ({
    end: m.index + (m[1] ?? m[2] ?? "").length,
    next: m.index + m[0].length
  })),
  scan(/[ \t\u3000]+/, (m) => ({ end: m.index, next: m.index + m[0].length }))
]

const ENTITY_AT = /^&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});/
const JOINS_PREVIOUS = /^(?:\p{M}|\u200D|[\uFE00-\uFE0F]|[\u{1F3FB}-\u{1F3FF}]|[\u{E0020}-\u{E007F}])/u

/** `p` moved left off the inside of a character reference (`&amp;`, `&#65;`). */
const outsideEntity = (s: string, p: number): number => {
  const amp = s.lastIndexOf("&", p - 1)
  if (amp < 0 || p - amp > 40) return p
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
  const lineStart = Math.max(start, layout.text.lastIndexOf("\n", end - 1) + 1)
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
    const lineStart = s.lastIndexOf("\n", q - 1) + 1
    q = lineStart > start ? lineStart : -1
  }
  return q > start ? q : -1
}

// ---------------------------------------------------------------------------------------------
// The cutting loop

/** Where the next chunk starts: after white space, but at the start of a shield it would enter. */
const begin = (layout: Layout, p: number): number => {
  let q = p
  while (q < layout.text.length && isSpace(layout.text, q)) q++
  const shield = shieldAround(layout.shields, q)
  return shield !== undefined ? shield.start : q
}

/** Whether a chunk starting at `q` starts in running text: after other text on its line, or on a later line of a paragraph. */
const continuesAt = (layout: Layout, q: number): boolean => {
  const s = layout.text
  if (layout.shields.some((r) => r.start === q)) return false
  const lineStart = s.lastIndexOf("\n", q - 1) + 1
  return s.slice(lineStart, q).trim() !== "" || shieldAround(layout.paragraphs, q) !== undefined
}

/** The chunk `[start, end)`: trimmed, with its edges described. */
const chunkOf = (layout: Layout, start: number, end: number): Chunk => {
  const s = layout.text
  const r = trimmed(s, start, end)
  let after = r.end
  while (after < s.length && (s.charAt(after) === " " || s.charAt(after) === "\t")) after++
  return {
    ...r,
    first: start === begin(layout, 0),
    last: trimmed(s, r.end, s.length).end === r.end,
    continues: start > 0 && continuesAt(layout, start),
    startsMidLine: s.slice(s.lastIndexOf("\n", start - 1) + 1, start).trim() !== "",
    guardedStart: layout.shields.some((g) => g.start === start),
    stopsMidLine: after < s.length && s.charAt(after) !== "\n",
    guardedEnd: layout.shields.some((g) => g.end === r.end),
    openRun: reopenRun(layout, r.start),
    closeRun: reopenRun(layout, r.end)
  }
}

/** The backticks of the code span `p` falls inside, to close it before `p` and reopen it after; 0 outside spans. */
const reopenRun = (layout: Layout, p: number): number => shieldAround(layout.spans, p)?.run ?? 0

/** A window end beyond which chunks surely do not fit: window sizes double from the limit until one fails. */
const probe = (layout: Layout, start: number, limit: number, fits: (c: Chunk) => boolean): number => {
  const n = layout.text.length
  for (let size = Math.max(limit, 16); ; size *= 2) {
    const end = Math.min(n, start + size)
    if (end >= n) return n
    if (!fits(chunkOf(layout, start, safeEnd(layout.text, end)))) return end
  }
}

const bestCut = (layout: Layout, start: number, hi: number, fits: (c: Chunk) => boolean): Cut => {
  const s = layout.text
  const fitsTo = (end: number) => fits(chunkOf(layout, start, end))
  const allowed = (c: Cut) =>
    shieldAround(layout.shields, c.end) === undefined && shieldAround(layout.spans, c.end) === undefined &&
    shieldAround(layout.links, c.end) === undefined && trimmed(s, start, c.end).end > start &&
    !endsOnMarkers(layout, start, c.end)
  for (const level of LEVELS) {
    const cuts = level(s, start, hi).filter(allowed)
    const i = lastOk(cuts, (c) => fitsTo(c.end))
    const cut = cuts[i]
    if (cut !== undefined) return cut
  }
  for (const choosy of PASSES) {
    const end = anywhere(layout, start, hi, fitsTo, choosy)
    if (end !== undefined) return { end, next: end }
  }
  const end = forcedEnd(layout, start)
  return { end, next: end }
}

/** The largest legal end in (start, hi] that fits, by bisection; undefined if none. */
const anywhere = (
  layout: Layout,
  start: number,
  hi: number,
  fitsTo: (end: number) => boolean,
  choosy: Choosy
): number | undefined => {
  // Positions with no legal end after `start` (inside the first character) count as fitting.
  const steps = largest(hi - start, (n) => {
    const q = legalEnd(layout, start, start + n, choosy)
    return q <= start || fitsTo(q)
  })
  const q = steps > 0 ? legalEnd(layout, start, start + steps, choosy) : -1
  return q > start && fitsTo(q) ? q : undefined
}

/** The shortest legal chunk from `start`: used only when nothing fits (a limit below one character's rendering). */
const forcedEnd = (layout: Layout, start: number): number => {
  for (let p = start + 1; p <= layout.text.length; p++) {
    const q = legalEnd(layout, start, p, { inline: false, clusters: false, markers: false })
    if (q > start) return q
  }
  return layout.text.length
}

/** The chunks of the text, each fitting when it can. */
const chunksOf = (layout: Layout, limit: number, fits: (c: Chunk) => boolean): Array<Chunk> => {
  const n = layout.text.length
  const out: Array<Chunk> = []
  for (let start = begin(layout, 0); start < n;) {
    const hi = probe(layout, start, limit, fits)
    const rest = chunkOf(layout, start, n)
    if (hi >= n && fits(rest)) {
      out.push(rest)
      break
    }
    const cut = bestCut(layout, start, hi, fits)
    out.push(chunkOf(layout, start, cut.end))
    start = begin(layout, Math.max(cut.next, cut.end))
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Chunk edges: syntax a cut would create, escaped

/** A first line that would open a block where the text ran on: heading, list item, quote, rule, fence, link definition. */
const OPENS_BLOCK = /^(?:#{1,6}(?:[ \t]|$)|[-*+](?:[ \t]|$)|>|([-*_])(?:[ \t]*\1){2,}[ \t]*$)/
/**
 * A line that would open a fence. A backslash would break the code span such backticks may begin,
 * so an invisible word joiner goes first instead.
 */
const OPENS_FENCE = /^( {0,3})(?=`{3,}|~{3,})/
/** A line that would define a link reference; escaping its colon keeps `[x]` a link where one is defined. */
const DEFINITION = /^( {0,3}\[[^\]\n]*\]):/
const notDefinition = (line: string): string => line.replace(DEFINITION, "$1\\:")
const ORDERED_ITEM = /^(\d{1,9})[.)](?:[ \t]|$)/
/** A last line that a cut would turn into a setext underline, a rule, a fence or a link definition. */
const CLOSES_BLOCK = /^( {0,3})(?:=+[ \t]*$|-+[ \t]*$|([*_])(?:[ \t]*\2){2,}[ \t]*$)/
/** A run of `#` a cut would leave at the end of a heading line, where it reads as the closing sequence. */
const TRAILING_HASHES = /(^|[ \t])(#+)[ \t]*$/

/** `line` with a backslash before the character that would make it open a block. */
const escapeOpening = (line: string): string => {
  if (OPENS_FENCE.test(line)) return line.replace(OPENS_FENCE, "$1\u2060")
  if (DEFINITION.test(line)) return notDefinition(line)
  const ordered = ORDERED_ITEM.exec(line)?.[1]
  if (ordered !== undefined) return `${ordered}\\${line.slice(ordered.length)}`
  return OPENS_BLOCK.test(line) ? `\\${line}` : line
}

/** `line` (the last of a chunk cut mid-line) with a backslash where the cut would make it syntax. */
const escapeClosing = (line: string, heading: boolean): string => {
  if (OPENS_FENCE.test(line)) return line.replace(OPENS_FENCE, "$1\u2060")
  if (DEFINITION.test(line)) return notDefinition(line)
  const block = CLOSES_BLOCK.exec(line)
  if (block !== null) {
    const indent = block[1] ?? ""
    return `${indent}\\${line.slice(indent.length)}`
  }
  const hashes = heading ? TRAILING_HASHES.exec(line) : null
  if (hashes === null) return line
  const at = hashes.index + (hashes[1] ?? "").length
  return `${line.slice(0, at)}\\${line.slice(at)}`
}

/**
 * `md` (a chunk's source) with its last line escaped where the cut would make it syntax: cut
 * mid-line, see `escapeClosing`; cut at a line end, a line of `=` or `-` that was no heading
 * underline in the whole (a real one ends a guarded heading) but would underline the line before
 * it here (see `notUnderline`). `real` says whether the line at an offset of `md` is a heading
 * underline in the whole (a heading too long to guard).
 */
const escapeEnd = (md: string, c: Chunk, real: (at: number) => boolean): string => {
  const lineStart = md.lastIndexOf("\n") + 1
  const line = md.slice(lineStart)
  // The last line as the chunk has it starts where the text's line starts (not mid-line).
  const whole = lineStart > 0 || !c.continues
  if (c.stopsMidLine) {
    const heading = whole && /^ {0,3}#{1,6}[ \t]/.test(line)
    return whole ? md.slice(0, lineStart) + escapeClosing(line, heading) : md
  }
  return lineStart > 0 && !c.guardedEnd && !real(lineStart) ? md.slice(0, lineStart) + notUnderline(line) : md
}

/**
 * `line`, if it would underline the line before it into a heading, made not to: `---` (three or
 * more) after a blank line (it was a rule: a lazy line cannot be underlined, and a rule interrupts
 * a paragraph), `===` escaped (it was text: a lazy line, which escaping keeps it). One or two
 * dashes stay: as often an empty list item as an underline.
 */
const notUnderline = (line: string): string => {
  if (/^ {0,3}-{3,}[ \t]*$/.test(line)) return `\n${line}`
  return /^ {0,3}=+[ \t]*$/.test(line) ? line.replace("=", "\\=") : line
}

/**
 * `md` (a chunk's source, not starting at a guarded block) with its first line escaped where the
 * cut would make it syntax: in running text, see `escapeOpening`; anywhere, `[x]: y` (a lazy line
 * of a list item or quote, say, which a link definition would hide), a second line that would
 * make the first a table header, and lines that would underline others into headings (see
 * `noUnderlines`).
 */
const escapeStart = (md: string, continues: boolean, real: (at: number) => boolean): string => {
  const [first = "", ...rest] = md.split("\n")
  const escaped = continues ? escapeOpening(first) : notDefinition(first)
  // Under a line with a pipe, a delimiter row would start a table: its first dash escaped.
  const second = rest[0]
  if (second !== undefined && first.includes("|") && TABLE_DELIMITER.test(second)) rest[0] = second.replace("-", "\\-")
  return [escaped, ...noUnderlines(rest, first.length + 1, real)].join("\n")
}

/** A table's delimiter row, with at least one pipe (a line of dashes alone is a rule or an underline). */
const TABLE_DELIMITER = /^(?=[^|]*\|) {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/

/**
 * The lines after a chunk's first (the first of them at offset `from`), with those of its first
 * paragraph that would underline the line before them made not to (see `notUnderline`) unless
 * `real`: they were lazy lines of a list item or quote, text in the whole, where the chunk makes a
 * fresh paragraph of them. A rule ends the paragraph.
 */
const noUnderlines = (lines: ReadonlyArray<string>, from: number, real: (at: number) => boolean): Array<string> => {
  const out = [...lines]
  for (let i = 0, at = from; i < out.length; at += (lines[i] ?? "").length + 1, i++) {
    const line = out[i] ?? ""
    if (line.trim() === "") break
    if (real(at)) continue
    out[i] = notUnderline(line)
    if (out[i] !== line && line.includes("-")) break
  }
  return out
}

/**
 * The Markdown of a chunk: its source, with block syntax its cuts would create escaped, so it
 * reads as the same text it was in the whole (a paragraph's line `[x]: y` is no link definition,
 * `- item` after a cut mid-line no list, `## a ##` cut after `a ##` keeps its `##`), the rest of a
 * quote's line kept in the quote, and a code span it cuts closed or reopened.
 */
const chunkMarkdown = (text: string, prepared: Prepared, c: Chunk): string => {
  let md = text.slice(c.start, c.end)
  const underlines = prepared.underlines
  const real = (at: number) => underlines.has(c.start + at)
  if (c.closeRun === 0 && !c.last) md = escapeEnd(md, c, real)
  if (c.openRun === 0 && !c.first && (c.continues || !c.guardedStart)) md = escapeStart(md, c.continues, real)
  // The rest of a heading's line stands alone, as the heading did: the next line starts a block.
  if (!c.first && shieldAround(prepared.headings, c.start) !== undefined) md = md.replace("\n", "\n\n")
  md = literalEdgeRuns(md, c, prepared)
  // Cut mid-line in a quote, the rest of the line stays in a quote, as the lines after it do (one
  // level: deeper ones cost a `> ` each in plain text, and Telegram has one level only).
  const lineStart = text.lastIndexOf("\n", c.start - 1) + 1
  if (c.startsMidLine && /^[ \t]*>/.test(text.slice(lineStart, c.start))) md = `> ${md}`
  // A code span cut in two: each part closed or reopened, a space keeping a backtick in it apart.
  if (c.closeRun > 0) md = md + (md.endsWith("`") ? " " : "") + "`".repeat(c.closeRun)
  if (c.openRun > 0) md = reopen(md, c.openRun)
  return md
}

/**
 * `md` with the runs of `*`, `_`, `~` at its cut edges escaped unless they delimit emphasis that
 * lies within the chunk: at a cut mid-line a run's flanking changes (a line end or start flanks
 * as the chunk's end or start does), so one that was text in the whole (or whose partner is
 * across the cut) could pair with another run here and vanish.
 */
const literalEdgeRuns = (md: string, c: Chunk, prepared: Prepared): string => {
  const escapeRun = (run: string) => run.replace(/[*_~]/g, "\\$&")
  let out = md
  const tail = /[*_~]+$/.exec(out)?.[0]
  if (c.stopsMidLine && c.closeRun === 0 && tail !== undefined && !prepared.emphasisEnds.has(c.end)) {
    out = out.slice(0, out.length - tail.length) + escapeRun(tail)
  }
  const head = /^[*_~]+/.exec(out)?.[0]
  if (c.startsMidLine && c.openRun === 0 && head !== undefined && !prepared.emphasisStarts.has(c.start)) {
    out = escapeRun(head) + out.slice(head.length)
  }
  return out
}

/**
 * `md` with the code span it starts inside reopened, after the `>` of a quote it is in. Three
 * backticks or more starting a line with none after them open a fence: a word joiner (invisible)
 * goes first then.
 */
const reopen = (md: string, run: number): string => {
  const quote = /^(?:[ \t]*>)*[ \t]*/.exec(md)?.[0] ?? ""
  const rest = md.slice(quote.length)
  const opened = "`".repeat(run) + (rest.startsWith("`") ? " " : "") + rest
  const firstLine = opened.slice(run, (opened.indexOf("\n") + 1 || opened.length + 1) - 1)
  return quote + (run >= 3 && !firstLine.includes("`") ? `\u2060${opened}` : opened)
}

const effectiveLimit = (limit: number): number =>
  Number.isNaN(limit) ? 1 : limit === Number.POSITIVE_INFINITY ? Number.MAX_SAFE_INTEGER : Math.max(1, Math.floor(limit))

const normalized = (s: string): string => wellFormed(s.replace(/\r\n?/g, "\n"))

// ---------------------------------------------------------------------------------------------
// Oversized blocks, cut into self-contained pieces

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/
/** A closing fence as marked reads one: spaces only after it (CommonMark allows tabs too). */
const FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,}) *$/
/** A line that may close a fence, for either reading. */
const MAY_CLOSE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/

interface Fence {
  /** The opening line as written, and the same without its info string (no language). */
  readonly head: string
  readonly bareHead: string
  readonly body: ReadonlyArray<string>
  /** The closing line as written, or the opening marker when the block was left open. */
  readonly tail: string
  /** The opening run of backticks or tildes. */
  readonly marker: string
}

const parseFence = (raw: string): Fence | undefined => {
  const lines = raw.split("\n")
  const head = lines[0] ?? ""
  const open = FENCE_OPEN.exec(head)
  const marker = open?.[1]
  if (open === null || marker === undefined) return undefined
  const last = lines.length > 1 ? lines[lines.length - 1] ?? "" : ""
  const close = FENCE_CLOSE.exec(last)?.[1]
  const closed = lines.length > 1 && close !== undefined && close[0] === marker[0] && close.length >= marker.length
  return {
    head,
    bareHead: open[0],
    body: closed ? lines.slice(1, -1) : lines.slice(1).filter((l, i, all) => i < all.length - 1 || l !== ""),
    tail: closed ? last : marker,
    marker
  }
}

const assemble = (head: string, lines: ReadonlyArray<string>, tail: string): string =>
  [...(head === "" ? [] : [head]), ...lines, ...(tail === "" ? [] : [tail])].join("\n")

/** Wraps lines into one self-contained piece; `bare` asks for the smallest wrapping (a fence without language). */
type Wrap = (lines: ReadonlyArray<string>, bare: boolean) => string

/**
 * A fence around `lines`, lengthened past any line of only fence characters among them: cutting a
 * long line can leave such a line, which would otherwise close the block early.
 */
const fenceWrap = (f: Fence): Wrap => (lines, bare) => {
  const char = f.marker.charAt(0)
  let longest = 0
  for (const l of lines) {
    const run = MAY_CLOSE.exec(l)?.[1]
    if (run !== undefined && run.charAt(0) === char) longest = Math.max(longest, run.length)
  }
  const head = bare ? f.bareHead : f.head
  if (longest < f.marker.length) return assemble(head, lines, f.tail)
  const marker = char.repeat(longest + 1)
  return assemble(head.replace(FENCE_OPEN, (m, run: string) => m.slice(0, m.length - run.length) + marker), lines, marker)
}

/**
 * `lines` packed into as few pieces as fit, each wrapped. A line too long for a piece of its own is
 * cut between characters (when `indent` is given: code), the rest continuing in the next piece
 * after `indent`; if not even one character fits, the bare wrapping is tried, and failing that one
 * character goes alone. Without `indent` (table rows) such a line is a piece of its own, too long.
 */
const pieces = (
  wrap: Wrap,
  lines: ReadonlyArray<string>,
  indent: string | undefined,
  fitsAlone: (s: string) => boolean
): Array<string> => {
  if (!fitsAlone(wrap([], true))) return [wrap(lines, false)]
  const out: Array<string> = []
  const todo = [...lines]
  let bare = false
  let i = 0
  while (i < todo.length) {
    const count = largest(todo.length - i, (c) => fitsAlone(wrap(todo.slice(i, i + c), bare)))
    if (count > 0 || indent === undefined) {
      const taken = Math.max(1, count)
      out.push(wrap(todo.slice(i, i + taken), bare))
      i += taken
      continue
    }
    const chars = Array.from(todo[i] ?? "")
    const keep = largest(chars.length, (c) => fitsAlone(wrap([chars.slice(0, c).join("")], bare)))
    if (keep === 0 && !bare) {
      bare = true
      continue
    }
    const taken = Math.max(1, keep)
    out.push(wrap([chars.slice(0, taken).join("")], bare))
    const rest = chars.slice(taken).join("")
    if (rest === "") i++
    else todo[i] = indent.length < taken ? indent + rest : rest
  }
  return out
}

/** An oversized top-level block as self-contained pieces, or the block itself when it cannot be cut. */
const cutBlock = (raw: string, kind: SourceBlock["kind"], fitsAlone: (s: string) => boolean): Array<string> => {
  if (kind === "fence") {
    const f = parseFence(raw)
    return f === undefined ? [raw] : pieces(fenceWrap(f), f.body, "", fitsAlone)
  }
  if (kind === "indentedCode") return pieces((lines) => lines.join("\n"), raw.split("\n"), "    ", fitsAlone)
  if (kind === "table") {
    const lines = raw.split("\n")
    const head = lines.slice(0, 2).join("\n")
    // A row without a pipe (a lazy last row) gets its pipes: alone under a header, `***` would read as a rule.
    const wrap: Wrap = (rows) => assemble(head, rows.map((r) => r.includes("|") ? r : `| ${r} |`), "")
    // A header too wide for a chunk of its own: the table as the preformatted text it renders to.
    if (!fitsAlone(head) || lines.length <= 2) return cutBlock(asCodeBlock(toPlainText(raw)), "fence", fitsAlone)
    return pieces(wrap, lines.slice(2), undefined, fitsAlone)
  }
  return [raw]
}

/** `text` as a fenced code block, its fence longer than any run of backticks in it. */
const asCodeBlock = (text: string): string => {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length))
  const fence = "`".repeat(longest + 1)
  return `${fence}\n${text}\n${fence}`
}

/** A fenced block left open at the end of the text, closed (it renders the same, and text appended stays out of it). */
const closeFence = (raw: string): string => {
  const f = parseFence(raw)
  return f === undefined ? raw : assemble(f.head, f.body, f.tail)
}

interface Prepared {
  readonly text: string
  /** Blocks not to cut (each kept only if it fits alone, checked later). */
  readonly guarded: ReadonlyArray<Range>
  /** Link reference definitions: where they are, and their Markdown (a nested one's is its block's range). */
  readonly defs: ReadonlyArray<Range & { readonly text: string }>
  /** Paragraphs. */
  readonly paragraphs: ReadonlyArray<Range>
  /** Code spans, links and images of paragraphs and headings. */
  readonly spans: ReadonlyArray<CodeSpan>
  readonly links: ReadonlyArray<Range>
  /** Where the underlines of setext headings start. */
  readonly underlines: ReadonlySet<number>
  /** One-line (ATX) headings: running text cut from one must not run on into the next line. */
  readonly headings: ReadonlyArray<Range>
  /** Where emphasis spans (em, strong, strikethrough) start and end: delimiters that really pair. */
  readonly emphasisStarts: ReadonlySet<number>
  readonly emphasisEnds: ReadonlySet<number>
}

/** `text` with oversized code blocks and tables replaced by their pieces, and the ranges to guard. */
const prepare = (text: string, blocks: ReadonlyArray<SourceBlock>, fitsAlone: (s: string) => boolean): Prepared => {
  let out = ""
  let at = 0
  const guarded: Array<Range> = []
  const defs: Array<Range & { readonly text: string }> = []
  const paragraphs: Array<Range> = []
  const spans: Array<CodeSpan> = []
  const links: Array<Range> = []
  const underlines = new Set<number>()
  const headings: Array<Range> = []
  const emphasisStarts = new Set<number>()
  const emphasisEnds = new Set<number>()
  const put = (s: string, guard = true): Range => {
    const r = { start: out.length, end: out.length + s.length }
    out += s
    if (guard) guarded.push(r)
    return r
  }
  for (const b of blocks) {
    out += text.slice(at, b.start)
    at = b.end
    const raw = text.slice(b.start, b.end)
    if (b.kind === "paragraph" || b.kind === "heading" || b.kind === "holdsCode" || b.kind === "other") {
      const r = put(raw, b.kind === "heading" || b.kind === "holdsCode")
      if (b.kind === "paragraph") paragraphs.push(r)
      else if (b.kind === "heading" && raw.includes("\n")) underlines.add(r.start + raw.lastIndexOf("\n") + 1)
      else if (b.kind === "heading") headings.push(r)
      const moved = <R extends Range>(x: R): R => ({ ...x, start: x.start + r.start - b.start, end: x.end + r.start - b.start })
      spans.push(...b.spans.map(moved))
      links.push(...b.links.map(moved))
      for (const e of b.emphases.map(moved)) {
        emphasisStarts.add(e.start)
        emphasisEnds.add(e.end)
      }
      defs.push(...b.defs.map((d) => ({ ...r, text: d })))
    } else if (b.kind === "def") defs.push({ ...put(raw), text: raw })
    else {
      const whole = b.kind === "fence" ? closeFence(raw) : raw
      const parts = fitsAlone(whole) ? [whole] : cutBlock(raw, b.kind, fitsAlone)
      parts.forEach((part, i) => {
        if (i > 0) out += "\n\n"
        put(part)
      })
    }
  }
  out += text.slice(at)
  return { text: out, guarded, defs, paragraphs, spans, links, underlines, headings, emphasisStarts, emphasisEnds }
}

// ---------------------------------------------------------------------------------------------
// Entry points

/**
 * `md` as rendered chunks, each `render`ed to at most `limit` UTF-16 code units (in order; empty
 * renderings dropped). `render` is e.g. `toTelegramHtml` or `toPlainText`; it is applied to each
 * chunk's source, plus the link definitions written elsewhere (which render to nothing). The limit
 * holds whenever one character and an empty code block render within it (any limit from ~64 up).
 */
export const splitForPlatform = (
  md: string,
  limit: number,
  render: (md: string) => string
): ReadonlyArray<string> => {
  const max = effectiveLimit(limit)
  const source = normalized(md)
  const blocks = sourceBlocks(source) ?? []
  const allDefs = blocks.flatMap((b) => (b.kind === "def" ? [source.slice(b.start, b.end)] : b.defs)).join("\n")
  const fitsAlone = (s: string) => render(allDefs === "" ? s : `${s}\n\n${allDefs}`).length <= max
  const prepared = prepare(source, blocks, fitsAlone)
  const text = prepared.text
  // Definitions outside the chunk go with it: those before it first, the others after (in order, as the first one wins).
  const withDefs = (c: Chunk): string => {
    const inside = (d: Range) => d.start >= c.start && d.end <= c.end
    const before = prepared.defs.filter((d) => d.end <= c.start).map((d) => d.text)
    const after = prepared.defs.filter((d) => d.end > c.start && !inside(d)).map((d) => d.text)
    return (before.length > 0 ? `${before.join("\n")}\n\n` : "") + chunkMarkdown(text, prepared, c) +
      (after.length > 0 ? `\n\n${after.join("\n")}` : "")
  }
  const fits = (c: Chunk) => render(withDefs(c)).length <= max
  const shields = prepared.guarded.filter((r) => fits({
    ...r,
    first: true,
    last: true,
    continues: false,
    startsMidLine: false,
    guardedStart: true,
    stopsMidLine: false,
    guardedEnd: true,
    openRun: 0,
    closeRun: 0
  }))
  const layout: Layout = {
    text,
    shields,
    paragraphs: prepared.paragraphs,
    spans: prepared.spans,
    links: prepared.links,
    markdown: true
  }
  return chunksOf(layout, max, fits).map((c) => render(withDefs(c))).filter((chunk) => chunk.trim() !== "")
}

/**
 * Plain `text` as chunks of at most `limit` UTF-16 code units, cut at the same boundaries as
 * `splitForPlatform` (white space at the cuts dropped). Line ends become `\n`; lone surrogate
 * halves and NUL become U+FFFD, so every chunk is well-formed UTF-16.
 */
export const splitPlain = (text: string, limit: number): ReadonlyArray<string> => {
  const max = effectiveLimit(limit)
  const source = normalized(text)
  const layout: Layout = { text: source, shields: [], paragraphs: [], spans: [], links: [], markdown: false }
  return chunksOf(layout, max, (c) => c.end - c.start <= max)
    .map((r) => source.slice(r.start, r.end))
    .filter((chunk) => chunk.trim() !== "")
}
