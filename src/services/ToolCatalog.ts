/**
 * ToolCatalog — the one way tools reach an agent session. Every source of tools (the built-in
 * workspace tools, the memory tool; later MCP servers, plugins, skills) is a layer that registers a
 * `ToolSource` with the catalog when it is built, so adding tools to anna is adding a layer to the
 * composition root, nothing else. A session runner asks the catalog once, when it starts, for the
 * tools its session may call; the agent's `tools` setting filters them. The `agent` tool is added on
 * top per turn by the runtime (its children inherit that turn's model and prompt).
 *
 * Owns registration, the order of tools (sources in registration order) and the rule that two tools
 * never share a name; does not own what a tool does, nor the sandbox (the runner starts it when a
 * source first asks, and closes it with the runner).
 *
 * Layers: `ToolCatalog.layer` (src/layers/tools/ToolCatalog.ts); sources:
 * `WorkspaceTools.layer` (bash, read, write, edit), `MemoryTool.layer` (memory).
 */
import { Context, type Effect, type Scope } from "effect"
import type { SandboxStartError } from "../domain/sandbox/errors.ts"
import type { Tool } from "../domain/tool.ts"
import type { SandboxSession } from "./Sandbox.ts"

/** The session a tool set is built for. */
export interface ToolSession {
  readonly agentId: string
  readonly userId: string
  readonly sessionKey: string
  /** Whether the agent lets its sessions use the tool (its `tools` setting; every tool when unset). */
  readonly enabled: (name: string) => boolean
  /**
   * The session's sandbox, started the first time a source asks (then the same one), released with
   * the runner. Fails closed — Docker down, image missing, policy not enforceable, or no sandbox in
   * this deployment: a source then offers none of the tools that need it (the runtime tells the user
   * why), and nothing runs on the host.
   */
  readonly sandbox: Effect.Effect<SandboxSession, SandboxStartError>
}

/** A named source of tools; `tools` runs in the runner's scope (what it opens lives as long). */
export interface ToolSource {
  readonly id: string
  readonly tools: (session: ToolSession) => Effect.Effect<ReadonlyArray<Tool>, SandboxStartError, Scope.Scope>
  /**
   * What the source's offer to an agent depends on besides the agent's settings (a plugin switched
   * per agent, the agent's MCP servers), as a short text: when it changes, the session pool replaces
   * the agent's runners, so the change applies from the next turn. Sources whose offer only follows
   * the agent's `tools` setting leave it out. Read on every turn: keep it to an indexed read.
   */
  readonly version?: ((agentId: string) => Effect.Effect<string>) | undefined
}

export class ToolCatalog extends Context.Service<ToolCatalog, {
  /** Adds a source (called by a source's layer while it is built). Two sources with one id are a wiring bug. */
  readonly register: (source: ToolSource) => Effect.Effect<void>
  /** The registered sources' ids, in order. */
  readonly sources: Effect.Effect<ReadonlyArray<string>>
  /** The session's tools: every source's, in registration order, only those the agent enables. */
  readonly tools: (session: ToolSession) => Effect.Effect<ReadonlyArray<Tool>, SandboxStartError, Scope.Scope>
  /** Every source's `version` for the agent, together ('' when no source has one). */
  readonly version: (agentId: string) => Effect.Effect<string>
}>()("anna/ToolCatalog") {}
