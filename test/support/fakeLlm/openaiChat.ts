/**
 * The OpenAI Chat Completions protocol of the fake LLM server (POST /v1/chat/completions), as the
 * real service sends it and as the `openai` SDK reads it:
 *
 * - `stream: true` → `text/event-stream` of unnamed `data:` events, each a `chat.completion.chunk`
 *   (id, object, created, model, system_fingerprint, service_tier, choices[{index, delta, logprobs,
 *   finish_reason}]), then `data: [DONE]`. The first chunk carries `role: "assistant"` and
 *   `content: ""`; tool calls arrive as `delta.tool_calls[{index, id, type, function{name,
 *   arguments: ""}}]` then argument pieces with only `{index, function{arguments}}`; the finish
 *   chunk has an empty delta and `finish_reason` stop | tool_calls | length.
 * - Usage only when the request sets `stream_options.include_usage`: every chunk then has
 *   `usage: null`, and one last chunk with `choices: []` carries the usage.
 * - Without `stream: true` → one `chat.completion` JSON object.
 * - Errors → `{"error":{"message","type","param","code"}}` with the service's types and codes
 *   (`context_length_exceeded` with its wording for an oversized prompt), `retry-after` when asked.
 * - GET /v1/models → `{"object":"list","data":[{id, object:"model", created, owned_by}]}`.
 */
import type { RecordedRequest, Scripted, ScriptPart } from "./script.ts"
import { chunks, json, type Protocol, roughTokens, sse } from "./wire.ts"

type Reply = Extract<Scripted, { kind: "reply" }>
type FinishReason = "stop" | "tool_calls" | "length"

const CREATED = 1_763_800_000
const FINGERPRINT = "fp_fake0000"

let counter = 0
const nextId = (prefix: string) => `${prefix}${(++counter).toString(36).padStart(8, "0")}`

const field = (body: unknown, key: string): unknown =>
  typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined

const requestModel = (request: RecordedRequest): string => {
  const model = field(request.body, "model")
  return typeof model === "string" ? model : "gpt-4o-mini"
}

const finishReason = (scripted: { readonly parts: ReadonlyArray<ScriptPart>; readonly stop?: Reply["stop"] }): FinishReason => {
  const stop = scripted.stop ?? (scripted.parts.some((p) => p.type === "tool_call") ? "tool_use" : "end")
  return stop === "tool_use" ? "tool_calls" : stop === "max_tokens" ? "length" : "stop"
}

const usageOf = (request: RecordedRequest, reply: { readonly parts: ReadonlyArray<ScriptPart>; readonly usage?: Reply["usage"] }) => {
  const input = reply.usage?.input ?? roughTokens(request.body)
  const output = reply.usage?.output ?? roughTokens(reply.parts)
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 }
  }
}

/** The `data:` payloads of a streamed reply, in order, without the final `[DONE]`. */
export const streamChunks = (
  request: RecordedRequest,
  reply: { readonly parts: ReadonlyArray<ScriptPart>; readonly usage?: Reply["usage"]; readonly stop?: Reply["stop"]; readonly chunk?: number }
): Array<Record<string, unknown>> => {
  const includeUsage = field(field(request.body, "stream_options"), "include_usage") === true
  const id = nextId("chatcmpl-")
  const size = reply.chunk ?? 8
  let frames = 0
  // The real service only adds the `usage` key (null until the last chunk) when it was asked for.
  const frame = (choices: Array<unknown>, usage?: unknown) => ({
    id,
    object: "chat.completion.chunk",
    created: CREATED,
    model: requestModel(request),
    service_tier: "default",
    system_fingerprint: FINGERPRINT,
    choices,
    ...(includeUsage ? { usage: usage ?? null } : {}),
    // Padding the service adds by default (random there; stream_options.include_obfuscation); clients ignore it.
    obfuscation: "x".repeat(1 + (frames++ % 7))
  })
  const choice = (delta: Record<string, unknown>, finish: FinishReason | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finish
  })
  // The role opens the message: alone (with empty content) before text, or together with the
  // first tool call (content null) when the answer starts with one.
  const startsWithTool = reply.parts[0]?.type === "tool_call"
  const out: Array<Record<string, unknown>> = startsWithTool ? [] : [frame([choice({ role: "assistant", content: "", refusal: null })])]
  let toolIndex = 0
  for (const part of reply.parts) {
    if (part.type === "text") {
      for (const piece of chunks(part.text, size)) if (piece !== "") out.push(frame([choice({ content: piece })]))
    } else {
      const index = toolIndex++
      const opening = { tool_calls: [{ index, id: part.id, type: "function", function: { name: part.name, arguments: "" } }] }
      out.push(frame([choice(out.length === 0 ? { role: "assistant", content: null, ...opening, refusal: null } : opening)]))
      for (const piece of chunks(JSON.stringify(part.input ?? {}), size)) {
        out.push(frame([choice({ tool_calls: [{ index, function: { arguments: piece } }] })]))
      }
    }
  }
  out.push(frame([choice({}, finishReason(reply))]))
  if (includeUsage) out.push(frame([], usageOf(request, reply)))
  return out
}

