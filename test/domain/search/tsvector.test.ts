/**
 * PostgreSQL's vector of a row (domain/search/tsvector.ts) past PostgreSQL's limits: a row with a
 * word past position 16,383, or a word past its 256th occurrence, gets the CAPPED_TOKEN, and its
 * phrases are checked against all of its positions (`textIndex`, `matcherMatches`).
 */
import { assert, describe, it } from "@effect/vitest"
import { planSearch, type Matcher } from "../../../src/domain/search/query.ts"
import {
  CAPPED_TOKEN,
  isPhrase,
  looseTsqueryOfMatcher,
  MAX_POSITION,
  matcherMatches,
  textIndex,
  tsqueryOfMatcher,
  tsvectorOf
} from "../../../src/domain/search/tsvector.ts"

/** `n` words that are none of the tests' words. */
const filler = (n: number) => Array.from({ length: n }, (_, i) => `w${i % 97}x`).join(" ")

/** The lexemes of a `tsvector` input, with their positions ("" for none). */
const lexemes = (vector: string): Map<string, string> =>
  new Map(Array.from(vector.matchAll(/'((?:[^']|'')*)'(?::([\d,]+))?/gu), (m) => [m[1] ?? "", m[2] ?? ""]))

/** The first matcher of a query's first group (or of its first `NOT` term). */
const matcher = (q: string, mode: "ranked" | "strict" = "ranked"): Matcher => {
  const plan = planSearch(q, mode)
  if (plan._tag !== "Query") throw new Error(`no plan for ${q}`)
  const m = plan.groups[0]?.matchers[0] ?? plan.excludeMatchers[0]
  if (m === undefined) throw new Error(`no matcher for ${q}`)
  return m
}

const scope = ["#c1", "#u61"]

describe("tsvectorOf within PostgreSQL's limits", () => {
  it("writes every position and no CAPPED_TOKEN", () => {
    const v = lexemes(tsvectorOf({ body: "Zebra crossing, zebra!", memory: "" }, scope))
    assert.strictEqual(v.get("zebra"), "1,3")
    assert.strictEqual(v.get("cross"), "2")
    assert.isFalse(v.has(CAPPED_TOKEN))
    assert.strictEqual(v.get("#c1"), "")
  })

  it("a word at position 16,383 or a word 256 times is still within them", () => {
    assert.isFalse(lexemes(tsvectorOf({ body: `${filler(MAX_POSITION - 1)} zebra`, memory: "" }, scope)).has(CAPPED_TOKEN))
    const v = lexemes(tsvectorOf({ body: "zebra ".repeat(256), memory: "" }, scope))
    assert.strictEqual(v.get("zebra")?.split(",").length, 256)
    assert.isFalse(v.has(CAPPED_TOKEN))
  })
})

describe("tsvectorOf past PostgreSQL's limits", () => {
  it("a word past position 16,383 marks the row (its position counted as 16,383)", () => {
    const v = lexemes(tsvectorOf({ body: `${filler(MAX_POSITION)} zebra crossing`, memory: "" }, scope))
    assert.strictEqual(v.get("zebra"), String(MAX_POSITION))
    assert.strictEqual(v.get("cross"), String(MAX_POSITION))
    assert.strictEqual(v.get(CAPPED_TOKEN), "")
    assert.strictEqual(v.get("#u61"), "")
  })

  it("a word's 257th occurrence marks the row (256 positions kept)", () => {
    const v = lexemes(tsvectorOf({ body: "zebra ".repeat(257), memory: "" }, scope))
    assert.strictEqual(v.get("zebra")?.split(",").length, 256)
    assert.strictEqual(v.get(CAPPED_TOKEN), "")
  })

  it("the memory tool's part, after the text, marks the row when it goes past 16,383", () => {
    const v = lexemes(tsvectorOf({ body: filler(MAX_POSITION - 10), memory: "zebra crossing ".repeat(10) }, scope))
    assert.strictEqual(v.get("~zebra")?.split(",").at(-1), String(MAX_POSITION))
    assert.strictEqual(v.get(CAPPED_TOKEN), "")
  })

  it("CJK letter pairs past 16,383 mark the row", () => {
    const v = lexemes(tsvectorOf({ body: `${filler(MAX_POSITION)} 数据库`, memory: "" }, scope))
    assert.strictEqual(v.get("数据"), String(MAX_POSITION))
    assert.strictEqual(v.get(CAPPED_TOKEN), "")
  })
})

