/**
 * Telegram's text formatting for the fake Bot API: turns `text` + `parse_mode` into the visible text
 * and its entities (offsets and lengths in UTF-16 code units, as on the wire), or fails with the
 * description Telegram gives ("can't parse entities: …", byte offsets counted in UTF-8).
 *
 * Grammar (per https://core.telegram.org/bots/api#formatting-options):
 * - HTML: b/strong, i/em, u/ins, s/strike/del, tg-spoiler, span class="tg-spoiler", a href, code,
 *   pre (with a whole-content code class="language-x" giving the language), blockquote [expandable],
 *   tg-emoji emoji-id; entities &lt; &gt; &amp; &quot; &#N; &#xH;. Stricter than Telegram in one
 *   place, as the docs demand: a `&` that starts no entity is refused (Telegram keeps it as text).
 * - MarkdownV2: *bold* _italic_ __underline__ ~strike~ ||spoiler|| `code` ```lang pre``` [text](url),
 *   `>` quote lines, `\` escapes of any ASCII character; every other reserved character outside an
 *   entity is refused. Not covered: expandable quotes (`**>`), custom emoji `![](tg://emoji?id=…)`.
 * - Markdown (legacy): *bold* _italic_ `code` ```pre``` [text](url), `\` escapes of _ * ` [.
 * Then, as Telegram does, `normalize`: \r dropped, other control characters (tab too) made spaces,
 * trailing spaces and newlines cut, leading ones cut up to the first entity, and entities of
 * whitespace only dropped.
 */
import type { MessageEntity, ParseMode } from "grammy/types"

export interface Formatted {
  readonly text: string
  readonly entities: ReadonlyArray<MessageEntity>
}

/** A refusal; `message` is what follows "Bad Request: can't parse entities: ". */
export class EntityParseError extends Error {}

export const PARSE_MODES: ReadonlyArray<ParseMode> = ["MarkdownV2", "HTML", "Markdown"]
export const isParseMode = (s: string): s is ParseMode => (PARSE_MODES as ReadonlyArray<string>).includes(s)

/** Visible text and entities of `raw` under `parseMode` (none: the text as is, no entities), normalized. */
export const format = (raw: string, parseMode: ParseMode | undefined): Formatted => {
  switch (parseMode) {
    case undefined:
      return normalize({ text: raw, entities: [] })
    case "HTML":
      return normalize(parseHtml(raw))
    case "MarkdownV2":
      return normalize(parseMarkdownV2(raw))
    case "Markdown":
      return normalize(parseMarkdown(raw))
  }
}

const isBlank = (c: string | undefined) => c === " " || c === "\n"

/** What Telegram makes of a formatted text before storing it (see the header). */
export const normalize = (formatted: Formatted): Formatted => {
  // Clean: \r goes, control characters become spaces; `moved[i]` is where old index i landed.
  let text = ""
  const moved: Array<number> = []
  for (let i = 0; i < formatted.text.length; i++) {
    moved.push(text.length)
    const code = formatted.text.charCodeAt(i)
    if (code === 13) continue
    text += code < 32 && code !== 10 ? " " : formatted.text[i]
  }
  moved.push(text.length)
  const at = (i: number) => moved[Math.min(i, moved.length - 1)] ?? text.length
  // Entities of whitespace only go (a link or pre block may hold just spaces).
  const kept = (e: MessageEntity) =>
    e.length > 0 && (e.type === "text_link" || e.type === "pre" ? true : /[^ \n]/.test(text.slice(e.offset, e.offset + e.length)))
  let entities = formatted.entities.map((e) => ({ ...e, offset: at(e.offset), length: at(e.offset + e.length) - at(e.offset) })).filter(kept)
  // Right trim, clipping entities.
  let end = text.length
  while (end > 0 && isBlank(text[end - 1])) end--
  text = text.slice(0, end)
  entities = entities.filter((e) => e.offset < end).map((e) => (e.offset + e.length > end ? { ...e, length: end - e.offset } : e))
  // Left trim, up to the first entity.
  const firstEntity = Math.min(text.length, ...entities.map((e) => e.offset))
  let start = 0
  while (start < firstEntity && isBlank(text[start])) start++
  text = text.slice(start)
  return { text, entities: entities.map((e) => ({ ...e, offset: e.offset - start })).filter((e) => e.length > 0) }
}

const byteOffset = (s: string, index: number): number => Buffer.byteLength(s.slice(0, index), "utf8")

function fail(what: string): never {
  throw new EntityParseError(what)
}

