/**
 * Assembly latency at 1k / 10k / 100k messages (and 1M with BENCH_ASSEMBLE_1M=1, about 3 more
 * minutes) (budget 100k tokens), before and after a full compaction, and the full compaction itself
 * with the deterministic summarizer, split into time inside the summarizer and time outside it. Each
 * size is one session of one database; the floor holds the same messages.
 */
import { Effect } from "effect"
import { join } from "node:path"
import { Compactor } from "../src/services/Compactor.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import type { CompactionReport } from "../src/domain/memory/types.ts"
import { dbBytes, ratios, removeDb, sessionOf } from "./support/common.ts"
import { openEngine } from "./support/engine.ts"
import { openFloor, type SummarizerClock } from "./support/floor.ts"
import {
  int,
  mib,
  ms,
  progress,
  ratio,
  sampleEffect,
  type SampleOptions,
  sampleSync,
  seconds,
  section,
  type Summary,
  table
} from "./support/measure.ts"
import { makeTranscript } from "./support/transcript.ts"

const SIZES: ReadonlyArray<number> = process.env["BENCH_ASSEMBLE_1M"] === "1"
  ? [1_000, 10_000, 100_000, 1_000_000]
  : [1_000, 10_000, 100_000]
const BUDGET = 100_000
const BATCH = 1_000
const SAMPLES: SampleOptions = { warmup: 3, min: 10, max: 200, budgetMs: 3_000 }

interface Latency {
  readonly ours: Summary
  readonly floor: Summary
  readonly messages: number
  readonly tokens: number
  readonly summaries: number
}

interface Compaction {
  readonly totalMs: number
  readonly summarizer: SummarizerClock
  readonly report: CompactionReport
  readonly floorTotalMs: number
  readonly floorSummarizer: SummarizerClock
  readonly floorMade: { readonly leaf: number; readonly condensed: number }
}

