/**
 * The console's Markdown reader (web/markdown.ts): the constructs agents use, read into a tree the
 * console renders as elements; nothing becomes markup, unsafe links stay text, and an answer cut off
 * mid-stream still reads.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { type Block, type Inline, parseInline, parseMarkdown } from "../../web/markdown.ts"

/** All the text a tree shows, in order (line breaks as "\n"). */
const inlineText = (ns: ReadonlyArray<Inline>): string =>
  ns.map((n) => (n.t === "text" || n.t === "code" ? n.v : n.t === "br" ? "\n" : inlineText(n.c))).join("")
const blockText = (bs: ReadonlyArray<Block>): string =>
  bs.map((b) =>
    b.t === "pre"
      ? b.v
      : b.t === "ol"
      ? b.items.map((it, j) => `${b.numbers[j]} ${inlineText(it)}`).join("\n") // an ordered list shows each item's number
      : "items" in b
      ? b.items.map(inlineText).join("\n")
      : b.t === "quote"
      ? blockText(b.c)
      : inlineText(b.c)
  ).join("\n")

describe("web console Markdown", () => {
  it("reads paragraphs, headings, fenced code, lists and quotes", () => {
    const blocks = parseMarkdown("# Title\n\nSome **bold** and *em* and `x < y`.\nNext line.\n\n```ts\nconst a = \"<b>\"\n```\n- one\n- two\n\n1. first\n2. second\n\n> quoted")
    assert.deepStrictEqual(blocks.map((b) => b.t), ["h", "p", "pre", "ul", "ol", "quote"])
    assert.deepStrictEqual(blocks[0], { t: "h", level: 1, c: [{ t: "text", v: "Title" }] })
    assert.deepStrictEqual(blocks[1], {
      t: "p",
      c: [
        { t: "text", v: "Some " },
        { t: "strong", c: [{ t: "text", v: "bold" }] },
        { t: "text", v: " and " },
        { t: "em", c: [{ t: "text", v: "em" }] },
        { t: "text", v: " and " },
        { t: "code", v: "x < y" },
        { t: "text", v: "." },
        { t: "br" },
        { t: "text", v: "Next line." }
      ]
    })
    assert.deepStrictEqual(blocks[2], { t: "pre", lang: "ts", v: 'const a = "<b>"' })
    assert.deepStrictEqual(blocks[3], { t: "ul", items: [[{ t: "text", v: "one" }], [{ t: "text", v: "two" }]] })
    assert.deepStrictEqual(blocks[4], { t: "ol", items: [[{ t: "text", v: "first" }], [{ t: "text", v: "second" }]], numbers: [1, 2] })
  })

  it("keeps http(s) and mailto links, and leaves any other scheme as plain text", () => {
    assert.deepStrictEqual(parseInline("[docs](https://example.org/a)"), [{ t: "link", href: "https://example.org/a", c: [{ t: "text", v: "docs" }] }])
    assert.deepStrictEqual(parseInline("[click](javascript:alert(1))"), [{ t: "text", v: "click" }, { t: "text", v: ")" }])
    assert.deepStrictEqual(parseInline("[x](data:text/html,hi)"), [{ t: "text", v: "x" }])
    assert.deepStrictEqual(parseInline("see https://example.org/x."), [
      { t: "text", v: "see " },
      { t: "link", href: "https://example.org/x", c: [{ t: "text", v: "https://example.org/x" }] },
      { t: "text", v: "." }
    ])
  })

  it("reads an answer cut off mid-stream: an open fence is code to the end, an open ** is text", () => {
    assert.deepStrictEqual(parseMarkdown("Here:\n```py\nprint(1)\nprint("), [
      { t: "p", c: [{ t: "text", v: "Here:" }] },
      { t: "pre", lang: "py", v: "print(1)\nprint(" }
    ])
    assert.deepStrictEqual(parseInline("so **almost"), [{ t: "text", v: "so **almost" }])
    assert.deepStrictEqual(parseInline("snake_case_name"), [{ t: "text", v: "snake_case_name" }])
  })

  /** Text made of Markdown's own punctuation among letters, digits, spaces and line breaks. */
  const markdownish = Arbitrary.array(Arbitrary.schema(Schema.Literals([..."ab1 *_`#>-[]()\n\\:/.h"])), { maxLength: 80 }).pipe(
    Arbitrary.map((cs) => cs.join(""))
  )
  const alnum = (s: string) => s.replace(/[^\p{L}\p{N}]/gu, "")

  it.prop(
    "never loses or invents text: every letter and digit written is shown, in order (link targets aside)",
    { src: markdownish },
    ({ src }) => {
      if (src.includes("](")) return true
      assert.strictEqual(alnum(blockText(parseMarkdown(src))), alnum(src))
      return true
    },
    { arbitrary: { runs: 500 } }
  )
})
