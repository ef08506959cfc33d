/**
 * Deduplication of proposed rules against issue 15: the same rule by normalised text, and near
 * duplicates by word-set (Jaccard) similarity at 0.8, checked on both sides of the edge.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { findDuplicate, isDuplicate, NEAR_DUPLICATE_SIMILARITY, normaliseText, similarity } from "../../../src/domain/learning/dedupe.ts"

describe("normalised text", () => {
  it("is lowercase, without punctuation, with whitespace collapsed; letters of any script kept", () => {
    assert.strictEqual(normaliseText("  Always   BUFFER, SSE chunks!!\n"), "always buffer sse chunks")
    assert.strictEqual(normaliseText("Use `handle_continue`—not gen_statem."), "use handle continue not gen statem")
    assert.strictEqual(normaliseText("Ｄｏｃｋｅｒ 记忆 Ünïcode"), "docker 记忆 ünïcode")
    assert.strictEqual(normaliseText("..."), "")
  })

  it("makes texts that differ only in case, punctuation and spacing the same rule", () => {
    assert.isTrue(isDuplicate("Always buffer SSE chunks.", "always  buffer sse chunks"))
    assert.isTrue(isDuplicate("Run tests; then commit!", "run tests then commit"))
    assert.isFalse(isDuplicate("Run tests then commit", "Commit then run docs"))
  })
})

describe("near duplicates", () => {
  it("share at least 0.8 of their words (Jaccard)", () => {
    expect(NEAR_DUPLICATE_SIMILARITY).toBe(0.8)
    assert.strictEqual(similarity("a b c", "a b c"), 1)
    assert.strictEqual(similarity("a b", "c d"), 0)
    assert.strictEqual(similarity("", ""), 1)
    assert.strictEqual(similarity("a", ""), 0)
    // Repeated words count once.
    assert.strictEqual(similarity("a a b", "a b b"), 1)
  })

  it("at exactly 0.8 are duplicates (4 of 5 words), either way round", () => {
    const a = "always buffer sse chunks"
    const b = "always buffer sse chunks first"
    assert.strictEqual(similarity(a, b), 0.8)
    assert.strictEqual(similarity(b, a), 0.8)
    assert.isTrue(isDuplicate(a, b))
    assert.isTrue(isDuplicate(b, a))
  })

  it("just under 0.8 are not (11 of 14 words, 3 of 4), either way round", () => {
    const base = "one two three four five six seven eight nine ten eleven"
    const more = `${base} twelve thirteen fourteen`
    assert.closeTo(similarity(base, more), 11 / 14, 1e-15)
    assert.isBelow(similarity(base, more), 0.8)
    assert.isFalse(isDuplicate(base, more))
    assert.isFalse(isDuplicate(more, base))
    assert.strictEqual(similarity("buffer sse chunks", "buffer sse chunks first"), 0.75)
    assert.isFalse(isDuplicate("buffer sse chunks first", "buffer sse chunks"))
    // Above the edge: 5 of 6.
    assert.isTrue(isDuplicate("one two three four five", "one two three four five six"))
  })

  it("findDuplicate returns the first item whose text the new one duplicates, else undefined", () => {
    const items = [
      { id: "a", text: "Prefer small commits" },
      { id: "b", text: "Always buffer SSE chunks" },
      { id: "c", text: "always buffer SSE chunks!" }
    ]
    assert.strictEqual(findDuplicate(items, (i) => i.text, "ALWAYS buffer sse chunks first")?.id, "b")
    assert.isUndefined(findDuplicate(items, (i) => i.text, "Write the test first"))
    assert.isUndefined(findDuplicate([], (i: { text: string }) => i.text, "anything"))
  })
})
