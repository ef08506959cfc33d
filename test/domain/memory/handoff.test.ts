import { assert, describe, it } from "@effect/vitest"
import type { ItemMeta } from "../../../src/domain/memory/context.ts"
import {
  HANDOFF_ACK,
  HANDOFF_MAX_TARGET,
  HANDOFF_SECTIONS,
  handoffTarget,
  isHandoff,
  planHandoff,
  renderHandoff,
  sectionOf
} from "../../../src/domain/memory/handoff.ts"
import { handoffSummary, truncateSections } from "../../../src/domain/memory/handoffText.ts"
import type { SummaryRequest } from "../../../src/domain/memory/summary.ts"
import { summaryPrompt } from "../../../src/domain/memory/summaryPrompts.ts"
import { estimateTextTokens } from "../../../src/domain/message.ts"

const at = (min: number) => Date.UTC(2026, 0, 2, 9, min)
const messages = [
  { role: "user" as const, text: "Move the wiki to the new server. It is slow.", createdAt: at(0) },
  { role: "assistant" as const, text: "We decided to use rsync over ssh. I edited deploy/wiki.conf and src/sync.ts.", createdAt: at(1) },
  { role: "tool_result" as const, text: "[tool error] rsync: connection timed out", createdAt: at(2) },
  { role: "assistant" as const, text: "The copy failed: the new host blocks port 22. Everything else is ready.", createdAt: at(3) },
  { role: "user" as const, text: "Open port 22 on the new host, then retry.", createdAt: at(4) }
]

const headings = (text: string) => text.split("\n").filter((l) => l.startsWith("## "))
const SEVEN = HANDOFF_SECTIONS.map((h) => `## ${h}`)

const msg = (position: number, continuesUnit = false): ItemMeta => ({
  position,
  kind: "message",
  refId: position,
  tokens: 10,
  continuesUnit,
  depth: -1
})
const sum = (position: number): ItemMeta => ({
  position,
  kind: "summary",
  refId: 100 + position,
  tokens: 50,
  continuesUnit: false,
  depth: 0
})

describe("handoff", () => {
  it("targets a third of the input, at most 2000 tokens", () => {
    assert.strictEqual(handoffTarget(3_000), 1_000)
    assert.strictEqual(handoffTarget(60_000), HANDOFF_MAX_TARGET)
    assert.strictEqual(handoffTarget(0), 1)
  })

  it("plans the view's messages outside the tail: after the newest summary, never splitting a unit", () => {
    const plain = Array.from({ length: 30 }, (_, i) => msg(i + 1))
    assert.deepStrictEqual(planHandoff(plain, 20), { previous: undefined, run: { start: 0, end: 10 } })
    // the 20th message from the end continues a unit: the tail starts one earlier
    const unit = plain.map((m, i) => (i === 10 ? msg(11, true) : m))
    assert.deepStrictEqual(planHandoff(unit, 20), { previous: undefined, run: { start: 0, end: 9 } })
    const withSummaries = [sum(1), msg(5), sum(6), ...Array.from({ length: 25 }, (_, i) => msg(10 + i))]
    assert.deepStrictEqual(planHandoff(withSummaries, 20), { previous: 2, run: { start: 3, end: 8 } })
    assert.deepStrictEqual(planHandoff([sum(1), msg(5), msg(6)], 20), { previous: 0, run: { start: 1, end: 1 } })
  })

  it("renders a summary as a user message and an acknowledgement", () => {
    const [user, ack] = renderHandoff({ content: "## Goal\nX", earliestAt: at(0), latestAt: at(5) })
    assert.strictEqual(user.role, "user")
    assert.include(user.content, "<conversation-summary>\n## Goal\nX\n</conversation-summary>")
    assert.include(user.content, "2026-01-02T09:00Z to 2026-01-02T09:05Z")
    assert.deepStrictEqual(ack, { role: "assistant", content: HANDOFF_ACK })
  })
})

