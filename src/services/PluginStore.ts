/**
 * PluginStore — which plugins exist, which are enabled, and their configuration (tables `plugins`
 * and `agent_plugins`). Owns two rules:
 * - exactly one memory plugin is enabled: enabling one disables the others of its kind, and disabling
 *   the enabled one switches to the other when there is exactly one other; memory plugins are switched
 *   for every agent at once (never per agent);
 * - per agent, the agent's own row wins: its switch (when set) over the global state, its configuration
 *   keys over the global ones. An agent without a switch inherits the global state.
 * Does not own what a plugin does (the tool sources read `enabledFor`/`configFor` themselves).
 *
 * Layers: `SqlitePluginStore.layer` (src/layers/config/SqlitePluginStore.ts).
 */
import { Context, type Effect } from "effect"
import type { AgentNotFound } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { PluginNotFound, PluginRuleViolation } from "../domain/plugins/errors.ts"

export interface Plugin {
  readonly id: string
  readonly kind: string
  readonly enabled: boolean
  readonly config: Readonly<Record<string, unknown>>
}

export interface PluginChange {
  readonly enabled: ReadonlyArray<string>
  readonly disabled: ReadonlyArray<string>
}

/** A plugin as one agent sees it. */
export interface AgentPlugin {
  readonly id: string
  readonly kind: string
  /** Whether it is on for the agent. */
  readonly enabled: boolean
  /** Where `enabled` comes from: the agent's own switch, or the global state it inherits. */
  readonly source: "agent" | "global"
  /** The effective configuration: the global one with the agent's keys over it. */
  readonly config: Readonly<Record<string, unknown>>
  /** The agent's own configuration keys. */
  readonly agentConfig: Readonly<Record<string, unknown>>
}

/** A configuration edit: keys to set (values are JSON values) and keys to remove. */
export interface ConfigEdit {
  readonly set: Readonly<Record<string, unknown>>
  readonly unset: ReadonlyArray<string>
}

export class PluginStore extends Context.Service<PluginStore, {
  readonly list: Effect.Effect<ReadonlyArray<Plugin>, StorageError>
  readonly enable: (id: string) => Effect.Effect<PluginChange, StorageError | PluginNotFound>
  readonly disable: (id: string) => Effect.Effect<PluginChange, StorageError | PluginNotFound | PluginRuleViolation>
  /** Every plugin as `agentId` sees it. */
  readonly listFor: (agentId: string) => Effect.Effect<ReadonlyArray<AgentPlugin>, StorageError | AgentNotFound>
  /**
   * Sets the agent's own switch for a plugin (`undefined`: none, the agent inherits the global state
   * again); the change says whether the plugin's effective state for the agent changed. Memory plugins
   * cannot be switched per agent (PluginRuleViolation).
   */
  readonly setFor: (
    pluginId: string,
    agentId: string,
    enabled: boolean | undefined
  ) => Effect.Effect<PluginChange, StorageError | PluginNotFound | AgentNotFound | PluginRuleViolation>
  /** Edits a plugin's configuration: the global one, or the agent's own keys; returns the edited keys. */
  readonly configure: (
    pluginId: string,
    agentId: string | undefined,
    edit: ConfigEdit
  ) => Effect.Effect<Readonly<Record<string, unknown>>, StorageError | PluginNotFound | AgentNotFound>
  /**
   * Whether a tool plugin (`mcp`, `webfetch`) is on for an agent: the agent's own switch
   * (table agent_plugins) when it has one, else the plugin's global state; false for an unknown id.
   */
  readonly enabledFor: (pluginId: string, agentId: string) => Effect.Effect<boolean, StorageError>
  /** A plugin's configuration for an agent: the global `config` with the agent's own merged over it. */
  readonly configFor: (pluginId: string, agentId: string) => Effect.Effect<Readonly<Record<string, unknown>>, StorageError>
  /** Id of the enabled memory plugin (`memory/lcm` when the table says nothing usable). */
  readonly enabledMemory: Effect.Effect<string, StorageError>
}>()("anna/PluginStore") {}
