/**
 * What exporting telemetry costs a turn (issue 27): the agent runtime with an instant model (as
 * bench/runtime.ts), once as a gateway runs without `OTEL_*` (no exporter) and once exporting traces
 * (every span: sampled at 100 %), metrics and logs over OTLP/HTTP protobuf to a collector on
 * 127.0.0.1 (test/support/otlpCollector.ts, which answers at once), every export at its default
 * interval. Both runtimes live side by side in this process, each on a home of its own, and take
 * turns in short alternating blocks, so the machine's drift (large on a shared 2-core VM) falls on
 * both alike. Target: ≤ 5 % overhead.
 */
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import type { OtlpSettings, SignalExport } from "../src/domain/observability/otlp.ts"
import { layerOtlp } from "../src/programs/telemetry.ts"
import { Runtime as RuntimeService } from "../src/services/Runtime.ts"
import { startFakeLlm } from "../test/support/fakeLlm/server.ts"
import { startOtlpCollector } from "../test/support/otlpCollector.ts"
import { benchRuntime } from "./runtime.ts"
import { ratios } from "./support/common.ts"
import { int, ms, progress, rate, section, summarize, table } from "./support/measure.ts"

/** Alternating blocks: of one-session turns, and of turns across sessions in parallel. */
const BLOCKS = 15
const TURNS_PER_BLOCK = 20
const PARALLEL_BLOCKS = 10
const SESSIONS = 50
const TURNS_PER_SESSION = 4

export const runOtlp = async (dir: string) => {
  const fake = await startFakeLlm()
  fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }], usage: { input: 10, output: 1 } }))
  const collector = await startOtlpCollector()
  const to = (signal: string): SignalExport => ({ url: `${collector.url}/v1/${signal}`, protocol: "http/protobuf", headers: {}, compression: "none" })
  const settings: OtlpSettings = {
    traces: to("traces"),
    metrics: to("metrics"),
    logs: to("logs"),
    serviceName: "anna-bench",
    serviceVersion: "bench",
    sampler: { root: "always_on", ratio: 1, parentBased: true }
  }
  /** A runtime with its agent set up; `exporting` adds the exporters around it, as the gateway does. */
  const make = async (exporting: boolean) => {
    const { layer, setUp } = benchRuntime(dir, fake.openAiUrl)
    const runtime = ManagedRuntime.make(exporting ? Layer.merge(layer, layerOtlp(settings)) : layer)
    await runtime.runPromise(setUp)
    return runtime
  }
  const off = await make(false)
  const on = await make(true)
  const each = [["off", off], ["on", on]] as const
  try {
    const samples = { off: [] as Array<number>, on: [] as Array<number> }
    /** Each block's p50 (one session) and time (in parallel), per variant, in block order. */
    const blockP50 = { off: [] as Array<number>, on: [] as Array<number> }
    const blockMs = { off: [] as Array<number>, on: [] as Array<number> }
    const chats = await Promise.all(each.map(([, rt]) => rt.runPromise(RuntimeService.use((r) => r.resolve({ platform: "bench", externalUserId: "solo" })))))
    progress(`otlp: ${BLOCKS} blocks of ${TURNS_PER_BLOCK} turns each way, one session`)
    for (let b = 0; b < BLOCKS; b++) {
      // Which goes first alternates too.
      for (const i of b % 2 === 0 ? [0, 1] : [1, 0]) {
        const [name, rt] = each[i] as (typeof each)[number]
        const chat = chats[i]
        if (chat === undefined) continue
        const block: Array<number> = []
        await rt.runPromise(RuntimeService.use((runtime) =>
          Effect.forEach(Array.from({ length: TURNS_PER_BLOCK }, (_, n) => n), (n) =>
            Effect.suspend(() => {
              const t = performance.now()
              return Stream.runDrain(runtime.send(chat, `message ${b}.${n}`)).pipe(Effect.tap(() => Effect.sync(() => block.push(performance.now() - t))))
            }), { discard: true })))
        samples[name].push(...block)
        blockP50[name].push(summarize(block).p50)
      }
    }
    progress(`otlp: ${PARALLEL_BLOCKS} blocks of ${SESSIONS} sessions × ${TURNS_PER_SESSION} turns each way`)
    const many = await Promise.all(each.map(([, rt]) =>
      rt.runPromise(RuntimeService.use((r) => Effect.forEach(Array.from({ length: SESSIONS }, (_, i) => i), (i) => r.resolve({ platform: "bench", externalUserId: `p${i}` }))))
    ))
    for (let b = 0; b < PARALLEL_BLOCKS; b++) {
      for (const i of b % 2 === 0 ? [0, 1] : [1, 0]) {
        const [name, rt] = each[i] as (typeof each)[number]
        const sessions = many[i] ?? []
        const t = performance.now()
        await rt.runPromise(RuntimeService.use((runtime) =>
          Effect.forEach(
            sessions,
            (c) => Effect.forEach(Array.from({ length: TURNS_PER_SESSION }, (_, n) => n), (n) => Stream.runDrain(runtime.send(c, `turn ${b}.${n}`)), { discard: true }),
            { concurrency: SESSIONS, discard: true }
          )))
        blockMs[name].push(performance.now() - t)
      }
    }
    const a = summarize(samples.off)
    const e = summarize(samples.on)
    const turns = PARALLEL_BLOCKS * SESSIONS * TURNS_PER_SESSION
    const sum = (xs: ReadonlyArray<number>) => xs.reduce((x, y) => x + y, 0)
    const rateOff = turns / (sum(blockMs.off) / 1000)
    const rateOn = turns / (sum(blockMs.on) / 1000)
    // The cost as the median of each block pair's ratio: a pair ran back to back, so drift cancels.
    const pairs = (on: ReadonlyArray<number>, off: ReadonlyArray<number>) => summarize(on.map((x, i) => x / (off[i] ?? x))).p50
    const latencyCost = (pairs(blockP50.on, blockP50.off) - 1) * 100
    const throughputCost = (pairs(blockMs.on, blockMs.off) - 1) * 100
    const exports = collector.requests().filter((r) => r.path === "/v1/traces").length
    section(
      "Telemetry export (OTLP/HTTP protobuf to a local collector), agent runtime with an instant model",
      table(["measure", "no exporter", "exporting (100 % sampled)", "cost"], [
        [
          `turn latency, one session (${int(BLOCKS * TURNS_PER_BLOCK)} turns each, alternating blocks), p50 / p95`,
          `${ms(a.p50)} / ${ms(a.p95)}`,
          `${ms(e.p50)} / ${ms(e.p95)}`,
          `${latencyCost.toFixed(1)} %`
        ],
        [
          `throughput, ${SESSIONS} sessions in parallel (${int(turns)} turns each, alternating blocks)`,
          `${rate(rateOff)} turns/s`,
          `${rate(rateOn)} turns/s`,
          `${throughputCost.toFixed(1)} %`
        ]
      ]),
      `Cost: the median over the alternating block pairs of (exporting / no exporter) − 1 — a block's p50 for latency, its time for throughput. The collector received ${int(exports)} trace exports. Target (issue 27): ≤ 5 % overhead.`
    )
    ratios.push({ operation: "a turn exporting telemetry vs none (p50)", ours: ms(e.p50), floor: ms(a.p50), ratio: `${(e.p50 / a.p50).toFixed(2)}×` })
  } finally {
    await on.dispose()
    await off.dispose()
    await collector.close()
    await fake.close()
  }
}
