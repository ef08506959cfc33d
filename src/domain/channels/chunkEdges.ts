/**
 * A chunk's Markdown (pure): its slice of the source, fixed up at its edges so that it reads as the
 * same text it was in the whole. A cut changes what its neighbourhood means — a paragraph's later
 * line `[x]: y` would define a link, `- x` after a cut mid-line would start a list, `===` would
 * underline the line above, a run of `*` would pair with another, a code span cut in two would
 * end nowhere — so such syntax is escaped (a backslash, or an invisible word joiner where a
 * backslash would itself be read), and code spans are closed and reopened.
 */
import { type Chunk, shieldAround } from "./chunking.ts"
import { trimEndOf } from "./markdown.ts"

/** What the whole text's parse says about places a chunk's edges may touch. */
export interface EdgeFacts {
  /** Where the underlines of setext headings start. */
  readonly underlines: ReadonlySet<number>
  /** One-line (ATX) headings: running text cut from one must not run on into the next line. */
  readonly headings: ReadonlyArray<{ readonly start: number; readonly end: number }>
  /** Where emphasis spans (em, strong, strikethrough) start and end: delimiters that really pair. */
  readonly emphasisStarts: ReadonlySet<number>
  readonly emphasisEnds: ReadonlySet<number>
}

/** A first line that would open a block where the text ran on: heading, list item, quote, rule. */
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
/** A last line that a cut would turn into a setext underline or a rule. */
const CLOSES_BLOCK = /^( {0,3})(?:=+[ \t]*$|-+[ \t]*$|([*_])(?:[ \t]*\2){2,}[ \t]*$)/
/** A run of `#` a cut would leave at the end of a heading line, where it reads as the closing sequence. */
const TRAILING_HASHES = /(^|[ \t])(#+)[ \t]*$/

/** `line` (the first of a chunk cut in running text) made not to open a block: a fence, a link definition, a list item, a heading, a quote, a rule. */
const escapeOpening = (line: string): string => {
  if (OPENS_FENCE.test(line)) return line.replace(OPENS_FENCE, "$1\u2060")
  if (DEFINITION.test(line)) return notDefinition(line)
  const ordered = ORDERED_ITEM.exec(line)?.[1]
  if (ordered !== undefined) return `${ordered}\\${line.slice(ordered.length)}`
  return OPENS_BLOCK.test(line) ? `\\${line}` : line
}

/** `line` (the last of a chunk cut mid-line) made not to be what the cut would make it: a fence, a definition, an underline, a rule, a heading's closing `#`s. */
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
export const chunkMarkdown = (text: string, facts: EdgeFacts, c: Chunk): string => {
  let md = text.slice(c.start, c.end)
  const underlines = facts.underlines
  const real = (at: number) => underlines.has(c.start + at)
  if (c.closeRun === 0 && !c.last) md = escapeEnd(md, c, real)
  if (c.openRun === 0 && !c.first && (c.continues || !c.guardedStart)) md = escapeStart(md, c.continues, real)
  // The rest of a heading's line stands alone, as the heading did: the next line starts a block.
  if (!c.first && shieldAround(facts.headings, c.start) !== undefined) md = md.replace("\n", "\n\n")
  md = literalEdgeRuns(md, c, facts)
  // Cut mid-line in a quote, the rest of the line stays in a quote, as the lines after it do (one
  // level: deeper ones cost a `> ` each in plain text, and Telegram has one level only).
  if (c.startsMidLine && c.quoted) md = `> ${md}`
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
const literalEdgeRuns = (md: string, c: Chunk, facts: EdgeFacts): string => {
  const escapeRun = (run: string) => run.replace(/[*_~]/g, "\\$&")
  let out = md
  const tail = out.slice(trimEndOf(out, "*_~").length)
  if (c.stopsMidLine && c.closeRun === 0 && tail !== "" && !facts.emphasisEnds.has(c.end)) {
    out = out.slice(0, out.length - tail.length) + escapeRun(tail)
  }
  const head = /^[*_~]+/.exec(out)?.[0]
  if (c.startsMidLine && c.openRun === 0 && head !== undefined && !facts.emphasisStarts.has(c.start)) {
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

