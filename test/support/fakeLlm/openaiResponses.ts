/**
 * The OpenAI Responses protocol of the fake LLM server (POST /v1/responses), as the real service
 * sends it and as the `openai` SDK reads it:
 *
 * - `stream: true` → `text/event-stream` of named events (`event: <type>` + `data: {"type": <type>,
 *   "sequence_number": n, …}`), no `[DONE]`: response.created, response.in_progress, then per output
 *   item response.output_item.added, (message) response.content_part.added,
 *   response.output_text.delta…, response.output_text.done, response.content_part.done,
 *   (function call) response.function_call_arguments.delta…, response.function_call_arguments.done,
 *   then response.output_item.done; last response.completed, or response.incomplete with
 *   `incomplete_details.reason: "max_output_tokens"`. Usage (input/output tokens with their details)
 *   only on that last event's `response`.
 * - Without `stream: true` → the final `response` object as JSON.
 * - Errors → `{"error":{"message","type","param","code"}}` with the service's types and codes, the
 *   context-window wording with code `context_length_exceeded`, `retry-after` when asked.
 * - The input checks the real service makes that a client most often gets wrong: a model, no item
 *   ids when `store` is false (the service looks them up and answers 404), every
 *   function_call_output preceded by its function_call and every function_call answered.
 * - GET /v1/models → `{"object":"list","data":[{id, object:"model", created, owned_by}]}`.
 *
 * `streamEvents`, `responseObject` and `sseFrame` are exported so that tests can build streams the
 * scripts cannot express (response.failed, error events).
 */
import { randomBytes } from "node:crypto"
import type { ServerResponse } from "node:http"
import type { RecordedRequest, Scripted, ScriptPart } from "./script.ts"
import { chunks, json, type Protocol, roughTokens } from "./wire.ts"

type Reply = Extract<Scripted, { kind: "reply" }>
type ReplyLike = Pick<Reply, "parts"> & Partial<Pick<Reply, "usage" | "stop" | "chunk">>
type Json = Record<string, unknown>

const CREATED = 1_763_800_000
const hexId = (prefix: string) => `${prefix}${randomBytes(16).toString("hex")}`

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

/** One SSE event as the service frames it: a named event whose data repeats the name as `type`. */
export const sseFrame = (data: Json & { readonly type: string }): string =>
  `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`

/** The `response` object, echoing the request's settings the way the service does. */
export const responseObject = (
  request: RecordedRequest,
  id: string,
  state: {
    readonly status: "in_progress" | "completed" | "incomplete" | "failed"
    readonly output?: ReadonlyArray<Json>
    readonly usage?: Json | null
    readonly error?: { readonly code: string; readonly message: string } | null
  }
): Json => {
  const body = request.body
  const num = (key: string) => (typeof field(body, key) === "number" ? field(body, key) : null)
  return {
    id,
    object: "response",
    created_at: CREATED,
    status: state.status,
    background: false,
    completed_at: state.status === "completed" ? CREATED + 1 : null,
    error: state.error ?? null,
    incomplete_details: state.status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: str(field(body, "instructions")) ?? null,
    max_output_tokens: num("max_output_tokens"),
    max_tool_calls: null,
    model: str(field(body, "model")) ?? "gpt-4.1",
    output: state.output ?? [],
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: { effort: null, summary: null },
    safety_identifier: null,
    service_tier: "default",
    store: field(body, "store") !== false,
    temperature: num("temperature") ?? 1,
    text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: "auto",
    tools: Array.isArray(field(body, "tools")) ? field(body, "tools") : [],
    top_logprobs: 0,
    top_p: 1,
    truncation: "disabled",
    usage: state.usage ?? null,
    user: null,
    metadata: {}
  }
}

const usageOf = (request: RecordedRequest, reply: ReplyLike): Json => {
  const input = reply.usage?.input ?? roughTokens(request.body)
  const output = reply.usage?.output ?? roughTokens(reply.parts)
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output
  }
}

/** Every SSE event of a streamed reply, in order, each with its `sequence_number`. */
export const streamEvents = (request: RecordedRequest, reply: ReplyLike): Array<Json & { readonly type: string }> => {
  const id = hexId("resp_")
  const size = reply.chunk ?? 8
  const incomplete = reply.stop === "max_tokens"
  const events: Array<Json & { readonly type: string }> = []
  const emit = (type: string, data: Json) => events.push({ type, sequence_number: events.length, ...data })
  const output: Array<Json> = []

  emit("response.created", { response: responseObject(request, id, { status: "in_progress" }) })
  emit("response.in_progress", { response: responseObject(request, id, { status: "in_progress" }) })
  reply.parts.forEach((part: ScriptPart, output_index) => {
    // A reply cut by max_output_tokens leaves its last item incomplete.
    const status = incomplete && output_index === reply.parts.length - 1 ? "incomplete" : "completed"
    if (part.type === "text") {
      const item_id = hexId("msg_")
      const at = { item_id, output_index, content_index: 0 }
      const done = { type: "output_text", annotations: [], logprobs: [], text: part.text }
      emit("response.output_item.added", {
        output_index,
        item: { id: item_id, type: "message", status: "in_progress", content: [], role: "assistant" }
      })
      emit("response.content_part.added", { ...at, part: { ...done, text: "" } })
      for (const delta of chunks(part.text, size)) emit("response.output_text.delta", { ...at, delta, logprobs: [] })
      emit("response.output_text.done", { ...at, text: part.text, logprobs: [] })
      emit("response.content_part.done", { ...at, part: done })
      const item = { id: item_id, type: "message", status, content: [done], role: "assistant" }
      emit("response.output_item.done", { output_index, item })
      output.push(item)
    } else {
      const item_id = hexId("fc_")
      const args = JSON.stringify(part.input ?? {})
      const base = { id: item_id, type: "function_call", call_id: part.id, name: part.name }
      emit("response.output_item.added", { output_index, item: { ...base, status: "in_progress", arguments: "" } })
      for (const delta of chunks(args, size)) {
        emit("response.function_call_arguments.delta", { item_id, output_index, delta })
      }
      emit("response.function_call_arguments.done", { item_id, output_index, arguments: args })
      const item = { ...base, status, arguments: args }
      emit("response.output_item.done", { output_index, item })
      output.push(item)
    }
  })
  const final = responseObject(request, id, {
    status: incomplete ? "incomplete" : "completed",
    output,
    usage: usageOf(request, reply)
  })
  emit(incomplete ? "response.incomplete" : "response.completed", { response: final })
  return events
}