const sortEntities = (entities: Array<MessageEntity>): Array<MessageEntity> =>
  entities.sort((a, b) => a.offset - b.offset || b.length - a.length)

const isSpace = (c: string | undefined): boolean => c === " " || c === "\t" || c === "\n" || c === "\r"

// ---------------------------------------------------------------------------------------------- HTML

const HTML_TAGS = new Set([
  "a",
  "b",
  "strong",
  "i",
  "em",
  "u",
  "ins",
  "s",
  "strike",
  "del",
  "tg-spoiler",
  "span",
  "code",
  "pre",
  "blockquote",
  "tg-emoji"
])

const NAMED_ENTITIES: Readonly<Record<string, string>> = { lt: "<", gt: ">", amp: "&", quot: "\"" }

/** The character of the HTML entity at `s[at] === "&"`, and where it ends; undefined if none starts there. */
const decodeEntity = (s: string, at: number): { readonly char: string; readonly next: number } | undefined => {
  const named = /^&([a-zA-Z]+);/.exec(s.slice(at, at + 10))
  if (named !== null) {
    const name = named[1] ?? ""
    const char = NAMED_ENTITIES[name]
    return char === undefined ? undefined : { char, next: at + named[0].length }
  }
  const numeric = /^&#(?:([0-9]{1,8})|[xX]([0-9a-fA-F]{1,7}));?/.exec(s.slice(at, at + 12))
  if (numeric === null) return undefined
  const code = numeric[1] !== undefined ? Number.parseInt(numeric[1], 10) : Number.parseInt(numeric[2] ?? "", 16)
  if (code === 0 || code > 0x10ffff) return undefined
  if (code >= 0xd800 && code <= 0xdfff) {
    throw new EntityParseError(
      "Text contains invalid Unicode characters after decoding HTML entities, check for unmatched surrogate code units"
    )
  }
  return { char: String.fromCodePoint(code), next: at + numeric[0].length }
}

/** Attribute values: entities decoded, a stray `&` kept. */
const decodeAttribute = (value: string): string => {
  let out = ""
  for (let i = 0; i < value.length;) {
    const decoded = value[i] === "&" ? decodeEntity(value, i) : undefined
    if (decoded === undefined) {
      out += value[i]
      i++
    } else {
      out += decoded.char
      i = decoded.next
    }
  }
  return out
}

interface OpenTag {
  readonly tag: string
  readonly begin: number
  readonly start: number
  readonly attributes: ReadonlyMap<string, string>
  /** Set on a `pre` when a `code class="language-x"` inside it closed: the language and the code's span. */
  language?: { readonly name: string; readonly start: number; readonly end: number; readonly entity: MessageEntity }
}

