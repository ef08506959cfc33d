/**
 * Compaction over random sessions and engine configurations.
 *
 * Progress: a full compaction terminates within its bound (≤ 10 iterations, so ≤ 20 passes) and
 * reports truthfully (token sums of the items before/after, counts of the new summaries, a stop
 * reason that agrees with the state and with a follow-up compaction); every summary respects the
 * escalation (within 150 % of input/3, truncated ones within the target), also when the summarizer
 * answers too long.
 *
 * Atomicity: a summarizer that fails on its k-th call, or never returns on it (the compaction fiber
 * is interrupted there), leaves the session exactly as it was when that step started — compared
 * with a reference run on a second database that snapshots itself at the start of call k (for
 * k = 1: exactly as before the compaction). The session stays usable afterwards (its lock is free).
 * (That one runs on the TestClock, so summaries created in both runs carry the same time.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, type Context, Deferred, Effect, Fiber, Ref, Result, Schema } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { CompactOptions } from "../../src/domain/memory/types.ts"
import { estimateTextTokens, type NewMessage } from "../../src/domain/message.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import type { MemoryStore } from "../../src/services/MemoryStore.ts"
import { sqliteTemp } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { assertReport, checkState, snapshot, type Snapshot } from "./support/check.ts"
import { type Behaviour, lcmOn, scriptedSummarizer } from "./support/layers.ts"
import { buildSession, engineConfig, engineSpec, int, sessionSpec } from "./support/sessions.ts"

const KEY = "agent:test:someone:compaction"
const session = sessionRefFromKey(KEY)

/** Which summarizer calls answer too long: `rate` in fifths (0 never, 5 always). */
const tooLong = (rate: number, seed: number) => (call: number): boolean => ((call * 7 + seed) % 5) < rate

const progressCase = Arbitrary.all({
  session: sessionSpec,
  engine: engineSpec,
  batches: Arbitrary.schema(int(1, 6)),
  incrementalBetween: Arbitrary.schema(Schema.Boolean),
  freshTail: Arbitrary.schema(int(-1, 30)),
  /** Budget as a percentage of the context (0: none). */
  budgetPct: Arbitrary.schema(int(0, 140)),
  tooLong: Arbitrary.schema(int(0, 5))
})

const atomicCase = Arbitrary.all({
  session: sessionSpec,
  engine: engineSpec,
  k: Arbitrary.schema(int(1, 8)),
  hang: Arbitrary.schema(Schema.Boolean),
  full: Arbitrary.schema(Schema.Boolean),
  freshTail: Arbitrary.schema(int(-1, 12)),
  tooLong: Arbitrary.schema(int(0, 3))
})

const tokensOf = (s: Snapshot) => s.items.reduce((n, it) => n + it.tokens, 0)

