/** The HTTP channel's pure parts: request → user message / session, turn events → answer text. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import { Stream as OpenAiStream } from "openai/streaming"
import type { TurnEvent } from "../../../../src/domain/runtime/types.ts"
import { type ChatCompletionRequest, newestUserMessage, parseChatRequest, sessionName } from "../../../../src/layers/channels/http/openaiRequest.ts"
import {
  collectTurn,
  completionBody,
  errorBody,
  errorNotices,
  SHUTDOWN,
  sseFrames,
  turnError,
  type WireEvent
} from "../../../../src/layers/channels/http/openaiWire.ts"

const request = (messages: ChatCompletionRequest["messages"], user?: string): ChatCompletionRequest => ({
  model: "default",
  messages,
  ...(user === undefined ? {} : { user })
})

const decodeChunk = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Struct({
  choices: Schema.Array(Schema.Struct({ delta: Schema.Struct({ content: Schema.optional(Schema.String) }) }))
})))

const done: TurnEvent = {
  type: "done",
  stopReason: "end_turn",
  usage: { inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 },
  modelCalls: 1,
  toolCalls: 0
}

describe("openaiRequest", () => {
  it.effect("parses a request, ignoring fields anna does not read; rejects bad JSON and types", () =>
    Effect.gen(function*() {
      const ok = yield* parseChatRequest(JSON.stringify({ model: "m", messages: [], temperature: 0.2, tools: [], stream: null }))
      assert.strictEqual(ok.model, "m")
      const bad = yield* Effect.flip(parseChatRequest("[1,"))
      assert.strictEqual(bad.status, 400)
      const wrong = yield* Effect.flip(parseChatRequest(JSON.stringify({ model: "m", messages: {} })))
      assert.match(wrong.reason, /^Invalid request body: .*messages/)
      assert.notInclude(wrong.reason, "\n")
    }))

  it.effect("takes the newest user message; strings stay strings, parts become blocks", () =>
    Effect.gen(function*() {
      const text = yield* newestUserMessage(request([{ role: "user", content: "a" }, { role: "tool", content: "t" }, { role: "user", content: "b" }]))
      assert.strictEqual(text, "b")
      const blocks = yield* newestUserMessage(request([{
        role: "user",
        content: [{ type: "text", text: "" }, { type: "text", text: "look" }, { type: "image_url", image_url: { url: "data:image/jpeg;base64,QUJD\nREVG" } }]
      }]))
      assert.deepStrictEqual(blocks, [
        { type: "text", text: "look" },
        { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "QUJDREVG" } }
      ])
    }))

  it.effect("refuses empty messages, unsupported parts and non-image data URIs", () =>
    Effect.gen(function*() {
      for (
        const content of [
          "  ",
          [],
          [{ type: "input_audio", input_audio: { data: "", format: "wav" } }],
          [{ type: "image_url", image_url: { url: "data:text/plain;base64,QUJD" } }],
          null
        ]
      ) {
        const e = yield* Effect.flip(newestUserMessage(request([{ role: "user", content }])))
        assert.strictEqual(e.status, 400)
        assert.strictEqual(e.param, "messages")
      }
    }))

  it.effect("session: header, else user, else default; names are checked", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* sessionName("h", request([], "u")), "h")
      assert.strictEqual(yield* sessionName(undefined, request([], "u")), "u")
      assert.strictEqual(yield* sessionName(undefined, request([], "  ")), "default")
      assert.strictEqual(yield* sessionName(undefined, request([])), "default")
      assert.strictEqual(yield* sessionName(undefined, request([], "user@example.com")), "user@example.com")
      const e = yield* Effect.flip(sessionName(undefined, request([], "x".repeat(129))))
      assert.strictEqual(e.param, "user")
      const control = yield* Effect.flip(sessionName("a\u0000b", request([])))
      assert.strictEqual(control.status, 400)
    }))
})

describe("openaiWire", () => {
  const meta = { id: "chatcmpl-1", created: 1, model: "default" }

  it.effect("notices are lines of their own in brackets; tool events are not shown", () =>
    Effect.gen(function*() {
      const events: Array<TurnEvent> = [
        { type: "text", text: "Let me check." },
        { type: "tool_start", id: "t1", name: "bash", input: {} },
        { type: "tool_end", id: "t1", name: "bash", output: "ok", isError: false },
        { type: "notice", text: "compacted" },
        { type: "notice", text: "again" },
        { type: "text", text: "Done.\n" },
        { type: "notice", text: "last" },
        done
      ]
      const collected = yield* collectTurn(Stream.fromIterable(events))
      assert.strictEqual(collected.content, "Let me check.\n[compacted]\n[again]\nDone.\n[last]")
      const body = completionBody(meta, collected)
      assert.strictEqual(body.choices[0]?.finish_reason, "stop")
      assert.deepStrictEqual(body.usage, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, prompt_tokens_details: { cached_tokens: 0 } })
      const frames = yield* Stream.runCollect(sseFrames(meta, false)(Stream.fromIterable(events)))
      const deltas = frames.slice(1, -2).map((f) => decodeChunk(f.slice("data: ".length).trim()).choices[0]?.delta.content)
      assert.strictEqual(deltas.join(""), collected.content)
      assert.strictEqual(frames.at(-1), "data: [DONE]\n\n")
    }))

  it.effect("status notices (compaction ran) stay out of the content: anna.status, SSE comments, not in errors", () =>
    Effect.gen(function*() {
      const compacted = "compacted the conversation: 2741 → 1917 tokens"
      const events: Array<TurnEvent> = [
        { type: "notice", text: compacted, status: true },
        { type: "text", text: "The staging database is on port 6543." },
        { type: "notice", text: "stopped after 2 model calls", status: false },
        done
      ]
      const collected = yield* collectTurn(Stream.fromIterable(events))
      assert.strictEqual(collected.content, "The staging database is on port 6543.\n[stopped after 2 model calls]")
      const body = completionBody(meta, collected)
      assert.strictEqual(body.choices[0]?.message.content, collected.content)
      assert.deepStrictEqual(body.anna, { status: [compacted] })
      // No status, no field: a plain OpenAI completion.
      const plainBody = completionBody(meta, yield* collectTurn(Stream.fromIterable([{ type: "text", text: "hi" }, done] as const)))
      assert.notProperty(plainBody, "anna")

      // Streamed: a comment line, which the OpenAI SDK's SSE parser skips.
      const frames = yield* Stream.runCollect(sseFrames(meta, false)(Stream.fromIterable(events)))
      assert.include(frames, `: anna-status ${compacted}\n\n`)
      const multiline = yield* Stream.runCollect(
        sseFrames(meta, false)(Stream.make({ type: "notice", text: "a\nb\r\nc", status: true }, done))
      )
      assert.include(multiline, ": anna-status a b c\n\n")
      const response = new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } })
      const chunks: Array<ChatCompletionChunk> = yield* Effect.promise(async () => {
        const out: Array<ChatCompletionChunk> = []
        for await (const c of OpenAiStream.fromSSEResponse<ChatCompletionChunk>(response, new AbortController())) out.push(c)
        return out
      })
      assert.strictEqual(chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), collected.content)

      // A failed turn's error message is made of the other notices only.
      const failed: Array<TurnEvent> = [
        { type: "notice", text: compacted, status: true },
        { type: "notice", text: "The turn failed: upstream 503" },
        { ...done, stopReason: "unavailable" }
      ]
      assert.deepStrictEqual(errorNotices(failed), ["The turn failed: upstream 503"])
      const error = turnError(yield* collectTurn(Stream.fromIterable(failed)))
      assert.strictEqual(error?.reason, "The turn failed: upstream 503")
    }))

  it.effect("a turn cut by the gateway's shutdown is a 503 error, or an error frame after what was sent; after done it changes nothing", () =>
    Effect.gen(function*() {
      const shutdown = { error: { message: "the gateway is shutting down (or restarting the HTTP channel); the answer was cut off before the turn ended", type: "server_error", param: null, code: "service_unavailable" } }
      const cut: Array<WireEvent> = [{ type: "text", text: "Half an ans" }, SHUTDOWN, done]
      const collected = yield* collectTurn(Stream.fromIterable(cut))
      const error = turnError(collected)
      assert.strictEqual(error?.status, 503)
      assert.deepStrictEqual(error === undefined ? undefined : errorBody(error), shutdown)
      const frames = yield* Stream.runCollect(sseFrames(meta, true)(Stream.fromIterable(cut)))
      assert.include(frames[1] ?? "", "Half an ans")
      assert.deepStrictEqual(frames.slice(2), [`data: ${JSON.stringify(shutdown)}\n\n`, "data: [DONE]\n\n"])
      // done first: the turn was over, the answer is the completion
      const finished: Array<WireEvent> = [{ type: "text", text: "All of it." }, done, SHUTDOWN]
      assert.isUndefined(turnError(yield* collectTurn(Stream.fromIterable(finished))))
      const normal = yield* Stream.runCollect(sseFrames(meta, false)(Stream.fromIterable(finished)))
      assert.include(normal.at(-2) ?? "", "\"finish_reason\":\"stop\"")
    }))

  it.effect("a turn that ends without done still finishes the answer", () =>
    Effect.gen(function*() {
      const frames = yield* Stream.runCollect(sseFrames(meta, true)(Stream.make({ type: "text", text: "hi" })))
      assert.strictEqual(frames.length, 5)
      assert.include(frames[2] ?? "", "\"finish_reason\":\"stop\"")
      assert.include(frames[3] ?? "", "\"total_tokens\":0")
    }))
})
