/**
 * `anna` / `anna gateway`: the long-running process. Prepares the state folder and database
 * (migrations), creates providers from the environment on the first start (as
 * `anna onboard --from-env`), starts the enabled channels (the OpenAI-compatible HTTP channel on
 * 127.0.0.1:8787 by default) over the Runtime, and runs until SIGINT/SIGTERM. Configuration changes
 * made meanwhile (the CLI, later the admin API) apply without a restart: agents, providers and
 * settings from the next turn, a channel's settings by restarting that channel. Shutdown is graceful:
 * the HTTP server stops taking requests and lets answers in flight end (up to 10 s), turns still
 * running are aborted cleanly (pending tool calls get an "aborted" result), sandbox containers are
 * removed, and the database is closed — each by its own layer's finalizer.
 *
 * One gateway per ANNA_HOME: it takes the home's gateway lock before anything else (a second one is
 * refused in one line naming the first), and publishes where its HTTP channel really listens in
 * `$ANNA_HOME/gateway.json` for `anna doctor` and `anna admin create` (./gatewayPresence.ts).
 *
 * Its log lines (INFO by default) go to stderr, as every log line of anna (src/programs/cli.ts).
 * When no model provider or no agent is enabled, the start says so in one WARN line with what to
 * run: the gateway then runs, but nothing can answer.
 */
import { Cause, Context, Effect, Layer, Option, Redacted, Result } from "effect"
import { Command } from "effect/cli"
import { type ChannelStatus, Channels } from "../services/Channels.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { PluginStore } from "../services/PluginStore.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import { ToolCatalog } from "../services/ToolCatalog.ts"
import { NodeRegistry } from "../services/NodeRegistry.ts"
import type { ProviderConfig } from "../domain/model/types.ts"
import { VERSION } from "./cli.ts"
import { databaseLabel, databaseLocation, DatabaseUrlFlag, InvalidEnvironment, parseDatabaseUrl } from "./env.ts"
import { databaseUrl, host, port } from "./gatewayFlags.ts"
import { type GatewayPresence, holdGatewayLock } from "./gatewayPresence.ts"
import { AppConfigLive, GatewayChannels, GatewayRuntime } from "./layers.ts"
import { onboardOnFirstStart } from "./onboard.ts"
import { Telemetry } from "./telemetry.ts"

export interface GatewayOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
  /** `--database-url`: PostgreSQL, winning over ANNA_DATABASE_URL. */
  readonly databaseUrl?: Redacted.Redacted<string> | undefined
}

const FROM_ENV = "set OPENAI_BASE_URL and OPENAI_API_KEY (any OpenAI-compatible server) or ANTHROPIC_API_KEY and run `anna onboard --from-env`"

/**
 * The start's warning when nothing could answer a message (no enabled provider, no enabled agent),
 * saying what to run; undefined when both exist.
 */
export const setupWarning = (providers: ReadonlyArray<ProviderConfig>, agents: number): string | undefined => {
  const provider = providers.find((p) => p.enabled)
  if (provider === undefined && agents === 0) {
    return `no model provider and no agent are configured, so no agent can answer: run \`anna onboard\` on a terminal (a wizard), or ${FROM_ENV} (either creates both)`
  }
  if (provider === undefined) {
    return `no model provider is enabled, so the agents cannot answer: ${FROM_ENV}, or add one with \`anna provider add\``
  }
  if (agents === 0) {
    return `no agent is enabled, so nothing can answer: run \`anna agent set default --model ${provider.id}/${provider.defaultModel}\` (see \`anna provider models\` for the models)`
  }
  return undefined
}

