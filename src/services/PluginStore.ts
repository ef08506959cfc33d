/**
 * PluginStore — which plugins exist and which are enabled (table `plugins`). Owns the rule that
 * exactly one memory plugin is enabled: enabling one disables the others of its kind, and
 * disabling the enabled one switches to the other when there is exactly one other.
 *
 * Layers: `SqlitePluginStore.layer` (src/layers/config/SqlitePluginStore.ts).
 */
import { Context, type Effect } from "effect"
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

export class PluginStore extends Context.Service<PluginStore, {
  readonly list: Effect.Effect<ReadonlyArray<Plugin>, StorageError>
  readonly enable: (id: string) => Effect.Effect<PluginChange, StorageError | PluginNotFound>
  readonly disable: (id: string) => Effect.Effect<PluginChange, StorageError | PluginNotFound | PluginRuleViolation>
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
