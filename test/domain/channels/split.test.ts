/**
 * Splitting long answers into platform-sized messages: the boundary preference (paragraph, line,
 * sentence, space, anywhere), code blocks kept whole or cut with their fence reopened, tables cut
 * with their header repeated, link definitions resolving in every chunk; and, for arbitrary
 * Markdown-ish strings and limits from 64 to 4096, chunks that fit, never cut a surrogate pair,
 * render as valid Telegram HTML, and together show all the text of the whole.
 */
import { assert, describe, it } from "@effect/vitest"
import { toPlainText, toTelegramHtml, wellFormed } from "../../../src/domain/channels/markdown.ts"
import { splitForPlatform, splitPlain, TELEGRAM_TEXT_LIMIT } from "../../../src/domain/channels/split.ts"
import { sourceBlocks } from "../../../src/domain/channels/structure.ts"
import {
  hasLoneSurrogate,
  ink,
  int,
  longArbitraries,
  documents,
  longText,
  markdownish,
  subsequence,
  telegramHtmlProblem
} from "./support.ts"

const lengths = (chunks: ReadonlyArray<string>) => chunks.map((c) => c.length)
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
/**
 * What the plain rendering adds, not counted when comparing text: one ">" per level of a quote (a
 * quote nested deeper than a chunk can hold loses some), a table's rule (as wide as its widest
 * cell) and " | " separators (as many as its columns: a table cut inside a list loses some).
 */
const DECORATION = new Set([">", "─", "┼", "|"])
/** Markdown punctuation, whose reading a cut can change in broken text. */
const SYNTAX = new Set([..."*_~`[]()!\\#=-+<:"])
const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff

describe("splitPlain", () => {
  it("returns short text whole, and nothing for white space", () => {
    assert.deepStrictEqual(splitPlain("hello", 10), ["hello"])
    assert.deepStrictEqual(splitPlain("", 10), [])
    assert.deepStrictEqual(splitPlain(" \n\n ", 10), [])
  })

  it("prefers a blank line, then a line break, then a sentence end, then a space", () => {
    assert.deepStrictEqual(splitPlain("aaa bbb\nccc\n\nddd", 12), ["aaa bbb\nccc", "ddd"])
    assert.deepStrictEqual(splitPlain("aaa. bbb\nccc ddd", 12), ["aaa. bbb", "ccc ddd"])
    assert.deepStrictEqual(splitPlain("aa bb. cc dd ee", 12), ["aa bb.", "cc dd ee"])
    assert.deepStrictEqual(splitPlain("aa bb cc dd ee", 12), ["aa bb cc dd", "ee"])
    assert.deepStrictEqual(splitPlain("中文句子。第二句话很长", 8), ["中文句子。", "第二句话很长"])
  })

  it("cuts anywhere when it must, but never between the halves of a surrogate pair", () => {
    assert.deepStrictEqual(splitPlain("abcdefghij", 4), ["abcd", "efgh", "ij"])
    const chunks = splitPlain("😀".repeat(10), 5)
    assert.deepStrictEqual(lengths(chunks), [4, 4, 4, 4, 4])
    assert.strictEqual(chunks.join(""), "😀".repeat(10))
  })

  it("keeps combining marks and ZWJ sequences with their base", () => {
    const chunks = splitPlain("e\u0301".repeat(9), 5)
    for (const c of chunks) assert.notStrictEqual(c.charAt(0), "\u0301")
    assert.deepStrictEqual(splitPlain("xxx👨‍👩‍👧", 10), ["xxx", "👨‍👩‍👧"])
    assert.deepStrictEqual(splitPlain("abc👍🏽", 5), ["abc", "👍🏽"])
  })

  it("makes lone surrogates and NUL U+FFFD, and line ends \\n", () => {
    assert.deepStrictEqual(splitPlain("a\uD83Db\u0000c\r\nd", 100), ["a\uFFFDb\uFFFDc\nd"])
  })

  it("terminates for a limit below one character", () => {
    assert.deepStrictEqual(splitPlain("😀a", 1), ["😀", "a"])
  })

  it.prop(
    "chunks fit, keep every character in order, and never split a pair",
    { text: markdownish, limit: int(1, 300) },
    ({ text, limit }) => {
      const chunks = splitPlain(text, limit)
      for (const c of chunks) {
        assert.isTrue(c.length <= limit || [...c].length === 1, JSON.stringify({ c, limit }))
        assert.isFalse(hasLoneSurrogate(c))
        assert.notStrictEqual(c.trim(), "")
      }
      const whole = text.replace(/\r\n?/g, "\n").replace(LONE, "\uFFFD").replaceAll("\u0000", "\uFFFD")
      assert.deepStrictEqual(ink(chunks.join("")), ink(whole))
    },
    { arbitrary: { runs: 300 } }
  )
})

