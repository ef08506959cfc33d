/**
 * Failed turns over the real HTTP channel: the provider (the real OpenAiChat client against the fake
 * LLM server) rate limits, overflows, fails or never answers; a stand-in Runtime reports that as
 * the real one does (a notice, then `done` "unavailable") with `errorOf` of the failure, and the
 * client sees the matching status and OpenAI error body — also when streaming, unless the answer had
 * started: then the stream ends with an error frame.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { TurnDeadline } from "../../../../src/domain/runtime/errors.ts"
import { errorOf } from "../../../../src/domain/runtime/failure.ts"
import { sessionKeyOf, type TurnEvent } from "../../../../src/domain/runtime/types.ts"
import type { ProviderError } from "../../../../src/domain/model/errors.ts"
import { emptyUsage } from "../../../../src/domain/model/types.ts"
import * as HttpChannel from "../../../../src/layers/channels/HttpChannel.ts"
import * as OpenAiChat from "../../../../src/layers/providers/OpenAiChat.ts"
import { HttpAddress } from "../../../../src/services/HttpAddress.ts"
import { Runtime } from "../../../../src/services/Runtime.ts"
import { fakeAgents, fakeConfig } from "../../../support/httpChannelFakes.ts"
import { sqliteTemp } from "../../../support/db.ts"
import { type FakeLlm, startFakeLlm } from "../../../support/fakeLlm/server.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(() => fake.close())
beforeEach(() => fake.reset())

/**
 * "deadline" as the message stands for a turn stopped by its deadline; anything else asks the model,
 * whose text is shown as it streams (as the real runtime does), and a failure ends the turn with a
 * notice and `done` "unavailable" carrying `errorOf` the failure.
 */
const turn = (message: string): Stream.Stream<TurnEvent> => {
  const client = OpenAiChat.make(
    {
      id: "fake",
      type: "openai",
      baseUrl: fake.openAiUrl,
      apiKey: "sk-test",
      models: [],
      defaultModel: "fake-large",
      headers: {},
      enabled: true,
      firstByteTimeoutSeconds: 0.2
    },
    { timeoutMs: 5_000, maxRetries: 0, baseBackoffMs: 1, maxBackoffMs: 10 }
  )
  const done = (stopReason: "end_turn" | "unavailable", error?: ReturnType<typeof errorOf>): TurnEvent => ({
    type: "done",
    stopReason,
    usage: emptyUsage,
    modelCalls: 1,
    toolCalls: 0,
    ...(error === undefined ? {} : { error })
  })
  const answer: Stream.Stream<TurnEvent, TurnDeadline | ProviderError> = message === "deadline"
    ? Stream.fail(new TurnDeadline({ seconds: 600 }))
    : client.stream({ model: "fake-large", messages: [{ role: "user", content: message }] }).pipe(
      Stream.flatMap((e) => (e.type === "text_delta" ? Stream.make<Array<TurnEvent>>({ type: "text", text: e.text }) : Stream.empty))
    )
  return answer.pipe(
    Stream.concat(Stream.make(done("end_turn"))),
    Stream.catch((e) => Stream.make<Array<TurnEvent>>({ type: "notice", text: `The turn failed: ${e.message}` }, done("unavailable", errorOf(e))))
  )
}

const runtime = Layer.succeed(Runtime, Runtime.of({
  resolve: (target) =>
    Effect.succeed({
      userId: target.userId ?? target.externalUserId,
      userName: "Alice",
      agentId: target.agentId ?? "default",
      platform: target.platform,
      chatId: target.chatId ?? "dm",
      isGroup: false,
      context: target.chatId ?? "dm",
      sessionKey: sessionKeyOf(target.agentId ?? "default", target.platform, target.userId ?? "", target.chatId ?? "dm"),
      model: ""
    }),
  send: (_chat, message) => turn(typeof message === "string" ? message : ""),
  abort: () => Effect.succeed(false)
}))

const ChannelLayer = HttpChannel.layer({ port: 0 }).pipe(Layer.provide(Layer.mergeAll(runtime, fakeConfig, fakeAgents, sqliteTemp)))

const post = (content: string, stream = false) =>
  Effect.gen(function*() {
    const { url } = yield* HttpAddress
    return yield* Effect.promise(async () => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer tok-alice", "content-type": "application/json" },
        body: JSON.stringify({ model: "default", messages: [{ role: "user", content }], stream })
      })
      return { status: res.status, headers: res.headers, text: await res.text() }
    })
  })

const errorBody = (text: string) => (JSON.parse(text) as { error: { message: string; type: string; param: string | null; code: string | null } }).error

