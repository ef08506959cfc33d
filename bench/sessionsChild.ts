/**
 * Child process of bench/runtime.ts: a process holding only what a gateway holds for its sessions
 * (the runtime, LCM memory, provider clients, SQLite; no fake server, no earlier benchmark's
 * garbage), so its RSS is what 1,000 live sessions cost a user. Started with --expose-gc by the
 * parent, which passes the fake server's URL and a folder; prints one JSON line:
 * {startRss, beforeRss, beforeHeap, afterRss, afterHeap, live, elapsedMs, external, arrayBuffers,
 * heapTotal}, memory in bytes (after full GCs). bench/runtime.ts runs it bundled (as dist/ is), so
 * the figure holds no TypeScript stripping. SESSIONS_CONCURRENCY (default 50) sets how many sessions take their turn at once.
 */
import { Effect, Layer, Stream } from "effect"
import { join } from "node:path"
import type { ProviderConfig, TransportOptions } from "../src/domain/model/types.ts"
import * as SqliteRuntimeConfig from "../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../src/layers/providers/SdkProviderRegistry.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import * as Compose from "../src/programs/compose.ts"
import { AgentStore } from "../src/services/AgentStore.ts"
import { ProviderStore } from "../src/services/ProviderStore.ts"
import { Runtime } from "../src/services/Runtime.ts"
import { SessionPool } from "../src/services/SessionPool.ts"

const [url = "", home = "", count = "1000"] = process.argv.slice(2)
const sessions = Number(count)
const transport: TransportOptions = { timeoutMs: 30_000, maxRetries: 0, baseBackoffMs: 10, maxBackoffMs: 1_000 }
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined)
const settle = () => {
  gc()
  gc()
  return process.memoryUsage()
}

const provider: ProviderConfig = {
  id: "local",
  type: "openai",
  baseUrl: url,
  apiKey: "sk-bench",
  models: [],
  defaultModel: "fake-large",
  headers: {},
  enabled: true
}

const layer = Compose.agentRuntime().pipe(
  Layer.provide(ProviderClients.layer(transport)),
  Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
  Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
  Layer.provideMerge(Sqlite.layer(join(home, "anna.db")))
)

const start = settle()
await Effect.runPromise(Effect.gen(function*() {
  yield* (yield* ProviderStore).add(provider)
  yield* (yield* AgentStore).create("bench", { providerId: "local", tools: ["memory"] })
  const runtime = yield* Runtime
  // One session warms every code path (SDK client, prepared statements, agent files).
  const first = yield* runtime.resolve({ platform: "bench", externalUserId: "warm" })
  yield* Stream.runDrain(runtime.send(first, "hello"))
  const before = settle()
  const started = performance.now()
  yield* Effect.forEach(
    Array.from({ length: sessions }, (_, i) => i),
    (i) => runtime.resolve({ platform: "bench", externalUserId: `s${i}` }).pipe(Effect.flatMap((c) => Stream.runDrain(runtime.send(c, "hello")))),
    { concurrency: Number(process.env["SESSIONS_CONCURRENCY"] ?? 50), discard: true }
  )
  const elapsedMs = performance.now() - started
  const live = (yield* (yield* SessionPool).live).length
  const after = settle()
  process.stdout.write(
    `${
      JSON.stringify({
        startRss: start.rss,
        beforeRss: before.rss,
        beforeHeap: before.heapUsed,
        afterRss: after.rss,
        afterHeap: after.heapUsed,
        live,
        elapsedMs,
        external: after.external,
        arrayBuffers: after.arrayBuffers,
        heapTotal: after.heapTotal
      })
    }\n`
  )
}).pipe(Effect.scoped, Effect.provide(layer)))
