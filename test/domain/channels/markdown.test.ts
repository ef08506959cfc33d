/**
 * Model Markdown rendered for chat platforms: each construct in Telegram HTML and in plain text,
 * raw HTML and unsafe links neutralised, and, for arbitrary Markdown-ish strings, output that is
 * always well-formed Telegram HTML showing the same text as the plain rendering.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import {
  decodeEntities,
  displayWidth,
  isAllowedHref,
  toPlainText,
  toTelegramHtml,
  wellFormed
} from "../../../src/domain/channels/markdown.ts"
import { hasLoneSurrogate, ink, markdownish, subsequence, telegramHtmlProblem, visibleText } from "./support.ts"

const html = (md: string) => toTelegramHtml(md)
const plain = (md: string) => toPlainText(md)

describe("toTelegramHtml: inline constructs", () => {
  it("bold, italic, strike, inline code", () => {
    assert.strictEqual(html("**b** *i* _i_ __b__ ~~s~~ `c`"), "<b>b</b> <i>i</i> <i>i</i> <b>b</b> <s>s</s> <code>c</code>")
    assert.strictEqual(html("***both***"), "<i><b>both</b></i>")
  })

  it("does not nest a format inside itself", () => {
    assert.strictEqual(html("# Title **bold**"), "<b>Title bold</b>")
    assert.strictEqual(html("**a *b **c** d* e**"), "<b>a <i>b c d</i> e</b>")
  })

  it("escapes <, > and & in text and code", () => {
    assert.strictEqual(html("a < b > c & d"), "a &lt; b &gt; c &amp; d")
    assert.strictEqual(html("`x<y && z>w`"), "<code>x&lt;y &amp;&amp; z&gt;w</code>")
  })

  it("shows raw HTML as text, never as markup", () => {
    assert.strictEqual(html("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;")
    assert.strictEqual(html("x <b>y</b> <!-- c -->"), "x &lt;b&gt;y&lt;/b&gt; &lt;!-- c --&gt;")
    assert.strictEqual(html("<div>\n*a*\n</div>"), "&lt;div&gt;\n<i>a</i>\n&lt;/div&gt;")
  })

  it("decodes character references once, then escapes", () => {
    assert.strictEqual(html("&amp; &lt;b&gt; &copy; &#65; &#x42; &#0; &bogus;"), "&amp; &lt;b&gt; © A B \uFFFD &amp;bogus;")
    assert.strictEqual(html("&amp;lt;"), "&amp;lt;")
    assert.strictEqual(html("`&amp;`"), "<code>&amp;amp;</code>")
  })

  it("links with http(s), tg and mailto targets become anchors, with \" escaped", () => {
    assert.strictEqual(html("[x](https://e.com/?a=1&b=\"2\")"), "<a href=\"https://e.com/?a=1&amp;b=&quot;2&quot;\">x</a>")
    assert.strictEqual(html("[u](tg://user?id=1)"), "<a href=\"tg://user?id=1\">u</a>")
    assert.strictEqual(html("<a@b.com>"), "<a href=\"mailto:a@b.com\">a@b.com</a>")
    assert.strictEqual(html("www.e.com"), "<a href=\"http://www.e.com\">www.e.com</a>")
    assert.strictEqual(html("[**b** `c`](http://e.com)"), "<a href=\"http://e.com\"><b>b</b> c</a>")
  })

  it("links with other schemes become text with the target shown", () => {
    assert.strictEqual(html("[x](javascript:alert(1))"), "x (javascript:alert(1))")
    assert.strictEqual(html("[x](/relative)"), "x (/relative)")
    assert.strictEqual(html("[x](<http:>)"), "x (http:)")
  })

  it("an image is its link; an empty link text is the target", () => {
    assert.strictEqual(html("![a cat](https://e.com/cat.png)"), "<a href=\"https://e.com/cat.png\">a cat</a>")
    assert.strictEqual(html("![](https://e.com/cat.png)"), "<a href=\"https://e.com/cat.png\">https://e.com/cat.png</a>")
    assert.strictEqual(html("[![i](http://i)](http://l)"), "<a href=\"http://l\">i</a>")
  })

  it("percent-encodes white space in a target", () => {
    assert.strictEqual(html("[x](<http://e.com/a b>)"), "<a href=\"http://e.com/a%20b\">x</a>")
  })

  it("resolves reference links", () => {
    assert.strictEqual(html("[t][r]\n\n[r]: http://r.e"), "<a href=\"http://r.e\">t</a>")
  })

  it("keeps soft and hard line breaks as new lines", () => {
    assert.strictEqual(html("a\nb  \nc\\\nd"), "a\nb\nc\nd")
  })
})

describe("toTelegramHtml: blocks", () => {
  it("headings are a bold line; paragraphs are separated by a blank line", () => {
    assert.strictEqual(html("# One\n\n## Two\ntext\n\nmore"), "<b>One</b>\n\n<b>Two</b>\n\ntext\n\nmore")
    assert.strictEqual(html("Setext\n======"), "<b>Setext</b>")
  })

  it("fenced code keeps its language; indented code is pre", () => {
    assert.strictEqual(html("```ts extra\nconst a = 1 < 2\n```"), "<pre><code class=\"language-ts\">const a = 1 &lt; 2</code></pre>")
    assert.strictEqual(html("```\nplain\n```"), "<pre>plain</pre>")
    assert.strictEqual(html("    indented\n    code"), "<pre>indented\ncode</pre>")
    assert.strictEqual(html("```c\"><b>\nx\n```"), "<pre>x</pre>")
  })

  it("an unclosed fence runs to the end", () => {
    assert.strictEqual(html("```py\nprint(1)\n\nmore"), "<pre><code class=\"language-py\">print(1)\n\nmore</code></pre>")
  })

  it("lists are bullet and number lines, nested ones indented, tasks checked", () => {
    assert.strictEqual(html("- a\n- b\n  - c\n    - d\n- e"), "• a\n• b\n  • c\n    • d\n• e")
    assert.strictEqual(html("1. a\n2. b\n10. c"), "1. a\n2. b\n10. c")
    assert.strictEqual(html("3) x\n4) y"), "3) x\n4) y")
    assert.strictEqual(html("- [ ] todo\n- [x] done"), "• ☐ todo\n• ☑ done")
    assert.strictEqual(html("1. first\n\n   second paragraph\n2. next"), "1. first\n   second paragraph\n2. next")
  })

  it("keeps the numbers the model wrote", () => {
    assert.strictEqual(html("1. a\n1. b\n1. c"), "1. a\n1. b\n1. c")
  })

  it("code inside a list item is not indented inside <pre>", () => {
    assert.strictEqual(html("- a\n\n  ```js\n  x\n  y\n  ```"), "• a\n<pre><code class=\"language-js\">x\ny</code></pre>")
  })

  it("blockquotes are one level: nested quotes are flattened", () => {
    assert.strictEqual(html("> a **b**\n> c"), "<blockquote>a <b>b</b>\nc</blockquote>")
    assert.strictEqual(html("> a\n>> b"), "<blockquote>a\n\nb</blockquote>")
    assert.strictEqual(html("> a\n>\n> > b"), "<blockquote>a\n\nb</blockquote>")
  })

  it("tables are a <pre> block of aligned columns", () => {
    const md = "| Name | Qty |\n|:--|--:|\n| apple | 3 |\n| 香蕉 | 12 |\n| **x** | [l](http://l) |"
    assert.strictEqual(
      html(md),
      "<pre>Name  |          Qty\n──────┼─────────────\napple |            3\n香蕉  |           12\nx     | l (http://l)</pre>"
    )
    assert.strictEqual(html("| a | b |\n|:-:|---|\n| <x> | & |"), "<pre> a  | b\n────┼──\n&lt;x&gt; | &amp;</pre>")
  })

  it("a rule is a line of dashes", () => {
    assert.strictEqual(html("a\n\n---\n\nb"), "a\n\n———\n\nb")
  })

  it("empty input and white space give an empty string", () => {
    assert.strictEqual(html(""), "")
    assert.strictEqual(html(" \n\n\t"), "")
    assert.strictEqual(plain(""), "")
  })
})

describe("toPlainText", () => {
  it("same layout, no markup", () => {
    const md = "# Title\n\n**b** _i_ ~~s~~ `c` [l](http://l.e) [same](same) <x> &amp;\n\n- a\n  - b\n\n> q\n> > r"
    assert.strictEqual(plain(md), "Title\n\nb i s c l (http://l.e) same <x> &\n\n• a\n  • b\n\n> q\n>\n> > r")
  })

  it("code blocks are their content; autolinks are their text", () => {
    assert.strictEqual(plain("```js\nif (a < b) {}\n```\n\n<http://a.b> www.c.d"), "if (a < b) {}\n\nhttp://a.b www.c.d")
  })

  it("code inside a list item is indented with it", () => {
    assert.strictEqual(plain("- a\n\n  ```\n  x\n  y\n  ```"), "• a\n  x\n  y")
  })

  it("tables are aligned columns", () => {
    assert.strictEqual(plain("| a | b |\n|---|--:|\n| 1 | 22 |"), "a |  b\n──┼───\n1 | 22")
  })

  it("images and unsafe links show their target", () => {
    assert.strictEqual(plain("![cat](http://c.png) [x](javascript:y)"), "cat (http://c.png) x (javascript:y)")
  })
})

describe("helpers", () => {
  it("wellFormed replaces lone surrogates and NUL, keeps pairs and length", () => {
    const s = "a\uD83D\uDE00b\uD83Dc\uDE00\u0000"
    assert.strictEqual(wellFormed(s), "a😀b\uFFFDc\uFFFD\uFFFD")
    assert.strictEqual(wellFormed(s).length, s.length)
  })

  it("decodeEntities leaves unknown names and malformed references", () => {
    assert.strictEqual(decodeEntities("&amp;&nbsp;&unknown;&#x110000;&#55296;& amp;"), "&\u00a0&unknown;\uFFFD\uFFFD& amp;")
  })

  it("isAllowedHref", () => {
    assert.isTrue(isAllowedHref("https://x"))
    assert.isTrue(isAllowedHref("HTTP://x"))
    assert.isTrue(isAllowedHref("mailto:a@b"))
    assert.isTrue(isAllowedHref("tg://resolve?domain=x"))
    assert.isFalse(isAllowedHref("javascript:alert(1)"))
    assert.isFalse(isAllowedHref("ftp://x"))
    assert.isFalse(isAllowedHref("https://"))
    assert.isFalse(isAllowedHref("/path"))
  })

  it("displayWidth counts wide characters twice and marks not at all", () => {
    assert.strictEqual(displayWidth("ab"), 2)
    assert.strictEqual(displayWidth("中文"), 4)
    assert.strictEqual(displayWidth("e\u0301"), 1)
    assert.strictEqual(displayWidth("😀"), 2)
  })
})

describe("the checker used by the properties", () => {
  it("accepts Telegram's subset", () => {
    assert.isUndefined(telegramHtmlProblem("<b>a <i>b</i></b> &amp; <pre><code class=\"language-js\">x</code></pre>"))
    assert.isUndefined(telegramHtmlProblem("<blockquote><a href=\"https://x\"><b>l</b></a></blockquote>"))
  })

  it("rejects what Telegram would refuse", () => {
    for (const bad of ["<div>", "a < b", "a & b", "a > b", "<b>x", "<b><i>x</b></i>", "<a href=\"javascript:x\">x</a>",
      "<code><b>x</b></code>", "<blockquote><blockquote>x</blockquote></blockquote>", "<a href=\"http://x\"><code>c</code></a>",
      "<code class=\"language-js\">x</code>"]) {
      assert.isDefined(telegramHtmlProblem(bad), bad)
    }
  })
})

describe("totality", () => {
  it("absurd nesting and long runs of delimiters", () => {
    for (const md of [">".repeat(20_000) + " x", "- ".repeat(5_000) + "x", "[".repeat(20_000), "*".repeat(20_000) + "a",
      "`".repeat(10_000), "_a".repeat(10_000), "![".repeat(5_000), "  ".repeat(2_000) + "- x\n".repeat(100)]) {
      const out = html(md)
      assert.isUndefined(telegramHtmlProblem(out))
      assert.isString(plain(md))
    }
  })

  it.prop("any string renders to well-formed Telegram HTML and to plain text", { s: Arbitrary.schema(Schema.String) }, ({ s }) => {
    const out = html(s)
    assert.isUndefined(telegramHtmlProblem(out), JSON.stringify({ s, out }))
    assert.isFalse(hasLoneSurrogate(out))
    assert.isFalse(hasLoneSurrogate(plain(s)))
  }, { arbitrary: { runs: 500 } })

  it.prop(
    "Markdown-ish strings: balanced allowed tags only, nothing unescaped, and the text the plain rendering shows",
    { md: markdownish },
    ({ md }) => {
      const out = html(md)
      const problem = telegramHtmlProblem(out)
      assert.isUndefined(problem, JSON.stringify({ md, out, problem }))
      assert.isFalse(hasLoneSurrogate(out) || out.includes("\u0000"))
      const text = plain(md)
      assert.isTrue(subsequence(ink(visibleText(out)), ink(text)), JSON.stringify({ md, out, text }))
    },
    { arbitrary: { runs: 400 } }
  )
})
