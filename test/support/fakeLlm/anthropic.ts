/**
 * The Anthropic Messages protocol of the fake LLM server (POST /v1/messages, GET /v1/models), as
 * api.anthropic.com sends it at API version 2026-10-21 and as `@anthropic-ai/sdk` 1.x reads it:
 *
 * - `stream: true` → `text/event-stream` of named events: `message_start` (the Message with empty
 *   content, `stop_reason: null` and the input-side usage), `ping`, then per content block
 *   `content_block_start` / `content_block_delta` (`text_delta`, or `input_json_delta` starting with
 *   an empty `partial_json`) / `content_block_stop`, then `message_delta` (stop reason, output
 *   tokens) and `message_stop`. The SDK skips `ping` and throws on an `error` event.
 * - Without `stream: true` → one Message JSON object.
 * - Errors → `{"type":"error","error":{"type","message"},"request_id"}` with the service's error type
 *   per status (529 `overloaded_error`), a `request-id` header, `retry-after` when scripted, and
 *   "prompt is too long: N tokens > M maximum" for an oversized prompt. `streamError` scripts the
 *   other way the service fails: an SSE `error` event after the stream has started.
 * - The request is checked as the service checks it (`anthropicRules.ts`): a request the real API
 *   would refuse gets its 400 here too.
 * - GET /v1/models → `{data:[ModelInfo], has_more, first_id, last_id}`, paged by `limit` (default
 *   20) and `after_id` / `before_id`.
 */
import type { ServerResponse } from "node:http"
import { checkMessagesRequest } from "./anthropicRules.ts"
import type { RecordedRequest, Scripted, ScriptPart } from "./script.ts"
import { chunks, json, type Protocol, roughTokens, sse } from "./wire.ts"

type Reply = Extract<Scripted, { kind: "reply" }>
type Failure = Extract<Scripted, { kind: "error" }>
type Event = readonly [name: string, data: Record<string, unknown>]

const CONTEXT_WINDOW = 200_000

let counter = 0
const nextId = (prefix: string) => `${prefix}${(++counter).toString(36).padStart(22, "0")}`

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error"
}

const DEFAULT_MESSAGES: Readonly<Record<string, string>> = {
  invalid_request_error: "Invalid request.",
  authentication_error: "invalid x-api-key",
  billing_error: "Your credit balance is too low to access the Anthropic API.",
  permission_error: "Your API key does not have permission to use the specified resource.",
  not_found_error: "Not found",
  request_too_large: "Request exceeds the maximum allowed number of bytes.",
  rate_limit_error: "This request would exceed the rate limit for your organization of 50 requests per minute.",
  api_error: "Internal server error",
  timeout_error: "Request timed out",
  overloaded_error: "Overloaded"
}

export const errorTypeOf = (status: number): string =>
  ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error")

const errorBody = (status: number, message: string | undefined, requestId: string) => {
  const type = errorTypeOf(status)
  return { type: "error", error: { type, message: message ?? DEFAULT_MESSAGES[type] ?? "Error" }, request_id: requestId }
}

/** Scripted errors to be sent as an SSE `error` event once the stream has started (see `streamError`). */
const inStream = new WeakMap<Scripted, number>()

/**
 * An error the service reports inside a 200 stream (typically `overloaded_error` while generating):
 * `afterEvents` events of a normal reply (message_start, ping, …), then `event: error`.
 */
export const streamError = (status = 529, message?: string, afterEvents = 2): Scripted => {
  const scripted: Failure = message === undefined ? { kind: "error", status } : { kind: "error", status, message }
  inStream.set(scripted, afterEvents)
  return scripted
}

const field = (body: unknown, key: string): unknown =>
  typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined

const modelOf = (request: RecordedRequest): string => {
  const model = field(request.body, "model")
  return typeof model === "string" ? model : "claude-fake"
}

const stopReason = (reply: { readonly parts: ReadonlyArray<ScriptPart>; readonly stop?: Reply["stop"] }) => {
  const stop = reply.stop ?? (reply.parts.some((p) => p.type === "tool_call") ? "tool_use" : "end")
  return stop === "end" ? "end_turn" : stop
}

const usageOf = (request: RecordedRequest, reply: { readonly parts: ReadonlyArray<ScriptPart>; readonly usage?: Reply["usage"] }) => ({
  input: reply.usage?.input ?? roughTokens(request.body),
  output: reply.usage?.output ?? roughTokens(reply.parts)
})

/** The full Usage object of a Message (message_start and the non-streaming answer). */
const fullUsage = (input: number, output: number) => ({
  input_tokens: input,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
  output_tokens: output,
  output_tokens_details: null,
  server_tool_use: null,
  service_tier: "standard",
  inference_geo: "global",
  speed: "standard"
})

const message = (request: RecordedRequest, id: string, content: ReadonlyArray<unknown>, stop: string | null, usage: object) => ({
  id,
  type: "message",
  role: "assistant",
  model: modelOf(request),
  content,
  stop_reason: stop,
  stop_sequence: null,
  stop_details: null,
  container: null,
  diagnostics: null,
  usage
})

