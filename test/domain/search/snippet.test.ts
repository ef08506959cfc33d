import { assert, describe, it } from "@effect/vitest"
import { MARK_CLOSE as C, MARK_OPEN as O, snippetAround } from "../../../src/domain/search/snippet.ts"

const mark = (w: string) => `${O}${w}${C}`

describe("snippetAround", () => {
  it("keeps a short text whole, matches marked with «»", () => {
    assert.strictEqual(
      snippetAround(`the staging database ${mark("FACT")}-3003 is on port 6543`),
      "the staging database «FACT»-3003 is on port 6543"
    )
  })

  it("keeps words after a match late in a long text, and cuts at words with … where text is left out", () => {
    const before = Array.from({ length: 60 }, (_, i) => `lead${i}`).join(" ")
    const after = Array.from({ length: 60 }, (_, i) => `tail${i}`).join(" ")
    const s = snippetAround(`${before} the staging database ${mark("FACT")}-3003 is on port 6543 ${after}`)
    assert.match(s, /^…\S/)
    assert.match(s, /\S…$/)
    assert.include(s, "database «FACT»-3003 is on port 6543 tail0 tail1")
    // whole words only: no "ead12" or "tai" fragments at the edges
    assert.match(s, /^…(lead\d+|the) /)
    assert.match(s, / tail\d+…$/)
    assert.isBelow(s.length, 200)
    // more room after the match than before it
    const at = s.indexOf("«")
    assert.isAbove(s.length - at, 2 * at)
  })

  it("never cuts a mark in two, and collapses whitespace", () => {
    const s = snippetAround(`${mark("alpha")}\n\n${"x ".repeat(58)}${mark("alpha")} beta`, { before: 10, after: 120 })
    assert.notInclude(s, O)
    assert.notInclude(s, C)
    assert.strictEqual((s.match(/«/g) ?? []).length, (s.match(/»/g) ?? []).length)
    assert.notMatch(s, /\s{2}/)
  })

  it("cuts text without spaces (CJK) by characters, and not inside a surrogate pair", () => {
    const s = snippetAround(`${"我们讨论了".repeat(30)}${mark("记忆系统")}${"的设计😀".repeat(60)}`)
    assert.match(s, /^…[我们讨论了]{48}«记忆系统»/u)
    assert.include(s, "«记忆系统»的设计")
    assert.isTrue(s.endsWith("…"))
    // no lone surrogate (half of a broken pair)
    assert.notMatch(s, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/)
  })

  it("without a mark gives the start of the text", () => {
    assert.strictEqual(snippetAround("no marks here"), "no marks here")
  })
})
