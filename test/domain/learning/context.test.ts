/**
 * Context injection against issue 15: relevance = matching / total tags (case-insensitive), score =
 * decayed confidence × relevance, anti-patterns × 1.5, nothing under 0.05, at most 10 rules and 500
 * tokens, and the prompt text in the design's format.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { DAY_MS } from "../../../src/domain/learning/confidence.ts"
import {
  ANTI_PATTERN_BOOST,
  formatForPrompt,
  MAX_INJECTED_RULES,
  MAX_INJECTED_TOKENS,
  MIN_INJECTED_SCORE,
  relevance,
  ruleLine,
  scoreRules,
  selectRules
} from "../../../src/domain/learning/context.ts"
import type { PlaybookRule } from "../../../src/domain/learning/rule.ts"
import { estimateTextTokens } from "../../../src/domain/message.ts"

const NOW = Date.UTC(2026, 2, 1, 12)

const rule = (id: string, over: Partial<PlaybookRule> = {}): PlaybookRule => ({
  id,
  text: `Rule ${id}`,
  confidence: 0.5,
  maturity: "nascent",
  successCount: 0,
  failureCount: 0,
  antiPattern: false,
  sourceEntries: [],
  tags: ["x"],
  createdAt: NOW - 10 * DAY_MS,
  lastAppliedAt: NOW,
  ...over
})

const ids = (rules: ReadonlyArray<{ readonly rule: PlaybookRule }>) => rules.map((s) => s.rule.id)

describe("the selection's numbers", () => {
  it("are named constants: 10 rules, 500 tokens, 0.05, anti-patterns × 1.5", () => {
    expect(MAX_INJECTED_RULES).toBe(10)
    expect(MAX_INJECTED_TOKENS).toBe(500)
    expect(MIN_INJECTED_SCORE).toBe(0.05)
    expect(ANTI_PATTERN_BOOST).toBe(1.5)
  })
})

describe("scoring", () => {
  it("relevance is the share of the rule's tags in the conversation's tags, case-insensitively", () => {
    const current = new Set(["docker", "rust"])
    assert.strictEqual(relevance(["Docker", "python", "RUST"], current), 2 / 3)
    assert.strictEqual(relevance(["docker"], current), 1)
    assert.strictEqual(relevance(["python"], current), 0)
    // Repeats and blanks of the rule's own tags do not count twice.
    assert.strictEqual(relevance(["docker", " Docker ", "", "go"], current), 0.5)
    // A rule without tags says nothing about when it applies.
    assert.strictEqual(relevance([], current), 0)
  })

  it("score is the decayed confidence × relevance; an anti-pattern's is × 1.5", () => {
    const old = { confidence: 0.8, tags: ["a", "b"], lastAppliedAt: NOW - 90 * DAY_MS }
    const scored = scoreRules([rule("plain", old), rule("avoid", { ...old, antiPattern: true, text: "AVOID: b" })], ["A", "c"], NOW)
    // The boost puts the anti-pattern first.
    assert.deepStrictEqual(ids(scored), ["avoid", "plain"])
    const [avoid, plain] = scored
    assert.strictEqual(plain?.confidence, 0.4)
    assert.strictEqual(plain?.relevance, 0.5)
    assert.strictEqual(plain?.score, 0.2)
    assert.closeTo(avoid?.score ?? 0, 0.3, 1e-15)
    assert.strictEqual(plain?.line, "[NASCENT] Rule plain (confidence: 0.40)")
    assert.strictEqual(plain?.tokens, estimateTextTokens("[NASCENT] Rule plain (confidence: 0.40)"))
  })

  it("orders by score, ties by id", () => {
    const scored = scoreRules([rule("b"), rule("c", { confidence: 0.9 }), rule("a")], ["x"], NOW)
    assert.deepStrictEqual(ids(scored), ["c", "a", "b"])
  })

  it("writes `[MATURITY] text (confidence: x.xx)` lines, and `AVOID: …` for anti-patterns", () => {
    assert.strictEqual(ruleLine(rule("p", { maturity: "proven", text: "Use handle_continue" }), 0.925), "[PROVEN] Use handle_continue (confidence: 0.93)")
    assert.strictEqual(ruleLine(rule("a", { antiPattern: true, text: "AVOID: gen_statem" }), 0.5), "AVOID: gen_statem (confidence: 0.50)")
    assert.strictEqual(ruleLine(rule("a", { antiPattern: true, text: "gen_statem" }), 0.5), "AVOID: gen_statem (confidence: 0.50)")
  })
})

describe("selection", () => {
  it("takes a rule scoring exactly 0.05 and leaves one at 0.0499", () => {
    const chosen = selectRules(
      [
        rule("exact", { confidence: 0.05 }),
        rule("under", { confidence: 0.0499 }),
        rule("half", { confidence: 0.1, tags: ["x", "y"] }),
        rule("zero", { confidence: 0.9, tags: ["other"] })
      ],
      ["X"],
      NOW
    )
    assert.deepStrictEqual(ids(chosen.rules), ["exact", "half"])
    assert.deepStrictEqual(chosen.rules.map((s) => s.score), [0.05, 0.05])
  })

  it("lifts an anti-pattern over the cut-off with its boost (0.04 × 1.5 in, 0.0333 × 1.5 out)", () => {
    const chosen = selectRules(
      [rule("lifted", { confidence: 0.04, antiPattern: true }), rule("sunk", { confidence: 0.0333, antiPattern: true }), rule("plain", { confidence: 0.04 })],
      ["x"],
      NOW
    )
    assert.deepStrictEqual(ids(chosen.antiPatterns), ["lifted"])
    assert.deepStrictEqual(ids(chosen.rules), [])
  })

  it("takes the 10 best of 12 rules, anti-patterns counted among them", () => {
    const rules = Array.from({ length: 12 }, (_, i) => rule(`r${String(i).padStart(2, "0")}`, { confidence: 0.3 + i * 0.05, antiPattern: i === 5 }))
    const chosen = selectRules(rules, ["x"], NOW)
    assert.strictEqual(chosen.rules.length + chosen.antiPatterns.length, 10)
    assert.deepStrictEqual(ids(chosen.antiPatterns), ["r05"])
    assert.deepStrictEqual(ids(chosen.rules), ["r11", "r10", "r09", "r08", "r07", "r06", "r04", "r03", "r02"])
    assert.closeTo(chosen.totalScore, [...chosen.rules, ...chosen.antiPatterns].reduce((n, s) => n + s.score, 0), 1e-12)
  })

  it("stays within 500 tokens: long rules past the budget are skipped, a shorter one that fits exactly is taken", () => {
    // Each long line is 480 characters: 120 tokens. Four fill 480; the fifth would pass 500.
    const long = (id: string) => rule(id, { confidence: 0.9, text: `Keep ${id} `.padEnd(451, "x") })
    const longs = ["l1", "l2", "l3", "l4", "l5"].map(long)
    assert.strictEqual(ruleLine(longs[0] ?? rule("?"), 0.9).length, 480)
    // An 80-character line (20 tokens) fills the budget to exactly 500; after it nothing fits.
    const fits = rule("fits", { confidence: 0.5, text: "Fits ".padEnd(51, "y") })
    assert.strictEqual(ruleLine(fits, 0.5).length, 80)
    const after = rule("after", { confidence: 0.4, text: "z" })
    const chosen = selectRules([...longs, fits, after], ["x"], NOW)
    assert.deepStrictEqual(ids(chosen.rules), ["l1", "l2", "l3", "l4", "fits"])
    assert.strictEqual(chosen.tokenCount, 500)
    assert.strictEqual(chosen.tokenCount, chosen.rules.reduce((n, s) => n + s.tokens, 0))
  })

  it("chooses nothing for a conversation without matching tags", () => {
    const chosen = selectRules([rule("a"), rule("b")], ["nothing-here"], NOW)
    assert.deepStrictEqual(chosen, { rules: [], antiPatterns: [], totalScore: 0, tokenCount: 0 })
  })
})

describe("the prompt", () => {
  const rules = [
    rule("sse", { maturity: "established", confidence: 0.75, text: "Always buffer SSE chunks until the blank line", tags: ["streaming", "sse"] }),
    rule("phase", { maturity: "proven", confidence: 0.92, text: "Use handle_continue for phase transitions", tags: ["elixir", "genserver"] }),
    rule("statem-avoid", { antiPattern: true, confidence: 0.67, text: "AVOID: Using gen_statem for simple state machines", tags: ["elixir"] }),
    rule("other", { confidence: 0.9, tags: ["python"] })
  ]

  it("is the design's text: guidelines best first, then the patterns to avoid", () => {
    const text = formatForPrompt(selectRules(rules, ["SSE", "Streaming", "elixir", "GenServer"], NOW))
    assert.strictEqual(
      text,
      [
        "## Relevant Guidelines",
        "",
        "The following rules are based on past experience with similar tasks:",
        "",
        "1. [PROVEN] Use handle_continue for phase transitions (confidence: 0.92)",
        "2. [ESTABLISHED] Always buffer SSE chunks until the blank line (confidence: 0.75)",
        "",
        "## Patterns to Avoid",
        "",
        "These patterns have caused problems in similar past work:",
        "",
        "1. AVOID: Using gen_statem for simple state machines (confidence: 0.67)"
      ].join("\n")
    )
  })

  it("has only the section that has rules, and is empty when none was chosen", () => {
    // The line shows the decayed confidence (0.75), not the score (0.75 × ½ of the tags = 0.375).
    assert.strictEqual(
      formatForPrompt(selectRules(rules, ["sse"], NOW)),
      "## Relevant Guidelines\n\nThe following rules are based on past experience with similar tasks:\n\n1. [ESTABLISHED] Always buffer SSE chunks until the blank line (confidence: 0.75)"
    )
    assert.strictEqual(
      formatForPrompt(selectRules([rules[2] ?? rule("?")], ["elixir"], NOW)),
      "## Patterns to Avoid\n\nThese patterns have caused problems in similar past work:\n\n1. AVOID: Using gen_statem for simple state machines (confidence: 0.67)"
    )
    assert.strictEqual(formatForPrompt(selectRules(rules, [], NOW)), "")
    assert.strictEqual(formatForPrompt(selectRules([], ["sse"], NOW)), "")
  })
})
