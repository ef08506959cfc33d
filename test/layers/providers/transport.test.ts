import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { ProviderServerError } from "../../../src/domain/model/errors.ts"
import { classify, retryAfterMs, withRetries } from "../../../src/layers/providers/transport.ts"

describe("provider transport", () => {
  it("reads retry-after in milliseconds, seconds and as an HTTP date", () => {
    assert.strictEqual(retryAfterMs({ "retry-after-ms": "250" }), 250)
    assert.strictEqual(retryAfterMs({ "retry-after": "3" }), 3000)
    assert.strictEqual(retryAfterMs({ "retry-after": new Date(10_000).toUTCString() }, 4_000), 6000)
    assert.strictEqual(retryAfterMs(new Headers({ "retry-after": "1.5" })), 1500)
    assert.isUndefined(retryAfterMs({ "retry-after": "soon" }))
    assert.isUndefined(retryAfterMs(undefined))
  })

  it("classifies statuses and overflow wordings", () => {
    const tag = (f: Parameters<typeof classify>[1]) => classify("p", f)._tag
    assert.strictEqual(tag({ status: 401, detail: "" }), "ProviderAuthError")
    assert.strictEqual(tag({ status: 429, detail: "", headers: { "retry-after": "2" } }), "ProviderRateLimited")
    assert.strictEqual(tag({ status: 400, detail: "prompt is too long: 250000 tokens > 200000 maximum" }), "ContextOverflow")
    assert.strictEqual(tag({ status: 400, detail: "bad", code: "context_length_exceeded" }), "ContextOverflow")
    assert.strictEqual(tag({ status: 413, detail: "request too large" }), "ContextOverflow")
    assert.strictEqual(tag({ status: 400, detail: "temperature must be ≤ 2" }), "InvalidRequest")
    assert.strictEqual(tag({ status: 529, detail: "overloaded" }), "ProviderServerError")
    assert.strictEqual(tag({ status: 502, detail: "" }), "ProviderServerError")
    assert.strictEqual(tag({ detail: "ECONNREFUSED" }), "ProviderNetworkError")
    const timeout = classify("p", { detail: "timed out", timeout: true })
    assert.isTrue(timeout._tag === "ProviderNetworkError" && timeout.timeout)
  })

  it.effect("backs off exponentially on the Effect clock and gives up after maxRetries", () =>
    Effect.gen(function*() {
      let calls = 0
      const failing = Effect.suspend(() => {
        calls++
        return Effect.fail(new ProviderServerError({ provider: "p", status: 500, detail: "x" }))
      })
      const fiber = yield* Effect.forkChild(
        Effect.flip(withRetries({ timeoutMs: 1, maxRetries: 3, baseBackoffMs: 1000, maxBackoffMs: 60_000 }, failing))
      )
      yield* TestClock.adjust(400)
      assert.strictEqual(calls, 1, "the first retry waits at least 500 ms (1 s ± 50 %)")
      yield* TestClock.adjust(1_200)
      assert.strictEqual(calls, 2)
      yield* TestClock.adjust(10_000)
      const e = yield* Fiber.join(fiber)
      assert.strictEqual(calls, 4)
      assert.strictEqual(e._tag, "ProviderServerError")
    }))
})