for (const db of testDatabases(sqliteTemp)) {
  describe(`memory properties: compaction (${db.name})`, () => {
    it.live.prop(
      "full compaction terminates within its bound and reports truthfully",
      { c: progressCase },
      ({ c }) =>
        Effect.scoped(Effect.gen(function*() {
          const file = (yield* db.open).layer
          const messages = buildSession(c.session)
          const config = engineConfig(c.engine)
          const calls = yield* Ref.make(0)
          const long = tooLong(c.tooLong, c.session.seed)
          const summarizer = scriptedSummarizer((n): Behaviour => (long(n) ? "too_long" : "ok"), calls)
          yield* Effect.gen(function*() {
            const memory = yield* MemoryProvider
            const compactor = yield* Compactor
            yield* memory.bootstrap(session)
            const appended: Array<NewMessage> = []
            const per = Math.ceil(messages.length / c.batches)
            for (let b = 0; b < c.batches; b++) {
              const batch = messages.slice(b * per, (b + 1) * per)
              yield* memory.append(session, batch)
              appended.push(...batch)
              if (c.incrementalBetween) {
                const before = yield* snapshot(KEY)
                const report = yield* compactor.compact(KEY)
                const after = yield* snapshot(KEY)
                assertReport({ report, before, after, options: {}, config, appended })
              }
            }
            const before = yield* snapshot(KEY)
            const options: CompactOptions = {
              full: true,
              ...(c.freshTail >= 0 ? { freshTail: c.freshTail } : {}),
              ...(c.budgetPct > 0 ? { budget: Math.max(1, Math.round((tokensOf(before) * c.budgetPct) / 100)) } : {})
            }
            const report = yield* compactor.compact(KEY, options)
            const after = yield* checkState(KEY, appended, c.session.seed)
            assertReport({ report, before, after, options, config, appended })
            assert.isAtMost(report.passes, 20, "full compaction: more than 10 iterations")

            // Escalation: within 150 % of the target (input / 3); truncated text within the target.
            for (const s of after.summaries) {
              const target = Math.max(1, Math.floor(s.sourceTokenCount / 3))
              const tokens = estimateTextTokens(s.content)
              assert.isAtMost(tokens, s.mode === "truncated" ? target : 1.5 * target, `summary ${s.id} (${s.mode}) over its target`)
              if (c.tooLong === 0) assert.strictEqual(s.mode, "normal", `summary ${s.id}: escalated without cause`)
              if (c.tooLong === 5) assert.strictEqual(s.mode, "truncated", `summary ${s.id}: not truncated though every answer was too long`)
            }

            // A follow-up with the same options agrees with the stop reason.
            const again = yield* compactor.compact(KEY, options)
            const final = yield* checkState(KEY, appended, c.session.seed + 1)
            assertReport({ report: again, before: after, after: final, options, config, appended })
            if (report.stopReason === "below_threshold") {
              assert.strictEqual(again.passes, 0, "below threshold, yet a follow-up ran passes")
            }
            if (report.stopReason === "no_candidates" || report.stopReason === "below_threshold") {
              assert.isFalse(again.compacted, `stopped with ${report.stopReason}, yet a follow-up compacted`)
              assert.deepStrictEqual(final, after, "a follow-up with nothing to do changed the session")
            }
          }).pipe(Effect.provide(lcmOn(file, config, summarizer), { local: true }))
        })),
      { timeout: 170_000, arbitrary: { runs: 40, maxShrinks: 40 } }
    )

    it.effect.prop(
      "a failing or interrupted summarizer step leaves the session exactly as before that step",
      { c: atomicCase },
      ({ c }) =>
        Effect.scoped(Effect.gen(function*() {
          const messages = buildSession(c.session)
          const config = engineConfig(c.engine)
          const long = tooLong(c.tooLong, c.session.seed)
          const script = (n: number): Behaviour => (long(n) ? "too_long" : "ok")
          const options: CompactOptions = { full: c.full, ...(c.freshTail >= 0 ? { freshTail: c.freshTail } : {}) }

          // Reference run on its own file: same script, no failure; snapshot when call k starts.
          const refFile = (yield* db.open).layer
          const refCalls = yield* Ref.make(0)
          let refContext: Context.Context<MemoryStore> | undefined
          let captured: Snapshot | undefined
          const capture = Effect.suspend(() =>
            refContext === undefined
              ? Effect.die(new Error("reference context not ready"))
              : snapshot(KEY).pipe(
                Effect.provideContext(refContext),
                Effect.tap((s) => Effect.sync(() => (captured = s))),
                Effect.orDie,
                Effect.asVoid
              )
          )
          const refSummarizer = scriptedSummarizer(script, refCalls, { onCall: (n) => (n === c.k ? capture : Effect.void) })
          const refFinal = yield* Effect.gen(function*() {
            refContext = yield* Effect.context<MemoryStore>()
            yield* (yield* MemoryProvider).append(session, messages)
            yield* (yield* Compactor).compact(KEY, options)
            return yield* snapshot(KEY)
          }).pipe(Effect.provide(lcmOn(refFile, config, refSummarizer), { local: true }))
          const reached = (yield* Ref.get(refCalls)) >= c.k

          // The run under test: call k fails or never returns.
          const file = (yield* db.open).layer
          const calls = yield* Ref.make(0)
          const started = yield* Deferred.make<number>()
          let armed = true
          const summarizer = scriptedSummarizer(
            (n) => (armed && n === c.k ? (c.hang ? "hang" : "fail") : script(n)),
            calls,
            { started }
          )
          yield* Effect.gen(function*() {
            const memory = yield* MemoryProvider
            const compactor = yield* Compactor
            yield* memory.append(session, messages)
            const before = yield* snapshot(KEY)
            if (c.hang) {
              const fiber = yield* Effect.forkChild(compactor.compact(KEY, options))
              const hung = yield* Effect.raceFirst(
                Deferred.await(started).pipe(Effect.as(true)),
                Fiber.await(fiber).pipe(Effect.as(false))
              )
              assert.strictEqual(hung, reached, "the run under test reached call k exactly when the reference did")
              if (hung) yield* Fiber.interrupt(fiber)
            } else {
              const result = yield* Effect.result(compactor.compact(KEY, options))
              assert.strictEqual(Result.isFailure(result), reached, "compaction failed exactly when call k was reached")
              if (Result.isFailure(result)) {
                const error = result.failure
                assert.strictEqual(error._tag, "CompactionFailed")
                const now = yield* snapshot(KEY)
                assert.strictEqual(
                  error._tag === "CompactionFailed" ? error.committedSteps : -1,
                  now.summaries.length - before.summaries.length,
                  "committedSteps counts the summaries that stayed"
                )
              }
            }
            armed = false
            const after = yield* checkState(KEY, messages, c.session.seed)
            if (reached) {
              assert.isDefined(captured)
              assert.deepStrictEqual(after, captured, "the session differs from its state when the failed step started")
              if (c.k === 1) assert.deepStrictEqual(after, before, "a first step that failed changed the session")
            } else {
              assert.deepStrictEqual(after, refFinal, "without reaching call k the run should equal the reference")
            }

            // Still usable: the lock was released; appending and compacting again work.
            const extra: NewMessage = { role: "user", content: "and one more thing", createdAt: 1_800_000_000_000 }
            yield* memory.append(session, [extra])
            yield* compactor.compact(KEY, { full: true })
            yield* checkState(KEY, [...messages, extra], c.session.seed + 1)
          }).pipe(Effect.provide(lcmOn(file, config, summarizer), { local: true }))
        })),
      { timeout: 170_000, arbitrary: { runs: 40, maxShrinks: 40 } }
    )
  })
}
