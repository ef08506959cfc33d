/**
 * The agent runtime under load with an instant model (the fake LLM server on 127.0.0.1 answering
 * at once): the overhead of a turn (routing, storage, assembly, prompt, tools list, usage) over the
 * bare SDK call, turns per second across sessions, and memory with 1,000 live sessions (measured in a child process that holds only the runtime).
 */
import { Effect, Stream } from "effect"
import { execFile } from "node:child_process"
import { build } from "esbuild"
import { mkdtempSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as OpenAiChat from "../src/layers/providers/OpenAiChat.ts"
import { collectResponse } from "../src/domain/model/collect.ts"
import { startFakeLlm } from "../test/support/fakeLlm/server.ts"
import { benchRuntime, transport } from "./support/benchRuntime.ts"
import { int, mib, ms, progress, rate, section, summarize, table } from "./support/measure.ts"

interface SessionsReport {
  readonly startRss: number
  readonly beforeRss: number
  readonly beforeHeap: number
  readonly afterRss: number
  readonly afterHeap: number
  readonly live: number
  readonly elapsedMs: number
  readonly heapTotal: number
}

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)))

/** bench/{name}.ts (a child process's script) bundled as dist/ is (no TypeScript stripping at run time), into node_modules/.cache. */
export const bundleChild = async (name = "sessionsChild"): Promise<string> => {
  const outfile = join(ROOT, "node_modules", ".cache", "anna-bench", `${name}.mjs`)
  await build({
    entryPoints: [join(ROOT, "bench", `${name}.ts`)],
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node22",
    external: ["openai", "@anthropic-ai/sdk", "dockerode"],
    logLevel: "warning",
    banner: { js: "import { createRequire as __annaRequire } from 'node:module'; const require = __annaRequire(import.meta.url);" }
  })
  return outfile
}

/**
 * What `npm start` gives the gateway's process: the environment assignments and the node flags of
 * package.json's start script (e.g. `MALLOC_ARENA_MAX=2 exec node --max-semi-space-size=8 dist/main.js`).
 */
export const startSettings = (script: string): { readonly env: Record<string, string>; readonly flags: ReadonlyArray<string> } => {
  const words = script.trim().split(/\s+/)
  const env: Record<string, string> = {}
  let i = 0
  for (; i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i] ?? ""); i++) {
    const [key = "", ...value] = (words[i] ?? "").split("=")
    env[key] = value.join("=")
  }
  if (words[i] === "exec") i++
  if (words[i] === "node") i++
  const flags: Array<string> = []
  for (; i < words.length && (words[i] ?? "").startsWith("--"); i++) flags.push(words[i] ?? "")
  return { env, flags }
}

/**
 * RSS of `count` live sessions in a process that holds only the runtime (bench/sessionsChild.ts),
 * as a gateway would: the fake server, the earlier phases and their garbage stay in this process.
 */
export const describeSettings = (s: ReturnType<typeof startSettings>): string =>
  [...Object.entries(s.env).map(([k, v]) => `${k}=${v}`), ...s.flags].join(" ") || "no settings"

const sessionsProcess = (
  child: string,
  settings: ReturnType<typeof startSettings>,
  url: string,
  home: string,
  count: number
) =>
  new Promise<SessionsReport>((resolve, reject) => {
    execFile(
      process.execPath,
      [...settings.flags, "--expose-gc", child, url, home, String(count)],
      { maxBuffer: 1 << 20, env: { ...process.env, ...settings.env } },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`sessionsChild: ${error.message}\n${stderr}`))
        else resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as SessionsReport)
      }
    )
  })

export const runRuntime = async (dir: string) => {
  const fake = await startFakeLlm()
  fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }], usage: { input: 10, output: 1 } }))
  const { provider, layer, setUp } = benchRuntime(dir, fake.openAiUrl)
  const rows: Array<Array<string>> = []
  try {
    await Effect.runPromise(Effect.gen(function*() {
      const runtime = yield* setUp

      // Floor: the same request straight through the SDK layer.
      const client = OpenAiChat.make(provider, transport)
      const floorSamples: Array<number> = []
      for (let i = 0; i < 300; i++) {
        const t = performance.now()
        yield* collectResponse(client.stream({ model: "fake-large", messages: [{ role: "user", content: `hi ${i}` }] }))
        floorSamples.push(performance.now() - t)
      }
      const floor = summarize(floorSamples)

      progress("runtime: one session, 300 turns")
      const chat = yield* runtime.resolve({ platform: "bench", externalUserId: "solo" })
      const turnSamples: Array<number> = []
      for (let i = 0; i < 300; i++) {
        const t = performance.now()
        yield* Stream.runDrain(runtime.send(chat, `message ${i}`))
        turnSamples.push(performance.now() - t)
      }
      const turn = summarize(turnSamples)
      rows.push(["turn latency, one session (300 turns)", `${ms(turn.p50)} / ${ms(turn.p95)}`, `${ms(floor.p50)} / ${ms(floor.p95)}`, ms(turn.p50 - floor.p50)])

      progress("runtime: 50 sessions × 20 turns")
      const chats = yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) => runtime.resolve({ platform: "bench", externalUserId: `p${i}` }))
      const started = performance.now()
      yield* Effect.forEach(chats, (c) => Effect.forEach(Array.from({ length: 20 }, (_, n) => n), (n) => Stream.runDrain(runtime.send(c, `turn ${n}`)), { discard: true }), { concurrency: 50, discard: true })
      const elapsed = performance.now() - started
      rows.push(["throughput, 50 sessions in parallel", `${rate((50 * 20) / (elapsed / 1000))} turns/s`, "", `${int(1000)} turns in ${ms(elapsed)}`])

    }).pipe(Effect.scoped, Effect.provide(layer)))
    const child = await bundleChild()
    const script = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["start"] ?? ""
    const settings: ReadonlyArray<readonly [string, ReturnType<typeof startSettings>]> = [
      ["node defaults", { env: {}, flags: [] }],
      [`as npm start runs it (${describeSettings(startSettings(script))})`, startSettings(script)]
    ]
    for (const [label, setting] of settings) {
      progress(`runtime: 1,000 sessions, in a process of their own, ${label}`)
      const r = await sessionsProcess(child, setting, fake.openAiUrl, mkdtempSync(join(dir, "sessions-")), 1000)
      rows.push([
        `1,000 live sessions (one turn each, 50 at a time), own process, ${label}`,
        `RSS ${mib(r.afterRss)}`,
        `one session ${mib(r.beforeRss)}`,
        `${int(Math.round((r.afterHeap - r.beforeHeap) / 1000 / 1024))} KiB of heap kept per session (${int(r.live)} live); V8 heap ${
          mib(r.afterHeap)
        } used of ${mib(r.heapTotal)} reserved; ${rate(1000 / (r.elapsedMs / 1000))} turns/s`
      ])
    }
  } finally {
    await fake.close()
  }
  section(
    "Agent runtime with an instant model",
    table(["measure", "ours (p50 / p95)", "floor: SDK call alone", "difference"], rows),
    "Instant model: the fake LLM server answers \"ok\" at once over HTTP through the official openai SDK. The difference is what a turn adds: routing, storing the user and assistant messages, the compaction check, assembly, the system prompt, the tool list and usage recording."
  )
}
