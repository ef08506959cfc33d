/**
 * `anna` / `anna gateway`: the long-running process. In this release it prepares the state folder
 * and database (migrations), reports the memory plugin in use, and runs until SIGINT/SIGTERM;
 * channels, the admin server and the scheduler join it in later releases.
 */
import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import * as SqlitePluginStore from "../layers/SqlitePluginStore.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { PluginStore } from "../services/PluginStore.ts"
import * as SqliteMemoryStore from "../layers/SqliteMemoryStore.ts"
import { database, dbPath } from "./env.ts"

const gatewayLayer = Layer.merge(SqlitePluginStore.layer, SqliteMemoryStore.layer).pipe(Layer.provideMerge(database))

export const runGateway = Effect.gen(function*() {
  const file = yield* dbPath
  const memoryPlugin = yield* (yield* PluginStore).enabledMemory
  const sessions = yield* (yield* MemoryStore).listConversations({})
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
