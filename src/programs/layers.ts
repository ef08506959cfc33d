/**
 * The composition root: every layer the CLI and the gateway run on, named once and built once per
 * command (a layer provided twice in one program is built once: Effect memoises layers by
 * reference). Command groups take what they need with `Command.provide(Layers.X)`; nothing else in
 * anna provides layers. A custom deployment writes its own root from `anna/layers` (see
 * examples/simple-http).
 *
 * What a memory or configuration command never needs — the runtime, the Docker client, the model
 * SDKs, the channels — is imported lazily here (`import()`), so those commands start without
 * loading them (the bundled CLI keeps them in chunks of their own).
 *
 *   AppConfigLive  the environment (ANNA_HOME, ANNA_LOG_LEVEL) as AppConfig
 *   Database       the migrated SQLite database in $ANNA_HOME (made private first)
 *   Stores         ConfigStore, ProviderStore, AgentStore, UsageLog, PluginStore
 *   Providers      Stores + ProviderRegistry (each provider's SDK loaded on its first use)
 *   StoresWithMemory  Providers + MemoryStore (no memory plugin)
 *   Memory         Providers + MemoryStore + the enabled memory plugin and its summarizer, and the
 *                  Embedder (dense retrieval's model calls; its SDK loaded on first use)
 *   Sandbox        the Docker sandbox (lazy)
 *   AgentRuntime   Memory + Runtime, SessionPool and LiveConfig over the sandbox, with the
 *                  self-improving memory (Learning and its stores; lazy; see ./compose.ts)
 *   GatewayRuntime AgentRuntime, as a node of a cluster when ANNA_RUNNER_ADDRESS is set (issue 28)
 *   GatewayChannels  the channels the gateway runs, over AgentRuntime (lazy)
 */
import { Cause, Deferred, Duration, Effect, Layer, Option, type Scope } from "effect"
import { formatModelRef } from "../domain/config/agent.ts"
import { CLUSTER_POLL_MS, PollFiles } from "../domain/config/filePolling.ts"
import * as SqliteConfigStore from "../layers/config/SqliteConfigStore.ts"
import * as SqlitePluginStore from "../layers/config/SqlitePluginStore.ts"
import * as DeterministicSummarizer from "../layers/memory/DeterministicSummarizer.ts"
import * as MemoryFromPlugins from "../layers/memory/MemoryFromPlugins.ts"
import * as ModelSummarizer from "../layers/memory/ModelSummarizer.ts"
import * as SqliteMemoryStore from "../layers/memory/SqliteMemoryStore.ts"
import * as SdkEmbedder from "../layers/providers/SdkEmbedder.ts"
import * as SdkProviderRegistry from "../layers/providers/SdkProviderRegistry.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import type { AgentStore } from "../services/AgentStore.ts"
import type { ChannelLedger } from "../services/ChannelLedger.ts"
import type { ConfigStore } from "../services/ConfigStore.ts"
import type { Runtime } from "../services/Runtime.ts"
import type { Accounts } from "../services/Accounts.ts"
import { type ChannelStatus, Channels } from "../services/Channels.ts"
import type { Channel, ChannelTarget, OutboundMessage } from "../services/Channel.ts"
import { ConfigStore as ConfigStoreTag } from "../services/ConfigStore.ts"
import type { NodeRegistry } from "../services/NodeRegistry.ts"
import type { LiveConfig } from "../services/LiveConfig.ts"
import { ChannelError } from "../domain/channels/errors.ts"
import type { AdminServices } from "../layers/admin/routes.ts"
import { clusterSetting, database, databaseLocation, InvalidEnvironment, layerFromEnv } from "./env.ts"