/** The events of a streamed reply, in order. */
export const streamEvents = (
  request: RecordedRequest,
  reply: { readonly parts: ReadonlyArray<ScriptPart>; readonly usage?: Reply["usage"]; readonly stop?: Reply["stop"]; readonly chunk?: number }
): Array<Event> => {
  const size = reply.chunk ?? 8
  const usage = usageOf(request, reply)
  const events: Array<Event> = [
    ["message_start", { type: "message_start", message: message(request, nextId("msg_"), [], null, fullUsage(usage.input, 1)) }],
    ["ping", { type: "ping" }]
  ]
  reply.parts.forEach((part, index) => {
    if (part.type === "text") {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }])
      for (const text of chunks(part.text, size)) {
        events.push(["content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text } }])
      }
    } else {
      const block = { type: "tool_use", id: part.id, name: part.name, input: {}, caller: { type: "direct" } }
      events.push(["content_block_start", { type: "content_block_start", index, content_block: block }])
      // The service opens every tool input with an empty fragment.
      for (const partial_json of ["", ...chunks(JSON.stringify(part.input ?? {}), size)]) {
        events.push(["content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } }])
      }
    }
    events.push(["content_block_stop", { type: "content_block_stop", index }])
  })
  events.push(
    ["message_delta", {
      type: "message_delta",
      delta: { stop_reason: stopReason(reply), stop_sequence: null, stop_details: null, container: null },
      usage: { output_tokens: usage.output }
    }],
    ["message_stop", { type: "message_stop" }]
  )
  return events
}

const frame = ([name, data]: Event) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`

const answerJson = (request: RecordedRequest, reply: Reply, res: ServerResponse, requestId: string) => {
  const usage = usageOf(request, reply)
  const content = reply.parts.map((p) =>
    p.type === "text"
      ? { type: "text", text: p.text, citations: null }
      : { type: "tool_use", id: p.id, name: p.name, input: p.input ?? {}, caller: { type: "direct" } }
  )
  json(res, 200, message(request, nextId("msg_"), content, stopReason(reply), fullUsage(usage.input, usage.output)), {
    "request-id": requestId
  })
}

const answerError = (request: RecordedRequest, scripted: Failure, res: ServerResponse, requestId: string) => {
  const afterEvents = inStream.get(scripted)
  if (afterEvents !== undefined && field(request.body, "stream") === true) {
    sse(res)
    const events = streamEvents(request, { parts: [{ type: "text", text: "Partial answer" }] }).slice(0, afterEvents)
    for (const e of events) res.write(frame(e))
    res.end(frame(["error", errorBody(scripted.status, scripted.message, requestId)]))
    return
  }
  const tokens = Math.max(CONTEXT_WINDOW + 1, roughTokens(request.body))
  const text = scripted.contextOverflow === true ? `prompt is too long: ${tokens} tokens > ${CONTEXT_WINDOW} maximum` : scripted.message
  const status = scripted.contextOverflow === true && scripted.status < 400 ? 400 : scripted.status
  const headers: Record<string, string> = { "request-id": requestId }
  if (scripted.retryAfter !== undefined) headers["retry-after"] = String(scripted.retryAfter)
  json(res, status, errorBody(status, text, requestId), headers)
}

const respond = (request: RecordedRequest, scripted: Scripted, res: ServerResponse) => {
  const requestId = nextId("req_")
  const rejected = checkMessagesRequest(request)
  if (rejected !== undefined) return json(res, rejected.status, errorBody(rejected.status, rejected.message, requestId), { "request-id": requestId })
  switch (scripted.kind) {
    case "error":
      return answerError(request, scripted, res, requestId)
    case "reply":
      if (field(request.body, "stream") !== true) return answerJson(request, scripted, res, requestId)
      sse(res)
      return res.end(streamEvents(request, scripted).map(frame).join(""))
    case "disconnect": {
      sse(res)
      const events = streamEvents(request, { parts: scripted.parts }).slice(0, scripted.afterEvents)
      // Destroy only once the events have reached the socket, so the client sees exactly them.
      return res.write(events.map(frame).join(""), () => scripted.stall === true || res.socket?.destroy())
    }
    case "hang":
      return
  }
}

const displayName = (id: string) => id.split(/[-_]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(" ")

const modelInfo = (id: string, i: number) => ({
  type: "model",
  id,
  display_name: displayName(id),
  created_at: new Date(Date.UTC(2026, 9, 21) - i * 86_400_000).toISOString(),
  capabilities: null,
  deprecated_at: null,
  lifecycle: "active",
  line: null,
  max_input_tokens: CONTEXT_WINDOW,
  max_tokens: 64_000,
  retires_at: null
})

/** GET /v1/models, paged as the service pages it. */
const listModels = (models: ReadonlyArray<string>, res: ServerResponse) => {
  const query = new URL(res.req.url ?? "/", "http://127.0.0.1").searchParams
  const limit = Math.min(1000, Math.max(1, Number(query.get("limit") ?? 20) || 20))
  const after = query.get("after_id")
  const before = query.get("before_id")
  let start = 0
  let end = models.length
  if (after !== null) start = models.indexOf(after) + 1
  if (before !== null) end = Math.max(0, models.indexOf(before))
  const page = before !== null ? models.slice(Math.max(start, end - limit), end) : models.slice(start, Math.min(end, start + limit))
  const first = page[0]
  const last = page[page.length - 1]
  const hasMore = before !== null ? end - page.length > start : start + page.length < end
  json(res, 200, {
    data: page.map((id) => modelInfo(id, models.indexOf(id))),
    has_more: hasMore,
    first_id: first ?? null,
    last_id: last ?? null
  }, { "request-id": nextId("req_") })
}

export const anthropicProtocol: Protocol = {
  name: "anthropic",
  handles: (path) => path === "/v1/messages",
  respond,
  listModels
}
