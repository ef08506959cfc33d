/**
 * What exporting telemetry costs a turn (issue 27): the agent runtime with an instant model (as
 * bench/runtime.ts), once as a gateway runs without `OTEL_*` (no exporter) and once exporting traces
 * (every span: sampled at 100 %), metrics and logs over OTLP/HTTP protobuf to a collector on
 * 127.0.0.1 (test/support/otlpCollector.ts, which answers at once), every export at its default
 * interval. The two alternate, twice each, on fresh homes, so drift of the machine falls on both;
 * the figures are each variant's better run. Target: ≤ 5 % overhead.
 */
import { Effect, Stream } from "effect"
import { layerOtlp } from "../src/programs/telemetry.ts"
import type { OtlpSettings, SignalExport } from "../src/domain/observability/otlp.ts"
import { startFakeLlm } from "../test/support/fakeLlm/server.ts"
import { startOtlpCollector } from "../test/support/otlpCollector.ts"
import { benchRuntime } from "./runtime.ts"
import { ratios } from "./support/common.ts"
import { int, ms, progress, rate, section, summarize, type Summary, table } from "./support/measure.ts"

const TURNS = 300
const SESSIONS = 50
const PER_SESSION = 20

interface Run {
  readonly turn: Summary
  readonly turnsPerSecond: number
}

const better = (a: Run, b: Run): Run => ({
  turn: a.turn.p50 <= b.turn.p50 ? a.turn : b.turn,
  turnsPerSecond: Math.max(a.turnsPerSecond, b.turnsPerSecond)
})

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
  const measure = (exporting: boolean): Promise<Run> => {
    const { layer, setUp } = benchRuntime(dir, fake.openAiUrl)
    const program = Effect.gen(function*() {
      const runtime = yield* setUp
      const chat = yield* runtime.resolve({ platform: "bench", externalUserId: "solo" })
      const samples: Array<number> = []
      for (let i = 0; i < TURNS; i++) {
        const t = performance.now()
        yield* Stream.runDrain(runtime.send(chat, `message ${i}`))
        samples.push(performance.now() - t)
      }
      const chats = yield* Effect.forEach(Array.from({ length: SESSIONS }, (_, i) => i), (i) => runtime.resolve({ platform: "bench", externalUserId: `p${i}` }))
      const started = performance.now()
      yield* Effect.forEach(
        chats,
        (c) => Effect.forEach(Array.from({ length: PER_SESSION }, (_, n) => n), (n) => Stream.runDrain(runtime.send(c, `turn ${n}`)), { discard: true }),
        { concurrency: SESSIONS, discard: true }
      )
      const elapsed = performance.now() - started
      return { turn: summarize(samples), turnsPerSecond: (SESSIONS * PER_SESSION) / (elapsed / 1000) }
    }).pipe(Effect.scoped, Effect.provide(layer))
    // As the gateway provides it (src/programs/gateway.ts): around everything, closed last.
    return Effect.runPromise(exporting ? program.pipe(Effect.provide(layerOtlp(settings))) : program)
  }
  try {
    let off: Run | undefined
    let on: Run | undefined
    for (const round of [1, 2]) {
      progress(`otlp: round ${round}, no exporter`)
      const a = await measure(false)
      off = off === undefined ? a : better(off, a)
      progress(`otlp: round ${round}, exporting traces, metrics and logs`)
      const b = await measure(true)
      on = on === undefined ? b : better(on, b)
    }
    if (off === undefined || on === undefined) return
    const spans = collector.requests().filter((r) => r.path === "/v1/traces").length
    const overhead = (on.turn.p50 / off.turn.p50 - 1) * 100
    const slower = (off.turnsPerSecond / on.turnsPerSecond - 1) * 100
    section(
      "Telemetry export (OTLP/HTTP protobuf to a local collector), agent runtime with an instant model",
      table(["measure", "no exporter", "exporting (100 % sampled)", "cost"], [
        [`turn latency, one session (${int(TURNS)} turns), p50 / p95`, `${ms(off.turn.p50)} / ${ms(off.turn.p95)}`, `${ms(on.turn.p50)} / ${ms(on.turn.p95)}`, `${overhead.toFixed(1)} %`],
        [`throughput, ${SESSIONS} sessions × ${PER_SESSION} turns in parallel`, `${rate(off.turnsPerSecond)} turns/s`, `${rate(on.turnsPerSecond)} turns/s`, `${slower.toFixed(1)} %`]
      ]),
      `Each variant's better of two alternating runs on fresh homes; the collector received ${int(spans)} trace exports. Target (issue 27): ≤ 5 % overhead.`
    )
    ratios.push({ operation: "a turn exporting telemetry vs none (p50)", ours: ms(on.turn.p50), floor: ms(off.turn.p50), ratio: `${(on.turn.p50 / off.turn.p50).toFixed(2)}×` })
  } finally {
    await collector.close()
    await fake.close()
  }
}
