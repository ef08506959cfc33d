/**
 * The confidence math of playbook rules against the numbers of issue 15: decay (half-life 90 days,
 * baseline last applied else created, with TestClock), feedback (+0.05 / −0.20 on the decayed value,
 * clamped), maturity edges one level at a time, and the maintenance sweep.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import {
  applyFeedback,
  DAY_MS,
  decayed,
  DEMOTION_CANDIDATE_BELOW,
  ESTABLISHED_DEMOTE_BELOW,
  ESTABLISHED_MIN_APPLICATIONS,
  ESTABLISHED_MIN_CONFIDENCE,
  FAILURE_DECREMENT,
  HALF_LIFE_DAYS,
  idleDays,
  maturityStep,
  PROVEN_DEMOTE_BELOW,
  PROVEN_MIN_APPLICATIONS,
  PROVEN_MIN_CONFIDENCE,
  REMOVAL_CANDIDATE_BELOW,
  round4,
  settledMaturity,
  SUCCESS_INCREMENT,
  sweep
} from "../../../src/domain/learning/confidence.ts"
import { applications, INITIAL_CONFIDENCE, type PlaybookRule } from "../../../src/domain/learning/rule.ts"

const T0 = Date.UTC(2026, 1, 27, 10, 50)
const days = (n: number) => n * DAY_MS

const rule = (over: Partial<PlaybookRule> = {}): PlaybookRule => ({
  id: "r",
  text: "Always buffer SSE chunks until the blank line",
  confidence: 0.8,
  maturity: "nascent",
  successCount: 0,
  failureCount: 0,
  antiPattern: false,
  sourceEntries: [],
  tags: ["sse"],
  createdAt: T0,
  lastAppliedAt: null,
  ...over
})

describe("the design's numbers", () => {
  it("are named constants with the design's values", () => {
    expect(HALF_LIFE_DAYS).toBe(90)
    expect(SUCCESS_INCREMENT).toBe(0.05)
    expect(FAILURE_DECREMENT).toBe(0.2)
    expect(FAILURE_DECREMENT / SUCCESS_INCREMENT).toBe(4)
    expect(ESTABLISHED_MIN_CONFIDENCE).toBe(0.5)
    expect(ESTABLISHED_MIN_APPLICATIONS).toBe(3)
    expect(PROVEN_MIN_CONFIDENCE).toBe(0.8)
    expect(PROVEN_MIN_APPLICATIONS).toBe(10)
    expect(PROVEN_DEMOTE_BELOW).toBe(0.5)
    expect(ESTABLISHED_DEMOTE_BELOW).toBe(0.3)
    expect(DEMOTION_CANDIDATE_BELOW).toBe(0.2)
    expect(REMOVAL_CANDIDATE_BELOW).toBe(0.1)
    expect(INITIAL_CONFIDENCE).toBe(0.5)
    expect(DAY_MS).toBe(86_400_000)
  })
})

describe("decay", () => {
  it("is 1× at 0 days, ½× at 90 days and ¼× at 180 days since the last application", () => {
    const r = rule({ confidence: 0.8, createdAt: T0 - days(400), lastAppliedAt: T0 })
    assert.strictEqual(decayed(r, T0), 0.8)
    assert.strictEqual(decayed(r, T0 + days(HALF_LIFE_DAYS)), 0.4)
    assert.strictEqual(decayed(r, T0 + days(90)), 0.4)
    assert.strictEqual(decayed(r, T0 + days(180)), 0.2)
    assert.closeTo(decayed(r, T0 + days(45)), 0.8 * Math.SQRT1_2, 1e-12)
    assert.strictEqual(idleDays(r, T0 + days(180)), 180)
  })

  it("counts from created_at when the rule was never applied, and from last_applied_at when it was", () => {
    const never = rule({ confidence: 0.6, createdAt: T0, lastAppliedAt: null })
    assert.strictEqual(decayed(never, T0 + days(90)), 0.3)
    // Applied 90 days after creation: at creation + 180 days only 90 days have passed.
    const applied = rule({ confidence: 0.6, createdAt: T0, lastAppliedAt: T0 + days(90) })
    assert.strictEqual(decayed(applied, T0 + days(180)), 0.3)
    assert.strictEqual(idleDays(applied, T0 + days(180)), 90)
  })

  it("never raises confidence: a time before the baseline counts as no time at all", () => {
    const r = rule({ confidence: 0.7, lastAppliedAt: T0 })
    assert.strictEqual(decayed(r, T0 - days(30)), 0.7)
    assert.strictEqual(decayed(r, 0), 0.7)
    assert.strictEqual(idleDays(r, T0 - 1), 0)
    let previous = decayed(r, T0)
    for (let d = 1; d <= 720; d += 7) {
      const now = decayed(r, T0 + days(d))
      assert.isAtMost(now, previous)
      previous = now
    }
  })

  it.effect("follows the clock: with TestClock, ½ after 90 days and ¼ after 180", () =>
    Effect.gen(function*() {
      const created = yield* Clock.currentTimeMillis
      const r = rule({ confidence: 0.9, createdAt: created, lastAppliedAt: null })
      assert.strictEqual(decayed(r, yield* Clock.currentTimeMillis), 0.9)
      yield* TestClock.adjust("45 days")
      assert.closeTo(decayed(r, yield* Clock.currentTimeMillis), 0.9 * Math.SQRT1_2, 1e-12)
      yield* TestClock.adjust("45 days")
      assert.strictEqual(decayed(r, yield* Clock.currentTimeMillis), 0.45)
      yield* TestClock.adjust("90 days")
      assert.strictEqual(decayed(r, yield* Clock.currentTimeMillis), 0.225)
      // Feedback now resets the baseline: another 90 days halve the new value once.
      const fed = applyFeedback(r, "success", yield* Clock.currentTimeMillis)
      assert.strictEqual(fed.confidence, 0.275)
      yield* TestClock.adjust("90 days")
      assert.strictEqual(decayed(fed, yield* Clock.currentTimeMillis), 0.1375)
    }))
})

describe("feedback", () => {
  it("a success adds 0.05 and a failure takes 0.20, counts and last_applied_at move", () => {
    const r = rule({ confidence: 0.6, successCount: 2, failureCount: 1, lastAppliedAt: T0 })
    const ok = applyFeedback(r, "success", T0)
    assert.strictEqual(ok.confidence, 0.65)
    assert.strictEqual(ok.successCount, 3)
    assert.strictEqual(ok.failureCount, 1)
    assert.strictEqual(ok.lastAppliedAt, T0)
    const bad = applyFeedback(r, "failure", T0 + 1000)
    assert.strictEqual(bad.confidence, 0.4)
    assert.strictEqual(bad.successCount, 2)
    assert.strictEqual(bad.failureCount, 2)
    assert.strictEqual(bad.lastAppliedAt, T0 + 1000)
    // Nothing else changes.
    assert.deepStrictEqual({ ...bad, confidence: r.confidence, failureCount: 1, lastAppliedAt: T0 }, r)
  })

  it("is applied to the decayed value, not the stored one (0.6 unused for 90 days: success → 0.35, failure → 0.10)", () => {
    const r = rule({ confidence: 0.6, createdAt: T0 - days(10), lastAppliedAt: T0 })
    assert.strictEqual(applyFeedback(r, "success", T0 + days(90)).confidence, 0.35)
    assert.strictEqual(applyFeedback(r, "failure", T0 + days(90)).confidence, 0.1)
    // A never applied rule decays from its creation.
    const fresh = rule({ confidence: 0.5, createdAt: T0, lastAppliedAt: null })
    const fed = applyFeedback(fresh, "success", T0 + days(180))
    assert.strictEqual(fed.confidence, 0.175)
    assert.strictEqual(fed.lastAppliedAt, T0 + days(180))
  })

  it("clamps at 1 and at 0", () => {
    assert.strictEqual(applyFeedback(rule({ confidence: 0.98, lastAppliedAt: T0 }), "success", T0).confidence, 1)
    assert.strictEqual(applyFeedback(rule({ confidence: 1, lastAppliedAt: T0 }), "success", T0).confidence, 1)
    assert.strictEqual(applyFeedback(rule({ confidence: 0.1, lastAppliedAt: T0 }), "failure", T0).confidence, 0)
    assert.strictEqual(applyFeedback(rule({ confidence: 0, lastAppliedAt: T0 }), "failure", T0).confidence, 0)
  })

  it("keeps four decimals (a YAML round trip is then exact)", () => {
    const r = rule({ confidence: 0.7, lastAppliedAt: T0 })
    const fed = applyFeedback(r, "success", T0 + days(1))
    assert.strictEqual(fed.confidence, round4(0.7 * 0.5 ** (1 / 90) + 0.05))
    assert.strictEqual(fed.confidence, 0.7446)
    assert.strictEqual(round4(0.7 - 0.2), 0.5)
  })

  it("judges maturity on the stored value: a proven rule at 0.7 failing is stored at 0.5 and stays proven", () => {
    // 0.7 − 0.2 is 0.49999999999999994 in floating point.
    const r = rule({ confidence: 0.7, maturity: "proven", successCount: 11, failureCount: 1, lastAppliedAt: T0 })
    const fed = applyFeedback(r, "failure", T0)
    assert.strictEqual(fed.confidence, 0.5)
    assert.strictEqual(fed.maturity, "proven")
    assert.strictEqual(applyFeedback(fed, "failure", T0).maturity, "established")
  })

  it("never moves last_applied_at back (a clock stepped backwards), so a success never lowers confidence", () => {
    const r = rule({ confidence: 0.8, lastAppliedAt: T0 })
    const fed = applyFeedback(r, "success", T0 - days(90))
    assert.strictEqual(fed.lastAppliedAt, T0)
    assert.strictEqual(fed.confidence, 0.85)
    assert.isAtLeast(decayed(fed, T0), decayed(r, T0))
  })
})

describe("maturity", () => {
  it("nascent → established exactly at 0.5 with 3 applications, not at 0.4999 or with 2", () => {
    assert.strictEqual(maturityStep("nascent", 0.5, 3), "established")
    assert.strictEqual(maturityStep("nascent", 0.4999, 3), "nascent")
    assert.strictEqual(maturityStep("nascent", 0.5, 2), "nascent")
    assert.strictEqual(maturityStep("nascent", 1, 2), "nascent")
  })

  it("established → proven needs more than 0.8 (0.8 stays) and 10 applications", () => {
    assert.strictEqual(maturityStep("established", 0.8, 10), "established")
    assert.strictEqual(maturityStep("established", 0.8001, 10), "proven")
    assert.strictEqual(maturityStep("established", 0.8001, 9), "established")
    assert.strictEqual(maturityStep("established", 1, 9), "established")
  })

  it("proven → established below 0.5 (0.5 stays); established → nascent below 0.3 (0.3 stays)", () => {
    assert.strictEqual(maturityStep("proven", 0.5, 20), "proven")
    assert.strictEqual(maturityStep("proven", 0.4999, 20), "established")
    assert.strictEqual(maturityStep("established", 0.3, 20), "established")
    assert.strictEqual(maturityStep("established", 0.2999, 20), "nascent")
    assert.strictEqual(maturityStep("nascent", 0, 0), "nascent")
  })

  it("moves one level per step; settledMaturity steps until it stops", () => {
    assert.strictEqual(maturityStep("nascent", 1, 100), "established")
    assert.strictEqual(maturityStep("proven", 0, 100), "established")
    assert.strictEqual(settledMaturity("nascent", 1, 100), "proven")
    assert.strictEqual(settledMaturity("proven", 0, 100), "nascent")
    assert.strictEqual(settledMaturity("proven", 0.4, 100), "established")
    assert.strictEqual(settledMaturity("nascent", 0.6, 5), "established")
  })

  it("feedback promotes at the edges: 0.45 + success with the 3rd application, 0.75 + success stays at 0.8, then proven", () => {
    const a = applyFeedback(rule({ confidence: 0.45, successCount: 2, lastAppliedAt: T0 }), "success", T0)
    assert.strictEqual(a.confidence, 0.5)
    assert.strictEqual(applications(a), 3)
    assert.strictEqual(a.maturity, "established")
    const b = applyFeedback(rule({ confidence: 0.75, maturity: "established", successCount: 9, lastAppliedAt: T0 }), "success", T0)
    assert.strictEqual(b.confidence, 0.8)
    assert.strictEqual(b.maturity, "established")
    const c = applyFeedback(b, "success", T0)
    assert.strictEqual(c.confidence, 0.85)
    assert.strictEqual(c.maturity, "proven")
    // A failure from 0.85 falls to 0.65: still proven (demotion only below 0.5).
    assert.strictEqual(applyFeedback(c, "failure", T0).maturity, "proven")
  })

  it("feedback takes one step even when two would apply", () => {
    const high = applyFeedback(rule({ confidence: 0.95, successCount: 20, lastAppliedAt: T0 }), "success", T0)
    assert.strictEqual(high.maturity, "established")
    const low = applyFeedback(rule({ confidence: 0.3, maturity: "proven", failureCount: 20, lastAppliedAt: T0 }), "failure", T0)
    assert.strictEqual(low.confidence, 0.1)
    assert.strictEqual(low.maturity, "established")
  })
})

describe("sweep", () => {
  const now = T0 + days(400)
  const rules: ReadonlyArray<PlaybookRule> = [
    // Fresh, 0.6 with 3 applications: promoted to established.
    rule({ id: "promote", confidence: 0.6, successCount: 2, failureCount: 1, lastAppliedAt: now }),
    // Proven at 0.9, unused 180 days: 0.225 → established (< 0.5) → nascent (< 0.3); counted once.
    rule({ id: "fall", confidence: 0.9, maturity: "proven", successCount: 12, lastAppliedAt: now - days(180) }),
    // Established at 0.3, unused 90 days: 0.15 → nascent, and a demotion candidate.
    rule({ id: "fade", confidence: 0.3, maturity: "established", successCount: 3, failureCount: 1, lastAppliedAt: now - days(90) }),
    // Demotion candidates only: 0.18 (not < 0.1); 0.09 without more failures; exactly 0.1.
    rule({ id: "low", confidence: 0.18, successCount: 1, failureCount: 4, lastAppliedAt: now }),
    rule({ id: "even", confidence: 0.09, successCount: 2, failureCount: 2, lastAppliedAt: now }),
    rule({ id: "edge-removal", confidence: 0.1, failureCount: 5, lastAppliedAt: now }),
    // Removal candidate: 0.09 with more failures than successes.
    rule({ id: "remove", confidence: 0.09, successCount: 1, failureCount: 3, lastAppliedAt: now }),
    // Exactly 0.2: not a demotion candidate; nothing moves.
    rule({ id: "edge-demotion", confidence: 0.2, lastAppliedAt: now }),
    rule({ id: "steady", confidence: 0.7, maturity: "established", successCount: 5, lastAppliedAt: now })
  ]

  it("settles maturity against the decayed confidence and returns {promoted, demoted, flagged} with the candidates", () => {
    const { report, rules: out } = sweep(rules, now)
    assert.deepStrictEqual(report, {
      promoted: 1,
      demoted: 2,
      flagged: 5,
      demotionCandidates: ["fade", "low", "even", "edge-removal", "remove"],
      removalCandidates: ["remove"]
    })
    assert.deepStrictEqual(
      out.map((r) => [r.id, r.maturity]),
      [
        ["promote", "established"],
        ["fall", "nascent"],
        ["fade", "nascent"],
        ["low", "nascent"],
        ["even", "nascent"],
        ["edge-removal", "nascent"],
        ["remove", "nascent"],
        ["edge-demotion", "nascent"],
        ["steady", "established"]
      ]
    )
  })

  it("leaves the stored confidence (and all but the maturity) as it was", () => {
    const { rules: out } = sweep(rules, now)
    assert.strictEqual(out.length, rules.length)
    out.forEach((r, i) => {
      assert.deepStrictEqual({ ...r, maturity: rules[i]?.maturity }, rules[i])
    })
  })

  it("a second sweep the same day changes nothing; an empty playbook reports zeros", () => {
    const first = sweep(rules, now)
    const second = sweep(first.rules, now)
    assert.deepStrictEqual(second.rules, first.rules)
    assert.strictEqual(second.report.promoted, 0)
    assert.strictEqual(second.report.demoted, 0)
    assert.strictEqual(second.report.flagged, 5)
    assert.deepStrictEqual(sweep([], now).report, { promoted: 0, demoted: 0, flagged: 0, demotionCandidates: [], removalCandidates: [] })
  })
})
