/**
 * The structure a split relies on: top-level blocks found where they are in the source, with the
 * code spans, links and emphasis inside their text and the link definitions inside lists and quotes.
 */
import { assert, describe, it } from "@effect/vitest"
import { sourceBlocks } from "../../../src/domain/channels/structure.ts"

const slices = (md: string, ranges: ReadonlyArray<{ readonly start: number; readonly end: number }>) =>
  ranges.map((r) => md.slice(r.start, r.end))

describe("sourceBlocks", () => {
  it("places top-level blocks in the source, without trailing white space", () => {
    const md = "# Title\n\npara\n\n```js\nx\n```\n\n| a |\n|---|\n| 1 |\n\n[r]: http://r\n\n    code\n\n- a\n\n  ```\n  y\n  ```\n\n- b\n"
    const blocks = sourceBlocks(md) ?? []
    assert.deepStrictEqual(blocks.map((b) => b.kind), ["heading", "paragraph", "fence", "table", "def", "indentedCode", "holdsCode"])
    assert.deepStrictEqual(slices(md, blocks), [
      "# Title",
      "para",
      "```js\nx\n```",
      "| a |\n|---|\n| 1 |",
      "[r]: http://r",
      "    code",
      "- a\n\n  ```\n  y\n  ```\n\n- b"
    ])
  })

  it("keeps the tab ending a code block's last line: it tells content from a closing fence", () => {
    const md = "~~~\nx\n~~~\t\n\n"
    const [block] = sourceBlocks(md) ?? []
    assert.strictEqual(block === undefined ? "" : md.slice(block.start, block.end), "~~~\nx\n~~~\t")
  })

  it("finds code spans, links and emphasis, in paragraphs and in lists and quotes", () => {
    const md = "See `a b` and [l](http://x) **bold _it_**.\n\n- item ``c ` d`` ![i](http://i)\n\n> quoted `q\n> spans` lines"
    const blocks = sourceBlocks(md) ?? []
    assert.deepStrictEqual(blocks.flatMap((b) => slices(md, b.spans)), ["`a b`", "``c ` d``", "`q\n> spans`"])
    assert.deepStrictEqual(blocks.flatMap((b) => b.spans.map((s) => s.run)), [1, 2, 1])
    assert.deepStrictEqual(blocks.flatMap((b) => slices(md, b.links)), ["[l](http://x)", "![i](http://i)"])
    assert.deepStrictEqual(blocks.flatMap((b) => slices(md, b.emphases)), ["**bold _it_**", "_it_"])
  })

  it("lists the link definitions inside lists and quotes", () => {
    const md = "- item\n\n  [a]: http://a\n\n> [b]: http://b 'title'\n> text"
    assert.deepStrictEqual((sourceBlocks(md) ?? []).flatMap((b) => b.defs), ["[a]: http://a", "[b]: http://b 'title'"])
  })

  it("is total on absurd input", () => {
    for (const md of [">".repeat(20_000), "a\n".repeat(20_000), "`a\n".repeat(5_000), "\u0000\uD800"]) {
      const blocks = sourceBlocks(md)
      assert.isTrue(blocks === undefined || Array.isArray(blocks))
    }
  })
})