describe("matcherMatches: a phrase against every position of a row", () => {
  const deep = (tail: string) => textIndex({ body: `${filler(20_000)} ${tail}`, memory: "" })

  it("finds a phrase past position 16,383, and not its words apart", () => {
    assert.isTrue(matcherMatches(deep("zebra crossing"), matcher("\"zebra crossing\""), false))
    assert.isFalse(matcherMatches(deep("crossing zebra"), matcher("\"zebra crossing\""), false))
    assert.isFalse(matcherMatches(deep("zebra at the crossing"), matcher("\"zebra crossing\""), false))
  })

  it("finds a phrase past a word's 256th occurrence, and not its words apart", () => {
    const many = (tail: string) => textIndex({ body: `${"alpha gamma ".repeat(300)}${tail}`, memory: "" })
    assert.isTrue(matcherMatches(many("alpha beta"), matcher("\"alpha beta\""), false))
    assert.isFalse(matcherMatches(many("beta alpha"), matcher("\"alpha beta\""), false))
  })

  it("finds a CJK word of three letters as its pairs, not the pairs apart", () => {
    const m = matcher("数据库", "strict")
    assert.isTrue(isPhrase(m))
    assert.isTrue(matcherMatches(deep("数据库"), m, false))
    assert.isFalse(matcherMatches(deep("数据 据库"), m, false))
    // Two letters are one pair: no phrase.
    assert.isFalse(isPhrase(matcher("数据", "strict")))
  })

  it("a prefix as the phrase's last word", () => {
    assert.isTrue(matcherMatches(deep("zebra crossings"), matcher("zebra-cross*", "strict"), false))
    assert.isFalse(matcherMatches(deep("zebra lines crossings"), matcher("zebra-cross*", "strict"), false))
  })

  it("the memory tool's part only when asked, and never a phrase across the two", () => {
    const index = textIndex({ body: `${filler(20_000)} zebra`, memory: "crossing zebra crossing" })
    assert.isFalse(matcherMatches(index, matcher("\"zebra crossing\""), false))
    assert.isTrue(matcherMatches(index, matcher("\"zebra crossing\""), true))
    const across = textIndex({ body: `${filler(20_000)} zebra`, memory: "crossing" })
    assert.isFalse(matcherMatches(across, matcher("\"zebra crossing\""), true))
  })

  it("a word alone is not a phrase and is found anywhere", () => {
    const m = matcher("zebra")
    assert.isFalse(isPhrase(m))
    assert.isTrue(matcherMatches(deep("zebra"), m, false))
    assert.isFalse(matcherMatches(deep("crossing"), m, false))
  })
})

describe("looseTsqueryOfMatcher", () => {
  it("is the phrase's words anywhere; a word as it is", () => {
    assert.strictEqual(tsqueryOfMatcher(matcher("\"zebra crossing\""), false), "('zebra' <-> 'cross')")
    assert.strictEqual(looseTsqueryOfMatcher(matcher("\"zebra crossing\""), false), "('zebra' & 'cross')")
    assert.strictEqual(looseTsqueryOfMatcher(matcher("\"zebra crossing\""), true), "(('zebra' & 'cross') | ('~zebra' & '~cross'))")
    assert.strictEqual(looseTsqueryOfMatcher(matcher("数据库", "strict"), false), "('数据' & '据库')")
    assert.strictEqual(looseTsqueryOfMatcher(matcher("zebra"), false), "'zebra'")
  })
})
