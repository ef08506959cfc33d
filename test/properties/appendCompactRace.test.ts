/**
 * Appends racing compaction on one session (LCM memory over a real SQLite file).
 *
 * One fiber appends a random session in batches cut anywhere (so a batch may end between a tool_use
 * and its results, and the session meanwhile ends in a call still waiting for them), yielding a
 * random number of times between batches; another fiber runs `Compactor.compact` on the same
 * session over and over, with random budgets, fresh tails and full/incremental passes, through a
 * summarizer that yields a random number of times inside each call (while the compaction step
 * holds the session's lock), so appends land between the steps and passes of a compaction.
 *
 * After both finish: every appended message is stored exactly once, in order (seq 1..N, contents
 * equal, also through loadHistory); the session verifies (verify.ts) and the database passes its
 * integrity check; the DAG is sound and the live context, summaries expanded, is every message
 * exactly once; assemblies within random budgets keep order, fresh tail, budget and tool pairing;
 * neither fiber saw an error (no StaleContext or lock error reaches the appender). A last full
 * compaction then still works and keeps all of that true.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Fiber, Layer, Schema } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { CompactOptions } from "../../src/domain/memory/types.ts"
import type { NewMessage } from "../../src/domain/message.ts"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../src/services/MemoryStore.ts"
import { Summarizer } from "../../src/services/Summarizer.ts"
import { sqliteTemp } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { assertAssembled, checkState, plain, sumTokens } from "./support/check.ts"
import { lcmOn } from "./support/layers.ts"
import { buildSession, engineConfig, engineSpec, int, rng, sessionSpec } from "./support/sessions.ts"

const KEY = "agent:test:someone:race"
const session = sessionRefFromKey(KEY)

const raceCase = Arbitrary.all({
  session: sessionSpec,
  engine: engineSpec,
  /** Batch sizes, used in turn until the session is appended; batches end anywhere. */
  batches: Arbitrary.array(Arbitrary.schema(int(1, 12)), { minLength: 1, maxLength: 6 }),
  /** What the compactor runs, in turn, until the appender is done (and at least once through). */
  compactions: Arbitrary.array(
    Arbitrary.schema(Schema.Struct({
      full: Schema.Boolean,
      /** Budget as a percentage of the whole session's tokens (0: none). */
      budgetPct: int(0, 140),
      /** -1: the engine's default. */
      freshTail: int(-1, 12)
    })),
    { minLength: 1, maxLength: 4 }
  ),
  /** Most yields inside a summarizer call, and of the appender between two batches. */
  summarizerYields: Arbitrary.schema(int(0, 12)),
  appenderYields: Arbitrary.schema(int(0, 12)),
  assemblies: Arbitrary.schema(int(3, 8))
})

/** The deterministic summarizer, yielding `yields(call)` times before it answers. */
const yieldingSummarizer = (yields: () => number): Layer.Layer<Summarizer> =>
  Layer.succeed(
    Summarizer,
    Summarizer.of({
      summarize: (request) =>
        Effect.gen(function*() {
          for (let i = yields(); i > 0; i--) yield* Effect.yieldNow
          return DeterministicSummarizer.summarizeText(request)
        })
    })
  )

/** Over all runs: appends made while a compaction was running (the property must not be vacuous). */
let appendsDuringCompaction = 0
let runs = 0

