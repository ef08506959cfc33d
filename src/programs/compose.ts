/**
 * Composition recipes shared by the CLI's root (./layers.ts), the tests and custom deployments
 * (exported as `Compose` from `anna/layers`): how the runtime's own parts fit together, leaving
 * storage, memory, providers and the sandbox to the caller.
 */
import { type Duration, Layer } from "effect"
import * as CachedLiveConfig from "../layers/config/CachedLiveConfig.ts"
import * as Runtime from "../layers/runtime/Runtime.ts"
import * as SessionPool from "../layers/runtime/SessionPool.ts"
import * as McpTool from "../layers/tools/mcp.ts"
import * as MemoryTool from "../layers/tools/memory.ts"
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
}

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

/**
 * Runtime over a SessionPool with live configuration and the built-in tools. Provides Runtime,
 * SessionPool, LiveConfig and the ToolCatalog (sources that need the gateway's channels, such as
 * `notify`, register with it later); needs the configuration stores (ConfigStore, AgentStore, UsageLog),
 * ProviderRegistry and a memory layer; with a Sandbox, the workspace tools are on.
 */
export const agentRuntime = (options: RuntimeOptions = {}) =>
  Runtime.layer.pipe(
    Layer.provideMerge(SessionPool.layer({ runnerIdle: options.runnerIdle }).pipe(Layer.provideMerge(tools))),
    Layer.provideMerge(CachedLiveConfig.layer({ pollInterval: options.configPoll }))
  )