/**
 * Whether `md` has a list or quote holding a code block or a table that does not fit in one
 * chunk: such a block is cut as text (a documented limitation), and what follows a cut inside its
 * code reads as Markdown, so the whole's text is not promised there.
 */
const cutAsText = (md: string, max: number): boolean => {
  const source = wellFormed(md.replace(/\r\n?/g, "\n"))
  return (sourceBlocks(source) ?? []).some((b) =>
    b.kind === "holdsCode" && toPlainText(source.slice(b.start, b.end)).length > max
  )
}

describe("splitForPlatform", () => {
  it("returns the whole rendering when it fits", () => {
    const md = "# Hi\n\nSome **bold** text."
    assert.deepStrictEqual(splitForPlatform(md, TELEGRAM_TEXT_LIMIT, toTelegramHtml), [toTelegramHtml(md)])
    assert.deepStrictEqual(splitForPlatform("", 100, toTelegramHtml), [])
  })

  it("cuts between paragraphs first and renders each chunk", () => {
    const md = "**First** paragraph here.\n\nSecond paragraph, _longer_ than the first one.\n\nThird."
    const chunks = splitForPlatform(md, 60, toTelegramHtml)
    assert.deepStrictEqual(chunks, [
      "<b>First</b> paragraph here.",
      "Second paragraph, <i>longer</i> than the first one.\n\nThird."
    ])
  })

  it("measures the rendering, not the source", () => {
    const md = "a < b & c > d. ".repeat(20)
    const chunks = splitForPlatform(md, 100, toTelegramHtml)
    for (const c of chunks) assert.isAtMost(c.length, 100)
    assert.isAbove(chunks.length, 3)
  })

  it("keeps a code block that fits whole, in its own chunk if need be", () => {
    const code = "```js\n" + Array.from({ length: 5 }, (_, i) => `let x${i} = ${i}`).join("\n") + "\n```"
    const md = `Intro text that takes some room.\n${code}\nAfter.`
    const chunks = splitForPlatform(md, 120, toTelegramHtml)
    assert.strictEqual(chunks.filter((c) => c.includes("<pre>")).length, 1)
    const pre = chunks.find((c) => c.includes("<pre>")) ?? ""
    assert.include(pre, "let x0 = 0\nlet x1 = 1\nlet x2 = 2\nlet x3 = 3\nlet x4 = 4")
  })

  it("cuts an oversized code block at lines, reopening the fence with its language", () => {
    const lines = Array.from({ length: 40 }, (_, i) => `print(${i}) # <${i}>`)
    const md = "Code:\n\n```python\n" + lines.join("\n") + "\n```\n\nDone."
    const chunks = splitForPlatform(md, 200, toTelegramHtml)
    const pres = chunks.filter((c) => c.includes("<pre>"))
    assert.isAbove(pres.length, 2)
    for (const c of chunks) {
      assert.isAtMost(c.length, 200)
      assert.isUndefined(telegramHtmlProblem(c))
    }
    for (const p of pres) assert.match(p, /^<pre><code class="language-python">[^<]*<\/code><\/pre>(\n\nDone\.)?$/)
    const code = pres.map((p) => p.replace(/^<pre><code class="language-python">|<\/code><\/pre>(\n\nDone\.)?$/g, "")).join("\n")
    assert.strictEqual(code, lines.join("\n").replace(/</g, "&lt;").replace(/>/g, "&gt;"))
    assert.strictEqual(chunks[0], "Code:")
    assert.isTrue(chunks[chunks.length - 1]?.endsWith("Done."))
  })

  it("cuts a code line longer than the limit, and an unclosed fence still closes in each piece", () => {
    const md = "```\n" + "x".repeat(300) + "\ny"
    const chunks = splitForPlatform(md, 100, toTelegramHtml)
    for (const c of chunks) {
      assert.isAtMost(c.length, 100)
      assert.match(c, /^<pre>[xy\n]+<\/pre>$/)
    }
    assert.strictEqual(chunks.map((c) => c.slice(5, -6)).join(""), "x".repeat(300) + "\ny")
  })

  it("cuts an oversized table between rows, repeating the header", () => {
    const rows = Array.from({ length: 30 }, (_, i) => `| item ${i} | ${i * 3} |`)
    const md = "| Name | Value |\n|---|---:|\n" + rows.join("\n")
    const chunks = splitForPlatform(md, 150, toPlainText)
    assert.isAbove(chunks.length, 2)
    for (const c of chunks) {
      assert.isAtMost(c.length, 150)
      assert.match(c, /^Name +\| Value\n─+┼─+\n/)
    }
    assert.strictEqual(chunks.join("\n").match(/item \d+/g)?.length, 30)
  })

  it("resolves reference links in every chunk", () => {
    const md = "See [the docs][d] first.\n\n" + "Filler sentence here. ".repeat(10) + "\n\nAnd [the docs][d] again.\n\n[d]: https://docs.example"
    const chunks = splitForPlatform(md, 100, toTelegramHtml)
    assert.include(chunks[0], "<a href=\"https://docs.example\">the docs</a>")
    assert.include(chunks[chunks.length - 1], "<a href=\"https://docs.example\">the docs</a>")
    assert.isFalse(chunks.some((c) => c.includes("[d]")))
  })

  it("never cuts inside a character reference of the source", () => {
    const md = "&amp;".repeat(100)
    const chunks = splitForPlatform(md, 70, toPlainText)
    assert.strictEqual(chunks.join(""), "&".repeat(100))
  })

  it("starts a chunk cut inside an indented list at its item, not as an indented code block", () => {
    const md = "- a\n  - b\n    - " + "word ".repeat(30) + "\n    - deep"
    const chunks = splitForPlatform(md, 80, toTelegramHtml)
    for (const c of chunks) assert.notInclude(c, "<pre>")
  })

  it("cuts a long code span at its spaces, closing and reopening it", () => {
    const md = "Run `" + "npm run build && ".repeat(8) + "done` now."
    const chunks = splitForPlatform(md, 80, toTelegramHtml)
    assert.deepStrictEqual(chunks, [
      "Run",
      "<code>npm run build &amp;&amp; npm run build &amp;&amp; npm run build</code>",
      "<code>&amp;&amp; npm run build &amp;&amp; npm run build &amp;&amp; npm</code>",
      "<code>run build &amp;&amp; npm run build &amp;&amp; npm run build</code>",
      "<code>&amp;&amp; done</code> now."
    ])
  })

  it("keeps the rest of a quote's line in a quote", () => {
    const chunks = splitForPlatform("> " + "quoted words go on and on ".repeat(6), 80, toTelegramHtml)
    assert.strictEqual(chunks.length, 3)
    for (const c of chunks) assert.match(c, /^<blockquote>[^<]+<\/blockquote>$/)
  })

  it("keeps running text running text: what follows a cut does not become a list, a heading, a definition", () => {
    const chunks = splitForPlatform("Some text " + "word ".repeat(12) + "- not a list item, just text.", 70, toTelegramHtml)
    assert.deepStrictEqual(chunks, ["Some text word word word word word word word word word word word word", "- not a list item, just text."])
    const lazy = splitForPlatform("> " + "quoted ".repeat(8) + "\n[x]: http://x.example\n" + "more ".repeat(5), 64, toPlainText)
    assert.include(lazy.join("\n"), "[x]: http://x.example")
  })

  it("lets the rest of a long heading's line stand alone", () => {
    const chunks = splitForPlatform("## " + "long heading words ".repeat(6) + "\n    indented code after heading", 70, toTelegramHtml)
    assert.strictEqual(chunks[0], "<b>long heading words long heading words long heading words long</b>")
    assert.strictEqual(chunks[chunks.length - 1], "<pre>indented code after heading</pre>")
  })

  it("resolves references to definitions inside lists and quotes", () => {
    const md = "- see [docs][d]\n\n  [d]: https://docs.example\n\n" + "Filler sentence. ".repeat(8) + "\n\nAgain [docs][d]."
    const chunks = splitForPlatform(md, 90, toTelegramHtml)
    assert.strictEqual(chunks[chunks.length - 1], "Again <a href=\"https://docs.example\">docs</a>.")
  })

  it("sends a table whose header alone is too long as its aligned text, cut at rows", () => {
    const md = "| " + "header ".repeat(12) + "| b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
    const chunks = splitForPlatform(md, 90, toTelegramHtml)
    for (const c of chunks) {
      assert.isAtMost(c.length, 90)
      assert.match(c, /^<pre>[^<]*<\/pre>$/)
    }
    assert.strictEqual(chunks.length, 8)
    assert.match(chunks[chunks.length - 1] ?? "", /^<pre> +\| 4<\/pre>$/)
  })

  it("keeps surrogate pairs whole when the text is one long word", () => {
    const md = "😀中".repeat(200)
    const chunks = splitForPlatform(md, 64, toTelegramHtml)
    for (const c of chunks) {
      assert.isAtMost(c.length, 64)
      assert.isFalse(hasLoneSurrogate(c))
    }
    assert.strictEqual(chunks.join(""), md)
  })

  /** Chunks that fit, render as Telegram accepts, hold no lone surrogate and are not empty. */
  const checkTelegramChunks = (md: string, max: number) => {
    const chunks = splitForPlatform(md, max, toTelegramHtml)
    chunks.forEach((c) => {
      assert.isAtMost(c.length, max, JSON.stringify({ md, max, c }))
      assert.isUndefined(telegramHtmlProblem(c), JSON.stringify({ md, max, c }))
      assert.isFalse(isLow(c.charCodeAt(0)) || isHigh(c.charCodeAt(c.length - 1)))
      assert.isFalse(hasLoneSurrogate(c), JSON.stringify({ md, max, c }))
      assert.notStrictEqual(c.trim(), "")
    })
  }

  it.prop(
    "Markdown-ish strings: chunks fit for limits 64..4096, are valid Telegram HTML, hold no lone surrogate",
    longArbitraries,
    ({ parts, limit, small, useSmall, scale }) => {
      const max = useSmall === 0 ? small : limit
      checkTelegramChunks(longText(parts, max, scale), max)
    },
    { arbitrary: { runs: 250 } }
  )

  it.prop(
    "documents: chunks fit for limits 64..4096, are valid Telegram HTML, hold no lone surrogate",
    { md: documents, limit: int(64, 4096), small: int(64, 400), useSmall: int(0, 1) },
    ({ md, limit, small, useSmall }) => checkTelegramChunks(md, useSmall === 0 ? small : limit),
    { arbitrary: { runs: 100 } }
  )

  it.prop(
    "documents: the plain chunks together show every character the whole shows",
    { md: documents, limit: int(64, 4096), small: int(64, 400), useSmall: int(0, 1) },
    ({ md, limit, small, useSmall }) => {
      const max = useSmall === 0 ? small : limit
      const chunks = splitForPlatform(md, max, toPlainText)
      for (const c of chunks) assert.isAtMost(c.length, max)
      // Decoration only is not counted (see DECORATION).
      const text = (s: string) => ink(s).filter((c) => !DECORATION.has(c))
      assert.isTrue(subsequence(text(toPlainText(md)), text(chunks.join("\n"))), JSON.stringify({ md, max, chunks }))
    },
    { arbitrary: { runs: 100 } }
  )

  it.prop(
    "Markdown-ish strings: the plain chunks together show all the text the whole shows",
    longArbitraries,
    ({ parts, limit, small, useSmall, scale }) => {
      const max = useSmall === 0 ? small : limit
      const md = longText(parts, max, scale)
      const chunks = splitForPlatform(md, max, toPlainText)
      for (const c of chunks) assert.isAtMost(c.length, max)
      if (cutAsText(md, max)) return
      // In text this broken, a cut can change how Markdown punctuation around it pairs up (an
      // emphasis run, a bracket, an escape): those characters are not counted, all others are.
      const text = (s: string) => ink(s).filter((c) => !DECORATION.has(c) && !SYNTAX.has(c))
      assert.isTrue(subsequence(text(toPlainText(md)), text(chunks.join("\n"))), JSON.stringify({ md, max, chunks }))
    },
    { arbitrary: { runs: 250 } }
  )
})
