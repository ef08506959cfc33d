/**
 * What exporting telemetry costs a turn (issue 27): the agent runtime with an instant model (as
 * bench/runtime.ts), once as a gateway runs without `OTEL_*` (no exporter) and once exporting traces
 * (every span: sampled at 100 %), metrics and logs over OTLP/HTTP protobuf to a collector on
 * 127.0.0.1 (test/support/otlpCollector.ts, which answers at once), every export at its default
 * interval. Target: ≤ 5 % overhead.
 *
 * Each variant is a process of its own (bench/otlpChild.ts, bundled, with npm start's node
 * settings); this process holds the model and the collector, so neither is charged to a variant.
 * The two take turns in short alternating blocks (which goes first alternates too), so the
 * machine's drift — large on a shared 2-core VM with other work on it — falls on both alike, and
 * the cost is the median over block pairs of (exporting / none) − 1.
 *
 * Throughput is measured as CPU time per turn with 50 sessions in parallel: on a saturated gateway
 * CPU is what limits turns per second, and a process's CPU time (process.cpuUsage, all its threads:
 * the exporter's encoding and sending, GC) is far less disturbed by other processes on the machine
 * than wall-clock time. Every microsecond of a variant's process from the first block to the final
 * flush is charged to some block (exports fired by the interval while it waited included). The
 * wall-clock figures (turn latency in one session, turns per second in parallel) are shown too.
 */
import { type ChildProcess, fork } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { startFakeLlm } from "../test/support/fakeLlm/server.ts"
import { startOtlpCollector } from "../test/support/otlpCollector.ts"
import type { Answer, Command } from "./otlpChild.ts"
import { bundleChild, describeSettings, startSettings } from "./runtime.ts"
import { ratios } from "./support/common.ts"
import { int, ms, progress, rate, section, summarize, table } from "./support/measure.ts"

/** Alternating blocks: of one-session turns, and of turns across SESSIONS sessions in parallel. */
const ROUNDS = Number(process.env["BENCH_OTLP_ROUNDS"] ?? 6)
const SERIAL_PAIRS = 6
const TURNS_PER_BLOCK = 20
const PARALLEL_PAIRS = Number(process.env["BENCH_OTLP_PAIRS"] ?? 16)
const SESSIONS = 50
const TURNS_PER_SESSION = Number(process.env["BENCH_OTLP_TURNS"] ?? 2)
/** BENCH_OTLP_AA=1: both variants without an exporter (an A/A run: the method's own noise). */
const AA = process.env["BENCH_OTLP_AA"] === "1"

/** Linear-interpolated quantile of `xs` (q in 0…1). */
const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return Number.NaN
  const at = (s.length - 1) * q
  const lo = Math.floor(at)
  const hi = Math.ceil(at)
  return (s[lo] ?? Number.NaN) + ((s[hi] ?? Number.NaN) - (s[lo] ?? Number.NaN)) * (at - lo)
}

/** A 95 % confidence interval of the median of `xs`, by resampling (a fixed seed: the same data give the same interval). */
const bootstrap = (xs: ReadonlyArray<number>, rounds = 2000): readonly [number, number] => {
  let seed = 27
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 2147483648
  }
  const medians = Array.from({ length: rounds }, () => quantile(xs.map(() => xs[Math.floor(random() * xs.length)] ?? Number.NaN), 0.5))
  return [quantile(medians, 0.025), quantile(medians, 0.975)]
}

const pct = (ratio: number): string => `${((ratio - 1) * 100).toFixed(1)} %`
const sum = (xs: ReadonlyArray<number>) => xs.reduce((x, y) => x + y, 0)

/**
 * Where a CPU profile of a variant's process (--cpu-prof, of the bundled child) spent its busy time:
 * the share of samples with a frame of the export path on their stack (effect's observability
 * modules — the OTLP tracer, exporter, protobuf encoder, metrics and logs exporters — and anna's
 * span wrapper, src/programs/telemetry.ts), and the garbage collector's share. A share within one
 * process is not moved by how fast the machine is at the time.
 */