const parseHtml = (s: string): Formatted => {
  let out = ""
  const entities: Array<MessageEntity> = []
  const open: Array<OpenTag> = []
  let i = 0
  while (i < s.length) {
    const c = s[i]
    if (c === "&") {
      const decoded = decodeEntity(s, i)
      if (decoded === undefined) {
        fail(`Character '&' at byte offset ${byteOffset(s, i)} must be escaped as "&amp;" (the fake is stricter than Telegram here)`)
      }
      out += decoded.char
      i = decoded.next
      continue
    }
    if (c !== "<") {
      out += c
      i++
      continue
    }
    const begin = i
    const at = () => byteOffset(s, begin)
    i++
    if (s[i] === "/") {
      const top = open.at(-1)
      if (top === undefined) fail(`Unexpected end tag at byte offset ${at()}`)
      const close = s.indexOf(">", i)
      if (close < 0) fail(`Unclosed end tag at byte offset ${at()}`)
      const name = s.slice(i + 1, close).trim().toLowerCase()
      if (name !== top.tag) fail(`Unmatched end tag at byte offset ${at()}, expected "</${top.tag}>", found "</${name}>"`)
      open.pop()
      i = close + 1
      closeHtmlTag(top, out, open.at(-1), entities)
      continue
    }
    while (i < s.length && !isSpace(s[i]) && s[i] !== ">") i++
    if (i >= s.length) fail(`Unclosed start tag at byte offset ${at()}`)
    const tag = s.slice(begin + 1, i).toLowerCase()
    if (!HTML_TAGS.has(tag)) fail(`Unsupported start tag "${tag}" at byte offset ${at()}`)
    const attributes = new Map<string, string>()
    while (s[i] !== ">") {
      while (isSpace(s[i])) i++
      if (i >= s.length) fail(`Unclosed start tag "${tag}" at byte offset ${at()}`)
      if (s[i] === ">") break
      const nameStart = i
      while (i < s.length && !isSpace(s[i]) && s[i] !== "=" && s[i] !== ">") i++
      const name = s.slice(nameStart, i).toLowerCase()
      if (name === "") fail(`Empty attribute name in the tag "${tag}" at byte offset ${at()}`)
      while (isSpace(s[i])) i++
      if (i >= s.length) fail(`Unclosed start tag "${tag}" at byte offset ${at()}`)
      if (s[i] !== "=") {
        if (tag === "blockquote" && name === "expandable") {
          attributes.set(name, "")
          continue
        }
        fail(`Expected equal sign in declaration of an attribute of the tag "${tag}" at byte offset ${at()}`)
      }
      i++
      while (isSpace(s[i])) i++
      if (i >= s.length) fail(`Unclosed start tag "${tag}" at byte offset ${at()}`)
      const quote = s[i]
      if (quote === "\"" || quote === "'") {
        const end = s.indexOf(quote, i + 1)
        if (end < 0) fail(`Unclosed start tag at byte offset ${at()}`)
        attributes.set(name, decodeAttribute(s.slice(i + 1, end)))
        i = end + 1
        if (i >= s.length) fail(`Unclosed start tag at byte offset ${at()}`)
      } else {
        const valueStart = i
        while (i < s.length && /[a-zA-Z0-9.-]/.test(s[i] ?? "")) i++
        if (i === valueStart || i >= s.length || !(isSpace(s[i]) || s[i] === ">")) {
          fail(`Unexpected end of name token at byte offset ${byteOffset(s, valueStart)}`)
        }
        attributes.set(name, s.slice(valueStart, i))
      }
    }
    i++
    if (tag === "span" && attributes.get("class") !== "tg-spoiler") {
      fail(`Tag "span" must have class "tg-spoiler" at byte offset ${at()}`)
    }
    if (tag === "tg-emoji" && !/^[0-9]+$/.test(attributes.get("emoji-id") ?? "")) fail("Invalid custom emoji identifier specified")
    open.push({ tag, begin, start: out.length, attributes })
  }
  const unclosed = open.at(-1)
  if (unclosed !== undefined) fail(`Can't find end tag corresponding to start tag "${unclosed.tag}"`)
  return { text: out, entities: sortEntities(entities) }
}

/** Adds to `entities` what a closed tag makes (nothing when it encloses nothing). */
const closeHtmlTag = (tag: OpenTag, out: string, parent: OpenTag | undefined, entities: Array<MessageEntity>): void => {
  const offset = tag.start
  const length = out.length - tag.start
  if (length === 0) return
  if (tag.tag === "pre") {
    const language = tag.language
    const index = language === undefined ? -1 : entities.indexOf(language.entity)
    if (language !== undefined && index >= 0 && language.start === offset && language.end === out.length) {
      // A code block spanning the whole pre names its language: one pre entity replaces both.
      entities.splice(index, 1, { type: "pre", offset, length, language: language.name })
    } else {
      entities.push({ type: "pre", offset, length })
    }
    return
  }
  const entity = htmlEntity(tag, offset, length, out)
  if (entity === undefined) return
  entities.push(entity)
  const language = /^language-(.+)$/.exec(tag.attributes.get("class") ?? "")?.[1]
  if (tag.tag === "code" && parent?.tag === "pre" && language !== undefined) {
    parent.language = { name: language, start: offset, end: out.length, entity }
  }
}

const htmlEntity = (tag: OpenTag, offset: number, length: number, out: string): MessageEntity | undefined => {
  switch (tag.tag) {
    case "b":
    case "strong":
      return { type: "bold", offset, length }
    case "i":
    case "em":
      return { type: "italic", offset, length }
    case "u":
    case "ins":
      return { type: "underline", offset, length }
    case "s":
    case "strike":
    case "del":
      return { type: "strikethrough", offset, length }
    case "tg-spoiler":
    case "span":
      return { type: "spoiler", offset, length }
    case "blockquote":
      return { type: tag.attributes.has("expandable") ? "expandable_blockquote" : "blockquote", offset, length }
    case "tg-emoji":
      return { type: "custom_emoji", offset, length, custom_emoji_id: tag.attributes.get("emoji-id") ?? "" }
    case "code":
      return { type: "code", offset, length }
    case "a": {
      const url = tag.attributes.get("href") ?? out.slice(offset)
      return url === "" ? undefined : { type: "text_link", offset, length, url }
    }
    default:
      return undefined
  }
}

// ---------------------------------------------------------------------------------------- MarkdownV2

