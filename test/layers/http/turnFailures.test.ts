/**
 * Failed turns over the real HTTP channel: the provider (the real OpenAiChat client against the fake
 * LLM server) rate limits, overflows, fails or never answers; a stand-in Runtime reports that as
 * the real one does (a notice, then `done` "unavailable") with `errorOf` of the failure, and the
 * client sees the matching status and OpenAI error body — or, streaming, an error frame.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { TurnDeadline } from "../../../src/domain/runtime/errors.ts"
import { errorOf } from "../../../src/domain/runtime/failure.ts"
import { sessionKeyOf, type TurnEvent } from "../../../src/domain/runtime/types.ts"
import { emptyUsage } from "../../../src/domain/model/types.ts"
import * as HttpChannel from "../../../src/layers/HttpChannel.ts"
import * as OpenAiChat from "../../../src/layers/OpenAiChat.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { fakeAgents, fakeConfig } from "../../support/httpChannelFakes.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(() => fake.close())
beforeEach(() => fake.reset())

/** "deadline" as the message stands for a turn stopped by its deadline; anything else asks the model. */
const turn = (message: string): Stream.Stream<TurnEvent> =>
  Stream.unwrap(Effect.gen(function*() {
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
    const outcome = message === "deadline"
      ? yield* Effect.result(Effect.fail(new TurnDeadline({ seconds: 600 })))
      : yield* Effect.result(Stream.runCollect(client.stream({ model: "fake-large", messages: [{ role: "user", content: message }] })))
    const done = (stopReason: "end_turn" | "unavailable", error?: ReturnType<typeof errorOf>): TurnEvent => ({
      type: "done",
      stopReason,
      usage: emptyUsage,
      modelCalls: 1,
      toolCalls: 0,
      ...(error === undefined ? {} : { error })
    })
    if (outcome._tag === "Success") {
      const text = outcome.success.flatMap((e) => (e.type === "text_delta" ? [e.text] : [])).join("")
      return Stream.fromIterable<TurnEvent>([{ type: "text", text }, done("end_turn")])
    }
    // What Runtime.ts emits for a failed turn, plus the structured error.
    return Stream.fromIterable<TurnEvent>([
      { type: "notice", text: `The turn failed: ${outcome.failure.message}` },
      done("unavailable", errorOf(outcome.failure))
    ])
  }))

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

const ChannelLayer = HttpChannel.layer({ port: 0 }).pipe(Layer.provide(Layer.mergeAll(runtime, fakeConfig, fakeAgents)))

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

  it.effect("streaming: the stream ends with an OpenAI error frame and the SDK throws it", () =>
    Effect.gen(function*() {
      fake.script({ kind: "error", status: 429, retryAfter: 3 })
      const raw = yield* post("hi", true)
      assert.strictEqual(raw.status, 200)
      const frames = raw.text.split("\n\n").filter((f) => f !== "")
      assert.strictEqual(frames.at(-1), "data: [DONE]")
      const last = frames.at(-2) ?? ""
      assert.strictEqual(errorBody(last.slice("data: ".length)).code, "rate_limit_exceeded")
      assert.notInclude(raw.text, '"finish_reason":"stop"')

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
      assert.isTrue(Option.isSome(thrown) && thrown.value instanceof OpenAI.APIError)
    }))
})
