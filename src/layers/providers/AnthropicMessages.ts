/**
 * AnthropicMessages — the ChatModel port on the Anthropic Messages API through the official SDK
 * (`@anthropic-ai/sdk`, which speaks API version 2026-10-21).
 *
 * Owns: the SDK client of one provider row (base URL, key, extra headers), the request mapping
 * (`providers/anthropicRequest.ts`), the stream mapping (`providers/anthropicEvents.ts`), model
 * listing, and turning the SDK's errors into our typed ProviderErrors. Does not own: retries,
 * backoff and cancellation (`providers/transport.ts`: the SDK runs with `maxRetries: 0`), nor what a
 * caller does about a failure.
 *
 * Endpoint and credentials come only from the provider row, never from the environment: an empty
 * base URL is passed as `null`, which selects the public endpoint without reading
 * ANTHROPIC_BASE_URL, and a key passed explicitly (even empty) stops the SDK from looking for
 * ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or credential profiles.
 */
import Anthropic, { APIConnectionTimeoutError, APIError } from "@anthropic-ai/sdk"
import { Effect, Layer, Option, Schema } from "effect"
import type { ProviderError } from "../../domain/model/errors.ts"
import { defaultTransport, type ModelInfo, type ProviderConfig, type TransportOptions, transportFor } from "../../domain/model/types.ts"
import { ChatModel, type ChatModelClient } from "../../services/ChatModel.ts"
import { toChatEvents } from "./anthropicEvents.ts"
import { toParams } from "./anthropicRequest.ts"
import { classify, providerStream, sdkTimeoutMs, withRetries } from "./transport.ts"

/**
 * The status an error type stands for. An error that arrives as an SSE `error` event, after the
 * response has started with 200, has no status of its own: only its type says what it was.
 */
const STATUS_OF_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529
}

/** An error's message with its causes (undici hides the useful part, e.g. ECONNREFUSED, in `cause`). */
const describe = (cause: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = cause
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const message = current instanceof Error ? current.message : String(current)
    if (message !== "" && !parts.includes(message)) parts.push(message)
    current = current instanceof Error ? current.cause : undefined
  }
  return parts.join(": ") || "unknown error"
}

/** Reads the service's own error type (`error.type` of the body) when the SDK did not. */
const bodyType = (body: unknown): string | undefined => {
  const error = typeof body === "object" && body !== null ? (body as { readonly error?: unknown }).error : undefined
  const type = typeof error === "object" && error !== null ? (error as { readonly type?: unknown }).type : undefined
  return typeof type === "string" ? type : undefined
}

export const toProviderError = (provider: string) => (cause: unknown): ProviderError => {
  if (cause instanceof APIConnectionTimeoutError) return classify(provider, { detail: describe(cause), timeout: true })
  if (cause instanceof APIError) {
    const type = cause.type ?? bodyType(cause.error)
    const status = cause.status ?? (type === undefined ? undefined : STATUS_OF_TYPE[type] ?? 500)
    return classify(provider, {
      status,
      headers: cause.headers,
      detail: cause.apiMessage ?? (cause.status === undefined ? describe(cause) : cause.message),
      code: cause.errorCode ?? undefined
    })
  }
  // fetch failures, a socket destroyed mid-body ("terminated"), unparsable event data.
  return classify(provider, { detail: describe(cause) })
}

/** The fields of a listed model we use; Anthropic-compatible servers often send only `id`. */
const ListedModel = Schema.Struct({
  id: Schema.String,
  display_name: Schema.optional(Schema.NullOr(Schema.String)),
  created_at: Schema.optional(Schema.NullOr(Schema.String))
})
const decodeListed = Schema.decodeUnknownOption(ListedModel)

/** A listed model as ours (`createdAt` in ms since the epoch); entries without an id are skipped. */
const toModelInfo = (raw: unknown): ReadonlyArray<ModelInfo> =>
  Option.match(decodeListed(raw), {
    onNone: () => [],
    onSome: (m) => {
      const created = typeof m.created_at === "string" ? Date.parse(m.created_at) : Number.NaN
      return [{
        id: m.id,
        ...(typeof m.display_name === "string" && m.display_name !== "" ? { displayName: m.display_name } : {}),
        ...(Number.isNaN(created) ? {} : { createdAt: created })
      }]
    }
  })

export const make = (config: ProviderConfig, defaults: TransportOptions = defaultTransport): ChatModelClient => {
  const transport = transportFor(config, defaults)
  const client = new Anthropic({
    apiKey: config.apiKey,
    baseURL: config.baseUrl === "" ? null : config.baseUrl,
    defaultHeaders: config.headers,
    maxRetries: 0,
    timeout: sdkTimeoutMs(transport)
  })
  const toError = toProviderError(config.id)

  const listModels = withRetries(
    transport,
    Effect.tryPromise({
      try: async (signal) => {
        const models: Array<ModelInfo> = []
        // Iterating the page promise follows `has_more` / `last_id` through every page.
        for await (const m of client.models.list({ limit: 1000 }, { signal })) models.push(...toModelInfo(m))
        return models
      },
      catch: toError
    })
  ).pipe(Effect.withSpan("AnthropicMessages.listModels", { attributes: { provider: config.id } }))

  return {
    provider: config.id,
    type: "anthropic",
    defaultModel: config.defaultModel,
    stream: (request) =>
      providerStream({
        provider: config.id,
        transport,
        open: (signal) => client.messages.create(toParams(config, request), { signal }),
        toError,
        events: toChatEvents(config.id)
      }),
    listModels
  }
}

export const layer = (config: ProviderConfig, transport?: TransportOptions) => Layer.succeed(ChatModel, make(config, transport))