describe("handoffSummary (deterministic)", () => {
  it("fills the seven sections from extracted lines", () => {
    const text = handoffSummary({ kind: "leaf", messages }, 500, false)
    assert.deepStrictEqual(headings(text), SEVEN)
    assert.isAtMost(estimateTextTokens(text), 500)
    assert.strictEqual(sectionOf(text, "Goal"), "Move the wiki to the new server.")
    assert.include(sectionOf(text, "Key Decisions"), "We decided to use rsync over ssh.")
    assert.strictEqual(sectionOf(text, "Files Changed"), "- deploy/wiki.conf\n- src/sync.ts")
    assert.include(sectionOf(text, "Blockers / Gotchas"), "[tool error] rsync: connection timed out")
    assert.include(sectionOf(text, "Blockers / Gotchas"), "the new host blocks port 22")
    assert.strictEqual(sectionOf(text, "Current State"), "The copy failed: the new host blocks port 22.")
    assert.strictEqual(sectionOf(text, "Next Steps"), "- Open port 22 on the new host, then retry.")
    assert.isTrue(isHandoff(text))
  })

  it("carries a previous handoff summary forward, section by section", () => {
    const previous = handoffSummary({ kind: "leaf", messages }, 500, false)
    const later = [
      { role: "user" as const, text: "Port 22 is open now.", createdAt: at(10) },
      { role: "assistant" as const, text: "Copied everything; see notes/migration.md.", createdAt: at(11) }
    ]
    const text = handoffSummary({ kind: "leaf", messages: later, previousSummary: previous }, 500, false)
    assert.strictEqual(sectionOf(text, "Goal"), "Move the wiki to the new server.")
    assert.include(sectionOf(text, "Key Decisions"), "rsync over ssh")
    assert.include(sectionOf(text, "Files Changed"), "src/sync.ts")
    assert.include(sectionOf(text, "Files Changed"), "notes/migration.md")
    assert.strictEqual(sectionOf(text, "Next Steps"), "- Port 22 is open now.")
  })

  it("stays within small targets and keeps every heading", () => {
    const many = Array.from({ length: 200 }, (_, i) => ({
      role: i % 2 === 0 ? "user" as const : "assistant" as const,
      text: `Step ${i}: we decided to touch src/file${i}.ts because the build failed again and again.`,
      createdAt: at(i)
    }))
    for (const target of [80, 120, 300, 2_000]) {
      for (const aggressive of [false, true]) {
        const text = handoffSummary({ kind: "leaf", messages: many }, target, aggressive)
        assert.isAtMost(estimateTextTokens(text), target, `target ${target}`)
        assert.deepStrictEqual(headings(text), SEVEN, `target ${target}`)
      }
    }
  })
})

describe("truncateSections", () => {
  it("cuts sections fairly so that every heading survives", () => {
    const long = HANDOFF_SECTIONS.map((h, i) => `## ${h}\n${i === 6 ? "Very long. ".repeat(400) : "Short line."}`).join("\n\n")
    const cut = truncateSections(long, 150)
    assert.isAtMost(estimateTextTokens(cut), 150)
    assert.deepStrictEqual(headings(cut), SEVEN)
    assert.strictEqual(sectionOf(cut, "Goal"), "Short line.")
    assert.strictEqual(truncateSections("## Goal\nfits", 100), "## Goal\nfits")
    // no sections: a plain sentence cut
    assert.isAtMost(estimateTextTokens(truncateSections("One sentence. ".repeat(100), 20)), 20)
  })
})

describe("summaryPrompt (handoff)", () => {
  const request = (previousSummary?: string): SummaryRequest => ({
    sessionKey: "k",
    mode: "normal",
    targetTokens: 400,
    style: "handoff",
    input: { kind: "leaf", messages, ...(previousSummary === undefined ? {} : { previousSummary }) }
  })

  it("asks for the seven sections, self-contained, within the target, without an expand line", () => {
    const p = summaryPrompt(request())
    for (const h of SEVEN) assert.include(p.system, `\n${h}\n`.replace(/\n$/, ""))
    assert.include(p.system, "self-contained")
    assert.include(p.system, "no access to the prior conversation")
    assert.include(p.system, "about 400 tokens")
    assert.notInclude(p.system, "Expand for details about")
    assert.include(p.user, "[user 2026-01-02 09:00]\nMove the wiki to the new server.")
    assert.notInclude(p.user, "<earlier-summary>")
    assert.include(summaryPrompt({ ...request(), mode: "aggressive" }).system, "Be aggressive")
  })

  it("folds the earlier summary in", () => {
    const p = summaryPrompt(request("## Goal\nMove the wiki."))
    assert.include(p.user, "<earlier-summary>\n## Goal\nMove the wiki.\n</earlier-summary>")
    assert.isBelow(p.user.indexOf("<earlier-summary>"), p.user.indexOf("<conversation>"))
    assert.include(p.system, "fold it in")
  })
})
