/**
 * ProviderStore — the `providers` table: which model services anna may call, with their base URL,
 * key, models and extra headers. Owns validation of a provider's configuration; does not talk to
 * the providers (that is ProviderRegistry's clients). Also owns each provider's model prices
 * (`model_prices`, USD per million tokens), which UsageLog applies to the calls it logged.
 *
 * Layers: `SqliteProviderStore.layer` (src/layers/config/SqliteProviderStore.ts).
 */
import { Context, type Effect } from "effect"
import type { InvalidConfig, PriceNotFound, ProviderExists, ProviderInUse, ProviderNotFound } from "../domain/config/errors.ts"
import type { ModelPrice, PriceInput } from "../domain/model/prices.ts"
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
  /** Removes a provider, and its prices with it. */
  readonly remove: (id: string) => Effect.Effect<void, ProviderNotFound | ProviderInUse | StorageError>
  /**
   * Sets (replaces) a model's price, USD per million tokens, checked (finite, 0 to 10,000, a model
   * id); with null, removes it (PriceNotFound when none was set). The model need not be in the
   * provider's declared list: usage is logged under whatever model was called.
   */
  readonly setPrice: (
    providerId: string,
    model: string,
    price: PriceInput | null
  ) => Effect.Effect<void, ProviderNotFound | PriceNotFound | InvalidConfig | StorageError>
  /** The prices of one provider (ProviderNotFound if it does not exist) or of all, by provider then model. */
  readonly prices: (providerId?: string) => Effect.Effect<ReadonlyArray<ModelPrice>, ProviderNotFound | StorageError>
}>()("anna/ProviderStore") {}
