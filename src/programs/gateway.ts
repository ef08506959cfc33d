/**
 * `anna` / `anna gateway`: the long-running process. In this release it prepares the state folder
 * and database (migrations), creates providers from the environment on the first start (as
 * `anna onboard --from-env`), reports the memory plugin in use, and runs until SIGINT/SIGTERM;
 * channels, the admin server and the scheduler join it in later releases.
 */
import { Effect, Layer, Option } from "effect"
import { Command } from "effect/cli"
import * as SqlitePluginStore from "../layers/SqlitePluginStore.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { PluginStore } from "../services/PluginStore.ts"
import * as SqliteMemoryStore from "../layers/SqliteMemoryStore.ts"
import * as SqliteConfigStore from "../layers/SqliteConfigStore.ts"
import { database, dbPath } from "./env.ts"
import { onboardOnFirstStart } from "./onboard.ts"

const gatewayLayer = Layer.mergeAll(SqlitePluginStore.layer, SqliteMemoryStore.layer, SqliteConfigStore.layer).pipe(
  Layer.provideMerge(database)
)

export const runGateway = Effect.gen(function*() {
  const file = yield* dbPath
  const memoryPlugin = yield* (yield* PluginStore).enabledMemory
  const sessions = yield* (yield* MemoryStore).listConversations({})
  const onboarded = yield* onboardOnFirstStart
  if (Option.isSome(onboarded)) {
    for (const p of onboarded.value.createdProviders) {
      yield* Effect.logInfo(`first start: created provider ${p.id} (${p.type}, default model ${p.defaultModel}) from the environment`)
    }
    if (onboarded.value.createdAgent !== null) yield* Effect.logInfo(`first start: created agent ${onboarded.value.createdAgent}`)
  }
  yield* Effect.logInfo(`anna gateway: database ${file} ready; memory plugin ${memoryPlugin}; ${sessions.length} session(s) stored`)
  yield* Effect.logInfo("no channels are available in this release yet; press Ctrl+C to stop")
  // Runs until interrupted: NodeRuntime.runMain interrupts on SIGINT/SIGTERM and the scopes close
  // (the database connection is closed by its layer's finalizer). A stop on a signal is a clean
  // exit for a daemon, so the exit code is 0.
  return yield* Effect.never.pipe(
    Effect.onInterrupt(() =>
      Effect.logInfo("anna gateway: stopped").pipe(Effect.andThen(Effect.sync(() => (process.exitCode = 0))))
    )
  )
}).pipe(Effect.provide(gatewayLayer))

export const gatewayCommand = Command.make("gateway", {}, () => runGateway).pipe(
  Command.withDescription("Run the gateway until SIGINT/SIGTERM (the default when no command is given)")
)
