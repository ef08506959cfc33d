/**
 * Where a Markdown source's top-level blocks are (pure), for splitting it: their kinds (code,
 * table, heading, link definition, paragraph, list or quote holding code…) and offsets, and inside
 * their text the code spans, links and emphasis a cut should respect — all read from the same
 * `marked` tokens the renderers use, placed back in the source by finding each token's text.
 */
import type { MarkedToken, Token } from "marked"
import { known, lexMarkdown, trimEndOf } from "./markdown.ts"

/** What a top-level block is, as far as splitting cares. */
export type SourceBlockKind = "fence" | "indentedCode" | "table" | "def" | "holdsCode" | "paragraph" | "heading" | "other"

/** An inline code span in the source: `[start, end)` includes its backticks, `run` of them on each side. */
export interface CodeSpan {
  readonly start: number
  readonly end: number
  readonly run: number
}

/**
 * A top-level block of the source: `[start, end)` covers its text without trailing spaces, tabs
 * and line feeds; `spans` are the code spans of its text (a paragraph's, a heading's, a list's or
 * quote's paragraphs'), `links` its links and images (autolinks included), `emphases` its em,
 * strong and strikethrough spans (delimiters included, any depth), each `[start, end)` in the
 * source, as far as they could be placed; `defs` the link reference
 * definitions inside a list or quote (as Markdown that defines them at top level).
 */
export interface SourceBlock {
  readonly kind: SourceBlockKind
  readonly start: number
  readonly end: number
  readonly spans: ReadonlyArray<CodeSpan>
  readonly links: ReadonlyArray<{ readonly start: number; readonly end: number }>
  readonly emphases: ReadonlyArray<{ readonly start: number; readonly end: number }>
  readonly defs: ReadonlyArray<string>
}

/** The link reference definitions nested in a list or quote, as written there (without its indentation). */
const nestedDefs = (t: MarkedToken): Array<string> => {
  const inner = t.type === "list" ? t.items.flatMap((item) => item.tokens) : t.type === "blockquote" ? t.tokens : []
  return inner.flatMap((token) => {
    const k = known(token)
    return k.type === "def" ? [trimEndOf(k.raw, " \t\n")] : nestedDefs(k)
  })
}

/** The innermost inline tokens, in source order. */
const leaves = (tokens: ReadonlyArray<Token>): Array<Token> =>
  tokens.flatMap((t) => (t.type !== "codespan" && "tokens" in t && Array.isArray(t.tokens) ? leaves(t.tokens) : [t]))

/**
 * Where `raw` (a token's text, which marked gives without the indentation and `>` markers of a
 * list item's or quote's later lines) next occurs in `md` from `at`, those allowed at line starts.
 */
const findRaw = (md: string, raw: string, at: number): { start: number; end: number } | undefined => {
  const [first = "", ...rest] = raw.split("\n")
  // A few tries: the token is normally where its first line first occurs.
  for (let start = md.indexOf(first, at), tries = 0; start >= 0 && tries < 16; start = md.indexOf(first, start + 1), tries++) {
    const end = matchLines(md, start + first.length, rest)
    if (end !== undefined) return { start, end }
  }
  return undefined
}

/** Where `lines` end when they follow at `at`, each after a line break and any indentation or `>`. */
const matchLines = (md: string, at: number, lines: ReadonlyArray<string>): number | undefined => {
  let p = at
  for (const line of lines) {
    if (md.charAt(p) !== "\n") return undefined
    p++
    while (p < md.length && " \t>".includes(md.charAt(p)) && !md.startsWith(line, p)) p++
    if (!md.startsWith(line, p)) return undefined
    p += line.length
  }
  return p
}

/** `tokens` placed in the source: each found in turn from `from` (or skipped), kept when `keep` says so. */
const place = (tokens: ReadonlyArray<Token>, md: string, from: number, to: number, keep: (t: Token) => boolean) => {
  const out: Array<{ readonly token: Token; readonly start: number; readonly end: number }> = []
  let at = from
  for (const token of tokens) {
    const found = token.raw === "" ? undefined : findRaw(md, token.raw, at)
    if (found === undefined || found.end > to) continue
    at = found.end
    if (keep(token)) out.push({ token, start: found.start, end: found.end })
  }
  return out
}

