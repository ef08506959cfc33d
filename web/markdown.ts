/**
 * A small Markdown reader for agents' answers: paragraphs, headings, fenced code, lists, quotes,
 * `code`, **strong**, *emphasis* and [links](https://…). It builds a tree that the console renders
 * as elements, never HTML: nothing an agent writes can become markup or script. Links keep only
 * http(s) and mailto addresses (others stay text). Unclosed constructs (an answer still streaming)
 * read as far as they go: an open fence is code to the end.
 */

export type Inline =
  | { readonly t: "text"; readonly v: string }
  | { readonly t: "code"; readonly v: string }
  | { readonly t: "strong"; readonly c: ReadonlyArray<Inline> }
  | { readonly t: "em"; readonly c: ReadonlyArray<Inline> }
  | { readonly t: "link"; readonly href: string; readonly c: ReadonlyArray<Inline> }
  | { readonly t: "br" }

export type Block =
  | { readonly t: "p"; readonly c: ReadonlyArray<Inline> }
  | { readonly t: "h"; readonly level: 1 | 2 | 3 | 4 | 5 | 6; readonly c: ReadonlyArray<Inline> }
  | { readonly t: "pre"; readonly lang: string; readonly v: string }
  | { readonly t: "ul"; readonly items: ReadonlyArray<ReadonlyArray<Inline>> }
  /** `numbers`: each item's number as written (shown as written: a list may start at 3, or repeat 1). */
  | { readonly t: "ol"; readonly items: ReadonlyArray<ReadonlyArray<Inline>>; readonly numbers: ReadonlyArray<number> }
  | { readonly t: "quote"; readonly c: ReadonlyArray<Block> }

const SAFE_URL = /^(https?:\/\/|mailto:)/i

/** Inline markup of one run of text (line breaks inside become `br`). */
export const parseInline = (src: string): ReadonlyArray<Inline> => {
  const out: Array<Inline> = []
  let text = ""
  const flush = () => {
    if (text !== "") out.push({ t: "text", v: text })
    text = ""
  }
  let i = 0
  while (i < src.length) {
    const ch = src[i]
    const rest = src.slice(i)
    if (ch === "\n") {
      flush()
      out.push({ t: "br" })
      i++
      continue
    }
    if (ch === "\\" && i + 1 < src.length && /[\\`*_[\]()#>-]/.test(src[i + 1] ?? "")) {
      text += src[i + 1]
      i += 2
      continue
    }
    if (ch === "`") {
      const ticks = /^`+/.exec(rest)?.[0] ?? "`"
      const end = src.indexOf(ticks, i + ticks.length)
      if (end > 0) {
        flush()
        const body = src.slice(i + ticks.length, end)
        out.push({ t: "code", v: body.length > 2 && body.startsWith(" ") && body.endsWith(" ") ? body.slice(1, -1) : body })
        i = end + ticks.length
        continue
      }
    }
    const strong = /^(\*\*|__)(?=\S)([\s\S]*?\S)\1/.exec(rest)
    if (strong !== null) {
      flush()
      out.push({ t: "strong", c: parseInline(strong[2] ?? "") })
      i += strong[0].length
      continue
    }
    const em = /^(\*|_)(?=\S)([\s\S]*?\S)\1(?!\1)/.exec(rest)
    if (em !== null && !(ch === "_" && /\w/.test(src[i - 1] ?? ""))) {
      flush()
      out.push({ t: "em", c: parseInline(em[2] ?? "") })
      i += em[0].length
      continue
    }
    const link = /^\[([^\]\n]+)\]\(([^)\s]+)\)/.exec(rest)
    if (link !== null) {
      flush()
      const href = link[2] ?? ""
      const label = parseInline(link[1] ?? "")
      if (SAFE_URL.test(href)) out.push({ t: "link", href, c: label })
      else out.push(...label)
      i += link[0].length
      continue
    }
    const url = /^https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"]/.exec(rest)
    if (url !== null && !/\w/.test(src[i - 1] ?? "")) {
      flush()
      out.push({ t: "link", href: url[0], c: [{ t: "text", v: url[0] }] })
      i += url[0].length
      continue
    }
    text += ch
    i++
  }
  flush()
  return out
}

const FENCE = /^ {0,3}(```+|~~~+)\s*([\w+.-]*)\s*$/
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/
const BULLET = /^ {0,3}[-*+]\s+(.*)$/
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/
const QUOTE = /^ {0,3}>\s?(.*)$/

/** The blocks of a whole text. */
export const parseMarkdown = (src: string): ReadonlyArray<Block> => {
  const lines = src.replace(/\r\n?/g, "\n").split("\n")
  const out: Array<Block> = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i] ?? ""
    if (line.trim() === "") {
      i++
      continue
    }
    const fence = FENCE.exec(line)
    if (fence !== null) {
      const marker = fence[1] ?? "```"
      const body: Array<string> = []
      i++
      while (i < lines.length && !(lines[i] ?? "").trimStart().startsWith(marker)) body.push(lines[i++] ?? "")
      i++
      out.push({ t: "pre", lang: fence[2] ?? "", v: body.join("\n") })
      continue
    }
    const heading = HEADING.exec(line)
    if (heading !== null) {
      out.push({ t: "h", level: (heading[1]?.length ?? 1) as 1 | 2 | 3 | 4 | 5 | 6, c: parseInline(heading[2] ?? "") })
      i++
      continue
    }
    if (QUOTE.test(line)) {
      const body: Array<string> = []
      while (i < lines.length && QUOTE.test(lines[i] ?? "")) body.push(QUOTE.exec(lines[i++] ?? "")?.[1] ?? "")
      out.push({ t: "quote", c: parseMarkdown(body.join("\n")) })
      continue
    }
    const list = BULLET.test(line) ? ({ kind: "ul", re: BULLET } as const) : ORDERED.test(line) ? ({ kind: "ol", re: ORDERED } as const) : undefined
    if (list !== undefined) {
      const items: Array<Array<string>> = []
      const numbers: Array<number> = []
      while (i < lines.length) {
        const l = lines[i] ?? ""
        const m = list.re.exec(l)
        if (m !== null) {
          // BULLET captures the item's text; ORDERED its number, then the text.
          items.push([(list.kind === "ol" ? m[2] : m[1]) ?? ""])
          if (list.kind === "ol") numbers.push(Number(m[1]))
        } else if (items.length > 0 && /^\s{2,}\S/.test(l)) items.at(-1)?.push(l.trim())
        else break
        i++
      }
      const parsed = items.map((it) => parseInline(it.join("\n")))
      out.push(list.kind === "ol" ? { t: "ol", items: parsed, numbers } : { t: "ul", items: parsed })
      continue
    }
    const para: Array<string> = []
    while (i < lines.length) {
      const l = lines[i] ?? ""
      if (l.trim() === "" || FENCE.test(l) || HEADING.test(l) || QUOTE.test(l) || BULLET.test(l) || ORDERED.test(l)) break
      para.push(l)
      i++
    }
    out.push({ t: "p", c: parseInline(para.join("\n")) })
  }
  return out
}