export const runAssemble = async (dir: string): Promise<void> => {
  const file = join(dir, "assemble.db")
  const floorFile = join(dir, "assemble-floor.db")
  const clock: SummarizerClock = { ms: 0, calls: 0 }
  const engine = openEngine(file, clock)
  const floor = openFloor(floorFile)
  const before = new Map<number, Latency>()
  const after = new Map<number, Latency>()
  const compactions = new Map<number, Compaction>()
  const build = { ours: 0, floor: 0, messages: 0 }

  for (const [index, size] of SIZES.entries()) {
    const session = sessionOf(index, 1)
    const conversationId = index + 1
    progress(`assemble: building a session of ${int(size)} messages`)
    const transcript = makeTranscript({ seed: 300 + index })
    for (let done = 0; done < size; done += BATCH) {
      const batch = transcript.take(Math.min(BATCH, size - done))
      const t0 = performance.now()
      await engine.runPromise(MemoryProvider.use((m) => m.append(session, batch)))
      const t1 = performance.now()
      floor.appendBatch(conversationId, batch)
      build.floor += performance.now() - t1
      build.ours += t1 - t0
    }
    build.messages += size

    const measure = (): Promise<Latency> =>
      engine.runPromise(Effect.gen(function*() {
        const memory = yield* MemoryProvider
        const shape = yield* memory.assemble(session.key, { budget: BUDGET })
        const ours = yield* sampleEffect(SAMPLES, () => memory.assemble(session.key, { budget: BUDGET }))
        const floorLatency = sampleSync(SAMPLES, () => floor.assemble(conversationId, BUDGET))
        return {
          ours,
          floor: floorLatency,
          messages: shape.messages.length,
          tokens: shape.tokens,
          summaries: shape.summaries
        }
      }))

    progress(`assemble: ${int(size)} messages, uncompacted`)
    before.set(size, await measure())

    progress(`compaction: full, ${int(size)} messages`)
    clock.ms = 0
    clock.calls = 0
    const t0 = performance.now()
    const report = await engine.runPromise(Compactor.use((c) => c.compact(session.key, { full: true })))
    const totalMs = performance.now() - t0
    const floorSummarizer: SummarizerClock = { ms: 0, calls: 0 }
    const f0 = performance.now()
    const floorMade = floor.compact(conversationId, session.key, floorSummarizer)
    const floorTotalMs = performance.now() - f0
    compactions.set(size, { totalMs, summarizer: { ...clock }, report, floorTotalMs, floorSummarizer, floorMade })

    progress(`assemble: ${int(size)} messages, compacted`)
    after.set(size, await measure())
  }
  const bytes = dbBytes(file)
  const floorBytes = dbBytes(floorFile)
  await engine.dispose()
  floor.close()
  removeDb(file)
  removeDb(floorFile)

  const latencyRows = (label: string, data: Map<number, Latency>) =>
    SIZES.flatMap((size) => {
      const l = data.get(size)
      return l === undefined ? [] : [[
        int(size),
        label,
        `${ms(l.ours.p50)} / ${ms(l.ours.p95)}`,
        `${ms(l.floor.p50)} / ${ms(l.floor.p95)}`,
        ratio(l.ours.p50, l.floor.p50),
        `${int(l.messages)} msgs, ${int(l.summaries)} summaries, ${int(l.tokens)} tokens`,
        String(l.ours.n)
      ]]
    })
  section(
    `Assemble latency (budget ${int(BUDGET)} tokens, fresh tail 20)`,
    table(
      ["messages", "context", "ours p50 / p95 (ms)", "floor p50 / p95 (ms)", "ours / floor (p50)", "assembled", "samples"],
      [...latencyRows("raw messages", before), ...latencyRows("after full compaction", after)]
    ),
    "Floor: newest messages by seq until the budget is spent (after compaction: messages after the last live\n" +
      "summary, then live summaries), JSON.parse of each row. Ours reads the newest live-context items until the\n" +
      "budget is spent and the live summaries, selects by budget keeping tool units whole, loads the chosen rows,\n" +
      "decodes blocks with Schema and repairs tool pairing.\n" +
      `Build: ${int(build.messages)} messages appended in ${seconds(build.ours)} (ours, ${BATCH} per call) vs ` +
      `${seconds(build.floor)} (floor); database ${mib(bytes)} (ours) vs ${mib(floorBytes)} (floor) after compaction.`
  )
  for (const [label, data] of [["raw", before], ["compacted", after]] as const) {
    for (const size of SIZES) {
      const l = data.get(size)
      if (l !== undefined) {
        ratios.push({
          operation: `assemble ${int(size)} msgs, ${label} (p50)`,
          ours: `${ms(l.ours.p50)} ms`,
          floor: `${ms(l.floor.p50)} ms`,
          ratio: ratio(l.ours.p50, l.floor.p50)
        })
      }
    }
  }

  section(
    "Full compaction (deterministic summarizer)",
    table(
      [
        "messages",
        "ours total",
        "in summarizer",
        "outside summarizer",
        "summarizer calls",
        "leaf + condensed",
        "context tokens before → after",
        "floor outside (total)",
        "ours / floor (outside)"
      ],
      SIZES.flatMap((size) => {
        const c = compactions.get(size)
        if (c === undefined) return []
        const outside = c.totalMs - c.summarizer.ms
        const floorOutside = c.floorTotalMs - c.floorSummarizer.ms
        return [[
          int(size),
          `${ms(c.totalMs)} ms`,
          `${ms(c.summarizer.ms)} ms`,
          `${ms(outside)} ms`,
          int(c.summarizer.calls),
          `${c.report.leafSummaries} + ${c.report.condensedSummaries}`,
          `${int(c.report.tokensBefore)} → ${int(c.report.tokensAfter)}`,
          `${ms(floorOutside)} ms (${ms(c.floorTotalMs)} ms, ${c.floorMade.leaf} + ${c.floorMade.condensed})`,
          ratio(outside, floorOutside)
        ]]
      })
    ),
    "Outside = total − time inside Summarizer.summarize (measured by a timing layer around the deterministic\n" +
      "summarizer). Floor: read all rows once, chunk (≥ 10 messages and ≥ 20k tokens; then groups of 8), insert\n" +
      "summary rows + FTS in one transaction. Ours: one transaction per summary under the session lock, items\n" +
      "re-read per pass, DAG links and live-context rewrites."
  )
  const c10k = compactions.get(10_000)
  if (c10k !== undefined) {
    ratios.push({
      operation: "full compaction 10k msgs, outside summarizer",
      ours: `${ms(c10k.totalMs - c10k.summarizer.ms)} ms`,
      floor: `${ms(c10k.floorTotalMs - c10k.floorSummarizer.ms)} ms`,
      ratio: ratio(c10k.totalMs - c10k.summarizer.ms, c10k.floorTotalMs - c10k.floorSummarizer.ms)
    })
  }
}
