/**
 * `tokenize`'s scan of ASCII text against the Unicode regular expression it replaces, and the
 * Porter stemmer's first letter, which `tokenize(text, firsts)` relies on to skip stemming words
 * that cannot match a query.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { porterStem } from "../../../src/domain/search/porter.ts"
import { termOf, tokenize } from "../../../src/domain/search/text.ts"

/** The tokens unicode61 finds in a text without CJK letters, by the regular expression. */
const reference = (text: string) =>
  Array.from(text.matchAll(/[\p{L}\p{N}\p{Co}\p{Mn}]+/gu), (m) => ({
    term: termOf(m[0]),
    start: m.index,
    end: m.index + m[0].length,
    cjk: false
  }))

const ascii = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9 ,.:;'"!?()\-_/\n]{0,300}$/))
const word = Schema.String.check(Schema.isPattern(/^[a-z0-9]{1,12}(ies|sses|ed|ing|y|ational|izer|ness|e|s|ly)?$/))

describe("tokenize", () => {
  it("cuts ASCII text as unicode61 does (punctuation, digits, case, edges)", () => {
    for (const text of ["", " ", "Deploying docker-compose.yml at 10:30!", "x", "a1b2 C3", "end.", "'quoted' (words)"]) {
      assert.deepStrictEqual(tokenize(text), reference(text))
    }
    assert.deepStrictEqual(tokenize("café Docker"), reference("café Docker"))
  })

  it.effect.prop("gives the regular expression's tokens for any ASCII text", { texts: Arbitrary.array(Arbitrary.schema(ascii), { minLength: 20, maxLength: 50 }) }, ({ texts }) =>
    Effect.sync(() => {
      for (const text of texts) assert.deepStrictEqual(tokenize(text), reference(text))
    }), { arbitrary: { runs: 50 } })

  it.effect.prop("with first letters, stems only the words starting with one; the others get \"\"", { texts: Arbitrary.array(Arbitrary.schema(ascii), { minLength: 20, maxLength: 50 }) }, ({ texts }) =>
    Effect.sync(() => {
      const firsts = new Set(["d", "c", "7"].map((c) => c.charCodeAt(0)))
      for (const text of texts) {
        const expected = reference(text).map((t) => (firsts.has(t.term.charCodeAt(0)) ? t : { ...t, term: "" }))
        assert.deepStrictEqual(tokenize(text, firsts), expected)
      }
    }), { arbitrary: { runs: 50 } })
})

describe("porterStem keeps a word's first letter", () => {
  it("for words whose suffix rules reach their start", () => {
    for (const w of ["y", "ys", "yes", "ies", "ied", "sses", "eed", "ying", "ational", "izer"]) {
      assert.strictEqual(porterStem(w).charAt(0), w.charAt(0), w)
    }
  })

  it.effect.prop("for any word", { words: Arbitrary.array(Arbitrary.schema(word), { minLength: 100, maxLength: 300 }) }, ({ words }) =>
    Effect.sync(() => {
      for (const w of words) {
        const stem = porterStem(w)
        assert.isTrue(stem.length > 0 && stem.charAt(0) === w.charAt(0), `${w} → ${stem}`)
      }
    }), { arbitrary: { runs: 50 } })
})