describe("errorOf", () => {
  it("maps anything unknown to unavailable", () => {
    assert.deepStrictEqual(errorOf(new Error("boom")), { kind: "unavailable" })
    assert.deepStrictEqual(errorOf(undefined), { kind: "unavailable" })
    assert.deepStrictEqual(errorOf(new TurnDeadline({ seconds: 5 })), { kind: "timeout" })
  })
})

layer(ChannelLayer, { excludeTestServices: true })("failed turns over the HTTP channel", (it) => {
  it.effect("a provider 429 with retry-after → 429, Retry-After and an OpenAI rate-limit error", () =>
    Effect.gen(function*() {
      fake.script({ kind: "error", status: 429, retryAfter: 7, message: "slow down" })
      const res = yield* post("hi")
      assert.strictEqual(res.status, 429)
      assert.strictEqual(res.headers.get("retry-after"), "7")
      const e = errorBody(res.text)
      assert.strictEqual(e.code, "rate_limit_exceeded")
      assert.include(e.message, "rate limiting")
    }))

  it.effect("a provider that never answers → 504 timeout; the turn deadline too", () =>
    Effect.gen(function*() {
      fake.script({ kind: "hang" })
      const hung = yield* post("hi")
      assert.strictEqual(hung.status, 504)
      assert.strictEqual(errorBody(hung.text).code, "timeout")
      const late = yield* post("deadline")
      assert.strictEqual(late.status, 504)
      assert.include(errorBody(late.text).message, "600 s limit")
    }))

  it.effect("a context overflow → 400 context_length_exceeded", () =>
    Effect.gen(function*() {
      fake.script({ kind: "error", status: 400, contextOverflow: true })
      const res = yield* post("hi")
      assert.strictEqual(res.status, 400)
      assert.deepStrictEqual([errorBody(res.text).code, errorBody(res.text).type], ["context_length_exceeded", "invalid_request_error"])
    }))

  it.effect("a provider down → 503; a provider refusing anna's key → 502", () =>
    Effect.gen(function*() {
      fake.script({ kind: "error", status: 500, message: "internal" })
      const down = yield* post("hi")
      assert.strictEqual(down.status, 503)
      assert.strictEqual(errorBody(down.text).code, "service_unavailable")
      fake.script({ kind: "error", status: 401, message: "bad key" })
      const auth = yield* post("hi")
      assert.strictEqual(auth.status, 502)
    }))

  it.effect("a successful turn is still a 200 completion", () =>
    Effect.gen(function*() {
      const res = yield* post("hi")
      assert.strictEqual(res.status, 200)
      assert.include(res.text, '"content":"ok"')
    }))

  it.effect("streaming, failing before any output: the real status, and the SDK throws a RateLimitError", () =>
    Effect.gen(function*() {
      fake.script({ kind: "error", status: 429, retryAfter: 3 })
      const raw = yield* post("hi", true)
      assert.deepStrictEqual([raw.status, raw.headers.get("retry-after")], [429, "3"])
      assert.strictEqual(errorBody(raw.text).code, "rate_limit_exceeded")

      fake.script({ kind: "error", status: 429, retryAfter: 3 })
      const { url } = yield* HttpAddress
      const client = new OpenAI({ apiKey: "tok-alice", baseURL: `${url}/v1`, maxRetries: 0 })
      const thrown = yield* Effect.promise(async () => {
        try {
          const stream = await client.chat.completions.create({ model: "default", messages: [{ role: "user", content: "hi" }], stream: true })
          for await (const _ of stream) void _
          return Option.none<unknown>()
        } catch (e) {
          return Option.some<unknown>(e)
        }
      })
      assert.isTrue(Option.isSome(thrown) && thrown.value instanceof OpenAI.RateLimitError)
    }))

  it.effect("streaming, failing after some output: the text so far, then an OpenAI error frame and [DONE]", () =>
    Effect.gen(function*() {
      // The provider streams a few events of its answer, then the connection drops.
      fake.script({ kind: "disconnect", parts: [{ type: "text", text: "Hello there, how are you today?" }], afterEvents: 3 })
      const raw = yield* post("hi", true)
      assert.strictEqual(raw.status, 200)
      const frames = raw.text.split("\n\n").filter((f) => f !== "")
      assert.strictEqual(frames.at(-1), "data: [DONE]")
      assert.strictEqual(errorBody((frames.at(-2) ?? "").slice("data: ".length)).code, "service_unavailable")
      assert.include(frames.slice(0, -2).join(""), '"content":"Hello')
      assert.notInclude(raw.text, '"finish_reason":"stop"')
    }))
})
