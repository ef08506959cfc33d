/**
 * The Anthropic Messages event stream (as the SDK yields it) as our ChatEvents.
 *
 * - `message_start` carries the input side of usage (input, cache read, cache write), `message_delta`
 *   the output tokens (and, from newer servers, cumulative input figures) and the stop reason;
 *   `stop` is emitted at `message_stop`.
 * - Tool calls are numbered in the order their blocks start; the JSON fragments of
 *   `input_json_delta` are passed on as they come and parsed once, at `content_block_stop`.
 * - Event types we do not know (thinking, server tools, new ones) are skipped, as the API asks
 *   clients to do; a known event that does not decode is a broken answer (502-like server error).
 * - A stream that ends without `message_stop` was cut off: a network error, never a short answer
 *   that looks complete.
 */
import { Effect, Exit, Schema, Stream } from "effect"
import { parseToolArguments } from "../../domain/model/collect.ts"
import { type ProviderError, ProviderNetworkError, ProviderServerError } from "../../domain/model/errors.ts"
import type { ChatEvent, StopReason, Usage } from "../../domain/model/types.ts"

const Count = Schema.optional(Schema.NullOr(Schema.Number))
const UsageFields = Schema.Struct({
  input_tokens: Count,
  output_tokens: Count,
  cache_read_input_tokens: Count,
  cache_creation_input_tokens: Count
})

const StreamEvent = Schema.Union([
  Schema.Struct({ type: Schema.Literal("message_start"), message: Schema.Struct({ usage: UsageFields }) }),
  Schema.Struct({
    type: Schema.Literal("content_block_start"),
    index: Schema.Number,
    content_block: Schema.Struct({
      type: Schema.String,
      id: Schema.optional(Schema.String),
      name: Schema.optional(Schema.String),
      text: Schema.optional(Schema.String),
      input: Schema.optional(Schema.Unknown)
    })
  }),
  Schema.Struct({
    type: Schema.Literal("content_block_delta"),
    index: Schema.Number,
    delta: Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String), partial_json: Schema.optional(Schema.String) })
  }),
  Schema.Struct({ type: Schema.Literal("content_block_stop"), index: Schema.Number }),
  Schema.Struct({
    type: Schema.Literal("message_delta"),
    delta: Schema.Struct({ stop_reason: Schema.optional(Schema.NullOr(Schema.String)) }),
    usage: Schema.optional(Schema.NullOr(UsageFields))
  }),
  Schema.Struct({ type: Schema.Literal("message_stop") })
])
type StreamEvent = typeof StreamEvent.Type

const KNOWN = new Set(["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"])
const decode = Schema.decodeUnknownExit(StreamEvent)

export const stopReasonOf = (reason: string | null | undefined, calledTools: boolean): StopReason => {
  switch (reason) {
    case "end_turn":
    case "tool_use":
    case "max_tokens":
    case "stop_sequence":
    case "refusal":
      return reason
    // The output was cut because the context window filled up: as truncated as max_tokens.
    case "model_context_window_exceeded":
      return "max_tokens"
    case null:
    case undefined:
      return calledTools ? "tool_use" : "end_turn"
    default:
      // pause_turn (a server tool paused the turn) and reasons added later.
      return "other"
  }
}

interface OpenCall {
  readonly index: number
  readonly id: string
  readonly name: string
  readonly args: string
  /** The block's own `input`, used when no fragments follow (a non-incremental server). */
  readonly initial: unknown
}

interface State {
  readonly calls: ReadonlyMap<number, OpenCall>
  readonly nextCall: number
  readonly stopReason: string | null | undefined
  readonly stopped: boolean
}

const initial: State = { calls: new Map(), nextCall: 0, stopReason: undefined, stopped: false }

type Step = ChatEvent | { readonly type: "failed"; readonly error: ProviderError }

type Counts = typeof UsageFields.Type
const usageOf = (u: Counts, side: "input" | "output"): Partial<Usage> => {
  const out: { -readonly [K in keyof Usage]?: number } = {}
  if (typeof u.input_tokens === "number") out.inputTokens = u.input_tokens
  if (typeof u.cache_read_input_tokens === "number") out.cacheReadTokens = u.cache_read_input_tokens
  if (typeof u.cache_creation_input_tokens === "number") out.cacheWriteTokens = u.cache_creation_input_tokens
  // message_start reports a placeholder output count; the real one comes with message_delta.
  if (side === "output" && typeof u.output_tokens === "number") out.outputTokens = u.output_tokens
  return out
}

