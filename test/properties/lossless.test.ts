/**
 * Random operation sequences over one session on a real SQLite file: appends in batches of random
 * size, incremental and full compactions (random fresh tail and budget; DAG compaction under LCM,
 * handoff compaction under Simple), assemblies with random budgets and fresh tails, and plugin
 * switches (LcmMemory ↔ SimpleMemory over the same file, each switch closing one layer and
 * reopening the path with the other), so each plugin meets the other's summaries.
 *
 * After every operation: lossless (raw messages exactly as appended through loadHistory and
 * messagesBySeq; verifySession; an independent walk of the DAG over MemoryStore links and over
 * Explorer describe/expand reaching every message exactly once, in order), DAG integrity (acyclic,
 * depths, seq and time ranges), stats; after every compaction a truthful report; after every
 * assembly order, fresh tail, budget and pairing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Option, Schema } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { CompactOptions } from "../../src/domain/memory/types.ts"
import type { NewMessage } from "../../src/domain/message.ts"
import type { CompactionConfig } from "../../src/services/CompactionEngine.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../src/services/MemoryStore.ts"
import { sqliteTemp } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { assertAssembled, assertReport, checkState, simpleViewTokens, snapshot, type Snapshot } from "./support/check.ts"
import { assertHandoffReport } from "./support/handoffCheck.ts"
import { lcmOn, simpleOn } from "./support/layers.ts"
import { buildSession, engineConfig, engineSpec, int, sessionSpec } from "./support/sessions.ts"

/**
 * Budgets are mostly relative to the context at that moment (`pct` of its tokens; 0 = no budget
 * for a compaction), sometimes absolute (`relative` false: `pct` × 100 tokens).
 */
const Budget = { pct: int(0, 150), relative: Schema.Boolean }
const Op = Schema.Union([
  Schema.TaggedStruct("Append", { count: int(1, 120) }),
  /** freshTail -1: the engine's default. */
  Schema.TaggedStruct("Compact", { full: Schema.Boolean, freshTail: int(-1, 30), ...Budget }),
  Schema.TaggedStruct("Assemble", { freshTail: int(0, 40), ...Budget }),
  Schema.TaggedStruct("Switch", {})
])
type Op = typeof Op.Type

const caseArb = Arbitrary.all({
  session: sessionSpec,
  engine: engineSpec,
  startLcm: Arbitrary.schema(Schema.Boolean),
  ops: Arbitrary.array(Arbitrary.schema(Op), { minLength: 2, maxLength: 14 })
})

const budgetOf = (b: { readonly pct: number; readonly relative: boolean }, contextTokens: number): number =>
  Math.max(1, b.relative ? Math.round((b.pct / 100) * contextTokens) : b.pct * 100)

interface Run {
  readonly sessionKey: string
  readonly messages: ReadonlyArray<NewMessage>
  readonly appended: Array<NewMessage>
  readonly config: CompactionConfig
  readonly seed: number
}