/** The inline tokens of a block, in order: of a paragraph or heading, and of those inside a list or quote. */
const inlineOf = (token: MarkedToken): ReadonlyArray<Token> => {
  switch (token.type) {
    case "paragraph":
    case "heading":
      return token.tokens
    case "text":
      return token.tokens ?? []
    case "list":
      return token.items.flatMap((item) => item.tokens.flatMap((t) => inlineOf(known(t))))
    case "blockquote":
      return token.tokens.flatMap((t) => inlineOf(known(t)))
    default:
      return []
  }
}

/** The code spans of a block, found among its innermost inline tokens. */
const codeSpans = (token: MarkedToken, md: string, from: number, to: number): Array<CodeSpan> =>
  place(leaves(inlineOf(token)), md, from, to, (t) => t.type === "codespan" && t.raw.startsWith("`")).map((p) => ({
    start: p.start,
    end: p.end,
    run: /^`+/.exec(p.token.raw)?.[0].length ?? 1
  }))

/** Emphasis (em, strong, strikethrough) at any depth, placed within its parent's source in turn. */
const emphases = (tokens: ReadonlyArray<Token>, md: string, from: number, to: number): Array<{ start: number; end: number }> =>
  place(tokens, md, from, to, () => true).flatMap((p) => {
    const t = known(p.token)
    const inner = t.type === "em" || t.type === "strong" || t.type === "del" || t.type === "link" ? t.tokens : []
    const own = t.type === "em" || t.type === "strong" || t.type === "del" ? [{ start: p.start, end: p.end }] : []
    return [...own, ...emphases(inner, md, p.start, p.end)]
  })

/** The links and images of a block (its outermost inline tokens). */
const links = (token: MarkedToken, md: string, from: number, to: number) =>
  place(inlineOf(token), md, from, to, (t) => t.type === "link" || t.type === "image").map((p) => ({ start: p.start, end: p.end }))

/** Whether a container's tokens hold a code block or a table, which a cut would break. */
const holdsCode = (tokens: ReadonlyArray<Token>): boolean =>
  tokens.some((token) => {
    const t = known(token)
    if (t.type === "code" || t.type === "table") return true
    if (t.type === "list") return t.items.some((item) => holdsCode(item.tokens))
    return t.type === "blockquote" && holdsCode(t.tokens)
  })

const kindOf = (t: MarkedToken): SourceBlockKind => {
  switch (t.type) {
    case "code":
      return t.codeBlockStyle === "indented" ? "indentedCode" : "fence"
    case "table":
      return "table"
    case "def":
      return "def"
    case "paragraph":
      return "paragraph"
    case "heading":
      return "heading"
    case "list":
      return t.items.some((item) => holdsCode(item.tokens)) ? "holdsCode" : "other"
    case "blockquote":
      return holdsCode(t.tokens) ? "holdsCode" : "other"
    default:
      return "other"
  }
}

/**
 * The top-level blocks of `md` (which must use `\n` line ends) with their offsets, or undefined
 * when the lexer fails. Blocks after one that cannot be placed in the source are left out.
 */
export const sourceBlocks = (md: string): ReadonlyArray<SourceBlock> | undefined => {
  try {
    return placeBlocks(md, lexMarkdown(md))
  } catch {
    // marked gave up, or placing its tokens overflowed the stack: no structure known.
    return undefined
  }
}

/** `s` without the blank lines and line break at its end, keeping its last line's spaces and tabs. */
const withoutBlankLinesAtEnd = (s: string): string => {
  const content = trimEndOf(s, " \t\n").length
  const lineEnd = s.indexOf("\n", content)
  return lineEnd < 0 ? s : s.slice(0, lineEnd)
}

const placeBlocks = (md: string, tokens: ReadonlyArray<Token>): Array<SourceBlock> => {
  const out: Array<SourceBlock> = []
  let at = 0
  for (const token of tokens) {
    // marked may touch a token's trailing white space (`+ + + ` lexes as `+ + +\n`): match without
    // it. Not a code block's last line's, which may tell a closing fence from content (`~~~\t`).
    const body = token.type === "code" ? withoutBlankLinesAtEnd(token.raw) : trimEndOf(token.raw, " \t\n")
    if (token.type === "space" || body === "") continue
    const start = md.indexOf(body, at)
    // A token not found, or found past text no token covered: the rest stays unknown.
    if (start < 0 || md.slice(at, start).trim() !== "") return out
    at = start + body.length
    const t = known(token)
    out.push({
      kind: kindOf(t),
      start,
      end: at,
      spans: codeSpans(t, md, start, at),
      links: links(t, md, start, at),
      emphases: emphases(inlineOf(t), md, start, at),
      defs: nestedDefs(t)
    })
  }
  return out
}
