/**
 * Independent check of a handoff compaction (memory/simple) against the snapshots before and after
 * it and the messages a test appended: the rule of the issue re-derived here (Simple's view = the
 * newest live summary and the messages after it; the run = the view's messages outside the fresh
 * tail, unit-aligned), not taken from the code under test.
 */
import { assert } from "@effect/vitest"
import type { ItemMeta } from "../../../src/domain/memory/context.ts"
import { tailTokensOf } from "../../../src/domain/memory/fit.ts"
import {
  HANDOFF_FRAME_TOKENS,
  HANDOFF_MIN_TARGET,
  HANDOFF_SECTIONS,
  handoffTarget
} from "../../../src/domain/memory/handoff.ts"
import { type CompactionReport, type CompactOptions, DEFAULT_FRESH_TAIL } from "../../../src/domain/memory/types.ts"
import { estimateTextTokens, type NewMessage } from "../../../src/domain/message.ts"
import { continuesPrevious, simpleView, simpleViewTokens, type Snapshot, tailStartOf } from "./check.ts"

/** The messages a handoff would summarize now, and the previous summary's text. */
const runOf = (snap: Snapshot, appended: ReadonlyArray<NewMessage>, freshTail: number, budget: number | undefined) => {
  const view = simpleView(snap)
  const seqById = new Map(snap.history.map((m) => [m.id, m.seq]))
  const continues = (it: ItemMeta) => it.kind === "message" && continuesPrevious(appended, seqById.get(it.refId) ?? -1)
  const head = view[0]
  const previous = head?.kind === "summary" ? snap.summaries.find((s) => s.id === head.refId) : undefined
  const start = previous === undefined ? 0 : 1
  // With a budget, the tail is also capped by its share of it (over the messages after the summary).
  const tailStart = start + tailStartOf(view.slice(start), continues, freshTail, budget === undefined ? undefined : tailTokensOf(budget))
  const run = view.slice(start, Math.max(start, tailStart))
  const runTokens = run.reduce((n, it) => n + it.tokens, 0)
  const previousTokens = previous === undefined ? 0 : estimateTextTokens(previous.content)
  const worth = runTokens > 2 * HANDOFF_FRAME_TOKENS && handoffTarget(runTokens + previousTokens) >= HANDOFF_MIN_TARGET
  return { run, worth, tail: view.slice(Math.max(start, tailStart)) }
}

/**
 * A handoff report is truthful: token counts are Simple's view before and after; at most one new
 * summary, a leaf (depth 0) of exactly the run, in the seven sections (the deterministic summarizer
 * always has room for them); the fresh tail untouched; below_threshold ⇔ at or under 0.75 × budget;
 * nothing tried when already below; a run not worth a summary is no_candidates; a committed summary
 * shrinks the view and leaves no run behind.
 */
export const assertHandoffReport = (args: {
  readonly report: CompactionReport
  readonly before: Snapshot
  readonly after: Snapshot
  readonly options: CompactOptions
  readonly appended: ReadonlyArray<NewMessage>
}) => {
  const { report, before, after, options, appended } = args
  const what = `handoff compact(${JSON.stringify(options)}) → ${JSON.stringify({ ...report, summary: undefined })}`
  assert.strictEqual(report.tokensBefore, simpleViewTokens(before), `${what}: tokensBefore`)
  assert.strictEqual(report.tokensAfter, simpleViewTokens(after), `${what}: tokensAfter`)
  const old = new Set(before.summaries.map((s) => s.id))
  const created = after.summaries.filter((s) => !old.has(s.id))
  assert.isAtMost(created.length, 1, `${what}: more than one summary`)
  assert.strictEqual(report.compacted, created.length === 1, `${what}: compacted`)
  assert.deepStrictEqual([report.leafSummaries, report.condensedSummaries], [created.length, 0], `${what}: summary counts`)
  assert.isAtMost(report.passes, 1, `${what}: passes`)

  const freshTail = Math.max(1, options.freshTail ?? DEFAULT_FRESH_TAIL)
  const limit = options.budget === undefined ? undefined : options.target ?? 0.75 * options.budget
  const plan = runOf(before, appended, freshTail, options.budget)
  const below = limit !== undefined && report.tokensAfter <= limit
  assert.strictEqual(report.stopReason === "below_threshold", below, `${what}: below_threshold`)
  if (limit !== undefined && report.tokensBefore <= limit) {
    assert.deepStrictEqual([report.passes, report.compacted], [0, false], `${what}: work done although below threshold`)
    return
  }
  if (!plan.worth) {
    assert.deepStrictEqual(
      [report.passes, report.compacted, report.stopReason],
      [0, false, "no_candidates"],
      `${what}: no run worth it`
    )
    return
  }
  assert.strictEqual(report.passes, 1, `${what}: a run worth it was not tried`)
  assert.include(["below_threshold", "no_candidates", "no_progress"], report.stopReason, `${what}: stop reason`)
  const s = created[0]
  if (s === undefined) {
    assert.strictEqual(report.tokensAfter, report.tokensBefore, `${what}: nothing committed, yet the view changed`)
    return
  }
  assert.isBelow(report.tokensAfter, report.tokensBefore, `${what}: the view did not shrink`)
  assert.notStrictEqual(report.stopReason, "no_progress", `${what}: no_progress after a commit`)
  assert.deepInclude(s, { kind: "leaf", depth: 0 }, `${what}: kind`)
  const links = after.links.get(s.id)
  assert.deepStrictEqual(links?.sourceMessages, plan.run.map((it) => it.refId), `${what}: the summary's messages are not the run`)
  assert.deepStrictEqual(links?.constituents, [], `${what}: a handoff leaf has constituents`)
  assert.deepStrictEqual(report.summary?.content, s.content, `${what}: reported summary`)
  const headings = s.content.split("\n").filter((l) => l.startsWith("## "))
  assert.deepStrictEqual(headings, HANDOFF_SECTIONS.map((h) => `## ${h}`), `${what}: sections`)
  // The fresh tail is still live, and nothing is left to summarize.
  const live = new Set(after.items.map((it) => `${it.kind}:${it.refId}`))
  for (const it of plan.tail) assert.isTrue(live.has(`${it.kind}:${it.refId}`), `${what}: fresh-tail item ${it.refId} compacted`)
  assert.strictEqual(runOf(after, appended, freshTail, options.budget).run.length, 0, `${what}: a run is left`)
}
