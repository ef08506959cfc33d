/**
 * `/api/providers` handlers: `anna provider add|set|list|remove|models|prices|price` over ProviderStore, with the
 * CLI's rules: responses show keys, header values and URL credentials masked (`shownProvider`), and
 * error messages are scrubbed of the provider's secrets (an SDK error can quote a request).
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { InvalidConfig, ProviderExists } from "../../domain/config/errors.ts"
import { type ProviderConfig, providerSecrets, redactSecrets, shownProvider } from "../../domain/model/types.ts"
import * as ProviderClients from "../providers/SdkProviderRegistry.ts"
import { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import { answer } from "./errors.ts"

/** A provider as the API shows it (masked; the optional timeout only when set). */
export const providerView = (p: ProviderConfig) => {
  const s = shownProvider(p)
  return {
    id: s.id,
    type: s.type,
    baseUrl: s.baseUrl,
    apiKey: s.apiKey,
    models: s.models,
    defaultModel: s.defaultModel,
    headers: s.headers,
    enabled: s.enabled,
    ...(s.firstByteTimeoutSeconds === undefined ? {} : { firstByteTimeoutSeconds: s.firstByteTimeoutSeconds })
  }
}

export const layer = HttpApiBuilder.group(AdminApi, "providers", Effect.fn(function*(handlers) {
  const store = yield* ProviderStore
  const registry = yield* ProviderRegistry

  return handlers
    .handle("list", () => answer(Effect.map(store.list, (all) => all.map(providerView))))
    .handle("get", ({ params }) => answer(Effect.map(store.get(params.id), providerView)))
    .handle("create", ({ payload }) =>
      answer(Effect.gen(function*() {
        // Said first, so a taken id is 409 even when the server's models would have been listed.
        if ((yield* Effect.option(store.get(payload.id)))._tag === "Some") return yield* new ProviderExists({ id: payload.id })
        const models = payload.models ?? []
        const base: ProviderConfig = {
          id: payload.id,
          type: payload.type,
          baseUrl: payload.baseUrl ?? "",
          apiKey: payload.apiKey ?? "",
          models,
          defaultModel: payload.defaultModel ?? models[0] ?? "",
          headers: payload.headers ?? {},
          enabled: payload.enabled ?? true,
          ...(payload.firstByteTimeoutSeconds === undefined ? {} : { firstByteTimeoutSeconds: payload.firstByteTimeoutSeconds })
        }
        const secrets = providerSecrets(base)
        let config = base
        if (config.defaultModel === "") {
          // As `anna provider add`: no model named, so the server's first listed model.
          const listed = yield* ProviderClients.clientFor({ ...base, defaultModel: "-" }).pipe(
            Effect.flatMap((client) => client.listModels),
            Effect.mapError((e) =>
              new InvalidConfig({
                reason: `no default model given and the server's models could not be listed (${redactSecrets(e.message, secrets)}); give defaultModel`
              })
            )
          )
          const first = listed[0]
          if (first === undefined) return yield* new InvalidConfig({ reason: "the server lists no models; give defaultModel" })
          config = { ...base, defaultModel: first.id }
        }
        yield* store.add(config).pipe(
          Effect.catchTag("InvalidConfig", (e) => Effect.fail(new InvalidConfig({ reason: redactSecrets(e.reason, secrets) })))
        )
        return providerView(yield* store.get(config.id))
      })))
    .handle("update", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        const before = yield* store.get(params.id)
        // The store's refusal may quote the base URL; the old and new credentials stay hidden.
        const secrets = [
          ...providerSecrets(before),
          ...providerSecrets({
            ...before,
            baseUrl: payload.baseUrl ?? before.baseUrl,
            apiKey: payload.apiKey ?? before.apiKey,
            headers: payload.headers ?? before.headers
          })
        ]
        const updated = yield* store.update(params.id, payload).pipe(
          Effect.catchTag("InvalidConfig", (e) => Effect.fail(new InvalidConfig({ reason: redactSecrets(e.reason, secrets) })))
        )
        return providerView(updated)
      })))
    .handle("remove", ({ params }) => answer(store.remove(params.id)))
    .handle("models", ({ params }) =>
      answer(Effect.gen(function*() {
        const provider = yield* store.get(params.id)
        const client = yield* registry.client(provider.id)
        const listed = yield* client.listModels.pipe(
          Effect.mapError((e) => new InvalidConfig({ reason: `the server's models could not be listed: ${redactSecrets(e.message, providerSecrets(provider))}` }))
        )
        return listed.map((m) => ({ id: m.id, ...(m.displayName === undefined ? {} : { displayName: m.displayName }) }))
      })))
    .handle("prices", ({ params }) => answer(store.prices(params.id)))
    .handle("setPrice", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        yield* store.setPrice(params.id, params.model, payload)
        const stored = (yield* store.prices(params.id)).find((p) => p.model === params.model)
        return stored ?? (yield* Effect.die(new Error(`the price of ${params.id}/${params.model} was set but not found`)))
      })))
    .handle("removePrice", ({ params }) => answer(store.setPrice(params.id, params.model, null)))
}))
