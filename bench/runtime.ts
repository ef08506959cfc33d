/**
 * The agent runtime under load with an instant model (the fake LLM server on 127.0.0.1 answering
 * at once): the overhead of a turn (routing, storage, assembly, prompt, tools list, usage) over the
 * bare SDK call, turns per second across sessions, and memory with 1,000 live sessions.
 */
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { join } from "node:path"
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

      progress("runtime: 1,000 sessions")
      const before = process.memoryUsage()
      yield* Effect.forEach(Array.from({ length: 1000 }, (_, i) => i), (i) =>
        runtime.resolve({ platform: "bench", externalUserId: `s${i}` }).pipe(Effect.flatMap((c) => Stream.runDrain(runtime.send(c, "hello")))), { concurrency: 50, discard: true })
      const after = process.memoryUsage()
      rows.push(["memory with 1,000 sessions (one turn each)", `RSS ${mib(after.rss)}`, `before ${mib(before.rss)}`, `heap ${mib(after.heapUsed)}`])
    }).pipe(Effect.scoped, Effect.provide(layer)))
  } finally {
    await fake.close()
  }
  section(
    "Agent runtime with an instant model",
    table(["measure", "ours (p50 / p95)", "floor: SDK call alone", "difference"], rows),
    "Instant model: the fake LLM server answers \"ok\" at once over HTTP through the official openai SDK. The difference is what a turn adds: routing, storing the user and assistant messages, the compaction check, assembly, the system prompt, the tool list and usage recording."
  )
}
