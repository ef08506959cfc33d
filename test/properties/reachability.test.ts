/**
 * Memory that fits any window (issue 11): a random session (tool pairs, CJK, huge pastes, images)
 * goes turn by turn through what the runtime does — append, then `worthCompacting` and a capped
 * `compact({ budget, target, full })` — for an agent whose window is anywhere from 2k to 1M tokens (budget =
 * window − its proportional output reserve), on a random engine configuration. Then it is compacted
 * to fit (the runtime's gate and compaction until the gate says no) and assembled with that budget.
 *
 * Reachability: let f be the oldest raw message in the assembled context (by seq; none: past the
 * last). Every message older than f is reachable from the assembled context through the DAG: it is
 * a source of a leaf summary that is in the assembled context, or of a leaf below a condensed summary
 * that is (following `ctx_summary_parents` down). So the oldest history is never what a small window
 * loses. It is asked of every case whose newest unit — which is never compacted — fits the fresh
 * tail's share of the budget (otherwise nothing but that unit can be sent at all); at least most
 * cases must qualify.
 *
 * Along the way: the assembly invariants (order, tail, budget, pairing) of check.ts; at most
 * MAX_SUMMARIZER_CALLS_PER_TURN summarizer calls per turn; and never twice in a row for nothing — a
 * compaction that gained less than the minimum gain is not followed by another before the context
 * has grown by that much.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Ref } from "effect"
import { outputReserve } from "../../src/domain/config/agent.ts"
import { compactionTarget, minGainOf, TAIL_SHARE } from "../../src/domain/memory/fit.ts"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import { estimateMessageTokens, type NewMessage } from "../../src/domain/message.ts"
import { MAX_SUMMARIZER_CALLS_PER_TURN } from "../../src/layers/runtime/turn.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { tempDbFile } from "../support/db.ts"
import { assertAssembled, canonical, checkState, continuesPrevious, plain, type Snapshot } from "./support/check.ts"
import { lcmOn, scriptedSummarizer } from "./support/layers.ts"
import { buildSession, engineConfig, engineSpec, int, rng, sessionSpec } from "./support/sessions.ts"

const KEY = "agent:test:someone:reach"
const session = sessionRefFromKey(KEY)

const caseArb = Arbitrary.all({
  session: sessionSpec,
  engine: engineSpec,
  /** The window, log-uniform from 2k to 1M tokens: 2000 × 500^(k / 1000). */
  window: Arbitrary.schema(int(0, 1000)),
  /** Messages appended per turn, at most. */
  turn: Arbitrary.schema(int(1, 8))
})

const windowOf = (k: number) => Math.round(2_000 * 500 ** (k / 1000))

/** Seqs below each summary, through the DAG links. */
const belowOf = (snap: Snapshot) => {
  const seqById = new Map(snap.history.map((m) => [m.id, m.seq]))
  const memo = new Map<number, ReadonlyArray<number>>()
  const below = (id: number): ReadonlyArray<number> => {
    const hit = memo.get(id)
    if (hit !== undefined) return hit
    const links = snap.links.get(id)
    const seqs = links === undefined
      ? []
      : [...links.sourceMessages.map((m) => seqById.get(m) ?? -1), ...links.constituents.flatMap(below)]
    memo.set(id, seqs)
    return seqs
  }
  return below
}

/** Tokens of the newest unit of the session (a tool call with its results, or one message). */
const newestUnitTokens = (messages: ReadonlyArray<NewMessage>) => {
  let n = 0
  for (let seq = messages.length; seq >= 1; seq--) {
    const m = messages[seq - 1]
    if (m === undefined) break
    n += estimateMessageTokens(m)
    if (!continuesPrevious(messages, seq)) break
  }
  return n
}

let qualified = 0
let asked = 0
let smallWindows = 0
let foldedDepths = 0