/** The non-streaming `chat.completion` object for a reply. */
export const completion = (request: RecordedRequest, reply: Reply): Record<string, unknown> => {
  const text = reply.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")
  const toolCalls = reply.parts.flatMap((p) =>
    p.type === "tool_call" ? [{ id: p.id, type: "function", function: { name: p.name, arguments: JSON.stringify(p.input ?? {}) } }] : []
  )
  return {
    id: nextId("chatcmpl-"),
    object: "chat.completion",
    created: CREATED,
    model: requestModel(request),
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: text === "" && toolCalls.length > 0 ? null : text,
        refusal: null,
        annotations: [],
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
      },
      logprobs: null,
      finish_reason: finishReason(reply)
    }],
    usage: usageOf(request, reply),
    service_tier: "default",
    system_fingerprint: FINGERPRINT
  }
}

/** The service's error body and headers for a status, worded as it words them. */
export const errorBody = (request: RecordedRequest, scripted: Extract<Scripted, { kind: "error" }>) => {
  const e = (message: string, type: string, code: string | null, param: string | null = null) => ({
    error: { message: scripted.message ?? message, type, param, code }
  })
  if (scripted.contextOverflow === true) {
    return {
      error: {
        message: scripted.message ??
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded"
      }
    }
  }
  switch (scripted.status) {
    case 401:
      return e(
        "Incorrect API key provided: sk-test***3456. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key"
      )
    case 403:
      return e("You are not allowed to sample from this model", "invalid_request_error", null)
    case 404:
      return e(`The model \`${requestModel(request)}\` does not exist or you do not have access to it.`, "invalid_request_error", "model_not_found")
    case 429:
      return e(
        `Rate limit reached for ${requestModel(request)} on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.`,
        "requests",
        "rate_limit_exceeded"
      )
    default:
      return scripted.status >= 500
        ? e("The server had an error while processing your request. Sorry about that!", "server_error", null)
        : e("Invalid request.", "invalid_request_error", null)
  }
}

const sseText = (events: ReadonlyArray<Record<string, unknown>>): string =>
  events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join("")

export const openAiChatProtocol: Protocol = {
  name: "openai",
  handles: (path) => path === "/v1/chat/completions",
  respond: (request, scripted, res) => {
    res.setHeader("x-request-id", nextId("req_"))
    res.setHeader("openai-processing-ms", "12")
    const streaming = field(request.body, "stream") === true
    switch (scripted.kind) {
      case "error":
        return json(
          res,
          scripted.status,
          errorBody(request, scripted),
          scripted.retryAfter === undefined ? {} : { "retry-after": String(scripted.retryAfter) }
        )
      case "reply":
        if (!streaming) return json(res, 200, completion(request, scripted))
        sse(res)
        // One write per event, as the service flushes them, so the client sees real increments.
        for (const event of streamChunks(request, scripted)) res.write(sseText([event]))
        res.end("data: [DONE]\n\n")
        return
      case "disconnect":
        // A JSON answer cannot be cut "after N events": the connection just drops before the body.
        if (!streaming) return void res.socket?.destroy()
        sse(res)
        // Destroy only once the written events have reached the socket, so the client sees them
        // and then a connection that drops mid-stream (no terminating chunk, no [DONE]).
        res.write(
          sseText(streamChunks(request, { parts: scripted.parts }).slice(0, scripted.afterEvents)),
          () => scripted.stall === true || res.socket?.destroy()
        )
        return
      case "hang":
        return
    }
  },
  listModels: (models, res) =>
    json(res, 200, {
      object: "list",
      data: models.map((id) => ({ id, object: "model", created: CREATED, owned_by: "system" }))
    })
}
