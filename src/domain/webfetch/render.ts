/**
 * What the model reads of a fetched response: HTML → Markdown of the main content (Readability over a
 * linkedom DOM, then Turndown; links and images made absolute, title first; the whole body when
 * Readability finds no article), text/JSON/XML as text (small JSON pretty-printed), anything else a
 * one-line description — never the bytes. Text is decoded with the charset of the Content-Type header,
 * else of a `<meta>` in the first 2 KiB, else UTF-8.
 */
import { Readability } from "@mozilla/readability"
import { parseHTML } from "linkedom"
import TurndownService from "turndown"

export interface FetchedBody {
  readonly url: string
  readonly status: number
  /** The Content-Type header as sent ("" when none). */
  readonly contentType: string
  readonly bytes: Uint8Array
  /** The body was cut at the size limit. */
  readonly truncated: boolean
  /** The full size when known (Content-Length), for bodies not read at all. */
  readonly declaredSize?: number | undefined
}

export interface Rendered {
  readonly title: string | undefined
  readonly kind: "html" | "text" | "json" | "xml" | "binary"
  readonly text: string
  readonly notes: ReadonlyArray<string>
}

/** JSON up to this size is pretty-printed; larger JSON is shown as sent. */
const PRETTY_JSON_MAX = 256 * 1024

export const mediaType = (contentType: string): string => (contentType.split(";")[0] ?? "").trim().toLowerCase()

const charsetParam = (contentType: string): string | undefined => {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)
  return m?.[1]
}

/** A `<meta charset>` or `<meta http-equiv="Content-Type" content="…; charset=…">` in the first 2 KiB. */
export const metaCharset = (bytes: Uint8Array): string | undefined => {
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 2048))
  const direct = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)
  return direct?.[1]
}

const BINARY_TYPES = /^(image|audio|video|font)\/|^application\/(pdf|zip|gzip|x-gzip|x-tar|octet-stream|x-7z-compressed|x-rar-compressed|vnd\.|msword|x-bzip2|wasm|x-executable|java-archive)/

export const isBinaryType = (type: string): boolean => BINARY_TYPES.test(type) && !type.endsWith("+xml")

const kindOf = (type: string, bytes: Uint8Array): Rendered["kind"] => {
  if (type === "text/html" || type === "application/xhtml+xml") return "html"
  if (type === "application/json" || type.endsWith("+json")) return "json"
  if (type === "application/xml" || type === "text/xml" || type.endsWith("+xml")) return "xml"
  if (type.startsWith("text/") || type === "application/javascript" || type === "application/x-ndjson") return "text"
  if (type !== "" && type !== "application/octet-stream") return isBinaryType(type) ? "binary" : "text"
  // no useful type: sniff
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 512)).trimStart().toLowerCase()
  if (head.startsWith("<!doctype html") || head.startsWith("<html")) return "html"
  return bytes.subarray(0, 4096).includes(0) ? "binary" : "text"
}

/** The body decoded as text, with a note when the declared charset is unknown. */
export const decodeText = (body: FetchedBody, html: boolean): { readonly text: string; readonly notes: ReadonlyArray<string> } => {
  const label = charsetParam(body.contentType) ?? (html ? metaCharset(body.bytes) : undefined)
  if (label !== undefined) {
    try {
      return { text: new TextDecoder(label).decode(body.bytes), notes: [] }
    } catch {
      return { text: new TextDecoder("utf-8").decode(body.bytes), notes: [`unknown charset "${label}", decoded as UTF-8`] }
    }
  }
  return { text: new TextDecoder("utf-8").decode(body.bytes), notes: [] }
}

const sizeText = (n: number): string =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`

/** PNG/GIF/JPEG dimensions when cheap to read, for a description. */
const dimensions = (b: Uint8Array): string | undefined => {
  if (b.length >= 24 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) {
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
    return `${v.getUint32(16)}×${v.getUint32(20)}`
  }
  if (b.length >= 10 && b[0] === 0x47 && b[1] === 0x49 && b[2] === 0x46) {
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
    return `${v.getUint16(6, true)}×${v.getUint16(8, true)}`
  }
  return undefined
}

export const describeBinary = (body: FetchedBody): string => {
  const type = mediaType(body.contentType) || "unknown type"
  const size = body.declaredSize ?? body.bytes.length
  const dim = dimensions(body.bytes)
  const cut = body.truncated && body.declaredSize === undefined ? "at least " : ""
  return `[${type}, ${cut}${sizeText(size)}${dim === undefined ? "" : `, ${dim} pixels`}: not text, so its content is not shown]`
}

const turndown = () => {
  const td = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" })
  td.remove(["script", "style", "noscript", "iframe", "form", "button", "input", "select", "textarea"])
  return td
}

/** Makes links and images absolute against the page (or its `<base href>`); drops non-web links. */
const absolutise = (document: ReturnType<typeof parseHTML>["document"], pageUrl: string) => {
  const baseHref = document.querySelector("base[href]")?.getAttribute("href")
  let base = pageUrl
  try {
    if (baseHref !== null && baseHref !== undefined) base = new URL(baseHref, pageUrl).href
  } catch { /* a broken <base> is ignored */ }
  const fix = (selector: string, attribute: string) => {
    for (const el of document.querySelectorAll(selector)) {
      const value = el.getAttribute(attribute) ?? ""
      try {
        const abs = new URL(value, base)
        if (["http:", "https:", "mailto:"].includes(abs.protocol)) el.setAttribute(attribute, abs.href)
        else el.removeAttribute(attribute)
      } catch {
        el.removeAttribute(attribute)
      }
    }
  }
  fix("a[href]", "href")
  fix("img[src]", "src")
}

const tidy = (md: string) => md.replace(/\n{3,}/g, "\n\n").trim()

export const htmlToMarkdown = (html: string, pageUrl: string): { readonly title: string | undefined; readonly markdown: string; readonly article: boolean } => {
  const { document } = parseHTML(html)
  absolutise(document, pageUrl)
  const pageTitle = document.querySelector("title")?.textContent?.trim() || undefined
  const td = turndown()
  // Readability mutates the document, so the fallback parses again.
  const article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0]).parse()
  const content = article?.content ?? ""
  if (article !== null && content.trim() !== "" && (article.textContent ?? "").trim() !== "") {
    return { title: article.title?.trim() || pageTitle, markdown: tidy(td.turndown(content)), article: true }
  }
  const again = parseHTML(html).document
  absolutise(again, pageUrl)
  const body = again.querySelector("body")?.innerHTML ?? html
  return { title: pageTitle, markdown: tidy(td.turndown(body)), article: false }
}

/** The response as text for the model. */
export const render = (body: FetchedBody): Rendered => {
  const type = mediaType(body.contentType)
  const kind = kindOf(type, body.bytes)
  if (kind === "binary") return { title: undefined, kind, text: describeBinary(body), notes: [] }
  const { text, notes } = decodeText(body, kind === "html")
  if (kind === "html") {
    const md = htmlToMarkdown(text, body.url)
    return { title: md.title, kind, text: md.markdown, notes: md.article ? notes : [...notes, "no main article found: the whole page is shown"] }
  }
  if (kind === "json" && !body.truncated && body.bytes.length <= PRETTY_JSON_MAX) {
    try {
      return { title: undefined, kind, text: JSON.stringify(JSON.parse(text), null, 2), notes }
    } catch {
      return { title: undefined, kind, text, notes: [...notes, "not valid JSON: shown as sent"] }
    }
  }
  return { title: undefined, kind, text, notes }
}