const serve = (options: GatewayOptions, presence: GatewayPresence) =>
  Effect.gen(function*() {
    const where = databaseLabel(yield* databaseLocation)
    const onboarded = yield* onboardOnFirstStart
    if (Option.isSome(onboarded)) {
      for (const p of onboarded.value.createdProviders) {
        yield* Effect.logInfo(`first start: created provider ${p.id} (${p.type}, default model ${p.defaultModel}) from the environment`)
      }
      if (onboarded.value.createdAgent !== null) yield* Effect.logInfo(`first start: created agent ${onboarded.value.createdAgent}`)
    }
    const providers = yield* (yield* ProviderStore).list
    const agents = (yield* (yield* AgentStore).list).filter((a) => a.enabled).length
    const missing = setupWarning(providers, agents)
    if (missing !== undefined) yield* Effect.logWarning(missing)
    const memoryPlugin = yield* (yield* PluginStore).enabledMemory
    const sessions = yield* (yield* MemoryStore).listConversations({})
    yield* Effect.logInfo(`anna gateway: database ${where} ready; memory plugin ${memoryPlugin}; ${sessions.length} session(s) stored`)
    const node = yield* Effect.serviceOption(NodeRegistry)
    if (Option.isSome(node)) {
      const up = (yield* node.value.nodes).filter((n) => n.up)
      yield* Effect.logInfo(`cluster: joined as node ${node.value.nodeId}; ${up.length} node(s) up: ${up.map((n) => `${n.nodeId} (${n.address})`).join(", ")}`)
    }
    // The command line's --host/--port win over the http channel's stored settings (restarts included).
    const http: Record<string, unknown> = {}
    if (options.host !== undefined) http.host = options.host
    if (options.port !== undefined) http.port = options.port
    const published = (status: ReadonlyArray<ChannelStatus>) =>
      presence.publish(status.find((c) => c.id === "http" && c.state === "running")?.address)
    const channels = Context.get(yield* Layer.build(GatewayChannels({ http }, published, Option.getOrUndefined(node))), Channels)
    // The notify tool needs the running channels, which need the runtime: it joins the catalog now,
    // for every session runner started from here on (it is offered only while a channel can push).
    const [notify, Notifier] = yield* Effect.promise(() => Promise.all([import("../layers/tools/notify.ts"), import("../layers/channels/Notifier.ts")]))
    const notifier = yield* Notifier.make.pipe(Effect.provideService(Channels, channels))
    yield* (yield* ToolCatalog).register(notify.notifySource(notifier))
    // Work that runs once per deployment: here, or on a cluster on one node at a time (issue 28).
    const once = <E, R>(name: string, run: Effect.Effect<void, E, R>) =>
      Option.isSome(node) ? node.value.singleton(name, run) : Effect.asVoid(Effect.forkScoped(run))
    // The scheduler delivers through the Notifier, so it starts once the channels run (issue 14).
    const [Scheduler, SqliteJobStore] = yield* Effect.promise(() => Promise.all([import("../layers/scheduler/Scheduler.ts"), import("../layers/scheduler/SqliteJobStore.ts")]))
    const scheduler = Scheduler.layer({ notifier }).pipe(Layer.provide(SqliteJobStore.layer))
    if (Option.isSome(node)) yield* once("scheduler", Layer.launch(scheduler))
    else yield* Layer.build(scheduler)
    // Bursts that ended while no gateway ran are reflected on now, in the background (issue 15).
    const { catchUp } = yield* Effect.promise(() => import("../layers/learning/catchUp.ts"))
    yield* once("learning-catch-up", Effect.gen(function*() {
      const caught = yield* catchUp().pipe(Effect.catchCause((c) => Effect.logWarning(`learning: catch-up failed: ${Cause.pretty(c)}`).pipe(Effect.as(0))))
      if (caught > 0) yield* Effect.logInfo(`learning: reflecting on ${caught} session(s) whose work ended while the gateway was down`)
    }))
    // Dense retrieval (issue 25): agents with an embedding model get their rows embedded in the
    // background; without one the worker reads the agents every few seconds and does nothing else.
    const EmbeddingWorker = yield* Effect.promise(() => import("../layers/memory/EmbeddingWorker.ts"))
    yield* once("embeddings", (yield* EmbeddingWorker.make()).loop)
    // The playbooks' maintenance sweep, at start and once a day.
    const { sweepDaily } = yield* Effect.promise(() => import("../layers/learning/sweepDaily.ts"))
    yield* once("daily-sweep", sweepDaily)
    const running = (yield* channels.status).flatMap((c) => (c.state === "running" && c.description !== undefined ? [c.description] : []))
    yield* Effect.logInfo(
      running.length === 0
        ? "no channel is enabled (anna channel enable http); press Ctrl+C to stop"
        : `${running.join("; ")}; press Ctrl+C to stop`
    )
    // Runs until interrupted: NodeRuntime.runMain interrupts on SIGINT/SIGTERM and the scopes close.
    // A stop on a signal is a clean exit for a daemon, so the exit code is 0.
    return yield* Effect.never.pipe(
      Effect.onInterrupt(() =>
        Effect.logInfo("anna gateway: stopping").pipe(Effect.andThen(Effect.sync(() => (process.exitCode = 0))))
      )
    )
  }).pipe(Effect.scoped, Effect.provide(GatewayRuntime(VERSION)))

/**
 * The gateway: the lock first (before migrations, Docker or a port: a second gateway is refused for
 * what it is, not for a busy port), released last, after everything else has stopped. Around it all,
 * the OTLP export when the `OTEL_*` variables ask for one (./telemetry.ts): built first, so every
 * span and log line goes through it, and closed last, sending what is left once the rest has stopped.
 */
export const runGateway = (options: GatewayOptions = {}) =>
  Effect.gen(function*() {
    const url = options.databaseUrl === undefined
      ? undefined
      : yield* Result.match(parseDatabaseUrl(Redacted.value(options.databaseUrl), "--database-url"), {
        onSuccess: Effect.succeed,
        onFailure: (message) => Effect.fail(new InvalidEnvironment({ message }))
      })
    const presence = yield* holdGatewayLock((yield* AppConfig).home, VERSION)
    // The flag's URL, for everything the gateway builds (env.ts's `database` reads it).
    return yield* serve(options, presence).pipe(Effect.provideService(DatabaseUrlFlag, url))
  }).pipe(Effect.scoped, Effect.provide(AppConfigLive), Effect.provide(Telemetry))

/** The gateway's options from its flags (`anna gateway …` and `anna …` alone). */
export const gatewayOptions = (f: {
  readonly host: Option.Option<string>
  readonly port: Option.Option<number>
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
}): GatewayOptions => ({ host: Option.getOrUndefined(f.host), port: Option.getOrUndefined(f.port), databaseUrl: Option.getOrUndefined(f.databaseUrl) })

export const gatewayCommand = Command.make("gateway", { host, port, databaseUrl }, (f) => runGateway(gatewayOptions(f))).pipe(
    Command.withDescription("Run the gateway (channels over the agent runtime) until SIGINT/SIGTERM; the default when no command is given")
  )