const withCall = (calls: ReadonlyMap<number, OpenCall>, key: number, call: OpenCall | undefined) => {
  const next = new Map(calls)
  if (call === undefined) next.delete(key)
  else next.set(key, call)
  return next
}

const finishedInput = (call: OpenCall): unknown =>
  call.args.trim() === "" && typeof call.initial === "object" && call.initial !== null ? call.initial : parseToolArguments(call.args)

const apply = (state: State, e: StreamEvent): readonly [State, ReadonlyArray<Step>] => {
  switch (e.type) {
    case "message_start":
      return [state, [{ type: "usage", usage: usageOf(e.message.usage, "input") }]]
    case "content_block_start": {
      const b = e.content_block
      if (b.type === "text") return [state, b.text === undefined || b.text === "" ? [] : [{ type: "text_delta", text: b.text }]]
      if (b.type !== "tool_use") return [state, []]
      const call: OpenCall = { index: state.nextCall, id: b.id ?? "", name: b.name ?? "", args: "", initial: b.input }
      return [
        { ...state, calls: withCall(state.calls, e.index, call), nextCall: state.nextCall + 1 },
        [{ type: "tool_call_start", index: call.index, id: call.id, name: call.name }]
      ]
    }
    case "content_block_delta": {
      const d = e.delta
      if (d.type === "text_delta") return [state, d.text === undefined || d.text === "" ? [] : [{ type: "text_delta", text: d.text }]]
      const call = state.calls.get(e.index)
      if (d.type !== "input_json_delta" || call === undefined || d.partial_json === undefined || d.partial_json === "") return [state, []]
      return [
        { ...state, calls: withCall(state.calls, e.index, { ...call, args: call.args + d.partial_json }) },
        [{ type: "tool_call_delta", index: call.index, argumentsDelta: d.partial_json }]
      ]
    }
    case "content_block_stop": {
      const call = state.calls.get(e.index)
      if (call === undefined) return [state, []]
      return [
        { ...state, calls: withCall(state.calls, e.index, undefined) },
        [{ type: "tool_call_end", index: call.index, id: call.id, name: call.name, input: finishedInput(call) }]
      ]
    }
    case "message_delta": {
      const usage = e.usage === undefined || e.usage === null ? [] : [{ type: "usage" as const, usage: usageOf(e.usage, "output") }]
      return [{ ...state, stopReason: e.delta.stop_reason ?? state.stopReason }, usage]
    }
    case "message_stop":
      return [{ ...state, stopped: true }, [{ type: "stop", reason: stopReasonOf(state.stopReason, state.nextCall > 0) }]]
  }
}

const typeOf = (raw: unknown): unknown => (typeof raw === "object" && raw !== null ? (raw as { readonly type?: unknown }).type : undefined)

/** One SDK event: its ChatEvents, nothing for an event type we do not use, a failure for a broken one. */
export const step = (provider: string) => (state: State, raw: unknown): readonly [State, ReadonlyArray<Step>] => {
  if (state.stopped || !KNOWN.has(String(typeOf(raw)))) return [state, []]
  const decoded = decode(raw)
  if (Exit.isFailure(decoded)) {
    const error = new ProviderServerError({ provider, status: 502, detail: `malformed ${String(typeOf(raw))} event: ${JSON.stringify(raw).slice(0, 200)}` })
    return [state, [{ type: "failed", error }]]
  }
  return apply(state, decoded.value)
}

const cutOff = (provider: string) =>
  new ProviderNetworkError({ provider, timeout: false, detail: "the response stream ended before message_stop" })

export const toChatEvents = (provider: string) => <E>(events: Stream.Stream<unknown, E>): Stream.Stream<ChatEvent, E | ProviderError> =>
  Stream.suspend(() => {
    // The end check runs only after the upstream ended without error (mapAccum's onHalt also runs
    // on failure, where it would mask the real error with "cut off").
    let stopped = false
    const tracked = step(provider)
    return events.pipe(
      Stream.mapAccum(() => initial, (state: State, raw: unknown) => {
        const next = tracked(state, raw)
        stopped = next[0].stopped
        return next
      }),
      Stream.mapEffect((s): Effect.Effect<ChatEvent, ProviderError> => (s.type === "failed" ? Effect.fail(s.error) : Effect.succeed(s))),
      Stream.concat(Stream.suspend(() => (stopped ? Stream.empty : Stream.fail(cutOff(provider)))))
    )
  })
