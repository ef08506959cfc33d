/**
 * Append throughput: `MemoryProvider.append` with 1,000 messages per call (one transaction each)
 * and with one message per call, against the floor's batched and single-row transactions.
 */
import { Effect } from "effect"
import { join } from "node:path"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { ratios, removeDb, sessionOf } from "./support/common.ts"
import { openEngine } from "./support/engine.ts"
import { openFloor } from "./support/floor.ts"
import { ms, progress, rate, ratio, sampleEffect, sampleSync, section, type Summary, table } from "./support/measure.ts"
import { makeTranscript } from "./support/transcript.ts"

const BATCH = 1_000
const BATCHED_MESSAGES = 50_000
const SINGLE_MESSAGES = 5_000

interface Run {
  readonly perCall: Summary
  readonly totalMs: number
}

const chunks = <A>(all: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(all.length / size) }, (_, i) => all.slice(i * size, (i + 1) * size))

export const runAppend = async (dir: string): Promise<void> => {
  const batched = chunks(makeTranscript({ seed: 101 }).take(BATCHED_MESSAGES), BATCH)
  const singles = makeTranscript({ seed: 202 }).take(SINGLE_MESSAGES)
  const all = { warmup: 0, min: 0, budgetMs: Number.POSITIVE_INFINITY }

  const file = join(dir, "append.db")
  const engine = openEngine(file)
  progress(`append: ours, ${BATCHED_MESSAGES} batched + ${SINGLE_MESSAGES} one by one`)
  const ours = await engine.runPromise(Effect.gen(function*() {
    const memory = yield* MemoryProvider
    const a = sessionOf(1, 1)
    const b = sessionOf(2, 1)
    yield* memory.bootstrap(a)
    yield* memory.bootstrap(b)
    const t0 = performance.now()
    const batchedRun = yield* sampleEffect({ ...all, max: batched.length }, (i) => memory.append(a, batched[i] ?? []))
    const t1 = performance.now()
    const singleRun = yield* sampleEffect({ ...all, max: singles.length }, (i) => {
      const m = singles[i]
      return m === undefined ? Effect.void : memory.append(b, [m])
    })
    const t2 = performance.now()
    return {
      batched: { perCall: batchedRun, totalMs: t1 - t0 } satisfies Run,
      single: { perCall: singleRun, totalMs: t2 - t1 } satisfies Run
    }
  }))
  await engine.dispose()
  removeDb(file)

  progress("append: floor")
  const floorFile = join(dir, "append-floor.db")
  const floor = openFloor(floorFile)
  const f0 = performance.now()
  const floorBatched = sampleSync({ ...all, max: batched.length }, (i) => floor.appendBatch(1, batched[i] ?? []))
  const f1 = performance.now()
  const floorSingle = sampleSync({ ...all, max: singles.length }, (i) => {
    const m = singles[i]
    if (m !== undefined) floor.appendOne(2, m)
  })
  const f2 = performance.now()
  floor.close()
  removeDb(floorFile)

  const rows = [
    { mode: `batched (${BATCH} per call)`, n: BATCHED_MESSAGES, ours: ours.batched, floor: { perCall: floorBatched, totalMs: f1 - f0 } },
    { mode: "one by one (1 per call)", n: SINGLE_MESSAGES, ours: ours.single, floor: { perCall: floorSingle, totalMs: f2 - f1 } }
  ]
  section(
    "Append throughput",
    table(
      ["mode", "messages", "ours msg/s", "floor msg/s", "ours / floor time", "ours p50 / p95 per call (ms)", "floor p50 / p95 (ms)"],
      rows.map((r) => [
        r.mode,
        r.n.toLocaleString("en-US"),
        rate(r.n / (r.ours.totalMs / 1000)),
        rate(r.n / (r.floor.totalMs / 1000)),
        ratio(r.ours.totalMs, r.floor.totalMs),
        `${ms(r.ours.perCall.p50)} / ${ms(r.ours.perCall.p95)}`,
        `${ms(r.floor.perCall.p50)} / ${ms(r.floor.perCall.p95)}`
      ])
    ),
    "Each call is one transaction (BEGIN IMMEDIATE … COMMIT, WAL, synchronous=NORMAL) in both. Ours also writes the\n" +
      "live-context row, the CJK trigram row when needed, and takes the session lock."
  )
  for (const r of rows) {
    ratios.push({
      operation: `append, ${r.mode}`,
      ours: `${rate(r.n / (r.ours.totalMs / 1000))} msg/s`,
      floor: `${rate(r.n / (r.floor.totalMs / 1000))} msg/s`,
      ratio: ratio(r.ours.totalMs, r.floor.totalMs)
    })
  }
}