const profileShares = (profileDir: string, bundle: string) => {
  const lines = readFileSync(bundle, "utf8").split("\n")
  const starts: Array<readonly [number, string]> = []
  lines.forEach((l, i) => {
    const m = /^\/\/ ((?:node_modules|src|bench)\/\S+)$/.exec(l)
    if (m?.[1] !== undefined) starts.push([i, m[1]])
  })
  const moduleAt = (line: number): string => {
    let found = ""
    for (let lo = 0, hi = starts.length - 1; lo <= hi;) {
      const mid = (lo + hi) >> 1
      const [at, name] = starts[mid] as readonly [number, string]
      if (at <= line) {
        found = name
        lo = mid + 1
      } else hi = mid - 1
    }
    return found
  }
  const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile")) ?? ""
  const profile = JSON.parse(readFileSync(join(profileDir, file), "utf8")) as {
    nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: Array<number> }>
    samples: Array<number>
    timeDeltas: Array<number>
  }
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parentOf = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id)
  const exportPath = (id: number): boolean => {
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const f = byId.get(at)?.callFrame
      if (f?.url.endsWith(".mjs") === true && /effect\/dist\/observability\/|src\/programs\/telemetry\.ts/.test(moduleAt(f.lineNumber))) return true
    }
    return false
  }
  let busy = 0
  let inExport = 0
  let gc = 0
  profile.samples.forEach((id, i) => {
    const name = byId.get(id)?.callFrame.functionName
    const dt = profile.timeDeltas[i] ?? 0
    if (name === "(idle)") return
    busy += dt
    if (name === "(garbage collector)") gc += dt
    else if (exportPath(id)) inExport += dt
  })
  return { exportShare: inExport / busy, gcShare: gc / busy }
}

/** A variant's process, and a way to send it a command and wait for its answer. */
const start = (script: string, settings: ReturnType<typeof startSettings>, args: ReadonlyArray<string>, extraFlags: ReadonlyArray<string> = []) =>
  new Promise<{ readonly child: ChildProcess; readonly ask: (c: Command) => Promise<Answer> }>((resolve, reject) => {
    const child = fork(script, [...args], { execArgv: [...settings.flags, ...extraFlags], env: { ...process.env, ...settings.env }, stdio: ["ignore", "ignore", "inherit", "ipc"] })
    let waiting: { readonly ok: (a: Answer) => void; readonly fail: (e: Error) => void } | undefined
    child.on("message", (a: Answer) => {
      const w = waiting
      waiting = undefined
      w?.ok(a)
    })
    child.once("exit", (code) => waiting?.fail(new Error(`otlpChild exited (${String(code)})`)))
    const ask = (c: Command) =>
      new Promise<Answer>((ok, fail) => {
        waiting = { ok, fail }
        child.send(c)
      })
    // The first message says it is ready.
    waiting = { ok: () => resolve({ child, ask }), fail: reject }
  })

