/**
 * Model Markdown → what chat platforms accept (pure). Models answer in CommonMark + GFM; Telegram
 * takes a small HTML subset (`<b> <i> <u> <s> <code> <pre> <a href> <blockquote> <tg-spoiler>`) and
 * every platform takes plain text. Both renderings come from one walk over `marked`'s tokens, so
 * they have the same structure: headings become a bold line, lists `• ` / `1. ` lines indented by
 * nesting, tables a preformatted block of aligned columns, rules a line of `———`, images their link.
 *
 * Raw HTML in the model's text is never passed through: the lexer runs with HTML recognition off,
 * so `<script>` is ordinary text (escaped in HTML output). Links keep their anchor only for
 * http(s), tg and mailto targets; others show as `text (url)`. Both renderers are total: any
 * string (broken Markdown, lone surrogates, NUL, deep nesting) gives a string, never a throw —
 * lone surrogates and NUL become U+FFFD, and if `marked` gives up the text is shown as is.
 */
import { Lexer, type MarkedToken, type Token, Tokenizer, type Tokens } from "marked"

/** marked's tokenizer with raw HTML switched off: `<div>`, `<script>`, `<!-- -->` lex as text. */
class NoHtmlTokenizer extends Tokenizer {
  override html(_src: string): undefined {
    return undefined
  }
  override tag(_src: string): undefined {
    return undefined
  }
}

/**
 * `s` without the characters of `chars` at its end. By hand: a regex such as `/\n+$/` retries at
 * every character of a long run that does not reach the end, which is quadratic.
 */
export const trimEndOf = (s: string, chars: string): string => {
  let end = s.length
  while (end > 0 && chars.includes(s.charAt(end - 1))) end--
  return s.slice(0, end)
}

/** `s` without the characters of `chars` at its start. */
const trimStartOf = (s: string, chars: string): string => {
  let start = 0
  while (start < s.length && chars.includes(s.charAt(start))) start++
  return s.slice(start)
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * `s` with lone surrogate halves and NUL replaced by U+FFFD (same length): such text cannot be
 * encoded as UTF-8, so a platform would refuse it or mangle it.
 */
export const wellFormed = (s: string): string => s.replace(LONE_SURROGATE, "\uFFFD").replaceAll("\u0000", "\uFFFD")

/** The top-level tokens of `md` (GFM on, raw HTML off), as both renderings read it. May throw on pathological input. */
export const lexMarkdown = (md: string): Array<Token> => new Lexer({ gfm: true, tokenizer: new NoHtmlTokenizer() }).lex(wellFormed(md))

// ---------------------------------------------------------------------------------------------
// Entities and escaping

/** Named character references decoded in text; others stay literal (`&foo;` shows as typed). */
const NAMED: Readonly<Record<string, string>> = {
  amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: "\u00a0", copy: "©", reg: "®", trade: "™",
  hellip: "…", mdash: "—", ndash: "–", laquo: "«", raquo: "»", lsquo: "‘", rsquo: "’", ldquo: "“",
  rdquo: "”", middot: "·", bull: "•", times: "×", divide: "÷", deg: "°", plusmn: "±", euro: "€",
  pound: "£", yen: "¥", cent: "¢", sect: "§", para: "¶", larr: "←", rarr: "→", uarr: "↑", darr: "↓",
  harr: "↔", rArr: "⇒", lArr: "⇐", hArr: "⇔", le: "≤", ge: "≥", ne: "≠", asymp: "≈", infin: "∞",
  minus: "−", check: "✓"
}

const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));/g

const fromCode = (code: number): string =>
  code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ? "\uFFFD" : String.fromCodePoint(code)

/** Decodes character references in lexed text (marked leaves named ones, and `&amp;`, for HTML). */
export const decodeEntities = (s: string): string =>
  s.includes("&")
    ? s.replace(ENTITY, (whole, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
      if (dec !== undefined) return fromCode(Number.parseInt(dec, 10))
      if (hex !== undefined) return fromCode(Number.parseInt(hex, 16))
      return (name !== undefined && Object.hasOwn(NAMED, name) ? NAMED[name] : undefined) ?? whole
    })
    : s

