/**
 * OpenAI Responses stream events → ChatEvents. Only the events that carry our data are decoded (with
 * Schema: an OpenAI-compatible server may send anything); the rest (reasoning, annotations, content
 * part bookkeeping, hosted tools) are skipped. Tool calls are keyed by `output_index`, which every
 * item event carries, and numbered in the order they start.
 */
import { Result, Schema, Stream } from "effect"
import { parseToolArguments } from "../../domain/model/collect.ts"
import { type ProviderError, ProviderNetworkError, ProviderServerError } from "../../domain/model/errors.ts"
import type { ChatEvent, StopReason, Usage } from "../../domain/model/types.ts"
import { classify } from "./transport.ts"

const Count = Schema.optional(Schema.NullOr(Schema.Number))
const Text = Schema.optional(Schema.NullOr(Schema.String))

const UsageSchema = Schema.Struct({
  input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  input_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: Count, cache_write_tokens: Count })))
})

const ResponseBody = Schema.Struct({
  usage: Schema.optional(Schema.NullOr(UsageSchema)),
  incomplete_details: Schema.optional(Schema.NullOr(Schema.Struct({ reason: Text }))),
  error: Schema.optional(Schema.NullOr(Schema.Struct({ code: Text, message: Text })))
})

const Item = Schema.Struct({
  type: Schema.String,
  call_id: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  arguments: Text
})

const Event = Schema.Union([
  Schema.Struct({ type: Schema.Literals(["response.output_text.delta", "response.refusal.delta"]), delta: Schema.String }),
  Schema.Struct({
    type: Schema.Literals(["response.output_item.added", "response.output_item.done"]),
    output_index: Schema.Number,
    item: Item
  }),
  Schema.Struct({ type: Schema.Literal("response.function_call_arguments.delta"), output_index: Schema.Number, delta: Schema.String }),
  Schema.Struct({ type: Schema.Literal("response.function_call_arguments.done"), output_index: Schema.Number, arguments: Schema.String }),
  Schema.Struct({
    type: Schema.Literals(["response.completed", "response.incomplete", "response.failed"]),
    response: ResponseBody
  }),
  Schema.Struct({ type: Schema.Literal("error"), code: Text, message: Text })
])
type Event = typeof Event.Type

const KNOWN: ReadonlySet<string> = new Set([
  "response.output_text.delta",
  "response.refusal.delta",
  "response.output_item.added",
  "response.output_item.done",
  "response.function_call_arguments.delta",
  "response.function_call_arguments.done",
  "response.completed",
  "response.incomplete",
  "response.failed",
  "error"
])

const decodeEvent = Schema.decodeUnknownResult(Event)

/**
 * A failure the service reports inside a 200 stream (response.failed, an error event) has a code but
 * no HTTP status; this gives it the status the same failure gets over HTTP, so it is classified alike.
 */
export const streamFailure = (provider: string, code: string | null | undefined, message: string | null | undefined): ProviderError => {
  const detail = message !== null && message !== undefined && message !== "" ? message : code ?? "the response failed"
  if (code === "rate_limit_exceeded" || code === "insufficient_quota") return classify(provider, { status: 429, detail, code })
  if (code === null || code === undefined || code === "server_error" || code === "vector_store_timeout") {
    return classify(provider, { status: 500, detail, code: code ?? undefined })
  }
  return classify(provider, { status: 400, detail, code })
}

/** The server answered 200 but not in the protocol: reported as a bad gateway would be. */
export const protocolError = (provider: string, detail: string): ProviderError =>
  new ProviderServerError({ provider, status: 502, detail: `malformed Responses stream: ${detail}`.slice(0, 500) })

interface OpenCall {
  readonly index: number
  readonly id: string
  readonly name: string
  arguments: string
}

type Step = Result.Result<ReadonlyArray<ChatEvent>, ProviderError>

/** The per-stream state machine: feed it the raw events in order, then call `end`. */
export class ResponsesEventMapper {
  private readonly open = new Map<number, OpenCall>()
  /** Output indexes of calls already ended: a repeated done event must not make a second call. */
  private readonly closed = new Set<number>()
  private started = 0
  private refused = false
  private finished = false
  private readonly provider: string

  constructor(provider: string) {
    this.provider = provider
  }

  push(raw: unknown): Step {
    const type = typeof raw === "object" && raw !== null && "type" in raw ? raw.type : undefined
    if (this.finished || typeof type !== "string" || !KNOWN.has(type)) return Result.succeed([])
    const decoded = decodeEvent(raw)
    if (Result.isFailure(decoded)) return Result.fail(protocolError(this.provider, `${type}: ${decoded.failure.message}`))
    return this.step(decoded.success)
  }

  /** After the last event: a stream that stops before its final event was cut off. */
  end(): ProviderError | undefined {
    return this.finished
      ? undefined
      : new ProviderNetworkError({ provider: this.provider, timeout: false, detail: "the stream ended before response.completed" })
  }