/** A layer from a module loaded on first use (a chunk of its own in the bundled CLI). */
const lazy = <M, A, E, R>(load: () => Promise<M>, pick: (m: M) => Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.unwrap(Effect.map(Effect.promise(load), pick))

export const AppConfigLive = layerFromEnv

export const Database = database.pipe(Layer.provideMerge(AppConfigLive))

export const Stores = Layer.mergeAll(SqliteConfigStore.layerStores, SqlitePluginStore.layer).pipe(Layer.provideMerge(Database))

export const Providers = SdkProviderRegistry.layer().pipe(Layer.provideMerge(Stores))

/** Providers + the message store, without a memory plugin (users, doctor). */
export const StoresWithMemory = SqliteMemoryStore.layer.pipe(Layer.provideMerge(Providers))

/**
 * The summarizer: the configured summarization model when a provider exists (with the spend guard,
 * or `maxCalls` instead of the agents' limits), the deterministic summarizer otherwise.
 */
const summarizer = (maxCalls: number | undefined) =>
  Layer.unwrap(Effect.gen(function*() {
    const any = (yield* (yield* ProviderStore).list).some((p) => p.enabled)
    return any ? ModelSummarizer.layer({ maxCallsOverride: maxCalls }) : DeterministicSummarizer.layer
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

/**
 * Memory with a summarizer limited to `maxCalls` model calls (`anna memory compact --max-summary-calls`).
 * With a limit the memory plugin is built afresh: a command group already built `Memory`, and
 * layers are memoised by reference, so `MemoryFromPlugins.layer` would otherwise come back with the
 * agents' limit inside it and the flag would do nothing.
 */
export const memoryWith = (maxCalls: number | undefined) =>
  Layer.merge(
    maxCalls === undefined ? MemoryFromPlugins.layer : Layer.fresh(MemoryFromPlugins.layer),
    SdkEmbedder.layer
  ).pipe(
    Layer.provide(summarizer(maxCalls)),
    Layer.provideMerge(SqliteMemoryStore.layer),
    Layer.provideMerge(Providers)
  )

export const Memory = memoryWith(undefined)

export const Sandbox = lazy(() => import("../layers/sandbox/DockerSandbox.ts"), (m) => m.layer)

// The Sandbox is merged out, not only provided: the gateway's heartbeat mounts a workspace's own
// filesystem through the same instance before it looks for HEARTBEAT.md (Sandbox.prepare).
export const AgentRuntime = lazy(() => import("./compose.ts"), (m) => m.learningRuntime()).pipe(
  Layer.provideMerge(Sandbox),
  Layer.provideMerge(Memory)
)

/**
 * The gateway's runtime: AgentRuntime, or — when `ANNA_RUNNER_ADDRESS` makes this gateway a node of a
 * cluster — the same over the cluster's SessionPool (each session's calls run on the node that owns
 * it). A cluster needs PostgreSQL: on SQLite the start is refused in one line. Only the gateway joins:
 * other commands (`anna chat`) never take shards.
 */
export const GatewayRuntime = (version: string) =>
  Layer.unwrap(Effect.gen(function*() {
    const settings = yield* clusterSetting
    if (settings === undefined) return AgentRuntime
    const where = yield* databaseLocation
    if (where._tag === "Sqlite") {
      return yield* new InvalidEnvironment({
        message: "ANNA_RUNNER_ADDRESS is set, but a cluster of gateways needs PostgreSQL: set ANNA_DATABASE_URL=postgres://… (the same on every node), or unset ANNA_RUNNER_ADDRESS"
      })
    }
    const ClusterNode = yield* Effect.promise(() => import("../layers/cluster/ClusterNode.ts"))
    return lazy(() => import("./compose.ts"), (m) => m.learningRuntime({ pool: ClusterNode.layer(settings, where.url, version) })).pipe(
      // Workspaces (agents' files, skills) may be a shared volume: read them by polling, not inotify.
      Layer.provide(Layer.succeed(PollFiles, CLUSTER_POLL_MS)),
      Layer.provideMerge(Sandbox),
      // The sandbox caps count every node's containers (in PostgreSQL), not this node's alone.
      Layer.provide(lazy(() => import("../layers/sandbox/clusterAdmission.ts"), (m) => m.layer(settings.nodeId))),
      Layer.provideMerge(Memory)
    )
  }))

/**
 * The gateway's channels (ChannelSupervisor over the channel kinds anna can run). A new channel is
 * one more entry in this list. `overrides` win over the stored settings (the gateway's --host/--port);
 * `onStatus` hears every start, failure and stop (the gateway publishes its HTTP address).
 * The HTTP channel's server also serves the admin API and the web console (one port); Accounts is
 * built once here, so the login rate limit outlives a restart of the channel.
 */
export const GatewayChannels = (
  overrides: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  onStatus?: (status: ReadonlyArray<ChannelStatus>) => Effect.Effect<void>,
  node?: NodeRegistry["Service"]
) =>
  lazy(
    () =>
      Promise.all([
        import("../layers/channels/ChannelSupervisor.ts"),
        import("../layers/channels/HttpChannel.ts"),
        import("../layers/channels/SqliteChannelLedger.ts"),
        import("../layers/channels/platforms.ts"),
        import("../layers/admin/routes.ts"),
        import("../layers/admin/SqliteAccounts.ts"),
        import("../layers/admin/UserRemoval.ts"),
        import("../layers/scheduler/SqliteJobStore.ts"),
        import("../layers/learning/SqliteRuleVotes.ts"),
        import("../layers/mcp/McpProbe.ts"),
        import("../layers/mcp/SqliteMcpServers.ts"),
        import("../layers/learning/SkillRanking.ts")
      ]),
    ([Supervisor, HttpChannel, SqliteChannelLedger, platforms, AdminRoutes, SqliteAccounts, UserRemoval, SqliteJobStore, SqliteRuleVotes, McpProbe, SqliteMcpServers, SkillRanking]) =>
      Layer.effect(
        Channels,
        Effect.gen(function*() {
          // The admin API (built inside the supervisor, with the HTTP channel) shows the channels'
          // states: it gets the supervisor through this handle, answered once the supervisor is up.
          const handle = yield* Deferred.make<Channels["Service"]>()
          const later = Channels.of({
            status: Effect.flatMap(Deferred.await(handle), (c) => c.status),
            notify: (id, target, message) => Effect.flatMap(Deferred.await(handle), (c) => c.notify(id, target, message))
          })
          const http = Supervisor.runnable(HttpChannel.definitionWith(AdminRoutes.layer(), { notFound: AdminRoutes.notFound() }))
          const chatPlatforms = platforms.PLATFORM_IDS.map((id) => Supervisor.runnable(platforms.lazyDefinition(id)))
          const supervise = (channels: ReadonlyArray<ReturnType<typeof Supervisor.runnable<unknown, unknown, GatewayServices | Channels>>>, listen?: typeof onStatus) =>
            Supervisor.make<GatewayServices | Channels>({ channels, overrides, onStatus: listen }).pipe(Effect.provideService(Channels, later))
          const channels = node === undefined
            ? yield* supervise([http, ...chatPlatforms], onStatus)
            : yield* clustered(node, yield* supervise([http], onStatus), supervise(chatPlatforms), platforms.loadPlatform)
          yield* Deferred.succeed(handle, channels)
          return channels
        })
      ).pipe(Layer.provide(Layer.mergeAll(
        SqliteChannelLedger.layer,
        SqliteAccounts.layer,
        // The admin API removes users as `anna user remove` does; the learning stores are AgentRuntime's.
        UserRemoval.layer.pipe(Layer.provide(Layer.merge(SqliteJobStore.layer, SqliteRuleVotes.layer))),
        // The admin API's MCP page asks servers through the runtime's own Sandbox (memoised: the same
        // instance, so its containers count against the same caps); skills are ranked from the
        // runtime's Skills and SkillStats.
        McpProbe.layer.pipe(Layer.provide(Sandbox), Layer.provideMerge(SqliteMcpServers.layer)),
        SkillRanking.layer
      )))
  )

/**
 * The channels of a cluster's node (issue 28): the HTTP channel (with the admin API and console) on
 * every node; the chat platforms' channels — Telegram's getUpdates, the WeChat, QQ and Feishu
 * connections — on one node at a time, the singleton `channels` (a platform allows one poller or
 * connection per bot). On the other nodes `status` shows them as the running node published them,
 * and a delivery (`notify`: the scheduler, the notify tool) goes through the platform's sender.
 * A start that fails is tried again every 30 s.
 */
const clustered = (
  node: NodeRegistry["Service"],
  local: Channels["Service"],
  platformsHere: Effect.Effect<Channels["Service"], unknown, Scope.Scope | GatewayServices | LiveConfig>,
  loadPlatform: (id: string) => Effect.Effect<{ readonly sender: (config: Readonly<Record<string, unknown>>) => Effect.Effect<Channel["Service"], string, ConfigStore> } | undefined>
) =>
  Effect.gen(function*() {
    let here: Channels["Service"] | undefined
    const attempt = Effect.scoped(Effect.gen(function*() {
      const started = yield* platformsHere
      here = started
      yield* node.reportChannels(started.status)
      yield* Effect.addFinalizer(() =>
        Effect.andThen(
          Effect.sync(() => {
            here = undefined
          }),
          node.reportChannels(undefined)
        )
      )
      return yield* Effect.never
    }))
    yield* node.singleton(
      "channels",
      attempt.pipe(
        Effect.catchCause((c) => Effect.logError(`channels: the chat platforms could not start here: ${Cause.pretty(c)}; trying again in 30 s`)),
        Effect.andThen(Effect.sleep(Duration.seconds(30))),
        Effect.forever
      )
    )
    const config = yield* ConfigStoreTag
    const senders = new Map<string, { readonly config: string; readonly channel: Channel["Service"] }>()
    /** A delivery from a node that does not run the platform: its sender, from the stored settings. */
    const viaSender = (id: string, target: ChannelTarget, message: OutboundMessage) =>
      Effect.gen(function*() {
        const stored = (yield* config.listChannels.pipe(Effect.mapError((e) => new ChannelError({ channel: id, reason: e.message })))).find((c) => c.id === id)
        if (stored === undefined || !stored.enabled) return yield* new ChannelError({ channel: id, reason: "it is not enabled on this gateway" })
        const key = JSON.stringify(stored.config)
        let sender = senders.get(id)
        if (sender === undefined || sender.config !== key) {
          const platform = yield* loadPlatform(id)
          if (platform === undefined) return yield* new ChannelError({ channel: id, reason: "it cannot deliver messages" })
          const channel = yield* platform.sender(stored.config).pipe(Effect.mapError((reason) => new ChannelError({ channel: id, reason })))
          sender = { config: key, channel }
          senders.set(id, sender)
        }
        return yield* sender.channel.notify(target, message)
      }).pipe(Effect.provideService(ConfigStoreTag, config))
    return Channels.of({
      status: Effect.gen(function*() {
        const own = yield* local.status
        if (here !== undefined) return [...own, ...(yield* here.status)]
        const remote = yield* node.remoteChannels
        return [...own, ...remote.map((r) => ({ ...r.status, description: `${r.status.description ?? r.status.state} (on node ${r.node})` }))]
      }),
      notify: (id, target, message) =>
        id === "http" ? local.notify(id, target, message) : here !== undefined ? here.notify(id, target, message) : viaSender(id, target, message)
    })
  })

/** What the gateway's channels (and the admin API on the HTTP channel's server) use of the runtime. */
type GatewayServices = Runtime | ConfigStore | AgentStore | ChannelLedger | Accounts | AdminServices
