/**
 * OpenAiResponses — the ChatModel port on the OpenAI Responses API (`POST /responses`, streamed),
 * through the official `openai` SDK. Provider type "openai-response": OpenAI itself and the
 * OpenAI-compatible services that implement the Responses API.
 *
 * Owns: the SDK client (base URL, key, extra headers, timeout; the SDK's own retries off), turning
 * SDK failures into our typed errors, and model listing. The request mapping lives in
 * `providers/openaiResponsesRequest.ts`, the stream-event mapping in
 * `providers/openaiResponsesEvents.ts`; retries, backoff and aborting on interruption are shared
 * with the other providers in `providers/transport.ts`.
 *
 * The client is configured from the provider row only: every option the SDK would otherwise read
 * from the environment (base URL, organization, project) is set explicitly, so a stray
 * OPENAI_BASE_URL cannot redirect a configured provider.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai"
import { type ProviderError, ProviderNetworkError } from "../../domain/model/errors.ts"
import {
  defaultTransport,
  type ModelInfo,
  type ProviderConfig,
  type TransportOptions,
  transportFor
} from "../../domain/model/types.ts"
import { ChatModel, type ChatModelClient } from "../../services/ChatModel.ts"
import { protocolError, streamFailure, toChatEvents } from "./openaiResponsesEvents.ts"
import { toResponsesParams } from "./openaiResponsesRequest.ts"
import { classify, providerStream, sdkTimeoutMs, withRetries } from "./transport.ts"

/** Messages of an error and its causes ("Connection error.: fetch failed: connect ECONNREFUSED …"). */
const describe = (cause: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = cause
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current.message !== "" && !parts.includes(current.message)) parts.push(current.message)
    current = current.cause
  }
  return parts.length > 0 ? parts.join(": ") : String(cause)
}

/** The service's own wording from the error body, without the SDK's "400 " prefix. */
const serviceMessage = (e: APIError): string => {
  const body = e.error
  const message = typeof body === "object" && body !== null && "message" in body ? body.message : undefined
  return typeof message === "string" && message !== "" ? message : e.message
}

/** Every way the SDK fails, as the typed error a caller can act on. */
export const toProviderError = (provider: string) => (cause: unknown): ProviderError => {
  if (cause instanceof APIUserAbortError) {
    // Only our own AbortController aborts, when the consumer went away: nobody reads this error.
    return new ProviderNetworkError({ provider, timeout: false, detail: "request aborted" })
  }
  if (cause instanceof APIConnectionTimeoutError) return classify(provider, { detail: describe(cause), timeout: true })
  if (cause instanceof APIConnectionError) return classify(provider, { detail: describe(cause) })
  if (cause instanceof APIError) {
    // No status: the SDK read an `error` event inside a 200 stream.
    if (cause.status === undefined) return streamFailure(provider, cause.code, serviceMessage(cause))
    return classify(provider, {
      status: cause.status,
      headers: cause.headers,
      detail: serviceMessage(cause),
      code: cause.code ?? undefined
    })
  }
  // The SDK throws SyntaxError for an event whose data is not JSON.
  if (cause instanceof SyntaxError) return protocolError(provider, describe(cause))
  // Anything else is the body breaking off (undici's "terminated: other side closed") and the like.
  return new ProviderNetworkError({ provider, timeout: false, detail: describe(cause) })
}

const ListedModel = Schema.Struct({ id: Schema.String, created: Schema.optional(Schema.NullOr(Schema.Number)) })
const decodeModel = Schema.decodeUnknownResult(ListedModel)

const toModelInfo = (raw: unknown): ReadonlyArray<ModelInfo> => {
  const decoded = decodeModel(raw)
  if (decoded._tag === "Failure") return [] // an entry without an id names nothing we could select
  const { id, created } = decoded.success
  // OpenAI gives seconds since the epoch; ModelInfo is in milliseconds like every timestamp of ours.
  return [typeof created === "number" && created > 0 ? { id, createdAt: created * 1000 } : { id }]
}

export const make = (config: ProviderConfig, defaults: TransportOptions = defaultTransport): ChatModelClient => {
  const transport = transportFor(config, defaults)
  const keyless = config.apiKey === ""
  const client = new OpenAI({
    // The SDK refuses to start without a key, but local servers (Ollama, vLLM) need none: give it a
    // placeholder and drop the Authorization header it would make from it.
    apiKey: keyless ? "unused" : config.apiKey,
    baseURL: config.baseUrl === "" ? null : config.baseUrl,
    organization: null,
    project: null,
    defaultHeaders: keyless ? { Authorization: null, ...config.headers } : { ...config.headers },
    maxRetries: 0,
    timeout: sdkTimeoutMs(transport)
  })
  const toError = toProviderError(config.id)

  const listModels = withRetries(
    transport,
    Effect.tryPromise({
      try: async (signal) => {
        const raw: Array<unknown> = []
        for await (const model of client.models.list({ signal })) raw.push(model)
        return raw
      },
      catch: toError
    })
  ).pipe(
    Effect.map((raw) => raw.flatMap(toModelInfo)),
    Effect.withSpan("OpenAiResponses.listModels", { attributes: { provider: config.id } })
  )

  return {
    provider: config.id,
    type: "openai-response",
    defaultModel: config.defaultModel,
    stream: (request) =>
      providerStream({
        provider: config.id,
        transport,
        open: (signal) => client.responses.create(toResponsesParams(request, config.defaultModel), { signal }),
        toError,
        events: toChatEvents(config.id)
      }).pipe(Stream.withSpan("OpenAiResponses.stream", { attributes: { provider: config.id, model: request.model } })),
    listModels
  }
}

export const layer = (config: ProviderConfig, transport?: TransportOptions) =>
  Layer.succeed(ChatModel, make(config, transport))
