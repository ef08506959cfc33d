/**
 * The agent runtime the runtime and telemetry benches drive (bench/runtime.ts, bench/otlp.ts and its
 * child bench/otlpChild.ts): a fresh home with one agent on an instant model.
 */
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { join } from "node:path"
import type { ProviderConfig, TransportOptions } from "../../src/domain/model/types.ts"
import * as SqliteRuntimeConfig from "../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../src/layers/providers/SdkProviderRegistry.ts"
import * as Sqlite from "../../src/layers/sql/Sqlite.ts"
import * as Compose from "../../src/programs/compose.ts"
import { AgentStore } from "../../src/services/AgentStore.ts"
import { ProviderStore } from "../../src/services/ProviderStore.ts"
import { Runtime as RuntimeService } from "../../src/services/Runtime.ts"

export const transport: TransportOptions = { timeoutMs: 30_000, maxRetries: 0, baseBackoffMs: 10, maxBackoffMs: 1_000 }

/** The agent runtime on a fresh home in `dir`, its one agent `bench` on the instant model at `modelUrl` (an OpenAI base URL). */
export const benchRuntime = (dir: string, modelUrl: string) => {
  const provider: ProviderConfig = {
    id: "local",
    type: "openai",
    baseUrl: modelUrl,
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
  /** The provider and the agent, then the runtime. */
  const setUp = Effect.gen(function*() {
    yield* (yield* ProviderStore).add(provider)
    yield* (yield* AgentStore).create("bench", { providerId: "local", tools: ["memory"] })
    return yield* RuntimeService
  })
  return { provider, layer, setUp }
}
