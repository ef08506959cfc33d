/**
 * `anna playbook context --json` explains the selection the prompt gets: for any rules and tags, the
 * rules it marks chosen are exactly those `selectRules` chose, and every other rule carries the
 * reason that kept it out (count, score, budget, another user's).
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { MAX_INJECTED_RULES, MAX_INJECTED_TOKENS, MIN_INJECTED_SCORE, selectRules } from "../../../src/domain/learning/context.ts"
import type { PlaybookRule, SourcedRule } from "../../../src/domain/learning/rule.ts"
import {
  explainSelection,
  WHY_CHOSEN,
  WHY_LOW_SCORE,
  WHY_OTHER_USER,
  WHY_OVER_BUDGET,
  WHY_TOO_MANY
} from "../../../src/layers/learning/playbookExplain.ts"

const TAGS = ["docker", "ci", "git", "python"]
const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
const rulesArb = Arbitrary.array(
  Arbitrary.all({
    words: int(1, 60),
    confidence: int(0, 100),
    tags: Arbitrary.array(int(0, TAGS.length - 1), { maxLength: 3 }),
    anti: Arbitrary.schema(Schema.Boolean),
    user: int(0, 2),
    agent: Arbitrary.schema(Schema.Boolean)
  }),
  { maxLength: 30 }
).pipe(
  Arbitrary.map((rs) =>
    rs.map((r, i): SourcedRule => ({
      source: r.agent ? "agent" : "global",
      rule: {
        id: `r${String(i).padStart(2, "0")}`, text: Array.from({ length: r.words }, (_, w) => `word${w}`).join(" "), confidence: r.confidence / 100,
        maturity: "nascent", successCount: 0, failureCount: 0, antiPattern: r.anti, sourceEntries: [], tags: r.tags.map((t) => TAGS[t] ?? "x"),
        createdAt: 0, lastAppliedAt: null, ...(r.user === 0 ? {} : { user: r.user === 1 ? "alice" : "bob" })
      }
    }))
  )
)

describe("playbook context explained", () => {
  it.prop("chosen is exactly what selectRules chooses; every other rule has its reason", {
    rules: rulesArb,
    tags: Arbitrary.array(int(0, TAGS.length - 1), { maxLength: 4 })
  }, ({ rules, tags }) => {
    const current = tags.map((t) => TAGS[t] ?? "x")
    const visible: Array<PlaybookRule> = rules.map((s) => s.rule).filter((r) => r.user === undefined || r.user === "alice")
    const selected = selectRules(visible, current, 0)
    const explained = explainSelection(rules, "alice", current, 0)
    assert.strictEqual(explained.length, rules.length)
    assert.deepStrictEqual(
      explained.filter((c) => c.chosen).map((c) => c.id).sort(),
      [...selected.rules, ...selected.antiPatterns].map((s) => s.rule.id).sort()
    )
    for (const c of explained) {
      assert.strictEqual(c.chosen, c.why === WHY_CHOSEN)
      if (c.why === WHY_OTHER_USER) assert.strictEqual(c.user, "bob")
      if (c.why === WHY_LOW_SCORE) assert.isBelow(c.score, MIN_INJECTED_SCORE + 0.0001)
      assert.strictEqual(c.source, rules.find((s) => s.rule.id === c.id)?.source)
    }
    const chosenTokens = explained.filter((c) => c.chosen).reduce((n, c) => n + c.tokens, 0)
    assert.strictEqual(chosenTokens, selected.tokenCount)
    for (const c of explained.filter((x) => x.why === WHY_OVER_BUDGET)) assert.isAbove(c.tokens + 0, 0)
    if (explained.some((c) => c.why === WHY_TOO_MANY)) assert.strictEqual(explained.filter((c) => c.chosen).length, MAX_INJECTED_RULES)
  }, { arbitrary: { runs: 300 } })

  it("names each reason: 10 rules already, the 500-token budget, a low score, another user", () => {
    const rule = (id: string, over: Partial<PlaybookRule> = {}): SourcedRule => ({
      source: "global",
      rule: { id, text: `Rule ${id}`, confidence: 0.9, maturity: "nascent", successCount: 0, failureCount: 0, antiPattern: false, sourceEntries: [], tags: ["docker"], createdAt: 0, lastAppliedAt: null, ...over }
    })
    const many = Array.from({ length: 11 }, (_, i) => rule(`a${String(i).padStart(2, "0")}`))
    assert.deepStrictEqual(explainSelection(many, "u", ["docker"], 0).map((c) => c.why), [...Array(10).fill(WHY_CHOSEN), WHY_TOO_MANY])
    // About four characters a token: 400 tokens, then 150 more would pass 500.
    const long = rule("long", { text: "word ".repeat(320).trim(), confidence: 0.95 })
    const next = rule("next", { text: "x ".repeat(300).trim(), confidence: 0.9 })
    const why = explainSelection([long, next, rule("low", { confidence: 0.04 }), rule("bobs", { user: "bob" })], "u", ["docker"], 0)
    assert.deepStrictEqual(why.map((c) => [c.id, c.why]), [["long", WHY_CHOSEN], ["next", WHY_OVER_BUDGET], ["low", WHY_LOW_SCORE], ["bobs", WHY_OTHER_USER]])
    assert.isAbove((why[0]?.tokens ?? 0) + (why[1]?.tokens ?? 0), MAX_INJECTED_TOKENS)
    assert.deepStrictEqual([WHY_LOW_SCORE, WHY_OVER_BUDGET, WHY_TOO_MANY], ["score below 0.05", "over the 500-token budget", "10 rules already"])
  })
})
