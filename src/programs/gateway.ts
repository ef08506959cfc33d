/**
 * `anna` / `anna gateway`: the long-running process. Prepares the state folder and database
 * (migrations), creates providers from the environment on the first start (as
 * `anna onboard --from-env`), starts the enabled channels (the OpenAI-compatible HTTP channel on
 * 127.0.0.1:8787 by default) over the Runtime, and runs until SIGINT/SIGTERM. Shutdown is graceful:
 * the HTTP server stops taking requests and lets answers in flight end (up to 10 s), turns still
 * running are aborted cleanly (pending tool calls get an "aborted" result), sandbox containers are
 * removed, and the database is closed — each by its own layer's finalizer.
 */
import { Effect, Layer, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { httpLimits } from "../domain/config/channel.ts"
import * as HttpChannel from "../layers/channels/HttpChannel.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { HttpAddress } from "../services/HttpAddress.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { PluginStore } from "../services/PluginStore.ts"
import * as SqlitePluginStore from "../layers/config/SqlitePluginStore.ts"
import { runtimeLayer } from "./app.ts"
import { dbPath } from "./env.ts"
import { onboardOnFirstStart } from "./onboard.ts"

export interface GatewayOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
}

/** The enabled channels over the Runtime (only the HTTP channel exists so far). */
const channels = (options: GatewayOptions) =>
  Layer.unwrap(Effect.gen(function*() {
    const http = (yield* (yield* ConfigStore).listChannels).find((c) => c.id === "http")
    if (http === undefined || !http.enabled) return Layer.empty
    const host = options.host ?? (typeof http.config.host === "string" ? http.config.host : HttpChannel.DEFAULT_HOST)
    const port = options.port ?? (typeof http.config.port === "number" ? http.config.port : HttpChannel.DEFAULT_PORT)
    return HttpChannel.layer({ host, port, ...httpLimits(http.config) })
  }))

export const runGateway = (options: GatewayOptions = {}) =>
  Effect.gen(function*() {
    const file = yield* dbPath
    const onboarded = yield* onboardOnFirstStart
    if (Option.isSome(onboarded)) {
      for (const p of onboarded.value.createdProviders) {
        yield* Effect.logInfo(`first start: created provider ${p.id} (${p.type}, default model ${p.defaultModel}) from the environment`)
      }
      if (onboarded.value.createdAgent !== null) yield* Effect.logInfo(`first start: created agent ${onboarded.value.createdAgent}`)
    }
    const memoryPlugin = yield* (yield* PluginStore).enabledMemory
    const sessions = yield* (yield* MemoryStore).listConversations({})
    yield* Effect.logInfo(`anna gateway: database ${file} ready; memory plugin ${memoryPlugin}; ${sessions.length} session(s) stored`)
    const context = yield* Layer.build(channels(options))
    const address = Option.getOrUndefined(yield* Effect.serviceOption(HttpAddress).pipe(Effect.provide(context)))
    yield* Effect.logInfo(
      address === undefined
        ? "no channel is enabled (anna channel enable http); press Ctrl+C to stop"
        : `HTTP channel (OpenAI-compatible) on ${address.url}/v1; press Ctrl+C to stop`
    )
    // Runs until interrupted: NodeRuntime.runMain interrupts on SIGINT/SIGTERM and the scopes close.
    // A stop on a signal is a clean exit for a daemon, so the exit code is 0.
    return yield* Effect.never.pipe(
      Effect.onInterrupt(() =>
        Effect.logInfo("anna gateway: stopping").pipe(Effect.andThen(Effect.sync(() => (process.exitCode = 0))))
      )
    )
  }).pipe(Effect.scoped, Effect.provide(SqlitePluginStore.layer.pipe(Layer.provideMerge(runtimeLayer))))

const host = Flag.String("host").pipe(Flag.withDescription("HTTP channel address (default: the channel's setting, 127.0.0.1)"), Flag.optional)
const port = Flag.Int("port").pipe(Flag.withDescription("HTTP channel port (default: the channel's setting, 8787)"), Flag.optional)

export const gatewayCommand = Command.make("gateway", { host, port }, (f) =>
  runGateway({ host: Option.getOrUndefined(f.host), port: Option.getOrUndefined(f.port) })).pipe(
    Command.withDescription("Run the gateway (channels over the agent runtime) until SIGINT/SIGTERM; the default when no command is given")
  )
