/**
 * Blocks too long for one message, cut into self-contained pieces (pure): a fenced code block at
 * line boundaries with its fence closed and reopened (same language) in each piece, lengthened
 * past any line of fence characters a cut leaves; an indented one at line boundaries; a table
 * between rows with its header repeated, or, when the header alone is too long, as the aligned
 * text it renders to, cut as code. A line longer than a piece is cut between characters.
 */
import { largest } from "./chunking.ts"
import { toPlainText } from "./markdown.ts"
import type { SourceBlock } from "./structure.ts"

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
export const cutBlock = (raw: string, kind: SourceBlock["kind"], fitsAlone: (s: string) => boolean): Array<string> => {
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
export const closeFence = (raw: string): string => {
  const f = parseFence(raw)
  return f === undefined ? raw : assemble(f.head, f.body, f.tail)
}

