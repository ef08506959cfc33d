import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Logger, Random, References, Result } from "effect"
import { TestClock } from "effect/testing"
import {
  ProviderAuthError,
  type ProviderError,
  ProviderNetworkError,
  ProviderRateLimited,
  ProviderServerError
} from "../../../src/domain/model/errors.ts"
import type { TransportOptions } from "../../../src/domain/model/types.ts"
import { classify, retrying, retryAfterMs, withRetries } from "../../../src/layers/providers/transport.ts"

/** A Random whose every draw is `r`: jitter factor 0.5 + r. */
const fixedRandom = (r: number) => Effect.provideService(Random.Random, { nextDoubleUnsafe: () => r, nextIntUnsafe: () => 0 })

/**
 * Runs `retrying` on the TestClock with attempts that fail with `failure(n)` (n from 1) or succeed
 * when it gives undefined; returns when each attempt started (ms after the first), the budget each
 * was told, the debug log lines and the outcome.
 */
const drive = (
  transport: TransportOptions,
  failure: (n: number) => ProviderError | undefined,
  random: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = fixedRandom(0.5)
) =>
  Effect.gen(function*() {
    const starts: Array<number> = []
    const given: Array<number> = []
    const logs: Array<string> = []
    const origin = yield* Clock.currentTimeMillis
    const attempt = (remainingMs: number) =>
      Effect.gen(function*() {
        starts.push((yield* Clock.currentTimeMillis) - origin)
        given.push(remainingMs)
        const e = failure(starts.length)
        if (e !== undefined) return yield* Effect.fail(e)
        return "ok"
      })
    const capture = Logger.make((o) => {
      if (o.logLevel === "Debug") logs.push(Array.isArray(o.message) ? o.message.join(" ") : String(o.message))
    })
    const fiber = yield* Effect.forkChild(
      Effect.result(retrying(transport, attempt)).pipe(
        random,
        Effect.provide(Logger.layer([capture])),
        Effect.provideService(References.MinimumLogLevel, "Debug")
      )
    )
    yield* TestClock.adjust(1_000_000)
    const result = yield* Fiber.join(fiber)
    return { starts, given, logs, result }
  })

