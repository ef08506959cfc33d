/**
 * OpenAI Chat Completions stream chunks → our ChatEvents. Owns decoding each chunk (the SDK
 * passes the server's JSON through unchecked, and OpenAI-compatible servers differ in what they
 * leave out), tool-call assembly, usage and the stop reason; not the HTTP exchange (OpenAiChat.ts).
 *
 * Tool calls arrive as deltas keyed by the API's `index`: id and name in the first, argument text
 * after. Calls end when the `finish_reason` chunk arrives; usage comes in a last chunk with no
 * choices, so `stop` is emitted only when the stream has ended, after usage.
 */
import { Effect, Result, Schema, Stream } from "effect"
import { parseToolArguments } from "../../domain/model/collect.ts"
import { type ProviderError, ProviderNetworkError, ProviderServerError } from "../../domain/model/errors.ts"
import type { ChatEvent, StopReason, Usage } from "../../domain/model/types.ts"

const Maybe = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const ToolCallDelta = Schema.Struct({
  index: Maybe(Schema.Number),
  id: Maybe(Schema.String),
  function: Maybe(Schema.Struct({ name: Maybe(Schema.String), arguments: Maybe(Schema.String) }))
})

const ChunkSchema = Schema.Struct({
  choices: Maybe(Schema.Array(Schema.Struct({
    index: Maybe(Schema.Number),
    delta: Maybe(Schema.Struct({
      content: Maybe(Schema.String),
      refusal: Maybe(Schema.String),
      tool_calls: Maybe(Schema.Array(ToolCallDelta))
    })),
    finish_reason: Maybe(Schema.String)
  }))),
  usage: Maybe(Schema.Struct({
    prompt_tokens: Maybe(Schema.Number),
    completion_tokens: Maybe(Schema.Number),
    prompt_tokens_details: Maybe(Schema.Struct({
      cached_tokens: Maybe(Schema.Number),
      cache_write_tokens: Maybe(Schema.Number)
    }))
  }))
})
export type Chunk = typeof ChunkSchema.Type
type ToolCallDelta = typeof ToolCallDelta.Type

export const decodeChunk = Schema.decodeUnknownResult(ChunkSchema)

export const stopReason = (finish: string, sawToolCalls: boolean, refused: boolean): StopReason => {
  if (refused) return "refusal"
  switch (finish) {
    case "tool_calls":
    case "function_call":
      return "tool_use"
    case "length":
      return "max_tokens"
    case "content_filter":
      return "refusal"
    case "stop":
      // Some OpenAI-compatible servers say "stop" after tool calls; the calls are what matters.
      return sawToolCalls ? "tool_use" : "end_turn"
    default:
      return "other"
  }
}

export const usageOf = (u: NonNullable<Chunk["usage"]>): Partial<Usage> => {
  const out: { -readonly [K in keyof Usage]?: number } = {}
  if (typeof u.prompt_tokens === "number") out.inputTokens = u.prompt_tokens
  if (typeof u.completion_tokens === "number") out.outputTokens = u.completion_tokens
  // OpenAI counts cached tokens within prompt_tokens; we report them as it does.
  const cached = u.prompt_tokens_details?.cached_tokens
  if (typeof cached === "number") out.cacheReadTokens = cached
  const written = u.prompt_tokens_details?.cache_write_tokens
  if (typeof written === "number") out.cacheWriteTokens = written
  return out
}

interface OpenCall {
  readonly index: number
  readonly id: string
  name: string
  args: string
}

/**
 * The per-response state machine: `push` turns one decoded chunk into events, `end` finishes the
 * response or says why it is incomplete. One accumulator per stream.
 */
export const accumulator = () => {
  const calls: Array<OpenCall> = []
  const byApiIndex = new Map<number, OpenCall>()
  let started = 0
  let finish: string | undefined
  let refused = false

  const toolDelta = (tc: ToolCallDelta): Array<ChatEvent> => {
    const apiIndex = tc.index ?? 0
    const id = tc.id ?? undefined
    let call = byApiIndex.get(apiIndex)
    // A new id under a known index is a new call: some compatible servers put every call at index 0.
    if (call === undefined || (id !== undefined && id !== "" && id !== call.id)) {
      call = { index: started++, id: id ?? `call_${started}`, name: tc.function?.name ?? "", args: "" }
      byApiIndex.set(apiIndex, call)
      calls.push(call)
      const events: Array<ChatEvent> = [{ type: "tool_call_start", index: call.index, id: call.id, name: call.name }]
      return [...events, ...argsDelta(call, tc)]
    }
    if (call.name === "" && typeof tc.function?.name === "string") call.name = tc.function.name
    return argsDelta(call, tc)
  }

  const argsDelta = (call: OpenCall, tc: ToolCallDelta): Array<ChatEvent> => {
    const piece = tc.function?.arguments ?? ""
    if (piece === "") return []
    call.args += piece
    return [{ type: "tool_call_delta", index: call.index, argumentsDelta: piece }]
  }

  const endCalls = (): Array<ChatEvent> => {
    const events = calls.map((c): ChatEvent => ({
      type: "tool_call_end",
      index: c.index,
      id: c.id,
      name: c.name,
      input: parseToolArguments(c.args)
    }))
    calls.length = 0
    byApiIndex.clear()
    return events
  }

  const push = (chunk: Chunk): ReadonlyArray<ChatEvent> => {
    const events: Array<ChatEvent> = []
    // We ask for one choice; a server that sends more gets only the first read.
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue
      const delta = choice.delta
      if (typeof delta?.content === "string" && delta.content !== "") events.push({ type: "text_delta", text: delta.content })
      if (typeof delta?.refusal === "string" && delta.refusal !== "") {
        refused = true
        events.push({ type: "text_delta", text: delta.refusal })
      }
      for (const tc of delta?.tool_calls ?? []) events.push(...toolDelta(tc))
      if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
        finish = choice.finish_reason
        events.push(...endCalls())
      }
    }
    if (chunk.usage !== undefined && chunk.usage !== null) events.push({ type: "usage", usage: usageOf(chunk.usage) })
    return events
  }

  /** Without a finish_reason the response is cut short, whatever the transport said. */
  const end = (): Result.Result<ReadonlyArray<ChatEvent>, string> =>
    finish === undefined
      ? Result.fail("the stream ended before the response was complete (no finish_reason)")
      : Result.succeed([{ type: "stop", reason: stopReason(finish, started > 0, refused) }])

  return { push, end }
}

/** The whole mapping, for `providerStream`'s `events`. */
export const chunkEvents = (provider: string) => (chunks: Stream.Stream<unknown, ProviderError>): Stream.Stream<ChatEvent, ProviderError> =>
  Stream.suspend(() => {
    const acc = accumulator()
    return chunks.pipe(
      Stream.mapEffect((raw) => {
        const decoded = decodeChunk(raw)
        return Result.isSuccess(decoded)
          ? Effect.succeed(acc.push(decoded.success))
          : Effect.fail(new ProviderServerError({ provider, status: 502, detail: `unreadable stream chunk: ${decoded.failure.message}`.slice(0, 500) }))
      }),
      Stream.flattenIterable,
      Stream.concat(Stream.suspend(() => {
        const ended = acc.end()
        return Result.isSuccess(ended)
          ? Stream.fromIterable(ended.success)
          : Stream.fail(new ProviderNetworkError({ provider, timeout: false, detail: ended.failure }))
      }))
    )
  })
