/**
 * `/api/providers`: the model providers (as `anna provider add|set|list|remove`). Keys are
 * write-only: responses carry them masked as the CLI shows them (`sk-…abcd`), header values and URL
 * credentials too, never in full. Model prices (USD per million tokens; a cache price null = the
 * input price) are read and set per provider, as `anna provider prices|price`.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const ProviderType = Schema.Literals(["anthropic", "openai", "openai-response"])

/** A provider as shown: `apiKey`, `headers` values and `baseUrl` credentials masked. */
export const ProviderView = Schema.Struct({
  id: Schema.String,
  type: ProviderType,
  baseUrl: Schema.String,
  apiKey: Schema.String,
  models: Schema.Array(Schema.String),
  defaultModel: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  enabled: Schema.Boolean,
  firstByteTimeoutSeconds: Schema.optional(Schema.Number)
})

export const NewProvider = Schema.Struct({
  id: Schema.String,
  type: ProviderType,
  /** Empty or absent: the provider's public endpoint. */
  baseUrl: Schema.optional(Schema.String),
  apiKey: Schema.optional(Schema.String),
  models: Schema.optional(Schema.Array(Schema.String)),
  /** Default: the first of `models`, else the first model the server lists. */
  defaultModel: Schema.optional(Schema.String),
  headers: Schema.optional(Schema.Record(Schema.String, Schema.String)),
  enabled: Schema.optional(Schema.Boolean),
  firstByteTimeoutSeconds: Schema.optional(Schema.Number)
})

const id = { id: Schema.String }

/** Checked by the store: finite, 0 to 10,000. */
const Usd = Schema.Number

/** A model's price, USD per million tokens; a null cache price is the input price. */
export const ModelPriceView = Schema.Struct({
  providerId: Schema.String,
  model: Schema.String,
  input: Usd,
  output: Usd,
  cacheRead: Schema.NullOr(Usd),
  cacheWrite: Schema.NullOr(Usd)
})

export const NewPrice = Schema.Struct({
  input: Usd,
  output: Usd,
  /** Absent or null: the input price. */
  cacheRead: Schema.optional(Schema.NullOr(Usd)),
  cacheWrite: Schema.optional(Schema.NullOr(Usd))
})

const priceParams = { id: Schema.String, model: Schema.String }

export class ProvidersGroup extends HttpApiGroup.make("providers")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(ProviderView), error: CommonErrors }),
    HttpApiEndpoint.get("get", "/:id", { params: id, success: ProviderView, error: CommonErrors }),
    HttpApiEndpoint.post("create", "/", { payload: NewProvider, success: ProviderView, error: CommonErrors }),
    HttpApiEndpoint.patch("update", "/:id", {
      params: id,
      /**
       * Absent fields stay as they are; `apiKey` is write-only (a new key, e.g. a rotation);
       * `firstByteTimeoutSeconds: null` resets it to the default.
       */
      payload: Schema.Struct({
        baseUrl: Schema.optional(Schema.String),
        apiKey: Schema.optional(Schema.String),
        models: Schema.optional(Schema.Array(Schema.String)),
        defaultModel: Schema.optional(Schema.String),
        headers: Schema.optional(Schema.Record(Schema.String, Schema.String)),
        enabled: Schema.optional(Schema.Boolean),
        firstByteTimeoutSeconds: Schema.optional(Schema.NullOr(Schema.Number))
      }),
      success: ProviderView,
      error: CommonErrors
    }),
    HttpApiEndpoint.delete("remove", "/:id", { params: id, success: HttpApiSchema.NoContent, error: CommonErrors }),
    HttpApiEndpoint.get("models", "/:id/models", {
      params: id,
      success: Schema.Array(Schema.Struct({ id: Schema.String, displayName: Schema.optional(Schema.String) })),
      error: CommonErrors
    }),
    HttpApiEndpoint.get("prices", "/:id/prices", { params: id, success: Schema.Array(ModelPriceView), error: CommonErrors }),
    HttpApiEndpoint.put("setPrice", "/:id/prices/:model", { params: priceParams, payload: NewPrice, success: ModelPriceView, error: CommonErrors }),
    HttpApiEndpoint.delete("removePrice", "/:id/prices/:model", { params: priceParams, success: HttpApiSchema.NoContent, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/providers")
{}