const transport = (overrides: Partial<TransportOptions> = {}): TransportOptions => ({
  timeoutMs: 1,
  maxRetries: 3,
  baseBackoffMs: 1_000,
  maxBackoffMs: 60_000,
  retryBudgetMs: 600_000,
  ...overrides
})
const server = new ProviderServerError({ provider: "p", status: 500, detail: "x" })
const limited = (retryAfterMs?: number) =>
  new ProviderRateLimited(retryAfterMs === undefined ? { provider: "p", detail: "slow" } : { provider: "p", detail: "slow", retryAfterMs })

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
      // The lowest jitter draw (×0.5): waits of 500, 1,000 and 2,000 ms. A real Random here made the
      // test depend on the draw (two low draws put the second retry before a fixed check time).
      const fiber = yield* Effect.forkChild(
        Effect.flip(withRetries({ timeoutMs: 1, maxRetries: 3, baseBackoffMs: 1000, maxBackoffMs: 60_000 }, failing)).pipe(
          fixedRandom(0)
        )
      )
      yield* TestClock.adjust(400)
      assert.strictEqual(calls, 1, "the first retry waits at least 500 ms (1 s ± 50 %)")
      yield* TestClock.adjust(600)
      assert.strictEqual(calls, 2, "the second waits at least 1,000 ms more")
      yield* TestClock.adjust(10_000)
      const e = yield* Fiber.join(fiber)
      assert.strictEqual(calls, 4)
      assert.strictEqual(e._tag, "ProviderServerError")
    }))

  it.effect("waits base × 2^n (factor 1 with a middle draw), and succeeds on the first attempt that does", () =>
    Effect.gen(function*() {
      const r = yield* drive(transport(), (n) => (n <= 3 ? server : undefined))
      assert.deepStrictEqual(r.starts, [0, 1_000, 3_000, 7_000])
      assert.isTrue(Result.isSuccess(r.result))
      assert.deepStrictEqual(r.logs, [
        "provider p: ProviderServerError, retry 1 in 1000 ms",
        "provider p: ProviderServerError, retry 2 in 2000 ms",
        "provider p: ProviderServerError, retry 3 in 4000 ms"
      ])
    }))

  it.effect("jitter stays within ±50 % of the backoff, and the cap applies after it", () =>
    Effect.gen(function*() {
      const low = yield* drive(transport({ maxRetries: 2 }), () => server, fixedRandom(0))
      assert.deepStrictEqual(low.starts, [0, 500, 1_500])
      const high = yield* drive(transport({ maxRetries: 2 }), () => server, fixedRandom(0.999))
      assert.deepStrictEqual(high.starts.map(Math.round), [0, 1_499, 4_497])
      const capped = yield* drive(transport({ maxRetries: 3, maxBackoffMs: 2_500 }), () => server, fixedRandom(0.999))
      assert.deepStrictEqual(capped.starts.map(Math.round), [0, 1_499, 3_999, 6_499])
      // Seeded: every wait of a long run lies in [0.5, 1.5) × base × 2^n.
      const seeded = yield* drive(transport({ maxRetries: 8, baseBackoffMs: 10 }), () => server, Random.withSeed("jitter"))
      const waits = seeded.starts.slice(1).map((t, i) => t - (seeded.starts[i] ?? 0))
      assert.strictEqual(waits.length, 8)
      waits.forEach((w, n) => {
        assert.isAtLeast(w, 0.5 * 10 * 2 ** n)
        assert.isBelow(w, 1.5 * 10 * 2 ** n)
      })
      assert.isAbove(new Set(waits.map((w, n) => w / 2 ** n)).size, 1, "the draws differ")
    }))

  it.effect("honours the provider's retry-after instead of the backoff", () =>
    Effect.gen(function*() {
      const r = yield* drive(transport(), (n) => (n === 1 ? limited(7_000) : n === 2 ? limited(0) : undefined))
      assert.deepStrictEqual(r.starts, [0, 7_000, 7_000])
      assert.isTrue(Result.isSuccess(r.result))
      // Without a retry-after, a rate limit backs off like any retryable failure.
      const plain = yield* drive(transport(), (n) => (n === 1 ? limited() : undefined))
      assert.deepStrictEqual(plain.starts, [0, 1_000])
    }))

  it.effect("gives up at once when the retry-after is longer than maxBackoffMs", () =>
    Effect.gen(function*() {
      const r = yield* drive(transport({ maxBackoffMs: 5_000 }), () => limited(5_001))
      assert.deepStrictEqual(r.starts, [0])
      assert.isTrue(Result.isFailure(r.result) && r.result.failure._tag === "ProviderRateLimited")
      assert.deepStrictEqual(r.logs, [])
      // Exactly maxBackoffMs is still waited for.
      const edge = yield* drive(transport({ maxBackoffMs: 5_000 }), (n) => (n === 1 ? limited(5_000) : undefined))
      assert.deepStrictEqual(edge.starts, [0, 5_000])
    }))

  // Time spent inside attempts counts against the budget too: see firstByte.test.ts.
  it.effect("starts no retry whose wait would end past the budget, and tells each attempt what is left", () =>
    Effect.gen(function*() {
      // Waits 1 s, 2 s, 4 s: the third would end at 7 s, past a 6.5 s budget.
      const r = yield* drive(transport({ retryBudgetMs: 6_500 }), () => server)
      assert.deepStrictEqual(r.starts, [0, 1_000, 3_000])
      assert.deepStrictEqual(r.given, [6_500, 5_500, 3_500])
      assert.isTrue(Result.isFailure(r.result) && r.result.failure._tag === "ProviderServerError")
      assert.strictEqual(r.logs.at(-1), "provider p: ProviderServerError, retry budget of 7 s spent, giving up")
      // A wait that would end exactly at the budget is not started either.
      const edge = yield* drive(transport({ retryBudgetMs: 3_000 }), () => server)
      assert.deepStrictEqual(edge.starts, [0, 1_000])
    }))

  it.effect("retries at most maxRetries times", () =>
    Effect.gen(function*() {
      for (const maxRetries of [0, 1, 2, 5]) {
        const r = yield* drive(transport({ maxRetries }), () => new ProviderNetworkError({ provider: "p", timeout: true, detail: "t" }))
        assert.strictEqual(r.starts.length, maxRetries + 1)
        assert.isTrue(Result.isFailure(r.result) && r.result.failure._tag === "ProviderNetworkError")
      }
    }))

  it.effect("does not retry a failure that is not retryable", () =>
    Effect.gen(function*() {
      const r = yield* drive(transport(), () => new ProviderAuthError({ provider: "p", status: 401, detail: "bad key" }))
      assert.deepStrictEqual(r.starts, [0])
      assert.isTrue(Result.isFailure(r.result) && r.result.failure._tag === "ProviderAuthError")
      assert.deepStrictEqual(r.logs, [])
      // Nor one that follows retryable ones.
      const mixed = yield* drive(transport(), (n) => (n === 1 ? server : new ProviderAuthError({ provider: "p", status: 403, detail: "" })))
      assert.deepStrictEqual(mixed.starts, [0, 1_000])
      assert.isTrue(Result.isFailure(mixed.result) && mixed.result.failure._tag === "ProviderAuthError")
    }))
})
