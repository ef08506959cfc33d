/**
 * ProviderStore — the `providers` table: which model services anna may call, with their base URL,
 * key, models and extra headers. Owns validation of a provider's configuration; does not talk to
 * the providers (that is ProviderRegistry's clients).
 *
 * Layers: `SqliteProviderStore.layer` (src/layers/config/SqliteProviderStore.ts).
 */
import { Context, type Effect } from "effect"
import type { InvalidConfig, ProviderExists, ProviderInUse, ProviderNotFound } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { ProviderConfig } from "../domain/model/types.ts"

/** What `update` may change; absent fields stay as they are. */
export interface ProviderPatch {
  readonly baseUrl?: string | undefined
  readonly apiKey?: string | undefined
  readonly models?: ReadonlyArray<string> | undefined
  readonly defaultModel?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly enabled?: boolean | undefined
  readonly firstByteTimeoutSeconds?: number | null | undefined
}

export class ProviderStore extends Context.Service<ProviderStore, {
  readonly list: Effect.Effect<ReadonlyArray<ProviderConfig>, StorageError>
  readonly get: (id: string) => Effect.Effect<ProviderConfig, ProviderNotFound | StorageError>
  readonly add: (config: ProviderConfig) => Effect.Effect<void, ProviderExists | InvalidConfig | StorageError>
  /** Sets (or with undefined, resets to the default) the provider's time-to-first-byte limit per attempt. */
  readonly setFirstByteTimeout: (
    id: string,
    seconds: number | undefined
  ) => Effect.Effect<void, ProviderNotFound | InvalidConfig | StorageError>
  /**
   * Changes what is given of a provider's settings (its id and type stay): a new key or base URL
   * (key rotation without removing a provider in use), its models, default model, headers, whether
   * it is enabled, and its first-byte timeout (null = the default). Validated as `add` validates; the
   * provider as stored after.
   */
  readonly update: (id: string, patch: ProviderPatch) => Effect.Effect<ProviderConfig, ProviderNotFound | InvalidConfig | StorageError>
  readonly remove: (id: string) => Effect.Effect<void, ProviderNotFound | ProviderInUse | StorageError>
}>()("anna/ProviderStore") {}
