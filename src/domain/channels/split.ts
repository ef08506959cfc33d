/**
 * Long answers cut into messages a chat platform accepts (pure). Platforms cap a message's length
 * in UTF-16 code units (Telegram 4096, WeChat 2000), measured on what is sent — the rendered text —
 * so the Markdown SOURCE is split and each piece rendered on its own: every chunk is then whole,
 * valid markup, and no cut can fall inside a tag or an entity of the output.
 *
 * A chunk ends at the best boundary that keeps its rendering within the limit: a blank line, else
 * a line break, else a sentence end, else a space, else anywhere — never between the halves of a
 * surrogate pair (`chunking.ts`). Code blocks, tables, headings and link definitions are kept whole
 * unless one alone is too long; then a code block is cut at lines with its fence reopened in each
 * piece, a table between rows under its repeated header (`oversized.ts`). Each chunk's Markdown is
 * fixed up at its cut edges to read as the same text it was in the whole (`chunkEdges.ts`), and
 * link reference definitions travel with every chunk, so `[text][ref]` resolves in all of them.
 */
import { type Chunk, chunksOf, type Range } from "./chunking.ts"
import { chunkMarkdown, type EdgeFacts } from "./chunkEdges.ts"
import { wellFormed } from "./markdown.ts"
import { type CodeSpan, type SourceBlock, sourceBlocks } from "./structure.ts"
import { closeFence, cutBlock } from "./oversized.ts"

/** Telegram's limit for a text message, in UTF-16 code units. */
export const TELEGRAM_TEXT_LIMIT = 4096

const effectiveLimit = (limit: number): number =>
  Number.isNaN(limit) ? 1 : limit === Number.POSITIVE_INFINITY ? Number.MAX_SAFE_INTEGER : Math.max(1, Math.floor(limit))

const normalized = (s: string): string => wellFormed(s.replace(/\r\n?/g, "\n"))

/** The text to cut, with what its parse says about it. */
interface Prepared extends EdgeFacts {
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
): ReadonlyArray<string> => splitSources(md, limit, render).map(render)

/**
 * The Markdown of each chunk `splitForPlatform` renders (link definitions included), for a caller
 * that renders a chunk more than one way (HTML, and plain text when the platform refuses the HTML).
 */
export const splitSources = (
  md: string,
  limit: number,
  render: (md: string) => string
): ReadonlyArray<string> => {
  const max = effectiveLimit(limit)
  const source = normalized(md)
  // Most answers fit in one message: one rendering, no parse for structure.
  const whole = render(source)
  if (whole.length <= max) return whole.trim() === "" ? [] : [source]
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
  const measure = (c: Chunk) => render(withDefs(c)).length
  const shields = prepared.guarded.filter((r) => measure({
    ...r,
    first: true,
    last: true,
    continues: false,
    startsMidLine: false,
    quoted: false,
    guardedStart: true,
    stopsMidLine: false,
    guardedEnd: true,
    openRun: 0,
    closeRun: 0
  }) <= max)
  const structure = { shields, paragraphs: prepared.paragraphs, spans: prepared.spans, links: prepared.links }
  return chunksOf(text, structure, max, measure).map(withDefs).filter((chunk) => render(chunk).trim() !== "")
}

/**
 * Plain `text` as chunks of at most `limit` UTF-16 code units, cut at the same boundaries as
 * `splitForPlatform` (white space at the cuts dropped). Line ends become `\n`; lone surrogate
 * halves and NUL become U+FFFD, so every chunk is well-formed UTF-16.
 */
export const splitPlain = (text: string, limit: number): ReadonlyArray<string> => {
  const max = effectiveLimit(limit)
  const source = normalized(text)
  return chunksOf(source, undefined, max, (c) => c.end - c.start)
    .map((r) => source.slice(r.start, r.end).trimEnd())
    .filter((chunk) => chunk.trim() !== "")
}
