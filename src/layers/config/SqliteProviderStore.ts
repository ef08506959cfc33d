/**
 * ProviderStore on SQLite (migrations/0002_providers.sql): rows decoded with Schema, a provider
 * checked before it is stored; its key is stored as given and only ever shown masked by the CLI.
 */
import { Clock, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidConfig, PriceNotFound, ProviderExists, ProviderInUse, ProviderNotFound } from "../../domain/config/errors.ts"
import { type ModelPrice, type PriceInput, priceProblem } from "../../domain/model/prices.ts"
import { firstByteTimeoutProblem, PROVIDER_TYPES, type ProviderConfig, type ProviderType } from "../../domain/model/types.ts"
import { type ProviderPatch, ProviderStore } from "../../services/ProviderStore.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import { storageError } from "../sql/errors.ts"

const ProviderRow = Schema.Struct({
  id: Schema.String,
  type: Schema.Literals(["anthropic", "openai", "openai-response"]),
  base_url: Schema.String,
  api_key: Schema.String,
  models: Schema.fromJsonString(Schema.Array(Schema.String)),
  default_model: Schema.String,
  headers: Schema.fromJsonString(Schema.Record(Schema.String, Schema.String)),
  enabled: Schema.Number,
  first_byte_timeout_seconds: Schema.NullOr(Schema.Number)
})
const decodeProviders = Schema.decodeUnknownEffect(Schema.Array(ProviderRow))
const toProvider = (r: typeof ProviderRow.Type): ProviderConfig => ({
  id: r.id,
  type: r.type,
  baseUrl: r.base_url,
  apiKey: r.api_key,
  models: r.models,
  defaultModel: r.default_model,
  headers: r.headers,
  enabled: r.enabled === 1,
  ...(r.first_byte_timeout_seconds === null ? {} : { firstByteTimeoutSeconds: r.first_byte_timeout_seconds })
})

const PriceRow = Schema.Struct({
  provider_id: Schema.String,
  model: Schema.String,
  input: Schema.Number,
  output: Schema.Number,
  cache_read: Schema.NullOr(Schema.Number),
  cache_write: Schema.NullOr(Schema.Number)
})
const decodePrices = Schema.decodeUnknownEffect(Schema.Array(PriceRow))
const toPrice = (r: typeof PriceRow.Type): ModelPrice => ({
  providerId: r.provider_id,
  model: r.model,
  input: r.input,
  output: r.output,
  cacheRead: r.cache_read,
  cacheWrite: r.cache_write
})

