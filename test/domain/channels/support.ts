/**
 * Test support for outbound chat text: a checker for Telegram's HTML subset (what its parser
 * accepts and its nesting rules allow); a generator of Markdown-ish strings made of the fragments
 * models write and the ones that break naive renderers (unclosed delimiters, fences with
 * languages, links with odd schemes, raw HTML, entities, emoji, CJK, lone surrogate halves, NUL);
 * and a generator of well-formed documents as models write them (headings, paragraphs with inline
 * markup, lists, quotes, code, tables, rules).
 */
import { Arbitrary, Schema } from "effect"
import { rng } from "../../properties/support/sessions.ts"

export const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))

const TAG = /^<(\/?)([a-z-]+)((?: [a-z]+="[^"<>]*")*)>/
const ENTITY = /^&(?:amp|lt|gt|quot|#\d{1,7}|#x[0-9a-fA-F]{1,6});/
const ALLOWED = new Set(["b", "i", "u", "s", "code", "pre", "a", "blockquote", "tg-spoiler"])
/** Tags that may hold no other tag (Telegram: code and pre contain no entity, save `<pre><code>`). */
const LEAF = new Set(["code", "pre"])

const attributesOk = (name: string, attrs: string, parent: string | undefined): boolean => {
  if (name === "a") return /^ href="(?:https?|tg|mailto):[^"]+"$/i.test(attrs)
  if (name === "code" && attrs !== "") return parent === "pre" && /^ class="language-[A-Za-z0-9_+#.-]+"$/.test(attrs)
  return attrs === ""
}

const nestingOk = (name: string, stack: ReadonlyArray<string>): boolean => {
  const parent = stack[stack.length - 1]
  if (parent !== undefined && LEAF.has(parent) && !(parent === "pre" && name === "code")) return false
  if (name === "a" && stack.includes("a")) return false
  if (name === "blockquote" && stack.includes("blockquote")) return false
  return !((name === "code" || name === "pre") && stack.includes("a"))
}

/**
 * Why `html` is not acceptable Telegram HTML, or undefined when it is: only the allowed tags, each
 * closed in order, with the attributes Telegram reads, nested as it allows; no `<`, `>` or `&`
 * outside tags and entities.
 */
export const telegramHtmlProblem = (html: string): string | undefined => {
  const stack: Array<string> = []
  for (let i = 0; i < html.length;) {
    const rest = html.slice(i, i + 2000)
    const c = html.charAt(i)
    if (c === "<") {
      const m = TAG.exec(rest)
      const [whole, slash = "", name = "", attrs = ""] = m ?? []
      if (m === null || whole === undefined) return `unescaped < at ${i}`
      if (!ALLOWED.has(name)) return `tag <${name}> at ${i}`
      if (slash === "/") {
        if (attrs !== "" || stack.pop() !== name) return `unbalanced </${name}> at ${i}`
      } else {
        if (!attributesOk(name, attrs, stack[stack.length - 1])) return `attributes of <${name}> at ${i}`
        if (!nestingOk(name, stack)) return `<${name}> inside <${stack.join("><")}> at ${i}`
        stack.push(name)
      }
      i += whole.length
    } else if (c === "&") {
      const m = ENTITY.exec(rest)
      if (m === null) return `unescaped & at ${i}`
      i += m[0].length
    } else if (c === ">") {
      return `unescaped > at ${i}`
    } else i++
  }
  return stack.length === 0 ? undefined : `unclosed <${stack.join("><")}>`
}

/** The text a Telegram user sees for valid `html`: tags dropped, entities decoded. */
export const visibleText = (html: string): string =>
  html.replace(/<[^>]*>/g, "").replace(/&(amp|lt|gt|quot|#\d+|#x[0-9a-fA-F]+);/g, (_, e: string) =>
    e === "amp" ? "&" : e === "lt" ? "<" : e === "gt" ? ">" : e === "quot" ? "\"" : String.fromCodePoint(
      e.startsWith("#x") ? Number.parseInt(e.slice(2), 16) : Number.parseInt(e.slice(1), 10)
    ))

/** The code points of `s` that are not white space. */
export const ink = (s: string): Array<string> => [...s].filter((c) => !/\s/.test(c))

/** `small` occurs in `big` in order (not necessarily contiguously). */
export const subsequence = (small: ReadonlyArray<string>, big: ReadonlyArray<string>): boolean => {
  let i = 0
  for (const c of big) if (i < small.length && c === small[i]) i++
  return i === small.length
}

/** Whether `s` holds an unpaired surrogate half anywhere. */
export const hasLoneSurrogate = (s: string): boolean =>
  /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s)

const TABLE_HEAD = "| a | b |\n|---|:-:|\n"

export const FRAGMENTS: ReadonlyArray<string> = [
  "**", "*", "_", "__", "~~", "`", "``", "```", "```js\n", "```python\n", "~~~ts\n", "\n```\n", "```\n",
  "[x](http://example.com/a?b=1&c=2)", "[y](javascript:alert(1))", "[z](tg://user?id=1)", "[m](mailto:a@b.c)",
  "![img](https://e.com/i.png)", "[](http://empty.example)", "<script>alert(1)</script>", "<b>", "</i>", "<a href=\"x\">",
  "<!--", "&", "&amp;", "&lt;", "&#65;", "&#0;", "&copy;", "&bogus;", "\"", "'", "😀", "👨‍👩‍👧", "é", "e\u0301",
  "中文字符", "日本語。", "한국어", "\uD83D", "\uDE00", "\u0000", "\n", "\n\n", " ", "  ", "\t", "# ", "### ", "- ",
  "* ", "+ ", "1. ", "2) ", "- [ ] ", "- [x] ", "> ", ">> ", TABLE_HEAD, "| 1 | 2 |\n", "|", "---\n",
  "***\n", "===\n", "    ", "\\", "\\*", "www.example.com ", "<http://a.b>", "[ref]: http://r.example\n", "[ref]",
  "[t][ref]", "Hello world. ", "A sentence! Another? ", "word ", "x".repeat(40), "长句子没有空格也要能切开。",
  // Bare URLs end at white space, as in text: the remainder of a URL cut in two could read as other syntax.
  "||spoiler||", "http://bare.example/path?q=1 "
]

const piece = Arbitrary.all({
  kind: int(0, 9),
  fragment: int(0, FRAGMENTS.length - 1),
  text: Arbitrary.schema(Schema.String),
  code: int(0, 0x1ffff),
  times: int(1, 30)
})

/** Markdown-ish strings: mostly fragments (some repeated, for length), some arbitrary text and code points. */
export const markdownish = Arbitrary.array(piece, { maxLength: 120 }).pipe(
  Arbitrary.map((ps) =>
    ps.map((p) => {
      if (p.kind === 0) return p.text
      if (p.kind === 1) return String.fromCharCode(p.code & 0xffff)
      if (p.kind === 2) return String.fromCodePoint(p.code)
      const fragment = FRAGMENTS[p.fragment] ?? ""
      // A table header repeated would make rows that look like its delimiter row: no model writes that.
      return p.kind === 3 && fragment !== TABLE_HEAD ? fragment.repeat(p.times) : fragment
    }).join("")
  )
)

/**
 * Markdown-ish text at least `scale` times `limit` long (parts joined by blank lines or line
 * breaks, repeated as needed), so that limits up to 4096 really split it.
 */
export const longText = (parts: ReadonlyArray<string>, limit: number, scale: number): string => {
  const base = parts.map((p, i) => (i % 3 === 2 ? `${p}\n` : `${p}\n\n`)).join("")
  if (base.trim() === "") return base
  let text = base
  while (text.length < limit * scale) text += base
  return text
}

export const longArbitraries = {
  parts: Arbitrary.array(markdownish, { maxLength: 8 }),
  limit: int(64, 4096),
  small: int(64, 400),
  useSmall: int(0, 2),
  scale: int(1, 3)
}

// ---------------------------------------------------------------------------------------------
// Documents as models write them

/** The properties' seeded PRNG, as the document builder uses it: the same seed builds the same document. */
const prng = (seed: number) => {
  const r = rng(seed)
  const pick = (xs: ReadonlyArray<string>): string => (xs.length === 0 ? "" : r.pick(xs))
  return { between: r.int, pick, chance: r.chance }
}
type Prng = ReturnType<typeof prng>

/** Words, with the odd character models use; a bare `x*y` would pair with other stars, so it is code. */
const WORDS = [
  "the", "memory", "gateway", "agent", "session", "compaction", "summary", "token", "message", "limit",
  "记忆", "系统", "会话", "摘要", "東京", "メモリ", "검색", "😀", "🚀", "naïve", "café", "x<y", "a&b", "5%",
  "\"quoted\"", "it's", "don't", "e.g.", "v1.2.3", "2024-01-01", "foo_bar", "snake_case", "`x*y`", "1+1=2"
]

const words = (r: Prng, n: number): string => Array.from({ length: n }, () => r.pick(WORDS)).join(" ")

/** Running text with inline markup, each construct whole and set off by spaces. */
const inlineText = (r: Prng, n: number): string =>
  Array.from({ length: n }, () => {
    const w = words(r, r.between(1, 4))
    switch (r.between(0, 9)) {
      case 0:
        return `**${w}**`
      case 1:
        return `_${w}_`
      case 2:
        return `\`${w.replace(/`/g, "")}\``
      case 3:
        return `[${w}](https://example.com/${r.between(1, 999)}?q=${r.between(1, 9)}&r=x)`
      case 4:
        return `~~${w}~~`
      case 5:
        return r.chance(0.5) ? "https://bare.example/path?x=1" : "<mailto:someone@example.com>"
      default:
        return `${w}${r.pick([".", ",", "!", "?", "。", ":", ""])}`
    }
  }).join(" ")