const MARKDOWN_V2_RESERVED = "_*[]()~`>#+-=|{}.!"

type V2Kind = "Bold" | "Italic" | "Underline" | "Strikethrough" | "Spoiler" | "Code" | "Pre" | "TextUrl"

interface OpenV2 {
  readonly kind: V2Kind
  readonly byteOffset: number
  readonly start: number
  readonly language: string | undefined
}

const parseMarkdownV2 = (s: string): Formatted => {
  let out = ""
  const entities: Array<MessageEntity> = []
  const open: Array<OpenV2> = []
  let quoteStart: number | undefined
  const closeQuote = () => {
    if (quoteStart !== undefined && out.length > quoteStart) {
      entities.push({ type: "blockquote", offset: quoteStart, length: out.length - quoteStart })
    }
    quoteStart = undefined
  }
  let i = 0
  while (i < s.length) {
    const c = s[i] ?? ""
    const next = s[i + 1]
    if (c === "\\" && next !== undefined && next.charCodeAt(0) > 0 && next.charCodeAt(0) <= 126) {
      out += next
      i += 2
      continue
    }
    const top = open.at(-1)
    const inCode = top?.kind === "Code" || top?.kind === "Pre"
    if (c === "\n" && quoteStart !== undefined && !inCode && s[i + 1] !== ">") closeQuote()
    if (!(inCode ? c === "`" : MARKDOWN_V2_RESERVED.includes(c))) {
      out += c
      i++
      continue
    }
    const ends = top !== undefined && (() => {
      switch (top.kind) {
        case "Bold":
          return c === "*"
        case "Italic":
          return c === "_" && next !== "_"
        case "Underline":
          return c === "_" && next === "_"
        case "Strikethrough":
          return c === "~"
        case "Spoiler":
          return c === "|" && next === "|"
        case "Code":
          return c === "`"
        case "Pre":
          return c === "`" && next === "`" && s[i + 2] === "`"
        case "TextUrl":
          return c === "]"
      }
    })()
    if (top !== undefined && ends) {
      open.pop()
      const offset = top.start
      const length = out.length - top.start
      i += top.kind === "Underline" || top.kind === "Spoiler" ? 2 : top.kind === "Pre" ? 3 : 1
      let url: string | undefined
      if (top.kind === "TextUrl") {
        if (s[i] === "(") {
          const urlStart = i + 1
          url = ""
          i = urlStart
          while (i < s.length && s[i] !== ")") {
            const escaped = s[i + 1]
            if (s[i] === "\\" && escaped !== undefined && escaped.charCodeAt(0) > 0 && escaped.charCodeAt(0) <= 126) {
              url += escaped
              i += 2
            } else {
              url += s[i]
              i++
            }
          }
          if (i >= s.length) fail(`Can't find end of a URL at byte offset ${byteOffset(s, urlStart)}`)
          i++
        } else {
          url = out.slice(offset)
        }
      }
      if (length > 0) {
        const entity = v2Entity(top, offset, length, url)
        if (entity !== undefined) entities.push(entity)
      }
      continue
    }
    const begin = byteOffset(s, i)
    const start = (kind: V2Kind, width: number, language?: string) => {
      open.push({ kind, byteOffset: begin, start: out.length, language })
      i += width
    }
    switch (c) {
      case "_":
        if (next === "_") start("Underline", 2)
        else start("Italic", 1)
        break
      case "*":
        start("Bold", 1)
        break
      case "~":
        start("Strikethrough", 1)
        break
      case "|":
        if (next !== "|") fail("Character '|' is reserved and must be escaped with the preceding '\\'")
        start("Spoiler", 2)
        break
      case "[":
        start("TextUrl", 1)
        break
      case "`": {
        if (next !== "`" || s[i + 2] !== "`") {
          start("Code", 1)
          break
        }
        let j = i + 3
        while (j < s.length && !isSpace(s[j]) && s[j] !== "`") j++
        const language = j > i + 3 && j < s.length && s[j] !== "`" ? s.slice(i + 3, j) : undefined
        const contentStart = language === undefined ? i + 3 : j
        const skip = s[contentStart] === "\r" && s[contentStart + 1] === "\n"
          ? 2
          : s[contentStart] === "\n" || s[contentStart] === "\r"
          ? 1
          : 0
        start("Pre", contentStart + skip - i, language)
        break
      }
      case ">":
        if (open.length === 0 && (i === 0 || s[i - 1] === "\n")) {
          quoteStart ??= out.length
          i++
          break
        }
        fail("Character '>' is reserved and must be escaped with the preceding '\\'")
        break
      default:
        fail(`Character '${c}' is reserved and must be escaped with the preceding '\\'`)
    }
  }
  const unclosed = open.at(-1)
  if (unclosed !== undefined) {
    const name = unclosed.kind === "Pre" && unclosed.language !== undefined ? "PreCode" : unclosed.kind
    fail(`Can't find end of ${name} entity at byte offset ${unclosed.byteOffset}`)
  }
  closeQuote()
  return { text: out, entities: sortEntities(entities) }
}

