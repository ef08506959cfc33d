/**
 * Child process of bench/otlp.ts: one variant of the telemetry-overhead bench — the agent runtime on
 * a home of its own (as bench/runtime.ts builds it), either as a gateway without `OTEL_*` (no
 * collector URL) or exporting traces (100 % sampled), metrics and logs over OTLP/HTTP protobuf to
 * the collector the parent runs. Started with `fork` (bundled, as dist/ is: no TypeScript
 * stripping at run time), it takes the parent's commands over IPC and runs one block at a time:
 *
 *   { op: "serial", turns }            turns one after another in one session: each turn's time
 *   { op: "parallel", turnsPerSession } every session (SESSIONS) at once, that many turns each
 *   { op: "flush" }                     sends what the exporters hold (none: nothing to do)
 *   { op: "mark" }                      starts counting CPU time from here
 *
 * and answers each with `{ wallMs, cpuUs, samples? }`. `cpuUs` is this process's CPU time (user +
 * system, all its threads: the exporter's encoding and sending, GC, libuv) since the previous
 * answer, not since the block started: what the exporter did while this process waited for its
 * next block (an export fired by the interval) is charged to that block, so every microsecond
 * between the first mark and the last answer is counted once. The collector and the model are the
 * parent's, not charged here.
 */
import { Effect, Layer, ManagedRuntime, Option, Stream } from "effect"
import { OtlpExporter } from "effect/observability"
import type { OtlpSettings, SignalExport } from "../src/domain/observability/otlp.ts"
import { layerOtlp } from "../src/programs/telemetry.ts"
import { Runtime as RuntimeService } from "../src/services/Runtime.ts"
import { benchRuntime } from "./support/benchRuntime.ts"

export const SESSIONS = 50

export type Command =
  | { readonly op: "serial"; readonly turns: number }
  | { readonly op: "parallel"; readonly turnsPerSession: number }
  | { readonly op: "flush" }
  | { readonly op: "mark" }

export interface Answer {
  readonly wallMs: number
  readonly cpuUs: number
  readonly samples?: ReadonlyArray<number>
}

const [modelUrl = "", dir = "", collectorUrl = ""] = process.argv.slice(2)

const to = (signal: string): SignalExport => ({ url: `${collectorUrl}/v1/${signal}`, protocol: "http/protobuf", headers: {}, compression: "none", timeoutMs: 10_000 })
/** BENCH_OTLP_SIGNALS (e.g. `traces,logs`): only those signals are exported (all three by default), to see each one's share. */
const signals = new Set((process.env["BENCH_OTLP_SIGNALS"] ?? "traces,metrics,logs").split(","))
const settings: OtlpSettings = {
  ...(signals.has("traces") ? { traces: to("traces") } : {}),
  ...(signals.has("metrics") ? { metrics: to("metrics") } : {}),
  ...(signals.has("logs") ? { logs: to("logs") } : {}),
  serviceName: "anna-bench",
  serviceVersion: "bench",
  sampler: { root: "always_on", ratio: 1, parentBased: true }
}

const { layer, setUp } = benchRuntime(dir, modelUrl)
const runtime = ManagedRuntime.make(collectorUrl === "" ? layer : Layer.merge(layer, layerOtlp(settings)))
await runtime.runPromise(setUp)
const solo = await runtime.runPromise(RuntimeService.use((r) => r.resolve({ platform: "bench", externalUserId: "solo" })))
const many = await runtime.runPromise(
  RuntimeService.use((r) => Effect.forEach(Array.from({ length: SESSIONS }, (_, i) => i), (i) => r.resolve({ platform: "bench", externalUserId: `p${i}` })))
)

let n = 0
const serial = (turns: number) =>
  runtime.runPromise(RuntimeService.use((r) =>
    Effect.forEach(Array.from({ length: turns }, (_, i) => i), (i) =>
      Effect.suspend(() => {
        const t = performance.now()
        return Stream.runDrain(r.send(solo, `message ${n++}.${i}`)).pipe(Effect.map(() => performance.now() - t))
      }))
  ))

const parallel = (turnsPerSession: number) =>
  runtime.runPromise(RuntimeService.use((r) =>
    Effect.forEach(
      many,
      (c) => Effect.forEach(Array.from({ length: turnsPerSession }, (_, i) => i), (i) => Stream.runDrain(r.send(c, `turn ${n++}.${i}`)), { discard: true }),
      { concurrency: SESSIONS, discard: true }
    )
  ))

const flush = () => runtime.runPromise(Effect.serviceOption(OtlpExporter.Flusher).pipe(Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (f) => f.flush }))))

let mark = process.cpuUsage()
const since = (): number => {
  const used = process.cpuUsage(mark)
  mark = process.cpuUsage()
  return used.user + used.system
}

const handle = async (command: Command): Promise<Answer> => {
  const t = performance.now()
  switch (command.op) {
    case "serial": {
      const samples = await serial(command.turns)
      return { wallMs: performance.now() - t, cpuUs: since(), samples }
    }
    case "parallel":
      await parallel(command.turnsPerSession)
      return { wallMs: performance.now() - t, cpuUs: since() }
    case "flush":
      await flush().then(() => undefined).catch(() => undefined)
      return { wallMs: performance.now() - t, cpuUs: since() }
    case "mark":
      since()
      return { wallMs: 0, cpuUs: 0 }
  }
}

process.on("message", (command: Command) => {
  void handle(command).then((answer) => process.send?.(answer), (error: unknown) => {
    process.stderr.write(`otlpChild: ${String(error)}\n`)
    process.exit(1)
  })
})
process.on("disconnect", () => {
  void runtime.dispose().finally(() => process.exit(0))
})
process.send?.({ wallMs: 0, cpuUs: 0 } satisfies Answer)
