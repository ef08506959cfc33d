/**
 * Failed turns end to end: the real Runtime (SQLite, memory, provider clients) behind the real HTTP
 * channel, the provider being the fake LLM server. What the provider does wrong reaches the client as
 * the matching status and OpenAI error body (or, in a stream that had started, an error frame), never
 * as a 200 answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { ConfigStore } from "../../../../src/services/ConfigStore.ts"
import { HttpAddress } from "../../../../src/services/HttpAddress.ts"
import { ProviderStore } from "../../../../src/services/ProviderStore.ts"
import { type FakeLlm, startFakeLlm } from "../../../support/fakeLlm/server.ts"
import { configureAgent, httpStack, tempHome } from "../../../support/runtimeStack.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(() => fake.close())
beforeEach(() => fake.reset())

interface Answer {
  readonly status: number
  readonly retryAfter: string | null
  readonly text: string
}

const errorOf = (text: string) => (JSON.parse(text) as { error: { message: string; type: string; param: string | null; code: string | null } }).error

/** A real stack with agent `a1` on the fake provider, and a way to POST a chat completion as its user. */
const withStack = <A, E>(body: (post: (content: string, stream?: boolean) => Effect.Effect<Answer>) => Effect.Effect<A, E, ProviderStore>) =>
  Effect.scoped(Effect.gen(function*() {
    const home = yield* tempHome
    return yield* Effect.gen(function*() {
      yield* configureAgent(fake, "a1", { tools: [] })
      const config = yield* ConfigStore
      yield* config.createUser("alice", "Alice")
      const token = yield* config.issueToken("alice", "test")
      const { url } = yield* HttpAddress
      const post = (content: string, stream = false) =>
        Effect.promise(async (): Promise<Answer> => {
          const res = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "a1", messages: [{ role: "user", content }], stream })
          })
          return { status: res.status, retryAfter: res.headers.get("retry-after"), text: await res.text() }
        })
      return yield* body(post)
    }).pipe(Effect.provide(httpStack(home)))
  }))

describe("failed turns through the real runtime and HTTP channel", () => {
  it.live("provider 429 → 429 + Retry-After; context overflow → 400; provider down → 503; streaming too, or an error frame once started", () =>
    withStack((post) =>
      Effect.gen(function*() {
        // Longer than the transport's largest backoff, so it is not retried but handed to the client.
        fake.script({ kind: "error", status: 429, retryAfter: 7, message: "slow down" })
        const limited = yield* post("hi")
        assert.deepStrictEqual([limited.status, limited.retryAfter, errorOf(limited.text).code], [429, "7", "rate_limit_exceeded"])
        assert.include(errorOf(limited.text).message, "rate limiting")

        fake.script({ kind: "error", status: 400, contextOverflow: true })
        const overflow = yield* post("hi")
        assert.deepStrictEqual([overflow.status, errorOf(overflow.text).code], [400, "context_length_exceeded"])

        fake.respondWith(() => ({ kind: "error", status: 500, message: "internal" }))
        const down = yield* post("hi")
        assert.deepStrictEqual([down.status, errorOf(down.text).code], [503, "service_unavailable"])

        fake.reset()
        // Streaming: a failure before any output still gets its status; after some, an error frame.
        fake.script({ kind: "error", status: 429, retryAfter: 7 })
        const early = yield* post("hi", true)
        assert.deepStrictEqual([early.status, early.retryAfter, errorOf(early.text).code], [429, "7", "rate_limit_exceeded"])
        fake.script({ kind: "disconnect", parts: [{ type: "text", text: "Hello there, how are you today?" }], afterEvents: 3 })
        const late = yield* post("hi", true)
        assert.strictEqual(late.status, 200)
        const frames = late.text.split("\n\n").filter((f) => f !== "")
        assert.strictEqual(frames.at(-1), "data: [DONE]")
        assert.strictEqual(errorOf((frames.at(-2) ?? "").slice("data: ".length)).code, "service_unavailable")
        assert.include(frames.slice(0, -2).join(""), '"content":"Hello')

        // And a healthy provider still answers 200.
        const ok = yield* post("hi")
        assert.strictEqual(ok.status, 200)
        assert.include(ok.text, '"content":"ok"')
      })
    ), 60_000)

  it.live("a provider that never answers → 504 after its first-byte limit, each attempt cut", () =>
    withStack((post) =>
      Effect.gen(function*() {
        yield* (yield* ProviderStore).setFirstByteTimeout("local", 0.2)
        fake.respondWith(() => ({ kind: "hang" }))
        const before = fake.requests.length
        const hung = yield* post("hi")
        assert.deepStrictEqual([hung.status, errorOf(hung.text).code], [504, "timeout"])
        assert.include(errorOf(hung.text).message, "first-byte")
        // One attempt and the test transport's 3 retries, each cut at its limit.
        assert.strictEqual(fake.requests.slice(before).filter((r) => r.method === "POST").length, 4)
      })
    ), 60_000)

  it.live("a user message larger than memory keeps → 413 before any turn starts", () =>
    withStack((post) =>
      Effect.gen(function*() {
        const before = fake.requests.length
        const big = yield* post("x".repeat(9 * 1024 * 1024))
        assert.deepStrictEqual([big.status, errorOf(big.text).code, errorOf(big.text).param], [413, "message_too_large", "messages"])
        assert.strictEqual(fake.requests.length, before, "the provider was not called")
      })
    ), 60_000)
})