const v2Entity = (open: OpenV2, offset: number, length: number, url: string | undefined): MessageEntity | undefined => {
  switch (open.kind) {
    case "Bold":
      return { type: "bold", offset, length }
    case "Italic":
      return { type: "italic", offset, length }
    case "Underline":
      return { type: "underline", offset, length }
    case "Strikethrough":
      return { type: "strikethrough", offset, length }
    case "Spoiler":
      return { type: "spoiler", offset, length }
    case "Code":
      return { type: "code", offset, length }
    case "Pre":
      return open.language === undefined ? { type: "pre", offset, length } : { type: "pre", offset, length, language: open.language }
    case "TextUrl":
      return url === undefined || url === "" ? undefined : { type: "text_link", offset, length, url }
  }
}

// ----------------------------------------------------------------------------------- legacy Markdown

const parseMarkdown = (s: string): Formatted => {
  let out = ""
  const entities: Array<MessageEntity> = []
  let i = 0
  while (i < s.length) {
    const c = s[i] ?? ""
    const next = s[i + 1]
    if (c === "\\" && (next === "_" || next === "*" || next === "`" || next === "[")) {
      out += next
      i += 2
      continue
    }
    if (c !== "_" && c !== "*" && c !== "`" && c !== "[") {
      out += c
      i++
      continue
    }
    const begin = i
    const pre = c === "`" && next === "`" && s[i + 2] === "`"
    const endChar = c === "[" ? "]" : c
    i += pre ? 3 : 1
    let language: string | undefined
    if (pre) {
      let j = i
      while (j < s.length && !isSpace(s[j]) && s[j] !== "`") j++
      if (j > i && j < s.length && s[j] !== "`") {
        language = s.slice(i, j)
        i = j
      }
      if (s[i] === "\r" && s[i + 1] === "\n") i += 2
      else if (s[i] === "\n" || s[i] === "\r") i++
    }
    const start = out.length
    while (i < s.length && (pre ? !(s[i] === "`" && s[i + 1] === "`" && s[i + 2] === "`") : s[i] !== endChar)) {
      out += s[i]
      i++
    }
    if (i >= s.length) {
      throw new EntityParseError(`Can't find end of the entity starting at byte offset ${byteOffset(s, begin)}`)
    }
    i += pre ? 3 : 1
    const offset = start
    const length = out.length - start
    let url: string | undefined
    if (c === "[") {
      if (s[i] === "(") {
        const close = s.indexOf(")", i)
        url = close < 0 ? s.slice(i + 1) : s.slice(i + 1, close)
        i = close < 0 ? s.length : close + 1
      } else {
        url = out.slice(start)
      }
    }
    if (length === 0) continue
    if (c === "_") entities.push({ type: "italic", offset, length })
    else if (c === "*") entities.push({ type: "bold", offset, length })
    else if (c === "[") {
      if (url !== undefined && url !== "") entities.push({ type: "text_link", offset, length, url })
    } else if (pre) {
      entities.push(language === undefined ? { type: "pre", offset, length } : { type: "pre", offset, length, language })
    } else entities.push({ type: "code", offset, length })
  }
  return { text: out, entities: sortEntities(entities) }
}

// ------------------------------------------------------------------------ entities of user messages

/**
 * The entities Telegram detects in what a user typed: `/commands` (bot_command) and `@usernames`
 * (mention). URLs, hashtags, e-mails and the like are not detected by the fake.
 */
export const detectEntities = (text: string): Array<MessageEntity> => {
  const entities: Array<MessageEntity> = []
  for (const m of text.matchAll(/(?<![\w/<>])\/[a-zA-Z0-9_]{1,64}(?:@[a-zA-Z0-9_]{3,32})?(?![\w/<>])/g)) {
    entities.push({ type: "bot_command", offset: m.index, length: m[0].length })
  }
  for (const m of text.matchAll(/(?<![\w/])@[a-zA-Z0-9_]{2,32}(?!\w)/g)) {
    entities.push({ type: "mention", offset: m.index, length: m[0].length })
  }
  return sortEntities(entities)
}
