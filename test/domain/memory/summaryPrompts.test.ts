import { assert, describe, it } from "@effect/vitest"
import { summaryPrompt } from "../../../src/domain/memory/summaryPrompts.ts"
import type { SummaryRequest } from "../../../src/domain/memory/summary.ts"

const leaf = (mode: "normal" | "aggressive"): SummaryRequest => ({
  sessionKey: "k",
  mode,
  targetTokens: 300,
  input: {
    kind: "leaf",
    messages: [
      { role: "user", text: "Put the backups in /srv/backups please.", createdAt: Date.UTC(2026, 0, 2, 9, 30) },
      { role: "assistant", text: "Done: cron job `backup.sh` at 02:00.", createdAt: Date.UTC(2026, 0, 2, 9, 31) }
    ]
  }
})

const condensed = (depth: number): SummaryRequest => ({
  sessionKey: "k",
  mode: "normal",
  targetTokens: 500,
  input: {
    kind: "condensed",
    depth,
    summaries: [
      { id: "sum_1", content: "First part.", earliestAt: 0, latestAt: 1000 },
      { id: "sum_2", content: "Second part.", earliestAt: 2000, latestAt: 3000 }
    ]
  }
})

describe("summaryPrompt", () => {
  it("gives the model the whole transcript with roles and times, and asks for the expand line", () => {
    const p = summaryPrompt(leaf("normal"))
    assert.include(p.user, "[user 2026-01-02 09:30]\nPut the backups in /srv/backups please.")
    assert.include(p.user, "[assistant 2026-01-02 09:31]")
    assert.include(p.system, "file paths")
    assert.include(p.system, "open questions")
    assert.include(p.system, "\"Expand for details about: \"")
    assert.include(p.system, "about 300 tokens")
    assert.strictEqual(p.maxTokens, Math.ceil(300 * 1.5) + 64)
  })

  it("aggressive mode asks for durable facts only", () => {
    const normal = summaryPrompt(leaf("normal")).system
    const aggressive = summaryPrompt(leaf("aggressive")).system
    assert.notStrictEqual(normal, aggressive)
    assert.include(aggressive, "Be aggressive")
    assert.notInclude(normal, "Be aggressive")
  })

  it("condensed prompts carry the sources' ids and time ranges, and depend on depth", () => {
    const d0 = summaryPrompt(condensed(0))
    const d2 = summaryPrompt(condensed(2))
    assert.include(d0.user, "<summary id=\"sum_1\" from=\"1970-01-01 00:00\" to=\"1970-01-01 00:00\">\nFirst part.\n</summary>")
    assert.include(d0.system, "consecutive parts of a conversation")
    assert.include(d2.system, "level 2")
    assert.include(d2.system, "high level")
    assert.notStrictEqual(d0.system, d2.system)
  })
})
