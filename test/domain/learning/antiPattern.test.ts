/**
 * Anti-patterns against issue 15: the candidate edges (`failures ≥ 3 and failures > 2 × successes`),
 * the inverted rule's exact text, applying an inversion, and the scan skipping what is already done.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import {
  ANTI_PATTERN_FAILURE_RATIO,
  ANTI_PATTERN_MIN_FAILURES,
  applyInversion,
  INVERSION_CONFIDENCE,
  inversionId,
  inversionText,
  isAntiPatternCandidate,
  proposeInversion,
  scan
} from "../../../src/domain/learning/antiPattern.ts"
import { type PlaybookRule, RULE_ID } from "../../../src/domain/learning/rule.ts"

const T0 = Date.UTC(2026, 2, 1)

const rule = (over: Partial<PlaybookRule> = {}): PlaybookRule => ({
  id: "gen-statem",
  text: "Use gen_statem for simple state machines",
  confidence: 0.3,
  maturity: "nascent",
  successCount: 0,
  failureCount: 0,
  antiPattern: false,
  sourceEntries: ["diary_1", "diary_2"],
  tags: ["elixir", "state"],
  createdAt: T0 - 86_400_000,
  lastAppliedAt: T0 - 3_600_000,
  ...over
})

const counts = (failureCount: number, successCount: number) => rule({ failureCount, successCount })

describe("anti-pattern candidates", () => {
  it("are named constants: at least 3 failures, more than 2× the successes; an inversion starts at 0.5", () => {
    expect(ANTI_PATTERN_MIN_FAILURES).toBe(3)
    expect(ANTI_PATTERN_FAILURE_RATIO).toBe(2)
    expect(INVERSION_CONFIDENCE).toBe(0.5)
  })

  it("3/1 yes, 3/2 no, 2/0 no, 7/3 yes, 6/3 no (failures/successes)", () => {
    assert.isTrue(isAntiPatternCandidate(counts(3, 1)))
    assert.isFalse(isAntiPatternCandidate(counts(3, 2)))
    assert.isFalse(isAntiPatternCandidate(counts(2, 0)))
    assert.isTrue(isAntiPatternCandidate(counts(7, 3)))
    assert.isFalse(isAntiPatternCandidate(counts(6, 3)))
    assert.isTrue(isAntiPatternCandidate(counts(3, 0)))
    assert.isFalse(isAntiPatternCandidate(counts(0, 0)))
  })
})

describe("inversion", () => {
  it("words the inverted rule exactly as the design does", () => {
    assert.strictEqual(
      inversionText("Use gen_statem for simple state machines", 4, 1),
      "AVOID: Use gen_statem for simple state machines -- this pattern has caused repeated issues (4 failures vs 1 successes)."
    )
  })

  it("proposes an anti-pattern rule with the counts in its text, the original's tags, sources and user", () => {
    const original = rule({ failureCount: 7, successCount: 3, user: "alice" })
    const p = proposeInversion(original, T0)
    assert.strictEqual(p.original, original)
    assert.deepStrictEqual(p.inverted, {
      id: "gen-statem-avoid",
      text: "AVOID: Use gen_statem for simple state machines -- this pattern has caused repeated issues (7 failures vs 3 successes).",
      confidence: 0.5,
      maturity: "nascent",
      successCount: 0,
      failureCount: 0,
      antiPattern: true,
      sourceEntries: ["diary_1", "diary_2"],
      tags: ["elixir", "state"],
      createdAt: T0,
      lastAppliedAt: null,
      user: "alice"
    })
    assert.isFalse("user" in proposeInversion(counts(3, 0), T0).inverted)
  })

  it("keeps the inverted id a valid rule id, even for the longest id", () => {
    const long = "a".repeat(64)
    assert.isTrue(RULE_ID.test(long))
    assert.strictEqual(inversionId(long).length, 64)
    assert.isTrue(RULE_ID.test(inversionId(long)))
    assert.strictEqual(inversionId("x"), "x-avoid")
  })

  it("applying it deprecates the original to 0.0 and adds the inverted rule; other rules are untouched", () => {
    const other = rule({ id: "other", text: "Buffer SSE", confidence: 0.7 })
    const original = counts(3, 1)
    const p = proposeInversion(original, T0)
    const out = applyInversion([original, other], p)
    assert.deepStrictEqual(out, [{ ...original, confidence: 0 }, other, p.inverted])
    assert.strictEqual(out.find((r) => r.antiPattern)?.id, "gen-statem-avoid")
    // Applying the same proposal again replaces the inverted rule instead of adding a second one.
    assert.deepStrictEqual(applyInversion(out, p), out)
  })
})

describe("scan", () => {
  it("proposes every candidate and nothing else", () => {
    const rules = [counts(3, 1), rule({ id: "fine", failureCount: 3, successCount: 2 }), rule({ id: "bad", failureCount: 7, successCount: 3 })]
    assert.deepStrictEqual(scan(rules, T0).map((p) => [p.original.id, p.inverted.id]), [
      ["gen-statem", "gen-statem-avoid"],
      ["bad", "bad-avoid"]
    ])
  })

  it("skips anti-patterns and rules already inverted, so a scan after applying proposes nothing", () => {
    const failingAvoid = rule({ id: "x-avoid", antiPattern: true, text: "AVOID: x", failureCount: 5 })
    assert.deepStrictEqual(scan([failingAvoid], T0), [])
    const rules = [counts(4, 0)]
    const [p] = scan(rules, T0)
    assert.isDefined(p)
    if (p === undefined) return
    const applied = applyInversion(rules, p)
    assert.deepStrictEqual(scan(applied, T0), [])
  })
})
