/**
 * Properties of the playbook's math (issue 15) over random rules, times and feedback:
 *
 * - confidence stays in [0, 1] after any sequence of feedback at any times (clock going backwards
 *   included), and so does the decayed confidence read at any time;
 * - a sweep is idempotent on the same day: a second sweep changes no rule and reports nothing
 *   promoted or demoted, and no sweep changes a stored confidence;
 * - the selection never passes 10 rules or 500 tokens, never takes a score under 0.05, is ordered
 *   by score, scores as `decayed × matching / total tags (× 1.5)`, and drops an eligible better rule
 *   only when it would not fit in the tokens left;
 * - feedback moves the maturity by at most one level.
 *
 * Confidences are drawn on a grid of 1/10,000 (what the YAML keeps) with the design's edges (0.05,
 * 0.1, 0.2, 0.3, 0.5, 0.8) drawn on purpose often.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { applyFeedback, DAY_MS, decayed, maturityStep, type Outcome, sweep } from "../../src/domain/learning/confidence.ts"
import { ANTI_PATTERN_BOOST, MAX_INJECTED_RULES, MAX_INJECTED_TOKENS, MIN_INJECTED_SCORE, ruleLine, selectRules } from "../../src/domain/learning/context.ts"
import { MATURITIES, type Maturity, type PlaybookRule } from "../../src/domain/learning/rule.ts"
import { estimateTextTokens } from "../../src/domain/message.ts"

const NOW = Date.UTC(2026, 2, 1, 12)
const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
const bool = Arbitrary.schema(Schema.Boolean)
const pick = <const A extends string>(values: ReadonlyArray<A>) => Arbitrary.schema(Schema.Literals(values))

const EDGES = [0, 0.05, 0.0499, 0.1, 0.2, 0.3, 0.2999, 0.5, 0.4999, 0.8, 0.8001, 1]
const confidence = Arbitrary.all({ edge: bool, i: int(0, EDGES.length - 1), raw: int(0, 10_000) }).pipe(
  Arbitrary.map(({ edge, i, raw }) => (edge ? (EDGES[i] ?? 0) : raw / 10_000))
)

/** Rule tags in mixed case, so matching must fold case. */
const TAGS = ["docker", "Docker", "rust", "SSE", "sse", "elixir", "python", "go", "k8s", "streaming"] as const

const ruleSpec = Arbitrary.all({
  confidence,
  maturity: pick(MATURITIES),
  successes: int(0, 25),
  failures: int(0, 25),
  antiPattern: bool,
  tags: Arbitrary.array(pick(TAGS), { minLength: 1, maxLength: 3 }),
  createdDaysAgo: int(-30, 500),
  applied: bool,
  appliedDaysAgo: int(-30, 250),
  long: bool,
  textLength: int(1, 40),
  longTextLength: int(150, 700)
})
type RuleSpec = typeof ruleSpec extends Arbitrary.Arbitrary<infer A> ? A : never

const toRule = (s: RuleSpec, index: number): PlaybookRule => ({
  id: `r${index}`,
  text: `Rule ${index} `.padEnd(s.long ? s.longTextLength : s.textLength, "w"),
  confidence: s.confidence,
  maturity: s.maturity,
  successCount: s.successes,
  failureCount: s.failures,
  antiPattern: s.antiPattern,
  sourceEntries: [],
  tags: s.tags,
  createdAt: NOW - s.createdDaysAgo * DAY_MS,
  lastAppliedAt: s.applied ? NOW - s.appliedDaysAgo * DAY_MS : null
})

const rules = Arbitrary.array(ruleSpec, { maxLength: 40 }).pipe(Arbitrary.map((specs) => specs.map(toRule)))
const rule = ruleSpec.pipe(Arbitrary.map((s) => toRule(s, 0)))
const outcome = pick<Outcome>(["success", "failure"])
/** Feedback at a time from 200 days before NOW to 2,000 days after, in any order. */
const step = Arbitrary.all({ outcome, day: int(-200, 2000), minutes: int(0, 1440) })
const atTime = (s: { readonly day: number; readonly minutes: number }) => NOW + s.day * DAY_MS + s.minutes * 60_000

const level = (m: Maturity): number => MATURITIES.indexOf(m)
const inUnit = (x: number) => Number.isFinite(x) && x >= 0 && x <= 1

