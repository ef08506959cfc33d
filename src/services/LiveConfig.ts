/**
 * LiveConfig — the configuration as it is now, for what runs for a long time (the session pool,
 * the gateway's channels). A change made by any process — `anna agent set`, `anna channel set`,
 * `anna settings set`, later the admin API — is seen by the next read, without a restart: every
 * read first checks `ConfigStore.version` (one row) and reloads only what changed. `changes`
 * announces each new version for code that must act on it rather than read on demand (a channel
 * restarting with new settings, live sandboxes closed after a tightening).
 *
 * Owns the caching and the watching; the configuration itself is ConfigStore's.
 *
 * Layers: `CachedLiveConfig.layer` (src/layers/config/CachedLiveConfig.ts).
 */
import { Context, type Effect, type Stream } from "effect"
import type { AgentNotFound, ProviderNotFound } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { NoModel } from "../domain/runtime/errors.ts"
import type { Channel, Snapshot } from "./ConfigStore.ts"

export class LiveConfig extends Context.Service<LiveConfig, {
  /** The agent's current snapshot (reloaded when the configuration changed since the last read). */
  readonly snapshot: (agentId: string) => Effect.Effect<Snapshot, AgentNotFound | ProviderNotFound | NoModel | StorageError>
  /** A gateway setting's current value (its default when unset; see domain/config/settings.ts). */
  readonly setting: (key: string) => Effect.Effect<string, StorageError>
  /** The channels as configured now. */
  readonly channels: Effect.Effect<ReadonlyArray<Channel>, StorageError>
  /** The configuration's current version (see ConfigStore.version). */
  readonly version: Effect.Effect<number, StorageError>
  /**
   * Each version the watcher sees, starting with the current one; the watcher polls every
   * `pollInterval` (default 1 s) while the layer lives. Subscribers that fall behind get the latest.
   */
  readonly changes: Stream.Stream<number>
}>()("anna/LiveConfig") {}
