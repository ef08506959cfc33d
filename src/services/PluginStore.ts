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
  /** Id of the enabled memory plugin (`memory/lcm` when the table says nothing usable). */
  readonly enabledMemory: Effect.Effect<string, StorageError>
}>()("anna/PluginStore") {}