/** Checks a provider row before it is stored; the reason says what to change. */
export const validateProvider = (c: ProviderConfig): string | undefined => {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(c.id)) {
    return `provider id "${c.id}" must be 1–64 letters, digits, '.', '_' or '-' (no '/')`
  }
  if (!PROVIDER_TYPES.includes(c.type as ProviderType)) return `provider type must be one of ${PROVIDER_TYPES.join(", ")}`
  if (c.baseUrl !== "") {
    try {
      const u = new URL(c.baseUrl)
      if (u.protocol !== "http:" && u.protocol !== "https:") return `base URL must be http(s): ${c.baseUrl}`
    } catch {
      return `base URL is not a URL: ${c.baseUrl}`
    }
  }
  if (c.defaultModel.trim() === "") return "a default model is needed (--default-model, or --model)"
  if (c.firstByteTimeoutSeconds !== undefined) {
    const problem = firstByteTimeoutProblem(c.firstByteTimeoutSeconds)
    if (problem !== undefined) return problem
  }
  for (const name of Object.keys(c.headers)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) return `"${name}" is not a valid HTTP header name`
  }
  return undefined
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const immediate = Sqlite.immediate(sql)

  const listProviders = sql`SELECT * FROM providers ORDER BY created_at, rowid`.pipe(
    Effect.flatMap(decodeProviders),
    Effect.map((rows) => rows.map(toProvider)),
    Effect.mapError(storageError("read providers"))
  )
  const getProvider = Effect.fn("ProviderStore.get")(function*(id: string) {
    const rows = yield* sql`SELECT * FROM providers WHERE id = ${id}`.pipe(Effect.flatMap(decodeProviders), Effect.mapError(storageError("read provider")))
    const r = rows[0]
    return r === undefined ? yield* new ProviderNotFound({ id }) : toProvider(r)
  })

  return ProviderStore.of({
    list: listProviders,
    get: getProvider,
    add: Effect.fn("ProviderStore.add")(function*(c: ProviderConfig) {
      const problem = validateProvider(c)
      if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
      const now = yield* Clock.currentTimeMillis
      const inserted = yield* sql<{ id: string }>`INSERT INTO providers ${
        sql.insert({
          id: c.id,
          type: c.type,
          base_url: c.baseUrl,
          api_key: c.apiKey,
          models: JSON.stringify(c.models),
          default_model: c.defaultModel,
          headers: JSON.stringify(c.headers),
          enabled: c.enabled ? 1 : 0,
          first_byte_timeout_seconds: c.firstByteTimeoutSeconds ?? null,
          created_at: now,
          updated_at: now
        })
      } ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(Effect.mapError(storageError("add provider")))
      if (inserted.length === 0) return yield* new ProviderExists({ id: c.id })
    }),
    setFirstByteTimeout: Effect.fn("ProviderStore.setFirstByteTimeout")(function*(id: string, seconds: number | undefined) {
      const problem = seconds === undefined ? undefined : firstByteTimeoutProblem(seconds)
      if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
      const now = yield* Clock.currentTimeMillis
      const updated = yield* sql<{ id: string }>`UPDATE providers
        SET first_byte_timeout_seconds = ${seconds ?? null}, updated_at = ${now} WHERE id = ${id} RETURNING id`.pipe(
        Effect.mapError(storageError("update provider"))
      )
      if (updated.length === 0) return yield* new ProviderNotFound({ id })
    }),
    update: Effect.fn("ProviderStore.update")((id: string, patch: ProviderPatch) =>
      immediate(Effect.gen(function*() {
        const current = yield* getProvider(id)
        const timeout = patch.firstByteTimeoutSeconds === undefined ? current.firstByteTimeoutSeconds : patch.firstByteTimeoutSeconds ?? undefined
        const { firstByteTimeoutSeconds: _, ...rest } = current
        const next: ProviderConfig = {
          ...rest,
          ...(patch.baseUrl === undefined ? {} : { baseUrl: patch.baseUrl.trim() }),
          ...(patch.apiKey === undefined ? {} : { apiKey: patch.apiKey }),
          ...(patch.models === undefined ? {} : { models: patch.models }),
          ...(patch.defaultModel === undefined ? {} : { defaultModel: patch.defaultModel.trim() }),
          ...(patch.headers === undefined ? {} : { headers: patch.headers }),
          ...(patch.enabled === undefined ? {} : { enabled: patch.enabled }),
          ...(timeout === undefined ? {} : { firstByteTimeoutSeconds: timeout })
        }
        const problem = validateProvider(next)
        if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE providers SET base_url = ${next.baseUrl}, api_key = ${next.apiKey}, models = ${JSON.stringify(next.models)},
          default_model = ${next.defaultModel}, headers = ${JSON.stringify(next.headers)}, enabled = ${next.enabled ? 1 : 0},
          first_byte_timeout_seconds = ${next.firstByteTimeoutSeconds ?? null}, updated_at = ${now} WHERE id = ${id}`
        return next
      })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storageError("update provider")(e))))),
    remove: Effect.fn("ProviderStore.remove")((id: string) =>
      immediate(Effect.gen(function*() {
        yield* getProvider(id)
        const users = yield* sql<{ id: string }>`SELECT id FROM agents
          WHERE provider_id = ${id} OR summary_provider_id = ${id} OR embedding_provider_id = ${id} ORDER BY id`
        if (users.length > 0) return yield* new ProviderInUse({ id, agents: users.map((u) => u.id) })
        // Its prices go with it (ON DELETE CASCADE).
        yield* sql`DELETE FROM providers WHERE id = ${id}`
      })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storageError("remove provider")(e))))),
    setPrice: Effect.fn("ProviderStore.setPrice")((providerId: string, model: string, price: PriceInput | null) =>
      immediate(Effect.gen(function*() {
        yield* getProvider(providerId)
        if (price === null) {
          const removed = yield* sql<{ model: string }>`DELETE FROM model_prices
            WHERE provider_id = ${providerId} AND model = ${model} RETURNING model`
          if (removed.length === 0) return yield* new PriceNotFound({ providerId, model })
          return
        }
        const problem = priceProblem(model, price)
        if (problem !== undefined) return yield* new InvalidConfig({ reason: problem })
        const now = yield* Clock.currentTimeMillis
        const row = {
          input: price.input,
          output: price.output,
          cache_read: price.cacheRead ?? null,
          cache_write: price.cacheWrite ?? null,
          updated_at: now
        }
        yield* sql`INSERT INTO model_prices ${sql.insert({ provider_id: providerId, model, ...row })}
          ON CONFLICT (provider_id, model) DO UPDATE SET input = excluded.input, output = excluded.output,
          cache_read = excluded.cache_read, cache_write = excluded.cache_write, updated_at = excluded.updated_at`
      })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storageError("set price")(e))))),
    prices: Effect.fn("ProviderStore.prices")(function*(providerId?: string) {
      if (providerId !== undefined) yield* getProvider(providerId)
      const rows = yield* sql`SELECT provider_id, model, input, output, cache_read, cache_write FROM model_prices
        WHERE CAST(${providerId ?? null} AS TEXT) IS NULL OR provider_id = ${providerId ?? null} ORDER BY provider_id, model`.pipe(
        Effect.flatMap(decodePrices),
        Effect.mapError(storageError("read prices"))
      )
      return rows.map(toPrice)
    })
  })
})

/** ProviderStore; needs SqlClient. */
export const layer = Layer.effect(ProviderStore, make)
