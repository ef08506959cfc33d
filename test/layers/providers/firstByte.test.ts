/**
 * A provider that never answers: each attempt is cut at the provider's first-byte timeout (not the
 * idle-stream timeout), retried a bounded number of times, and the whole wait stays within the
 * retry budget.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { ProviderRateLimited } from "../../../src/domain/model/errors.ts"
import { PROVIDER_TYPES, type ProviderConfig, type ProviderType, type TransportOptions } from "../../../src/domain/model/types.ts"
import { clientFor } from "../../../src/layers/providers/SdkProviderRegistry.ts"
import { retrying } from "../../../src/layers/providers/transport.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"

describe("first-byte timeout against a provider that never answers", () => {
  let fake: FakeLlm
  beforeAll(async () => {
    fake = await startFakeLlm()
  })
  afterAll(() => fake.close())
  beforeEach(() => fake.reset())

  // The idle timeout is long on purpose: only the provider's first-byte limit can end these attempts.
  const transport: TransportOptions = { timeoutMs: 60_000, maxRetries: 2, baseBackoffMs: 1, maxBackoffMs: 10 }
  const config = (type: ProviderType): ProviderConfig => ({
    id: `hang-${type}`,
    type,
    baseUrl: type === "anthropic" ? fake.url : fake.openAiUrl,
    apiKey: "sk-test",
    models: [],
    defaultModel: "fake-large",
    headers: {},
    enabled: true,
    firstByteTimeoutSeconds: 0.2
  })

  for (const type of PROVIDER_TYPES) {
    it.live(`${type}: every attempt is cut at the configured first-byte timeout, then the turn fails`, () =>
      Effect.gen(function*() {
        fake.respondWith(() => ({ kind: "hang" }))
        const before = fake.requests.length
        const client = yield* clientFor(config(type), transport)
        const e = yield* Stream.runCollect(client.stream({ model: "fake-large", messages: [{ role: "user", content: "hi" }] })).pipe(
          Effect.flip
        )
        assert.strictEqual(e._tag, "ProviderNetworkError")
        assert.isTrue(e._tag === "ProviderNetworkError" && e.timeout)
        assert.include(e.message, "first-byte")
        const posts = fake.requests.slice(before).filter((r) => r.method === "POST")
        assert.strictEqual(posts.length, transport.maxRetries + 1, "one attempt and maxRetries retries")
      }))
  }
})

describe("retry budget", () => {
  it.effect("no retry starts past the budget, and the last attempt gets only what is left", () =>
    Effect.gen(function*() {
      const given: Array<number> = []
      // Each attempt runs until it has used 40 s or what is left of the budget, then is rate limited.
      const attempt = (remainingMs: number) =>
        Effect.gen(function*() {
          given.push(remainingMs)
          yield* Effect.sleep(Math.min(40_000, remainingMs))
          return yield* Effect.fail(new ProviderRateLimited({ provider: "p", retryAfterMs: 1_000, detail: "slow down" }))
        })
      const fiber = yield* Effect.forkChild(
        Effect.flip(retrying({ timeoutMs: 1, maxRetries: 10, baseBackoffMs: 1, maxBackoffMs: 5_000, retryBudgetMs: 100_000 }, attempt))
      )
      yield* TestClock.adjust(300_000)
      const e = yield* Fiber.join(fiber)
      assert.strictEqual(e._tag, "ProviderRateLimited")
      // t=0: 100 s left; fails at 40 s, waits 1 s; t=41: 59 s left; fails at 81, waits 1; t=82: 18 s left,
      // fails at 100, and a retry would start past the budget.
      assert.deepStrictEqual(given, [100_000, 59_000, 18_000])
    }))
})