const errorBody = (message: string, type: string, param: string | null, code: string | null) => ({
  error: { message, type, param, code }
})

/** The service's error body for a status, with its default wording when the script gives none. */
const errorFor = (request: RecordedRequest, e: Extract<Scripted, { kind: "error" }>) => {
  const model = str(field(request.body, "model")) ?? "gpt-4.1"
  if (e.contextOverflow === true) {
    return errorBody(
      "Your input exceeds the context window of this model. Please adjust your input and try again.",
      "invalid_request_error",
      "input",
      "context_length_exceeded"
    )
  }
  switch (e.status) {
    case 401:
      return errorBody(
        e.message ?? "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        null,
        "invalid_api_key"
      )
    case 403:
      return errorBody(e.message ?? `Project does not have access to model \`${model}\``, "invalid_request_error", null, "model_not_found")
    case 404:
      return errorBody(
        e.message ?? `The model \`${model}\` does not exist or you do not have access to it.`,
        "invalid_request_error",
        null,
        "model_not_found"
      )
    case 429:
      return errorBody(e.message ?? `Rate limit reached for ${model} on requests per min (RPM).`, "requests", null, "rate_limit_exceeded")
    default:
      if (e.status >= 500) {
        return errorBody(
          e.message ?? "The server had an error while processing your request. Sorry about that!",
          "server_error",
          null,
          null
        )
      }
      return errorBody(e.message ?? "Invalid request.", "invalid_request_error", null, null)
  }
}

/** The checks the service makes on `input` before it starts answering; undefined when the request is fine. */
const rejection = (body: unknown): { readonly status: number; readonly body: unknown } | undefined => {
  const invalid = (message: string, param: string | null, code: string | null = null, status = 400) => ({
    status,
    body: errorBody(message, "invalid_request_error", param, code)
  })
  if (typeof body !== "object" || body === null) {
    return invalid("We could not parse the JSON body of your request.", null)
  }
  if (str(field(body, "model")) === undefined || field(body, "model") === "") {
    return invalid("Missing required parameter: 'model'.", "model", "missing_required_parameter")
  }
  const input = field(body, "input")
  if (!Array.isArray(input)) return undefined
  const stored = field(body, "store") !== false
  const called = new Set<string>()
  const answered = new Set<string>()
  for (const item of input) {
    const id = str(field(item, "id"))
    if (!stored && id !== undefined) {
      return invalid(
        `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
        "input",
        null,
        404
      )
    }
    const callId = str(field(item, "call_id")) ?? ""
    if (field(item, "type") === "function_call") called.add(callId)
    if (field(item, "type") === "function_call_output") {
      if (!called.has(callId)) return invalid(`No tool call found for function call output with call_id ${callId}.`, "input")
      answered.add(callId)
    }
  }
  for (const callId of called) {
    if (!answered.has(callId)) return invalid(`No tool output found for function call ${callId}.`, "input")
  }
  return undefined
}

const requestId = () => ({ "x-request-id": hexId("req_") })

const startSse = (res: ServerResponse) =>
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "openai-version": "2020-10-01",
    ...requestId()
  })

export const openAiResponsesProtocol: Protocol = {
  name: "openai-response",
  handles: (path) => path === "/v1/responses",
  respond: (request, scripted, res) => {
    if (scripted.kind === "error") {
      const retry: Record<string, string> = scripted.retryAfter === undefined ? {} : { "retry-after": String(scripted.retryAfter) }
      return json(res, scripted.status, errorFor(request, scripted), { ...requestId(), ...retry })
    }
    if (scripted.kind === "hang") return
    const rejected = rejection(request.body)
    if (rejected !== undefined) return json(res, rejected.status, rejected.body, requestId())
    const streaming = field(request.body, "stream") === true
    if (scripted.kind === "disconnect") {
      if (!streaming) return void res.socket?.destroy()
      startSse(res)
      const head = streamEvents(request, { parts: scripted.parts }).slice(0, scripted.afterEvents)
      // Destroy only once the events are handed to the kernel, so the client does receive them.
      return void res.write(head.map(sseFrame).join(""), () => scripted.stall === true || res.socket?.destroy())
    }
    const events = streamEvents(request, scripted)
    if (!streaming) {
      const last = events[events.length - 1]
      return json(res, 200, field(last, "response"), requestId())
    }
    startSse(res)
    for (const event of events) res.write(sseFrame(event))
    res.end()
  },
  listModels: (models, res) =>
    json(res, 200, {
      object: "list",
      data: models.map((id, i) => ({ id, object: "model", created: CREATED - i * 86_400, owned_by: "system" }))
    }, requestId())
}