/** Text for Telegram HTML: `&`, `<`, `>` as entities. */
export const escapeHtml = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const escapeAttribute = (s: string): string => escapeHtml(s).replace(/"/g, "&quot;")

// ---------------------------------------------------------------------------------------------
// Links

const LINK_SCHEME = /^(?:https?:|tg:|mailto:)/i

/** Whether Telegram may get `href` as an anchor: http(s), tg and mailto only, and something after the scheme. */
export const isAllowedHref = (href: string): boolean => LINK_SCHEME.test(href) && !/^[a-z]+:\/*$/i.test(href)

/** White space and control characters percent-encoded, so the target is one unbroken URL. */
const encodeHref = (href: string): string => href.replace(/[\s\p{Cc}]/gu, (c) => encodeURIComponent(c))

// ---------------------------------------------------------------------------------------------
// Styles: what differs between Telegram HTML and plain text

/** One output line; a `verbatim` one is preformatted (in HTML, list indentation would land inside its `<pre>`). */
interface Line {
  readonly text: string
  readonly verbatim: boolean
}

const line = (text: string): Line => ({ text, verbatim: false })

interface Style {
  /** Ordinary text. */
  readonly text: (s: string) => string
  readonly bold: (inner: string) => string
  readonly italic: (inner: string) => string
  readonly strike: (inner: string) => string
  readonly code: (s: string) => string
  /** A preformatted block (code or table); `lang` only for code with a usable language. */
  readonly pre: (s: string, lang: string | undefined) => ReadonlyArray<Line>
  /** An anchor for an allowed `href`, or undefined where the style has none. */
  readonly anchor: (inner: string, href: string) => string | undefined
  /** A block quote around rendered lines; `nested` when already inside one. */
  readonly quote: (lines: ReadonlyArray<Line>, nested: boolean) => ReadonlyArray<Line>
  /** Whether list indentation applies to verbatim lines too. */
  readonly indentVerbatim: boolean
  /** What to show when lexing fails. */
  readonly fallback: (md: string) => string
}

/** The language of a code block as a CSS class word, or undefined when absent or unusable. */
const codeLanguage = (lang: string | undefined): string | undefined => {
  const word = (lang ?? "").trim().split(/\s/, 1)[0] ?? ""
  return /^[A-Za-z0-9_+#.-]{1,32}$/.test(word) ? word : undefined
}

const wrapLines = (lines: ReadonlyArray<Line>, open: string, close: string): ReadonlyArray<Line> =>
  lines.map((l, i) => ({
    text: (i === 0 ? open : "") + l.text + (i === lines.length - 1 ? close : ""),
    verbatim: l.verbatim
  }))

const telegramStyle: Style = {
  text: escapeHtml,
  bold: (inner) => `<b>${inner}</b>`,
  italic: (inner) => `<i>${inner}</i>`,
  strike: (inner) => `<s>${inner}</s>`,
  code: (s) => `<code>${escapeHtml(s)}</code>`,
  pre: (s, lang) => [{
    text: lang === undefined
      ? `<pre>${escapeHtml(s)}</pre>`
      : `<pre><code class="language-${lang}">${escapeHtml(s)}</code></pre>`,
    verbatim: true
  }],
  anchor: (inner, href) => `<a href="${escapeAttribute(encodeHref(href))}">${inner}</a>`,
  // Telegram forbids a blockquote inside another: inner quotes are flattened into the outer one.
  quote: (lines, nested) => nested ? lines : wrapLines(lines, "<blockquote>", "</blockquote>"),
  indentVerbatim: false,
  fallback: escapeHtml
}

const plainStyle: Style = {
  text: (s) => s,
  bold: (inner) => inner,
  italic: (inner) => inner,
  strike: (inner) => inner,
  code: (s) => s,
  pre: (s) => s.split("\n").map((text) => ({ text, verbatim: true })),
  anchor: () => undefined,
  quote: (lines) =>
    lines.flatMap((l) => l.text.split("\n").map((text) => ({ text: text === "" ? ">" : `> ${text}`, verbatim: l.verbatim }))),
  indentVerbatim: true,
  fallback: (md) => md
}

// ---------------------------------------------------------------------------------------------
// Inline tokens

interface Context {
  readonly inLink: boolean
  readonly bold: boolean
  readonly italic: boolean
  readonly strike: boolean
  readonly quoted: boolean
}

const TOP: Context = { inLink: false, bold: false, italic: false, strike: false, quoted: false }

/** Tokens come from our own lexer without extensions, so every token is one of marked's own. */
export const known = (token: Token): MarkedToken => token as MarkedToken

const inline = (tokens: ReadonlyArray<Token> | undefined, style: Style, ctx: Context): string =>
  (tokens ?? []).map((t) => inlineToken(known(t), style, ctx)).join("")

/** The plain text of inline tokens: for table cells and for comparing a link's text with its target. */
const plainInline = (tokens: ReadonlyArray<Token> | undefined): string => inline(tokens, plainStyle, TOP)

const inlineToken = (t: MarkedToken, style: Style, ctx: Context): string => {
  switch (t.type) {
    case "text":
      return t.tokens !== undefined ? inline(t.tokens, style, ctx) : style.text(decodeEntities(t.text))
    case "escape":
      return style.text(decodeEntities(t.text))
    case "strong":
      return ctx.bold ? inline(t.tokens, style, ctx) : style.bold(inline(t.tokens, style, { ...ctx, bold: true }))
    case "em":
      return ctx.italic ? inline(t.tokens, style, ctx) : style.italic(inline(t.tokens, style, { ...ctx, italic: true }))
    case "del":
      return ctx.strike ? inline(t.tokens, style, ctx) : style.strike(inline(t.tokens, style, { ...ctx, strike: true }))
    case "codespan":
      // Telegram allows no entity inside a link but bold/italic/strike/spoiler.
      return ctx.inLink ? style.text(t.text) : style.code(t.text)
    case "br":
      return "\n"
    case "link":
      return link(inline(t.tokens, style, { ...ctx, inLink: true }), plainInline(t.tokens), t.href, t.autolink === true, style, ctx)
    case "image": {
      const alt = decodeEntities(t.text)
      return link(style.text(alt), alt, t.href, false, style, ctx)
    }
    case "checkbox":
    case "def":
    case "space":
      return ""
    case "html":
      return style.text(t.raw)
    default:
      return blockAsInline(t, style, ctx)
  }
}

/** A block token met where inline content was expected: its inline content, else its source. */
const blockAsInline = (t: MarkedToken, style: Style, ctx: Context): string =>
  "tokens" in t && Array.isArray(t.tokens) ? inline(t.tokens, style, ctx) : style.text(t.raw)

/**
 * A link: an anchor where the style has one and the target is allowed; otherwise its text followed
 * by ` (url)` unless the text already is the url (autolinks: `<http://x>`, `www.x.com`). Inside
 * another link only the text.
 */
const link = (
  inner: string,
  innerPlain: string,
  href: string,
  autolink: boolean,
  style: Style,
  ctx: Context
): string => {
  const target = decodeEntities(href).trim()
  const empty = innerPlain.trim() === ""
  const text = empty ? style.text(target) : inner
  const shown = empty ? target : innerPlain
  if (ctx.inLink) return text
  const anchor = isAllowedHref(target) ? style.anchor(text, target) : undefined
  if (anchor !== undefined) return anchor
  const showUrl = !autolink && target !== "" && target !== shown && target !== `mailto:${shown}`
  return showUrl ? `${text} (${style.text(target)})` : text
}

// ---------------------------------------------------------------------------------------------
// Block tokens

const inlineLines = (s: string): ReadonlyArray<Line> => s === "" ? [] : s.split("\n").map(line)

/** Rendered blocks, separated by an empty line when `spaced` (top level, quotes) or not (list items). */
const blocks = (tokens: ReadonlyArray<Token>, style: Style, ctx: Context, spaced: boolean): Array<Line> => {
  const out: Array<Line> = []
  for (const t of tokens) {
    const lines = block(known(t), style, ctx)
    if (lines.length === 0) continue
    if (spaced && out.length > 0) out.push(line(""))
    out.push(...lines)
  }
  return out
}

const block = (t: MarkedToken, style: Style, ctx: Context): ReadonlyArray<Line> => {
  switch (t.type) {
    case "paragraph":
      return inlineLines(inline(t.tokens, style, ctx))
    case "text":
      return inlineLines(t.tokens !== undefined ? inline(t.tokens, style, ctx) : style.text(decodeEntities(t.text)))
    case "heading": {
      const inner = inline(t.tokens, style, { ...ctx, bold: true })
      return inner === "" ? [] : inlineLines(style.bold(inner))
    }
    case "code": {
      const text = trimEndOf(t.text, "\n")
      return text === "" ? [] : style.pre(text, codeLanguage(t.lang))
    }
    case "blockquote": {
      const inner = blocks(t.tokens, style, { ...ctx, quoted: true }, true)
      return inner.length === 0 ? [] : style.quote(inner, ctx.quoted)
    }
    case "list":
      return list(t, style, ctx)
    case "table":
      return style.pre(tableText(t), undefined)
    case "hr":
      return [line("———")]
    case "html":
      return inlineLines(style.text(trimEndOf(t.raw, "\n")))
    case "space":
    case "def":
    case "checkbox":
      return []
    default:
      return inlineLines(inlineToken(t, style, ctx))
  }
}

/**
 * The marker an ordered item shows: the number and delimiter the model wrote (`3.`, `3)`), so a
 * list split over messages keeps its numbers.
 */
const itemMarker = (list: Tokens.List, item: Tokens.ListItem, index: number): string => {
  const written = /^[ \t]*(\d{1,9}[.)])/.exec(item.raw)?.[1]
  return written ?? `${(typeof list.start === "number" ? list.start : 1) + index}.`
}

const list = (t: Tokens.List, style: Style, ctx: Context): ReadonlyArray<Line> =>
  t.items.flatMap((item, i) => {
    const marker = t.ordered ? `${itemMarker(t, item, i)} ` : "• "
    const box = item.task ? (item.checked === true ? "☑ " : "☐ ") : ""
    return listItem(blocks(item.tokens, style, ctx, false), marker + box, marker.length, style)
  })

/** The item's first line after its marker, the others indented to line up with the text. */
const listItem = (lines: ReadonlyArray<Line>, marker: string, width: number, style: Style): ReadonlyArray<Line> => {
  if (lines.length === 0) return [line(marker.trimEnd())]
  const pad = " ".repeat(width)
  return lines.map((l, i) => {
    if (i === 0) return { text: marker + l.text, verbatim: l.verbatim }
    if (l.verbatim && !style.indentVerbatim) return l
    return { text: l.text === "" ? "" : l.text.split("\n").map((s) => pad + s).join("\n"), verbatim: l.verbatim }
  })
}

// ---------------------------------------------------------------------------------------------
// Tables

const WIDE =
  /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6\u{1F300}-\u{1F64F}\u{1F900}-\u{1F9FF}\u{20000}-\u{3FFFD}]/u
