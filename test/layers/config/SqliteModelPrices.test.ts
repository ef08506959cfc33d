/**
 * Model prices on real SQLite and on PostgreSQL (issue 26): ProviderStore checks and stores them (replaced, removed, gone with
 * their provider), and UsageLog costs every call from them — cache tokens at their own price or
 * the input price, OpenAI's cached tokens taken out of its input count (Anthropic's are besides),
 * a bucket partial when some of its calls are unpriced, null when none is priced.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { PriceInput } from "../../../src/domain/model/prices.ts"
import { emptyUsage, type ProviderConfig, type Usage } from "../../../src/domain/model/types.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { modelStores, sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

for (const db of testDatabases(sqliteTemp)) {
  const configTemp = modelStores.pipe(Layer.provideMerge(db.layer))

  const provider = (id: string, type: ProviderConfig["type"]): ProviderConfig => ({
    id,
    type,
    baseUrl: "",
    apiKey: "",
    models: [],
    defaultModel: "m",
    headers: {},
    enabled: true
  })

  const close = (actual: number | null, expected: number) => {
    assert.isNotNull(actual)
    assert.closeTo(actual ?? Number.NaN, expected, 1e-12)
  }

  describe(`ProviderStore: prices (${db.name})`, () => {
    it.effect("sets, replaces, lists and removes prices; a provider's prices go with it", () =>
      Effect.gen(function*() {
        const store = yield* ProviderStore
        yield* store.add(provider("oa", "openai"))
        yield* store.add(provider("an", "anthropic"))
        yield* store.setPrice("oa", "gpt", { input: 2, output: 8, cacheRead: 0.5 })
        yield* store.setPrice("an", "claude", { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 })
        yield* store.setPrice("oa", "free", { input: 0, output: 0 })
        yield* store.setPrice("oa", "dear", { input: 10_000, output: 10_000 })
        assert.deepStrictEqual((yield* store.prices()).map((p) => `${p.providerId}/${p.model}`), ["an/claude", "oa/dear", "oa/free", "oa/gpt"])
        assert.deepStrictEqual((yield* store.prices("oa")).find((p) => p.model === "gpt"), {
          providerId: "oa",
          model: "gpt",
          input: 2,
          output: 8,
          cacheRead: 0.5,
          cacheWrite: null
        })
        // Set again: replaced whole (the cache read price back to "the input price").
        yield* store.setPrice("oa", "gpt", { input: 1.25, output: 10 })
        assert.deepInclude((yield* store.prices("oa")).find((p) => p.model === "gpt"), { input: 1.25, output: 10, cacheRead: null })
        yield* store.setPrice("oa", "free", null)
        assert.strictEqual((yield* Effect.flip(store.setPrice("oa", "free", null)))._tag, "PriceNotFound")
        assert.deepStrictEqual((yield* store.prices("oa")).map((p) => p.model), ["dear", "gpt"])

        yield* store.remove("oa")
        yield* store.add(provider("oa", "openai"))
        assert.deepStrictEqual(yield* store.prices("oa"), [], "a removed provider's prices do not come back with a new one of that id")
        assert.deepStrictEqual((yield* store.prices()).map((p) => p.model), ["claude"])
      }).pipe(Effect.provide(configTemp)))

    it.effect("refuses prices that are not finite, negative or above 10,000, an empty model, an unknown provider", () =>
      Effect.gen(function*() {
        const store = yield* ProviderStore
        yield* store.add(provider("oa", "openai"))
        const bad: ReadonlyArray<readonly [string, PriceInput]> = [
          ["m", { input: -1, output: 1 }],
          ["m", { input: 1, output: Number.NaN }],
          ["m", { input: Number.POSITIVE_INFINITY, output: 1 }],
          ["m", { input: 10_000.01, output: 1 }],
          ["m", { input: 1, output: 1, cacheRead: -0.1 }],
          ["m", { input: 1, output: 1, cacheWrite: 1e9 }],
          ["", { input: 1, output: 1 }],
          ["  ", { input: 1, output: 1 }],
          [" m", { input: 1, output: 1 }]
        ]
        for (const [model, price] of bad) {
          assert.strictEqual((yield* Effect.flip(store.setPrice("oa", model, price)))._tag, "InvalidConfig", `${model} ${JSON.stringify(price)}`)
        }
        assert.deepStrictEqual(yield* store.prices(), [])
        assert.strictEqual((yield* Effect.flip(store.setPrice("nope", "m", { input: 1, output: 1 })))._tag, "ProviderNotFound")
        assert.strictEqual((yield* Effect.flip(store.prices("nope")))._tag, "ProviderNotFound")
      }).pipe(Effect.provide(configTemp)))
  })

  describe(`UsageLog: costs from prices (${db.name})`, () => {
    const call = (providerId: string, model: string, userId: string, usage: Partial<Usage>, error?: string) =>
      Effect.flatMap(UsageLog, (log) =>
        log.record({ providerId, model, purpose: "chat", sessionKey: `a1:cli:${userId}:main`, agentId: "a1", userId, usage: { ...emptyUsage, ...usage }, error }))

    it.effect("costs each call at its model's price, cache tokens included; partial where some calls are unpriced; null where none is priced", () =>
      Effect.gen(function*() {
        const store = yield* ProviderStore
        const log = yield* UsageLog
        yield* store.add(provider("oa", "openai"))
        yield* store.add(provider("an", "anthropic"))
        yield* store.setPrice("oa", "gpt", { input: 2, output: 8, cacheRead: 0.5 })
        yield* store.setPrice("an", "claude", { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 })
        yield* store.setPrice("an", "haiku", { input: 1, output: 5 })

        // OpenAI counts the 400 cached tokens within its 1000: 600 × 2 + 100 × 8 + 400 × 0.5 = 2200 µ$.
        yield* call("oa", "gpt", "u1", { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 400 })
        // Anthropic's are besides: 100 × 3 + 200 × 15 + 1000 × 0.3 + 2000 × 3.75 = 11100 µ$.
        yield* call("an", "claude", "u1", { inputTokens: 100, outputTokens: 200, cacheReadTokens: 1000, cacheWriteTokens: 2000 })
        // No cache prices: the input price for both, (10 + 100 + 100) × 1 = 210 µ$.
        yield* call("an", "haiku", "u2", { inputTokens: 10, cacheReadTokens: 100, cacheWriteTokens: 100 })
        // Unpriced with tokens (counted), and a failed call without tokens (not counted).
        yield* call("oa", "other", "u2", { inputTokens: 500, outputTokens: 5 })
        yield* call("oa", "other", "u3", { inputTokens: 50 })
        yield* call("oa", "other", "u3", {}, "HTTP 500")

        const byUser = yield* log.breakdown("user")
        assert.deepStrictEqual(byUser.map((b) => [b.key, b.calls, b.unpricedCalls]), [["u1", 2, 0], ["u2", 2, 1], ["u3", 2, 1]])
        close(byUser[0]?.cost ?? null, 0.0133)
        close(byUser[1]?.cost ?? null, 0.00021)
        assert.isNull(byUser[2]?.cost, "no priced call: unknown, not 0")

        const byModel = yield* log.breakdown("model")
        assert.deepStrictEqual(byModel.map((b) => [b.key, b.cost === null ? null : Math.round(b.cost * 1e6), b.unpricedCalls]), [
          ["an/claude", 11100, 0],
          ["an/haiku", 210, 0],
          ["oa/gpt", 2200, 0],
          ["oa/other", null, 2]
        ])
        const day = yield* log.breakdown("day")
        assert.strictEqual(day.length, 1)
        close(day[0]?.cost ?? null, 0.01351)
        assert.strictEqual(day[0]?.unpricedCalls, 2)

        const totals = yield* log.totals({ userId: "u1" })
        assert.deepStrictEqual(totals.map((t) => [t.providerId, t.model, t.cost === null ? null : Math.round(t.cost * 1e6), t.unpricedCalls]), [
          ["an", "claude", 11100, 0],
          ["oa", "gpt", 2200, 0]
        ])
        assert.deepStrictEqual((yield* log.totals({ userId: "u3" })).map((t) => [t.cost, t.unpricedCalls, t.calls]), [[null, 1, 2]])

        // A price set later costs the calls already logged; removed, they are unknown again.
        yield* store.setPrice("oa", "other", { input: 1, output: 100 })
        const now = yield* log.breakdown("user", { userId: "u3" })
        assert.deepStrictEqual(now.map((b) => [b.cost === null ? null : Math.round(b.cost * 1e6), b.unpricedCalls]), [[50, 0]])
        yield* store.setPrice("oa", "other", null)
        assert.isNull((yield* log.breakdown("user", { userId: "u3" }))[0]?.cost)
      }).pipe(Effect.provide(configTemp)))
  })
}