for (const db of testDatabases(sqliteTemp)) {
  describe(`memory properties: appends racing compaction (${db.name})`, () => {
    it.effect.prop(
      "every append is stored once and in order, the DAG and the context stay sound, nothing leaks to the appender",
      { c: raceCase },
      ({ c }) =>
        Effect.scoped(Effect.gen(function*() {
          const file = (yield* db.open).layer
          // Small sessions (20–160 messages, huge pastes included) keep a run quick.
          const messages = buildSession({ ...c.session, large: 1, length: 20 + (c.session.length % 140) })
          const config = engineConfig(c.engine)
          const r = rng(c.session.seed ^ 0x2545f491)
          const summarizer = yieldingSummarizer(() => r.int(0, c.summarizerYields))
          const total = sumTokens(messages.map(plain))

          yield* Effect.gen(function*() {
            const memory = yield* MemoryProvider
            const compactor = yield* Compactor
            yield* memory.bootstrap(session)

            const appended: Array<NewMessage> = []
            let appending = true
            let compacting = false
            const appender = Effect.gen(function*() {
              for (let at = 0, b = 0; at < messages.length; b++) {
                const size = c.batches[b % c.batches.length] ?? 1
                const batch = messages.slice(at, at + size)
                at += size
                if (compacting) appendsDuringCompaction++
                yield* memory.append(session, batch)
                appended.push(...batch)
                for (let i = r.int(0, c.appenderYields); i > 0; i--) yield* Effect.yieldNow
              }
            }).pipe(Effect.ensuring(Effect.sync(() => (appending = false))))

            const optionsOf = (k: (typeof c.compactions)[number]): CompactOptions => ({
              full: k.full,
              ...(k.freshTail >= 0 ? { freshTail: k.freshTail } : {}),
              ...(k.budgetPct > 0 ? { budget: Math.max(1, Math.round((total * k.budgetPct) / 100)) } : {})
            })
            const compactions = Effect.gen(function*() {
              let n = 0
              // Through the list at least once, then on while the appender works (bounded).
              while (n < c.compactions.length || (appending && n < 400)) {
                const k = c.compactions[n % c.compactions.length]
                n++
                if (k === undefined) continue
                compacting = true
                yield* compactor.compact(KEY, optionsOf(k)).pipe(Effect.ensuring(Effect.sync(() => (compacting = false))))
                yield* Effect.yieldNow
              }
              return n
            })

            const appenderFiber = yield* Effect.forkChild(appender)
            const compactorFiber = yield* Effect.forkChild(compactions)
            const appendExit = yield* Fiber.await(appenderFiber)
            const compactExit = yield* Fiber.await(compactorFiber)
            assert.strictEqual(appendExit._tag, "Success", `the appender failed: ${appendExit._tag === "Failure" ? String(appendExit.cause) : ""}`)
            assert.strictEqual(compactExit._tag, "Success", `a compaction failed: ${compactExit._tag === "Failure" ? String(compactExit.cause) : ""}`)
            assert.strictEqual(appended.length, messages.length, "the appender appended the whole session")
            runs++

            const check = (seed: number) =>
              Effect.gen(function*() {
                // Lossless and in order (loadHistory and the rows), verify, DAG, live context, Explorer.
                const snap = yield* checkState(KEY, appended, seed)
                assert.deepStrictEqual(yield* (yield* MemoryStore).integrityCheck, [], "integrity check")
                // Every message is covered exactly once by the live context (summaries + raw)…
                const tokens = snap.items.reduce((n, it) => n + it.tokens, 0)
                // …and assemblies within budget keep order, the fresh tail, the budget and tool pairing.
                const ar = rng(seed ^ 0x68e31da4)
                for (let i = 0; i < c.assemblies; i++) {
                  const budget = ar.chance(0.8) ? Math.max(1, Math.round(tokens * ar.next() * 1.3)) : ar.int(1, 400)
                  const freshTail = ar.chance(0.1) ? 0 : ar.int(1, 30)
                  const assembled = yield* memory.assemble(KEY, { budget, freshTail })
                  assertAssembled({ assembled, snap, appended, budget, freshTail, mode: "lcm" })
                }
              })
            yield* check(c.session.seed)

            // Still usable afterwards (its lock is free): a last full compaction keeps it all true.
            yield* compactor.compact(KEY, { full: true })
            yield* check(c.session.seed + 1)
            assert.deepStrictEqual(
              (yield* memory.assemble(KEY, { budget: 10_000_000, freshTail: 1 })).messages.slice(-1),
              appended.slice(-1).map(plain),
              "the newest message ends the context"
            )
            assert.strictEqual((yield* memory.stats(KEY)).messages, appended.length, "stats: messages")
          }).pipe(Effect.provide(lcmOn(file, config, summarizer), { local: true }))
        })),
      { timeout: 120_000, arbitrary: { runs: 25, maxShrinks: 20 } }
    )

    it("the runs did race: appends landed while a compaction was running", () => {
      assert.isAbove(runs, 0)
      assert.isAbove(appendsDuringCompaction, 0, `no append overlapped a compaction in ${runs} runs`)
    })
  })
}
