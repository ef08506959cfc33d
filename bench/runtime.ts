/**
 * The agent runtime under load with an instant model (the fake LLM server on 127.0.0.1 answering
 * at once): the overhead of a turn (routing, storage, assembly, prompt, tools list, usage) over the
 * bare SDK call, turns per second across sessions, and memory with 1,000 live sessions (measured in a child process that holds only the runtime).
 */
import { Effect, Layer, Stream } from "effect"
import { execFile } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { ProviderConfig, TransportOptions } from "../src/domain/model/types.ts"
import * as DeterministicSummarizer from "../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../src/layers/memory/LcmMemory.ts"
import * as OpenAiChat from "../src/layers/providers/OpenAiChat.ts"
import * as ProviderClients from "../src/layers/providers/SdkProviderRegistry.ts"
import { collectResponse } from "../src/domain/model/collect.ts"
import * as Compose from "../src/programs/compose.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import * as SqliteRuntimeConfig from "../src/layers/config/SqliteConfigStore.ts"
import { AgentStore } from "../src/services/AgentStore.ts"
import { ProviderStore } from "../src/services/ProviderStore.ts"
import { Runtime as RuntimeService } from "../src/services/Runtime.ts"
import { startFakeLlm } from "../test/support/fakeLlm/server.ts"
import { int, mib, ms, progress, rate, section, summarize, table } from "./support/measure.ts"

const transport: TransportOptions = { timeoutMs: 30_000, maxRetries: 0, baseBackoffMs: 10, maxBackoffMs: 1_000 }

interface SessionsReport {
  readonly startRss: number
  readonly beforeRss: number
  readonly beforeHeap: number
  readonly afterRss: number
  readonly afterHeap: number
  readonly live: number
  readonly heapTotal: number
}

/**
 * RSS of `count` live sessions in a process that holds only the runtime (bench/sessionsChild.ts),
 * as a gateway would: the fake server, the earlier phases and their garbage stay in this process.
 */
const sessionsProcess = (url: string, home: string, count: number) =>
  new Promise<SessionsReport>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--expose-gc", fileURLToPath(new URL("./sessionsChild.ts", import.meta.url)), url, home, String(count)],
      { maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`sessionsChild: ${error.message}\n${stderr}`))
        else resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as SessionsReport)
      }
    )
  })

export const runRuntime = async (dir: string) => {
  const fake = await startFakeLlm()
  fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }], usage: { input: 10, output: 1 } }))
  const provider: ProviderConfig = {
    id: "local",
    type: "openai",
    baseUrl: fake.openAiUrl,
    apiKey: "sk-bench",
    models: [],
    defaultModel: "fake-large",
    headers: {},
    enabled: true
  }
  const home = mkdtempSync(join(dir, "runtime-"))
  const layer = Compose.agentRuntime().pipe(
    Layer.provide(ProviderClients.layer(transport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(Sqlite.layer(join(home, "anna.db")))
  )
  const rows: Array<Array<string>> = []
  try {
    await Effect.runPromise(Effect.gen(function*() {
      yield* (yield* ProviderStore).add(provider)
      yield* (yield* AgentStore).create("bench", { providerId: "local", tools: ["memory"] })
      const runtime = yield* RuntimeService

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
    progress("runtime: 1,000 sessions, in a process of their own")
    const child = await sessionsProcess(fake.openAiUrl, mkdtempSync(join(dir, "sessions-")), 1000)
    rows.push([
      "memory with 1,000 live sessions (one turn each), own process",
      `RSS ${mib(child.afterRss)}`,
      `one session ${mib(child.beforeRss)}`,
      `${int(Math.round((child.afterHeap - child.beforeHeap) / 1000 / 1024))} KiB of heap kept per session (${
        int(child.live)
      } live); V8 heap ${mib(child.afterHeap)} used of ${mib(child.heapTotal)} reserved`
    ])
  } finally {
    await fake.close()
  }
  section(
    "Agent runtime with an instant model",
    table(["measure", "ours (p50 / p95)", "floor: SDK call alone", "difference"], rows),
    "Instant model: the fake LLM server answers \"ok\" at once over HTTP through the official openai SDK. The difference is what a turn adds: routing, storing the user and assistant messages, the compaction check, assembly, the system prompt, the tool list and usage recording."
  )
}
