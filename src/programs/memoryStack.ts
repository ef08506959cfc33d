/**
 * The memory stack of the CLI and the gateway: configuration (providers, agents, usage) and the
 * memory store on `$ANNA_HOME/anna.db`, the enabled memory plugin, and its summarizer — the
 * configured summarization model when a provider exists, the deterministic one otherwise.
 */
import { Effect, Layer, Option } from "effect"
import { formatModelRef } from "../domain/config/agent.ts"
import * as DeterministicSummarizer from "../layers/memory/DeterministicSummarizer.ts"
import * as MemoryFromPlugins from "../layers/memory/MemoryFromPlugins.ts"
import * as ModelSummarizer from "../layers/memory/ModelSummarizer.ts"
import * as ProviderClients from "../layers/providers/SdkProviderRegistry.ts"
import * as SqliteConfigStore from "../layers/config/SqliteStores.ts"
import * as SqliteMemoryStore from "../layers/memory/SqliteMemoryStore.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import { database } from "./env.ts"

/** Configuration (providers, agents, usage) and the memory store on `$ANNA_HOME/anna.db`. */
export const base = Layer.mergeAll(SqliteConfigStore.layer, SqliteMemoryStore.layer).pipe(Layer.provideMerge(database))

/**
 * The summarizer: the configured summarization model when a provider exists (with the spend guard,
 * or `maxCalls` instead of the agents' limits), the deterministic summarizer otherwise.
 */
export const summarizerLayer = (maxCalls: number | undefined) =>
  Layer.unwrap(Effect.gen(function*() {
    const any = (yield* (yield* ProviderStore).list).some((p) => p.enabled)
    return any
      ? ModelSummarizer.layer({ maxCallsOverride: maxCalls }).pipe(Layer.provide(ProviderClients.layer()))
      : DeterministicSummarizer.layer
  }))

/** Which summarizer compaction of a session will use, for people. */
export const summarizerLabel = (sessionKey: string) =>
  Effect.gen(function*() {
    const any = (yield* (yield* ProviderStore).list).some((p) => p.enabled)
    if (!any) return "deterministic (no model provider configured)"
    const target = yield* ModelSummarizer.resolveSummaryTarget(sessionKey)
    return Option.match(target, {
      onNone: () => "deterministic (no model provider configured)",
      onSome: (t) => `${formatModelRef(t.ref)} (${t.why})`
    })
  })

/** The enabled memory plugin with its summarizer (and the base stores), on `$ANNA_HOME/anna.db`. */
export const memoryStack = (maxCalls: number | undefined) =>
  MemoryFromPlugins.layer.pipe(Layer.provide(summarizerLayer(maxCalls)), Layer.provideMerge(base))