export const runOtlp = async (dir: string) => {
  const fake = await startFakeLlm()
  fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }], usage: { input: 10, output: 1 } }))
  const collector = await startOtlpCollector()
  const script = await bundleChild("otlpChild")
  const startScript = (JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["start"] ?? ""
  const settings = startSettings(startScript)
  /** One round: a fresh process of each variant, warmed up, then the alternating blocks; [off, on] per pair. */
  const round = async (r: number, profiles?: readonly [string, string]) => {
    const flags = (i: 0 | 1) => (profiles === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profiles[i]}`])
    const variants = await Promise.all([
      start(script, settings, [fake.openAiUrl, mkdtempSync(join(dir, "otlp-off-")), ""], flags(0)),
      start(script, settings, [fake.openAiUrl, mkdtempSync(join(dir, "otlp-on-")), AA ? "" : collector.url], flags(1))
    ])
    const [off, on] = variants
    try {
      /** Runs `command` on both, in the pair's order (alternating), returning [off, on]. */
      const pair = async (b: number, command: Command): Promise<readonly [Answer, Answer]> => {
        if ((b + r) % 2 === 0) {
          const a = await off.ask(command)
          return [a, await on.ask(command)]
        }
        const e = await on.ask(command)
        return [await off.ask(command), e]
      }
      progress(profiles === undefined ? `otlp: round ${r + 1} of ${ROUNDS}: warming up both` : "otlp: a last round under --cpu-prof")
      for (let b = 0; b < 2; b++) {
        await pair(b, { op: "serial", turns: TURNS_PER_BLOCK })
        await pair(b, { op: "parallel", turnsPerSession: TURNS_PER_SESSION })
      }
      await pair(0, { op: "flush" })
      await pair(0, { op: "mark" })
      progress(`otlp: round ${r + 1}: ${SERIAL_PAIRS} block pairs of ${TURNS_PER_BLOCK} turns in one session, ${PARALLEL_PAIRS} of ${SESSIONS} sessions × ${TURNS_PER_SESSION} turns`)
      const serial: Array<readonly [Answer, Answer]> = []
      for (let b = 0; b < SERIAL_PAIRS; b++) serial.push(await pair(b, { op: "serial", turns: TURNS_PER_BLOCK }))
      const parallel: Array<readonly [Answer, Answer]> = []
      for (let b = 0; b < PARALLEL_PAIRS; b++) parallel.push(await pair(b, { op: "parallel", turnsPerSession: TURNS_PER_SESSION }))
      // What the exporters still hold is sent and charged to the last block.
      const [tailOff, tailOn] = await pair(0, { op: "flush" })
      const last = parallel.length - 1
      const [lastOff, lastOn] = parallel[last] as readonly [Answer, Answer]
      parallel[last] = [{ ...lastOff, cpuUs: lastOff.cpuUs + tailOff.cpuUs }, { ...lastOn, cpuUs: lastOn.cpuUs + tailOn.cpuUs }]
      return { serial, parallel }
    } finally {
      for (const v of variants) {
        v.child.disconnect()
      }
      await Promise.all(variants.map((v) => new Promise((res) => (v.child.exitCode === null ? v.child.once("exit", res) : res(undefined)))))
    }
  }
  try {
    const rounds: Array<Awaited<ReturnType<typeof round>>> = []
    for (let r = 0; r < ROUNDS; r++) rounds.push(await round(r))
    // A last round under the profiler: where each process's time went (not counted above).
    const profiled = [mkdtempSync(join(dir, "otlp-prof-off-")), mkdtempSync(join(dir, "otlp-prof-on-"))] as const
    await round(ROUNDS, profiled)
    const [profOff, profOn] = profiled.map((d) => profileShares(d, script)) as [ReturnType<typeof profileShares>, ReturnType<typeof profileShares>]
    const serial = rounds.flatMap((x) => x.serial)
    const parallel = rounds.flatMap((x) => x.parallel)
    const serialTurns = TURNS_PER_BLOCK
    const parallelTurns = SESSIONS * TURNS_PER_SESSION
    const of = (blocks: ReadonlyArray<readonly [Answer, Answer]>, i: 0 | 1) => blocks.map((p) => p[i])
    /** Median, quartiles and extremes of the pairs' ratios (exporting / none) of `f`. */
    const spread = (blocks: ReadonlyArray<readonly [Answer, Answer]>, f: (a: Answer) => number) => {
      const r = blocks.map(([a, e]) => f(e) / f(a))
      const [lo, hi] = bootstrap(r)
      return { p50: quantile(r, 0.5), p25: quantile(r, 0.25), p75: quantile(r, 0.75), lo, hi }
    }
    const shown = (s: ReturnType<typeof spread>) => `${pct(s.p50)} (95 % CI ${pct(s.lo)} … ${pct(s.hi)}; IQR ${pct(s.p25)} … ${pct(s.p75)})`
    const cpuPerTurn = (blocks: ReadonlyArray<Answer>, turns: number) => sum(blocks.map((b) => b.cpuUs)) / (blocks.length * turns) / 1000
    const p50 = (a: Answer) => summarize(a.samples ?? []).p50

    const cpuParallel = spread(parallel, (a) => a.cpuUs)
    const cpuSerial = spread(serial, (a) => a.cpuUs)
    const latency = spread(serial, p50)
    const wall = spread(parallel, (a) => a.wallMs)
    const parOff = cpuPerTurn(of(parallel, 0), parallelTurns)
    const parOn = cpuPerTurn(of(parallel, 1), parallelTurns)
    const serOff = cpuPerTurn(of(serial, 0), serialTurns)
    const serOn = cpuPerTurn(of(serial, 1), serialTurns)
    const latOff = summarize(of(serial, 0).flatMap((a) => a.samples ?? []))
    const latOn = summarize(of(serial, 1).flatMap((a) => a.samples ?? []))
    const rateOf = (blocks: ReadonlyArray<Answer>) => (blocks.length * parallelTurns) / (sum(blocks.map((b) => b.wallMs)) / 1000)
    const exports = collector.requests().filter((r) => r.path === "/v1/traces").length
    section(
      "Telemetry export (OTLP/HTTP protobuf to a local collector), agent runtime with an instant model",
      table(["measure", "no exporter", "exporting (100 % sampled)", "cost: median of pairs (spread)", "cost: totals"], [
        [
          `**CPU time per turn, ${SESSIONS} sessions in parallel** (${ROUNDS} × ${PARALLEL_PAIRS} block pairs × ${int(parallelTurns)} turns) — throughput`,
          `${ms(parOff)} ms`,
          `${ms(parOn)} ms`,
          shown(cpuParallel),
          pct(parOn / parOff)
        ],
        [
          `CPU time per turn, one session (${ROUNDS} × ${SERIAL_PAIRS} block pairs × ${serialTurns} turns)`,
          `${ms(serOff)} ms`,
          `${ms(serOn)} ms`,
          shown(cpuSerial),
          pct(serOn / serOff)
        ],
        [
          "turn latency, one session (wall clock), p50 / p95; cost of the blocks' p50",
          `${ms(latOff.p50)} / ${ms(latOff.p95)} ms`,
          `${ms(latOn.p50)} / ${ms(latOn.p95)} ms`,
          shown(latency),
          pct(latOn.p50 / latOff.p50)
        ],
        [
          `throughput, ${SESSIONS} sessions in parallel (wall clock); cost of the blocks' times`,
          `${rate(rateOf(of(parallel, 0)))} turns/s`,
          `${rate(rateOf(of(parallel, 1)))} turns/s`,
          shown(wall),
          pct(rateOf(of(parallel, 0)) / rateOf(of(parallel, 1)))
        ]
      ]),
      `${AA ? "**A/A run (BENCH_OTLP_AA=1): neither variant exports; the costs are the method's own noise.** " : ""}Each variant in a process of its own, fresh in each of ${ROUNDS} rounds (${
        describeSettings(settings)
      }); the model and the collector in the bench's process. CPU time: user + system of the variant's process, all threads, every microsecond from the first block to the final flush charged to a block. Cost: (exporting / no exporter) − 1, the median over alternating block pairs with a bootstrap 95 % confidence interval and interquartile range, and of the totals. CPU time per turn in parallel, median of each round's pairs: ${
        rounds.map((x) => pct(spread(x.parallel, (a) => a.cpuUs).p50)).join(", ")
      }. The collector received ${
        int(exports)
      } trace exports. A last round of each under --cpu-prof: ${
        pct(1 + profOn.exportShare)
      } of the exporting process's busy time has a frame of the export path on its stack (effect's OTLP modules, anna's span wrapper; ${
        pct(1 + profOff.exportShare)
      } without an exporter), and the garbage collector takes ${pct(1 + profOn.gcShare)} of it (${pct(1 + profOff.gcShare)} without). Target (issue 27): ≤ 5 % overhead.`
    )
    ratios.push({ operation: "a turn's CPU time exporting telemetry vs none (50 in parallel)", ours: ms(parOn), floor: ms(parOff), ratio: `${(parOn / parOff).toFixed(2)}×` })
  } finally {
    await collector.close()
    await fake.close()
  }
}