describe("learning properties", () => {
  it.prop(
    "confidence stays in [0, 1] after any sequence of feedback at any times",
    { start: rule, steps: Arbitrary.array(step, { minLength: 1, maxLength: 40 }), probe: int(-100, 3000) },
    ({ start, steps, probe }) => {
      let r = start
      for (const s of steps) {
        const t = atTime(s)
        const next = applyFeedback(r, s.outcome, t)
        assert.isTrue(inUnit(next.confidence), `stored ${next.confidence}`)
        assert.isTrue(inUnit(decayed(next, t)))
        assert.isTrue(inUnit(decayed(next, NOW + probe * DAY_MS)))
        assert.strictEqual(next.successCount + next.failureCount, r.successCount + r.failureCount + 1)
        // Four decimals, as the YAML keeps them.
        assert.strictEqual(Math.round(next.confidence * 10_000) / 10_000, next.confidence)
        r = next
      }
    },
    { arbitrary: { runs: 300, size: 40 } }
  )

  it.prop(
    "feedback moves the maturity by at most one level",
    { r: rule, outcome, s: step },
    ({ r, outcome: o, s }) => {
      const next = applyFeedback(r, o, atTime(s))
      assert.isAtMost(Math.abs(level(next.maturity) - level(r.maturity)), 1)
      // …and that one step is the step its stored confidence and applications call for.
      assert.strictEqual(next.maturity, maturityStep(r.maturity, next.confidence, next.successCount + next.failureCount))
    },
    { arbitrary: { runs: 500, size: 40 } }
  )

  it.prop(
    "a sweep is idempotent on the same day and never changes a stored confidence",
    { rs: rules, later: int(0, 800) },
    ({ rs, later }) => {
      const now = NOW + later * DAY_MS
      const first = sweep(rs, now)
      const second = sweep(first.rules, now)
      assert.deepStrictEqual(second.rules, first.rules)
      assert.strictEqual(second.report.promoted, 0)
      assert.strictEqual(second.report.demoted, 0)
      assert.deepStrictEqual(
        [second.report.flagged, second.report.demotionCandidates, second.report.removalCandidates],
        [first.report.flagged, first.report.demotionCandidates, first.report.removalCandidates]
      )
      assert.deepStrictEqual(first.rules.map((r) => r.confidence), rs.map((r) => r.confidence))
      // Every rule's maturity is settled: no step moves it any more.
      for (const r of first.rules) {
        assert.strictEqual(maturityStep(r.maturity, decayed(r, now), r.successCount + r.failureCount), r.maturity)
      }
      assert.isAtMost(first.report.promoted + first.report.demoted, rs.length)
    },
    { arbitrary: { runs: 300, size: 40 } }
  )

  it.prop(
    "selection never passes 10 rules / 500 tokens, never takes a score under 0.05, and is ordered by score",
    { rs: rules, current: Arbitrary.array(pick(TAGS), { minLength: 2, maxLength: 8 }), later: int(0, 90) },
    ({ rs, current, later }) => {
      const now = NOW + later * DAY_MS
      const picked = selectRules(rs, current, now)
      const chosen = [...picked.rules, ...picked.antiPatterns]
      assert.isAtMost(chosen.length, MAX_INJECTED_RULES)
      assert.isAtMost(picked.tokenCount, MAX_INJECTED_TOKENS)
      assert.strictEqual(picked.tokenCount, chosen.reduce((n, s) => n + s.tokens, 0))
      assert.isTrue(picked.rules.every((s) => !s.rule.antiPattern) && picked.antiPatterns.every((s) => s.rule.antiPattern))

      const currentTags = new Set(current.map((t) => t.toLowerCase()))
      const expectedScore = (r: PlaybookRule): number => {
        const own = [...new Set(r.tags.map((t) => t.toLowerCase()))]
        const rel = own.length === 0 ? 0 : own.filter((t) => currentTags.has(t)).length / own.length
        return decayed(r, now) * rel * (r.antiPattern ? ANTI_PATTERN_BOOST : 1)
      }
      for (const list of [picked.rules, picked.antiPatterns]) {
        list.forEach((s, i) => {
          assert.isAtLeast(s.score, MIN_INJECTED_SCORE)
          assert.closeTo(s.score, expectedScore(s.rule), 1e-12)
          if (i > 0) assert.isAtMost(s.score, list[i - 1]?.score ?? Number.POSITIVE_INFINITY)
        })
      }

      // An eligible rule left out while a lower-scoring one was taken (or while fewer than 10 were
      // taken) did not fit in the tokens that were left.
      const chosenIds = new Set(chosen.map((s) => s.rule.id))
      const lowest = chosen.reduce((m, s) => Math.min(m, s.score), Number.POSITIVE_INFINITY)
      for (const r of rs) {
        const score = expectedScore(r)
        if (chosenIds.has(r.id) || score < MIN_INJECTED_SCORE + 1e-12) continue
        if (chosen.length === MAX_INJECTED_RULES && !(score > lowest + 1e-12)) continue
        assert.isAbove(estimateTextTokens(ruleLine(r, decayed(r, now))), MAX_INJECTED_TOKENS - picked.tokenCount, r.id)
      }
    },
    { arbitrary: { runs: 300, size: 80 } }
  )
})
