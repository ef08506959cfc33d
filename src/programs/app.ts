/**
 * The production composition: SQLite at `$ANNA_HOME/anna.db` with every store, the enabled memory
 * plugin and its summarizer, the provider clients, the Docker sandbox, and the Runtime over them.
 * The gateway adds its channels on top; `anna chat` uses it directly. Custom deployments compose
 * their own from the same layers (see examples/).
 */
import { Effect, Layer } from "effect"
import * as DockerSandbox from "../layers/sandbox/DockerSandbox.ts"
import * as ProviderClients from "../layers/providers/SdkProviderRegistry.ts"
import * as Runtime from "../layers/runtime/Runtime.ts"
import * as SqliteRuntimeConfig from "../layers/config/SqliteConfigStore.ts"
import { annaHome } from "./env.ts"
import { memoryStack } from "./memoryStack.ts"

/** Stores (config, providers, agents, usage, memory) and the memory plugin, on `$ANNA_HOME/anna.db`. */
export const coreLayer = Layer.unwrap(
  Effect.map(annaHome, (home) => SqliteRuntimeConfig.layer(home).pipe(Layer.provideMerge(memoryStack(undefined))))
)

/** The Runtime with everything it needs, plus the core services. */
export const runtimeLayer = Runtime.layer().pipe(
  Layer.provide(DockerSandbox.layer),
  Layer.provide(ProviderClients.layer()),
  Layer.provideMerge(coreLayer)
)
