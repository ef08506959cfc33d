/**
 * OpenAiChat — the ChatModel port over the OpenAI Chat Completions API (`POST /chat/completions`,
 * streaming), on the official `openai` SDK. Also serves every OpenAI-compatible server (Ollama,
 * vLLM, llama.cpp) through `baseUrl`.
 *
 * Owns: the SDK client for one provider row (key, base URL, extra headers, per-request timeout),
 * the SDK's failures → our typed errors, and model listing. The request shape is
 * `providers/openaiChatRequest.ts`, the stream → events mapping `providers/openaiChatStream.ts`;
 * retries, abort-on-interrupt and collecting are `providers/transport.ts` (shared by all layers).
 *
 * The SDK is configured from the provider row only: every option it would otherwise read from the
 * environment (`OPENAI_BASE_URL`, `OPENAI_ORG_ID`, …) is given explicitly, because configuration
 * lives in the database and one process serves many providers.
 */
import { Effect, Layer } from "effect"
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai"
import { type ProviderError, ProviderNetworkError } from "../../domain/model/errors.ts"
import { type ChatRequest, defaultTransport, type ModelInfo, type ProviderConfig, type TransportOptions, transportFor } from "../../domain/model/types.ts"
import { OPENAI_BASE_URL, toChatParams } from "./openaiChatRequest.ts"
import { chunkEvents } from "./openaiChatStream.ts"
import { classify, providerStream, sdkTimeoutMs, withRetries } from "./transport.ts"
import { ChatModel, type ChatModelClient } from "../../services/ChatModel.ts"

/** The SDK refuses to start without a key; local servers need none, so they get a stand-in. */
const NO_KEY = "anna-no-key"

const bodyField = (body: unknown, key: string): string | undefined => {
  if (typeof body !== "object" || body === null) return undefined
  const value = (body as Record<string, unknown>)[key]
  return typeof value === "string" && value !== "" ? value : undefined
}

const causeText = (e: Error): string => {
  const cause: unknown = e.cause
  return cause instanceof Error && cause.message !== "" && cause.message !== e.message ? `${e.message} (${cause.message})` : e.message
}

/** Any failure the SDK (or fetch under it) throws → our typed error. */
export const toProviderError = (provider: string) => (cause: unknown): ProviderError => {
  if (cause instanceof APIConnectionTimeoutError) return classify(provider, { detail: cause.message, timeout: true })
  if (cause instanceof APIUserAbortError) return classify(provider, { detail: "request aborted" })
  if (cause instanceof APIConnectionError) return classify(provider, { detail: causeText(cause) })
  if (cause instanceof APIError) {
    // `error` is the body's `error` object; its message is the service's own words.
    const detail = bodyField(cause.error, "message") ?? cause.message
    const code = typeof cause.code === "string" ? cause.code : undefined
    // An error event inside a started stream has no HTTP status: the service failed midway.
    const status = cause.status ?? (code === "context_length_exceeded" ? 400 : 500)
    return classify(provider, { status, headers: cause.headers, detail, code })
  }
  // Mostly fetch's "terminated" when the connection drops mid-stream.
  if (cause instanceof Error) return new ProviderNetworkError({ provider, timeout: false, detail: causeText(cause) })
  return new ProviderNetworkError({ provider, timeout: false, detail: String(cause) })
}

/**
 * The SDK client of a provider row, configured from the row only (nothing from the environment).
 * Retries are ours, so that every provider backs off alike on Effect's clock; failures reach the
 * caller as typed errors, so the SDK must not print to the console.
 */
export const openAiClient = (config: ProviderConfig, timeoutMs: number): OpenAI =>
  new OpenAI({
    apiKey: config.apiKey === "" ? NO_KEY : config.apiKey,
    baseURL: config.baseUrl.trim() === "" ? OPENAI_BASE_URL : config.baseUrl,
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    defaultHeaders: { ...config.headers },
    maxRetries: 0,
    timeout: timeoutMs,
    logLevel: "off"
  })

export const make = (config: ProviderConfig, defaults: TransportOptions = defaultTransport): ChatModelClient => {
  const transport = transportFor(config, defaults)
  const client = openAiClient(config, sdkTimeoutMs(transport))
  const toError = toProviderError(config.id)

  const stream = (request: ChatRequest) =>
    providerStream({
      provider: config.id,
      transport,
      open: (signal) => client.chat.completions.create(toChatParams(config, request), { signal }),
      toError,
      events: chunkEvents(config.id)
    })

  const listModels = withRetries(
    transport,
    Effect.tryPromise({
      try: async (signal) => {
        const models: Array<ModelInfo> = []
        // Iterating the page promise walks every page the service returns.
        for await (const model of client.models.list({ signal })) {
          const created: unknown = model.created
          models.push(typeof created === "number" ? { id: model.id, createdAt: created * 1000 } : { id: model.id })
        }
        return models
      },
      catch: toError
    })
  ).pipe(Effect.withSpan("OpenAiChat.listModels"))

  return { provider: config.id, type: "openai", defaultModel: config.defaultModel, stream, listModels }
}

export const layer = (config: ProviderConfig, transport?: TransportOptions) => Layer.succeed(ChatModel, make(config, transport))
