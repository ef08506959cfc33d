/**
 * Composition recipes shared by the CLI's root (./layers.ts), the tests and custom deployments
 * (exported as `Compose` from `anna/layers`): how the runtime's own parts fit together, leaving
 * storage, memory, providers and the sandbox to the caller.
 */
import { type Duration, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { SessionPool as SessionPoolService } from "../services/SessionPool.ts"
import type { AgentStore } from "../services/AgentStore.ts"
import * as CachedLiveConfig from "../layers/config/CachedLiveConfig.ts"
import * as SessionHash from "../layers/config/SessionHash.ts"
import * as ReflectiveLearning from "../layers/learning/ReflectiveLearning.ts"
import * as SqliteDiary from "../layers/learning/SqliteDiary.ts"
import * as SqliteSkillStats from "../layers/learning/SqliteSkillStats.ts"
import * as YamlPlaybook from "../layers/learning/YamlPlaybook.ts"
import * as Runtime from "../layers/runtime/Runtime.ts"
import * as SessionPool from "../layers/runtime/SessionPool.ts"
import * as McpTool from "../layers/tools/mcp.ts"
import * as MemoryTool from "../layers/tools/memory.ts"
import * as PlaybookTool from "../layers/tools/playbook.ts"
import * as SchedulerTool from "../layers/tools/scheduler.ts"
import * as SkillsTool from "../layers/tools/skills.ts"
import * as WebFetchTool from "../layers/tools/webfetch.ts"
import * as ToolCatalog from "../layers/tools/ToolCatalog.ts"
import * as WorkspaceTools from "../layers/tools/WorkspaceTools.ts"

export interface RuntimeOptions {
  /** How long an idle session keeps its runner and sandbox container (default 10 minutes). */
  readonly runnerIdle?: Duration.Input | undefined
  /** How often configuration changes are looked for between turns (default 1 s; every turn also checks). */
  readonly configPoll?: Duration.Input | undefined
  /**
   * The SessionPool the runtime uses instead of its own, built over it (the cluster's, which sends
   * each call to the session's owner and runs the calls it owns on the local pool: issue 28).
   */
  readonly pool?: Layer.Layer<SessionPoolService, unknown, SessionPoolService | SqlClient.SqlClient | AgentStore> | undefined
}

/** The local pool, or `options.pool` over it (which then is what the runtime and the rest see). */
const poolOver = <A, E, R>(local: Layer.Layer<A | SessionPoolService, E, R>, options: RuntimeOptions) =>
  options.pool === undefined ? local : options.pool.pipe(Layer.provideMerge(local))

/**
 * The ToolCatalog with anna's built-in sources: the workspace tools (when a Sandbox is provided), the
 * memory tool, skills, the scheduler, and the plugin tools mcp and webfetch. More sources (MCP servers, plugins) are layers merged next to these.
 */
export const tools = Layer.mergeAll(
  WorkspaceTools.layer,
  MemoryTool.layer,
  SkillsTool.layer,
  SchedulerTool.layer,
  McpTool.layer,
  WebFetchTool.layer
).pipe(Layer.provideMerge(ToolCatalog.layer))

/** The built-in tools and the `playbook` tool (needs the learning layers below). */
export const toolsWithPlaybook = Layer.mergeAll(tools, PlaybookTool.layer.pipe(Layer.provide(ToolCatalog.layer)))

/**
 * The self-improving memory (issue 15): the Learning loop over its stores — diary entries and burst
 * uses in SQLite, the playbook's YAML files in $ANNA_HOME, skills' outcomes. Needs the SQLite client,
 * AppConfig, the memory layer (MemoryStore, SessionLocks), PluginStore, ProviderRegistry, ProviderStore,
 * AgentStore and UsageLog (the summary model reflects).
 */
export const learning = ReflectiveLearning.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(SqliteDiary.layer, SqliteSkillStats.layer, YamlPlaybook.layer))
)

/**
 * Runtime over a SessionPool with live configuration and the built-in tools. Provides Runtime,
 * SessionPool, LiveConfig and the ToolCatalog (sources that need the gateway's channels, such as
 * `notify`, register with it later); needs the configuration stores (ConfigStore, AgentStore, UsageLog),
 * ProviderRegistry and a memory layer; with a Sandbox, the workspace tools are on. Without the
 * self-improving memory: `learningRuntime` adds it (anna's own runtime, src/programs/layers.ts).
 */
export const agentRuntime = (options: RuntimeOptions = {}) =>
  Runtime.layer.pipe(
    Layer.provideMerge(poolOver(SessionPool.layer({ runnerIdle: options.runnerIdle }).pipe(Layer.provideMerge(tools), Layer.provide(SessionHash.layer)), options)),
    Layer.provideMerge(CachedLiveConfig.layer({ pollInterval: options.configPoll }))
  )

/** `agentRuntime` with the self-improving memory: also provides Learning, Diary, Playbook and SkillStats. */
export const learningRuntime = (options: RuntimeOptions = {}) =>
  Runtime.layer.pipe(
    Layer.provideMerge(poolOver(SessionPool.layer({ runnerIdle: options.runnerIdle }).pipe(Layer.provideMerge(toolsWithPlaybook), Layer.provide(SessionHash.layer)), options)),
    Layer.provideMerge(CachedLiveConfig.layer({ pollInterval: options.configPoll })),
    Layer.provideMerge(learning)
  )