const ZERO_WIDTH = /\p{M}|[\u200B-\u200F]|[\uFE00-\uFE0F]/u

/** Columns a string takes in a monospace font: East Asian wide characters and emoji count two. */
export const displayWidth = (s: string): number => {
  let width = 0
  for (const ch of s) width += ZERO_WIDTH.test(ch) ? 0 : WIDE.test(ch) ? 2 : 1
  return width
}

const pad = (s: string, width: number, align: "center" | "left" | "right" | null): string => {
  const gap = Math.max(0, width - displayWidth(s))
  if (align === "right") return " ".repeat(gap) + s
  if (align === "center") return " ".repeat(Math.floor(gap / 2)) + s + " ".repeat(gap - Math.floor(gap / 2))
  return s + " ".repeat(gap)
}

/** A table as aligned text columns: header, a rule (box drawing, so it cannot be taken for text), then the rows. */
const tableText = (t: Tokens.Table): string => {
  const rows = [t.header, ...t.rows].map((row) => row.map((cell) => plainInline(cell.tokens).replace(/\s+/g, " ").trim()))
  const columns = Math.max(0, ...rows.map((r) => r.length))
  const widths = Array.from({ length: columns }, (_, i) => Math.max(1, ...rows.map((r) => displayWidth(r[i] ?? ""))))
  const render = (row: ReadonlyArray<string>) =>
    widths.map((w, i) => pad(row[i] ?? "", w, t.align[i] ?? null)).join(" | ").trimEnd()
  const [head = [], ...body] = rows
  return [render(head), widths.map((w) => "─".repeat(w)).join("─┼─"), ...body.map(render)].join("\n")
}

// ---------------------------------------------------------------------------------------------
// Entry points

const render = (md: string, style: Style): string => {
  const clean = wellFormed(md)
  try {
    return trimStartOf(trimEndOf(blocks(lexMarkdown(clean), style, TOP, true).map((l) => l.text).join("\n"), "\n"), "\n")
  } catch {
    // marked's own guard (an "infinite loop") or a stack overflow on absurd nesting.
    return style.fallback(clean)
  }
}

/** `md` in Telegram's HTML parse mode. Total: never throws. */
export const toTelegramHtml = (md: string): string => render(md, telegramStyle)

/** `md` as plain text with the same layout: the fallback when a platform rejects formatting. Total. */
export const toPlainText = (md: string): string => render(md, plainStyle)