  private step(event: Event): Step {
    switch (event.type) {
      case "response.output_text.delta":
      case "response.refusal.delta":
        if (event.type === "response.refusal.delta") this.refused = true
        return Result.succeed(event.delta === "" ? [] : [{ type: "text_delta", text: event.delta }])
      case "response.output_item.added":
        return event.item.type === "function_call" ? this.start(event.output_index, event.item) : Result.succeed([])
      case "response.function_call_arguments.delta": {
        const call = this.open.get(event.output_index)
        if (call === undefined) return Result.fail(protocolError(this.provider, `arguments for unknown item ${event.output_index}`))
        call.arguments += event.delta
        return Result.succeed(event.delta === "" ? [] : [{ type: "tool_call_delta", index: call.index, argumentsDelta: event.delta }])
      }
      case "response.function_call_arguments.done": {
        const call = this.open.get(event.output_index)
        return Result.succeed(call === undefined ? [] : this.complete(call, event.arguments))
      }
      case "response.output_item.done": {
        if (event.item.type !== "function_call" || this.closed.has(event.output_index)) return Result.succeed([])
        const known = this.open.get(event.output_index)
        const started = known === undefined ? this.start(event.output_index, event.item) : Result.succeed([])
        const call = this.open.get(event.output_index)
        if (Result.isFailure(started) || call === undefined) return started
        this.open.delete(event.output_index)
        this.closed.add(event.output_index)
        return Result.succeed([...started.success, ...this.complete(call, event.item.arguments ?? ""), this.endCall(call)])
      }
      case "response.completed":
      case "response.incomplete":
        return Result.succeed(this.finish(event.type, event.response))
      case "response.failed":
        this.finished = true
        return Result.fail(streamFailure(this.provider, event.response.error?.code, event.response.error?.message))
      case "error":
        this.finished = true
        return Result.fail(streamFailure(this.provider, event.code, event.message))
    }
  }

  private start(outputIndex: number, item: typeof Item.Type): Step {
    if (item.call_id === undefined || item.name === undefined) {
      return Result.fail(protocolError(this.provider, "function_call without call_id or name"))
    }
    const call: OpenCall = { index: this.started++, id: item.call_id, name: item.name, arguments: "" }
    this.open.set(outputIndex, call)
    const start: ChatEvent = { type: "tool_call_start", index: call.index, id: call.id, name: call.name }
    return Result.succeed([start, ...this.complete(call, item.arguments ?? "")])
  }

  /**
   * Some servers send the arguments only whole (in the added item or a `.done` event) instead of as
   * deltas: those become one delta, so consumers see every argument byte exactly once.
   */
  private complete(call: OpenCall, full: string): ReadonlyArray<ChatEvent> {
    if (call.arguments !== "" || full === "") return []
    call.arguments = full
    return [{ type: "tool_call_delta", index: call.index, argumentsDelta: full }]
  }

  private endCall(call: OpenCall): ChatEvent {
    return { type: "tool_call_end", index: call.index, id: call.id, name: call.name, input: parseToolArguments(call.arguments) }
  }

  private finish(type: "response.completed" | "response.incomplete", response: typeof ResponseBody.Type): ReadonlyArray<ChatEvent> {
    this.finished = true
    // Calls the server never closed with output_item.done still end, in order, with what arrived.
    const unclosed = [...this.open.values()].sort((a, b) => a.index - b.index).map((c) => this.endCall(c))
    this.open.clear()
    const events: Array<ChatEvent> = [...unclosed]
    if (response.usage !== null && response.usage !== undefined) events.push({ type: "usage", usage: usageOf(response.usage) })
    events.push({ type: "stop", reason: this.stopReason(type, response.incomplete_details?.reason) })
    return events
  }

  private stopReason(type: "response.completed" | "response.incomplete", reason: string | null | undefined): StopReason {
    if (type === "response.incomplete") {
      return reason === "max_output_tokens" ? "max_tokens" : reason === "content_filter" ? "refusal" : "other"
    }
    return this.started > 0 ? "tool_use" : this.refused ? "refusal" : "end_turn"
  }
}

/** OpenAI counts cached tokens within input_tokens. */
const usageOf = (u: typeof UsageSchema.Type): Partial<Usage> => ({
  inputTokens: u.input_tokens,
  outputTokens: u.output_tokens,
  ...(typeof u.input_tokens_details?.cached_tokens === "number" ? { cacheReadTokens: u.input_tokens_details.cached_tokens } : {}),
  ...(typeof u.input_tokens_details?.cache_write_tokens === "number"
    ? { cacheWriteTokens: u.input_tokens_details.cache_write_tokens }
    : {})
})

/** The SDK's event stream as ChatEvents; fails on response.failed, error events and a cut-off stream. */
export const toChatEvents = (provider: string) => <E>(raw: Stream.Stream<unknown, E>): Stream.Stream<ChatEvent, E | ProviderError> =>
  Stream.suspend(() => {
    const mapper = new ResponsesEventMapper(provider)
    return raw.pipe(
      Stream.flatMap((event) => {
        const step = mapper.push(event)
        return Result.isSuccess(step) ? Stream.fromIterable(step.success) : Stream.fail(step.failure)
      }),
      Stream.concat(Stream.suspend(() => {
        const cut = mapper.end()
        return cut === undefined ? Stream.empty : Stream.fail(cut)
      }))
    )
  })