/** One operation under whichever plugin is open, then every state check. */
const runOp = (run: Run, op: Op, lcm: boolean, step: number) =>
  Effect.gen(function*() {
    const memory = yield* MemoryProvider
    const session = sessionRefFromKey(run.sessionKey)
    let snap: Snapshot | undefined
    switch (op._tag) {
      case "Append": {
        const batch = run.messages.slice(run.appended.length, run.appended.length + op.count)
        yield* memory.append(session, batch)
        run.appended.push(...batch)
        break
      }
      case "Compact": {
        const compactor = yield* Effect.serviceOption(Compactor)
        if (Option.isNone(compactor)) break
        const before = yield* snapshot(run.sessionKey)
        const context = lcm ? before.items.reduce((n, it) => n + it.tokens, 0) : simpleViewTokens(before)
        const options: CompactOptions = {
          full: op.full,
          ...(op.freshTail >= 0 ? { freshTail: op.freshTail } : {}),
          ...(op.pct > 0 ? { budget: budgetOf(op, context) } : {})
        }
        const report = yield* compactor.value.compact(run.sessionKey, options)
        snap = yield* checkState(run.sessionKey, run.appended, run.seed + step)
        if (lcm) assertReport({ report, before, after: snap, options, config: run.config, appended: run.appended })
        else assertHandoffReport({ report, before, after: snap, options, appended: run.appended })
        break
      }
      case "Assemble": {
        const before = yield* snapshot(run.sessionKey)
        const contextTokens = lcm ? before.items.reduce((n, it) => n + it.tokens, 0) : simpleViewTokens(before)
        const budget = budgetOf(op, contextTokens)
        const assembled = yield* memory.assemble(run.sessionKey, { budget, freshTail: op.freshTail })
        assertAssembled({
          assembled,
          snap: before,
          appended: run.appended,
          budget,
          freshTail: op.freshTail,
          mode: lcm ? "lcm" : "simple"
        })
        break
      }
      case "Switch":
        break
    }
    snap ??= yield* checkState(run.sessionKey, run.appended, run.seed + step)
    const stats = yield* memory.stats(run.sessionKey)
    assert.deepStrictEqual(
      {
        messages: stats.messages,
        messageTokens: stats.messageTokens,
        summaries: stats.summaries,
        contextItems: stats.contextItems,
        contextTokens: stats.contextTokens,
        maxDepth: stats.maxDepth
      },
      {
        messages: run.appended.length,
        messageTokens: snap.history.reduce((n, m) => n + m.tokens, 0),
        summaries: snap.summaries.length,
        contextItems: snap.items.length,
        contextTokens: snap.items.reduce((n, it) => n + it.tokens, 0),
        maxDepth: snap.summaries.reduce((d, s) => Math.max(d, s.depth), -1)
      },
      "stats"
    )
  })

for (const db of testDatabases(sqliteTemp)) {
  describe(`memory properties: random operation sequences (${db.name})`, () => {
    it.live.prop(
      "lossless, DAG, order, budget and pairing hold after every operation, across plugin switches",
      { c: caseArb },
      ({ c }) =>
        Effect.scoped(Effect.gen(function*() {
          const file = (yield* db.open).layer
          const run: Run = {
            sessionKey: `agent:test:user${c.session.seed % 5}:main`,
            messages: buildSession(c.session),
            appended: [],
            config: engineConfig(c.engine),
            seed: c.session.seed
          }
          // Segments between switches; a last LCM segment appends the rest, compacts fully and assembles.
          const segments: Array<Array<Op>> = [[]]
          for (const op of c.ops) {
            if (op._tag === "Switch") segments.push([op])
            else segments[segments.length - 1]?.push(op)
          }
          const lastIsLcm = (segments.length % 2 === 1) === c.startLcm
          if (!lastIsLcm) segments.push([{ _tag: "Switch" }])
          segments[segments.length - 1]?.push(
            { _tag: "Append", count: 100_000 },
            { _tag: "Compact", full: true, freshTail: -1, pct: 0, relative: true },
            { _tag: "Assemble", freshTail: c.engine.freshTail, pct: 1 + (c.session.seed % 100), relative: true }
          )
          let step = 0
          for (const [i, ops] of segments.entries()) {
            const lcm = i % 2 === 0 ? c.startLcm : !c.startLcm
            const segment = Effect.gen(function*() {
              yield* (yield* MemoryProvider).bootstrap(sessionRefFromKey(run.sessionKey))
              for (const op of ops) yield* runOp(run, op, lcm, step++)
              const problems = yield* (yield* MemoryStore).integrityCheck
              assert.deepStrictEqual(problems, [], "integrity check")
            })
            yield* lcm
              ? segment.pipe(Effect.provide(lcmOn(file, run.config), { local: true }))
              : segment.pipe(Effect.provide(simpleOn(file), { local: true }))
          }
          assert.strictEqual(run.appended.length, run.messages.length)
        })),
      { timeout: 170_000, arbitrary: { runs: 60, maxShrinks: 40 } }
    )
  })
}