const block = (r: Prng, kind: number, size: number): string => {
  switch (kind) {
    case 0:
      return `${"#".repeat(r.between(1, 4))} ${words(r, r.between(1, 8))}`
    case 1:
      return Array.from({ length: size }, (_, i) =>
        `${"  ".repeat(i > 0 && r.chance(0.3) ? 1 : 0)}${r.pick(["-", "*", `${i + 1}.`, "- [ ]", "- [x]"])} ${inlineText(r, r.between(1, 12))}`
      ).join("\n")
    case 2:
      return inlineText(r, r.between(1, 20) * 2).replace(/ /g, (m) => (r.chance(0.1) ? "\n" : m)).split("\n").map((l) => `> ${l}`).join("\n")
    case 3: {
      const lang = r.pick(["ts", "python", "", "sh", "c++"])
      const lines = Array.from({ length: size }, () => `${"  ".repeat(r.between(0, 3))}${words(r, r.between(0, r.chance(0.1) ? 120 : 10))}`)
      return `\`\`\`${lang}\n${lines.join("\n")}\n\`\`\``
    }
    case 4: {
      const cols = r.between(1, 4)
      const row = () => `| ${Array.from({ length: cols }, () => words(r, r.between(1, 3))).join(" | ")} |`
      return [row(), `|${"---|".repeat(cols)}`, ...Array.from({ length: size }, row)].join("\n")
    }
    case 5:
      return "---"
    default:
      return inlineText(r, size * 3).replace(/ /g, (m) => (r.chance(0.05) ? "\n" : m))
  }
}

/** Markdown documents as a model writes them: headings, paragraphs, lists, quotes, code, tables, rules. */
export const documents = Arbitrary.array(Arbitrary.all({ kind: int(0, 9), size: int(1, 40), seed: int(0, 1_000_000_000) }), {
  maxLength: 25
}).pipe(Arbitrary.map((bs) => bs.map((b) => block(prng(b.seed), b.kind, b.size)).join("\n\n")))
