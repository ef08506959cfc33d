/**
 * A full runtime on a fresh ANNA_HOME: real SQLite, LCM memory with the deterministic summarizer,
 * provider clients on a fast transport, optionally the real Docker sandbox, and the HTTP channel on
 * an ephemeral port when asked.
 */
import Docker from "dockerode"
import { type Duration, Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ProviderConfig } from "../../src/domain/model/types.ts"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import * as DockerSandbox from "../../src/layers/sandbox/DockerSandbox.ts"
import * as HttpChannel from "../../src/layers/channels/HttpChannel.ts"
import * as LcmMemory from "../../src/layers/memory/LcmMemory.ts"
import * as ModelSummarizer from "../../src/layers/memory/ModelSummarizer.ts"
import * as SqliteMemoryStore from "../../src/layers/memory/SqliteMemoryStore.ts"
import * as ProviderClients from "../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../src/programs/compose.ts"
import * as SqliteRuntimeConfig from "../../src/layers/config/SqliteConfigStore.ts"
import { AgentStore } from "../../src/services/AgentStore.ts"
import { ProviderStore } from "../../src/services/ProviderStore.ts"
import { Sandbox } from "../../src/services/Sandbox.ts"
import { fastTransport } from "../layers/providers/contract.ts"
import { sqliteTemp, homeDatabase } from "./db.ts"
import type { FakeLlm } from "./fakeLlm/server.ts"
import { removeTemp } from "./cleanup.ts"

/** A scoped temporary ANNA_HOME. */
export const tempHome = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-e2e-"))),
  (dir) => Effect.promise(() => removeTemp(dir))
)

export const runtimeStack = (
  home: string,
  options: {
    readonly sandbox?: boolean
    readonly docker?: Docker
    /** How long an idle runner (and its container) lives (default 2 s; longer where a test keeps containers across turns). */
    readonly runnerIdle?: Duration.Input
  } = {}
) => {
  const database = homeDatabase(home)
  const stores = SqliteRuntimeConfig.layerWithStores(home)
  const memory = LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))
  const base = Compose.agentRuntime({ runnerIdle: options.runnerIdle ?? "2 seconds", configPoll: "100 millis" }).pipe(
    Layer.provide(options.sandbox === true ? Layer.effect(Sandbox, DockerSandbox.make(options.docker ?? new Docker())) : Layer.empty),
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(memory),
    Layer.provideMerge(stores)
  )
  return base.pipe(Layer.provideMerge(database))
}

/**
 * The runtime on a temporary database with LCM memory summarized by the agent's own model (the
 * production ModelSummarizer), provider clients on `transport`; configuration under `home`.
 */
export const modelSummarizerRuntime = (home: string, transport: typeof fastTransport = fastTransport) => {
  const registry = ProviderClients.layer(transport)
  const memory = LcmMemory.layerSqlite.pipe(
    Layer.provide(ModelSummarizer.layer().pipe(Layer.provide(registry))),
    Layer.provideMerge(SqliteMemoryStore.layer)
  )
  return Compose.agentRuntime({ runnerIdle: "1 hour", configPoll: "1 hour" }).pipe(
    Layer.provide(registry),
    Layer.provideMerge(memory),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )
}

/** The runtime with the HTTP channel on an ephemeral port (see HttpAddress). */
export const httpStack = (home: string) => HttpChannel.layer({ port: 0 }).pipe(Layer.provideMerge(runtimeStack(home)))

/** The fake server as provider `local` (OpenAI Chat Completions, default model fake-large). */
export const localProvider = (fake: FakeLlm, overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  id: "local",
  type: "openai",
  baseUrl: fake.openAiUrl,
  apiKey: "sk-x",
  models: [],
  defaultModel: "fake-large",
  headers: {},
  enabled: true,
  ...overrides
})

/** The fake server as provider `local` and an agent using it. */
export const configureAgent = (fake: FakeLlm, agentId: string, agent: Parameters<AgentStore["Service"]["create"]>[1] = {}) =>
  Effect.gen(function*() {
    const providers = yield* ProviderStore
    if ((yield* providers.list).every((p) => p.id !== "local")) yield* providers.add(localProvider(fake))
    return yield* (yield* AgentStore).create(agentId, { providerId: "local", ...agent })
  })
