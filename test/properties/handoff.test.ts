/**
 * Handoff compaction (memory/simple, seed 003) over random sessions: rounds of appends and handoff
 * compactions with random fresh tails and budgets — the summarizer answering normally or far too
 * long (so the escalation's per-section cut runs) — with, now and then, an LCM segment compacting
 * the same file in between, so each plugin meets the other's summaries.
 *
 * After every compaction: lossless and DAG (raw history as appended, verifySession, independent
 * walks over the store and over LCM's Explorer) and a truthful handoff report (one leaf of exactly
 * the view's messages outside the unit-aligned fresh tail, in the seven sections, the view shrunk,
 * the tail untouched). After every round: assemblies of Simple's view with random budgets and
 * fresh tails (summary + acknowledgement first, contiguous, budget, pairing).
 */
import { describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Ref, Schema } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { CompactOptions } from "../../src/domain/memory/types.ts"
import type { NewMessage } from "../../src/domain/message.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { sqliteTemp } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { assertAssembled, checkState, simpleViewTokens, snapshot } from "./support/check.ts"
import { assertHandoffReport } from "./support/handoffCheck.ts"
import { lcmOn, scriptedSummarizer, simpleOn } from "./support/layers.ts"
import { buildSession, engineConfig, engineSpec, int, rng, sessionSpec } from "./support/sessions.ts"

const KEY = "agent:test:someone:handoff"
const session = sessionRefFromKey(KEY)

const Round = Schema.Struct({
  append: int(1, 150),
  /** -1: the default tail of 20. */
  freshTail: int(-1, 30),
  /** Budget as a percentage of Simple's view (0: none, so compaction always tries). */
  budgetPct: int(0, 100),
  /** Run an LCM segment (one incremental DAG compaction) before this round. */
  lcm: Schema.Boolean,
  tooLong: Schema.Boolean
})

const caseArb = Arbitrary.all({
  session: sessionSpec,
  engine: engineSpec,
  rounds: Arbitrary.array(Arbitrary.schema(Round), { minLength: 1, maxLength: 6 })
})

for (const db of testDatabases(sqliteTemp)) {
  describe(`memory properties: handoff compaction (${db.name})`, () => {
    it.live.prop(
      "one unit-aligned leaf per step, lossless, truthful, assembled as summary + acknowledgement",
      { c: caseArb },
      ({ c }) =>
        Effect.scoped(Effect.gen(function*() {
          const file = (yield* db.open).layer
          const messages = buildSession(c.session)
          const appended: Array<NewMessage> = []
          const config = engineConfig(c.engine)
          const r = rng(c.session.seed ^ 0x2545f491)
          let step = 0
          for (const round of c.rounds) {
            if (round.lcm && appended.length > 0) {
              yield* Effect.gen(function*() {
                yield* (yield* Compactor).compact(KEY)
                yield* checkState(KEY, appended, c.session.seed + step++)
              }).pipe(Effect.provide(lcmOn(file, config), { local: true }))
            }
            const calls = yield* Ref.make(0)
            const summarizer = scriptedSummarizer(() => (round.tooLong ? "too_long" : "ok"), calls)
            yield* Effect.gen(function*() {
              const memory = yield* MemoryProvider
              const batch = messages.slice(appended.length, appended.length + round.append)
              yield* memory.append(session, batch)
              appended.push(...batch)
              const before = yield* snapshot(KEY)
              const options: CompactOptions = {
                ...(round.freshTail >= 0 ? { freshTail: round.freshTail } : {}),
                ...(round.budgetPct > 0 ? { budget: Math.max(1, Math.round((simpleViewTokens(before) * round.budgetPct) / 100)) } : {})
              }
              const report = yield* (yield* Compactor).compact(KEY, options)
              const after = yield* checkState(KEY, appended, c.session.seed + step++)
              assertHandoffReport({ report, before, after, options, appended })
              const view = simpleViewTokens(after)
              for (let i = 0; i < 4; i++) {
                const budget = r.chance(0.8) ? Math.max(1, Math.round(view * r.next() * 1.3)) : r.int(1, 400)
                const freshTail = r.chance(0.1) ? 0 : r.int(1, 30)
                const assembled = yield* memory.assemble(KEY, { budget, freshTail })
                assertAssembled({ assembled, snap: after, appended, budget, freshTail, mode: "simple" })
              }
            }).pipe(Effect.provide(simpleOn(file, summarizer), { local: true }))
          }
        })),
      { timeout: 170_000, arbitrary: { runs: 100, maxShrinks: 40 } }
    )
  })
}