describe("memory properties: windows from 2k to 1M tokens", () => {
  it.live.prop(
    "everything older than the live messages stays reachable from the assembled context through a summary",
    { c: caseArb },
    ({ c }) =>
      Effect.scoped(Effect.gen(function*() {
        const file = yield* tempDbFile
        const messages = buildSession(c.session)
        const window = windowOf(c.window)
        const budget = window - outputReserve(window)
        const config = engineConfig(c.engine)
        const calls = yield* Ref.make(0)
        const r = rng(c.session.seed ^ 0x2545f491)
        asked++
        if (window < 16_000) smallWindows++

        yield* Effect.gen(function*() {
          const memory = yield* MemoryProvider
          const compactor = yield* Compactor
          yield* memory.bootstrap(session)
          const contextTokens = Effect.map(memory.stats(KEY), (s) => s.contextTokens)
          /** The context right after the last compaction that gained less than the minimum, if it was the last one. */
          let futileAt: number | undefined
          /** One turn's compaction, as the runtime runs it before the model is called. */
          const compactBeforeTurn = Effect.gen(function*() {
            const now = yield* contextTokens
            if (!(yield* compactor.worthCompacting(KEY, budget))) return false
            // Never twice for nothing — unless the context no longer fits (then any gain is needed).
            if (futileAt !== undefined && now <= budget) {
              assert.isAtLeast(now, futileAt + minGainOf(budget), "compacted again for nothing before the context grew")
            }
            const before = yield* Ref.get(calls)
            const report = yield* compactor.compact(KEY, {
              budget,
              target: compactionTarget(budget, config.threshold),
              full: true,
              maxSummarizerCalls: MAX_SUMMARIZER_CALLS_PER_TURN
            })
            const made = (yield* Ref.get(calls)) - before
            assert.strictEqual(report.summarizerCalls, made, "the report counts the summarizer calls")
            assert.isAtMost(made, MAX_SUMMARIZER_CALLS_PER_TURN, "summarizer calls over the per-turn cap")
            futileAt = report.tokensBefore - report.tokensAfter < minGainOf(budget) ? report.tokensAfter : undefined
            return true
          })

          for (let at = 0; at < messages.length;) {
            const n = r.int(1, c.turn)
            yield* memory.append(session, messages.slice(at, at + n))
            at += n
            yield* compactBeforeTurn
          }
          // Compaction to fit: the next turns' gate and compaction, until the gate says no.
          for (let round = 0; round < 50 && (yield* compactBeforeTurn); round++) {
            // the gate said yes: one more turn's compaction ran
          }

          const snap = yield* checkState(KEY, messages, c.session.seed)
          if (snap.summaries.some((s) => s.kind === "condensed" && new Set(belowDepths(snap, s.id)).size > 1)) foldedDepths++
          const assembled = yield* memory.assemble(KEY, { budget })
          assertAssembled({ assembled, snap, appended: messages, budget, freshTail: 20, mode: "lcm" })

          if (newestUnitTokens(messages) > TAIL_SHARE * budget) return
          qualified++
          // What the assembled context holds: summaries by id, raw messages by their (unique) content.
          const seqByContent = new Map(messages.map((m, i) => [canonical(plain(m)), i + 1]))
          const summaryIds = new Set<number>()
          let oldestRaw = messages.length + 1
          for (const m of assembled.messages) {
            const text = typeof m.content === "string" ? m.content : ""
            const id = /^<memory-summary id="sum_(\d+)"/.exec(text)?.[1]
            if (id !== undefined) summaryIds.add(Number(id))
            else oldestRaw = Math.min(oldestRaw, seqByContent.get(canonical(m)) ?? oldestRaw)
          }
          const below = belowOf(snap)
          const reachable = new Set([...summaryIds].flatMap((id) => below(id)))
          const lost: Array<number> = []
          for (let seq = 1; seq < oldestRaw; seq++) if (!reachable.has(seq)) lost.push(seq)
          assert.deepStrictEqual(
            lost.slice(0, 20),
            [],
            `window ${window} (budget ${budget}): ${lost.length} messages older than seq ${oldestRaw} are in no assembled summary ` +
              `(assembled ${assembled.messages.length} messages, ${assembled.summaries} summaries, ${assembled.tokens} tokens; ` +
              `live: ${snap.items.length} items, ${snap.items.reduce((n, it) => n + it.tokens, 0)} tokens)`
          )
        }).pipe(Effect.provide(lcmOn(file, config, scriptedSummarizer(() => "ok", calls)), { local: true }))
      })),
    { timeout: 170_000, arbitrary: { runs: 60, maxShrinks: 20 } }
  )

  it("asked of most cases, small windows and folded depths included", () => {
    // Runs after the property (same file, in order): most cases had a newest unit that fits the tail.
    assert.isAtLeast(qualified, Math.ceil(asked * 0.6), `${qualified} of ${asked} cases qualified`)
    assert.isAbove(smallWindows, 0, "no window under 16k tokens was generated")
    assert.isAbove(foldedDepths, 0, "no compaction to fit folded summaries of different depths")
  })
})

/** Depths of the direct constituents of a condensed summary. */
const belowDepths = (snap: Snapshot, id: number): ReadonlyArray<number> =>
  (snap.links.get(id)?.constituents ?? []).map((c) => snap.summaries.find((s) => s.id === c)?.depth ?? -1)
