/**
 * UsageLog on both databases (issue 26): the same calls recorded on a SQLite file and on a fresh
 * PostgreSQL database give the same counts, totals, costs and breakdowns by user, agent, model, UTC
 * day and hour — with 64-bit sums as numbers, not strings — and a removed user's calls move the
 * same way. Prices and providers are written with plain SQL (their store is SQLite's still).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { emptyUsage } from "../../../src/domain/model/types.ts"
import * as UsageLogSql from "../../../src/layers/config/SqliteUsageLog.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { sqliteTemp } from "../../support/db.ts"
import { pgTemp, postgresEnabled } from "../../support/postgres.ts"

const HOUR = 3_600_000

/** The scenario: two providers (one priced model each), three users, calls over two UTC days. */
const scenario = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const [id, type] of [["oa", "openai"], ["an", "anthropic"]] as const) {
    yield* sql`INSERT INTO providers (id, type, default_model, created_at, updated_at) VALUES (${id}, ${type}, 'm', 0, 0)`
  }
  yield* sql`INSERT INTO model_prices (provider_id, model, input, output, cache_read, updated_at) VALUES ('oa', 'gpt', 2, 8, 0.5, 0)`
  yield* sql`INSERT INTO model_prices (provider_id, model, input, output, cache_write, updated_at) VALUES ('an', 'claude', 3, 15, 3.75, 0)`
  const usage = yield* UsageLog
  const call = (at: number, providerId: string, model: string, userId: string | undefined, tokens: Partial<typeof emptyUsage>, error?: string) =>
    Effect.andThen(
      TestClock.setTime(at),
      usage.record({
        providerId,
        model,
        purpose: error === undefined && model === "embed" ? "embedding" : "chat",
        sessionKey: `a1:cli:${userId ?? "-"}:main`,
        agentId: providerId === "an" ? "a2" : "a1",
        userId,
        usage: { ...emptyUsage, ...tokens },
        ...(error === undefined ? {} : { error })
      })
    )
  yield* call(1 * HOUR, "oa", "gpt", "u1", { inputTokens: 1_000_000, outputTokens: 500_000, cacheReadTokens: 200_000 })
  yield* call(2 * HOUR, "oa", "gpt", "u2", { inputTokens: 10, outputTokens: 5 })
  yield* call(2 * HOUR + 1, "oa", "gpt", "u2", {}, "HTTP 500")
  yield* call(25 * HOUR, "an", "claude", "u1", { inputTokens: 2_000_000, outputTokens: 1_000_000, cacheWriteTokens: 400_000 })
  yield* call(26 * HOUR, "oa", "embed", "u3", { inputTokens: 9_000_000_000 })
  yield* call(27 * HOUR, "oa", "unpriced", undefined, { inputTokens: 3 })
})

const suite = (name: string, database: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  describe(`UsageLog on ${name}`, () => {
    const layer = UsageLogSql.layer.pipe(Layer.provideMerge(database))

    it.effect("counts, totals, costs and breakdowns", () =>
      Effect.gen(function*() {
        yield* scenario
        const usage = yield* UsageLog
        assert.strictEqual(yield* usage.embeddingCallsSince("a1", 0), 1)
        assert.strictEqual(yield* usage.embeddingCallsSince("a1", 26 * HOUR + 1), 0)
        assert.strictEqual(yield* usage.summaryCallsSince("a1:cli:u1:main", 0), 0)
        const totals = yield* usage.totals()
        assert.deepStrictEqual(
          totals.map((t) => [`${t.providerId}/${t.model}`, t.purpose, t.calls, t.failed, t.inputTokens, t.outputTokens, t.unpricedCalls]),
          [
            ["an/claude", "chat", 1, 0, 2_000_000, 1_000_000, 0],
            ["oa/embed", "embedding", 1, 0, 9_000_000_000, 0, 1],
            ["oa/gpt", "chat", 3, 1, 1_000_010, 500_005, 0],
            ["oa/unpriced", "chat", 1, 0, 3, 0, 1]
          ]
        )
        // OpenAI: the cached tokens leave the input count; Anthropic: besides it, at the write price
        const gpt = totals.find((t) => t.model === "gpt")?.cost ?? Number.NaN
        assert.closeTo(gpt, (800_000 * 2 + 500_000 * 8 + 200_000 * 0.5 + 10 * 2 + 5 * 8) / 1e6, 1e-9)
        assert.closeTo(totals.find((t) => t.model === "claude")?.cost ?? Number.NaN, (2_000_000 * 3 + 1_000_000 * 15 + 400_000 * 3.75) / 1e6, 1e-9)
        assert.isNull(totals.find((t) => t.model === "unpriced")?.cost)
        for (const t of totals) assert.strictEqual(typeof t.inputTokens, "number")

        const keys = (by: Parameters<typeof usage.breakdown>[0], filter = {}) =>
          Effect.map(usage.breakdown(by, filter), (bs) => bs.map((b) => [b.key, b.calls, b.inputTokens, b.failed, b.unpricedCalls]))
        assert.deepStrictEqual(yield* keys("day"), [["1970-01-01", 3, 1_000_010, 1, 0], ["1970-01-02", 3, 9_002_000_003, 0, 2]])
        assert.deepStrictEqual((yield* keys("hour")).map((k) => k[0]), ["1970-01-01T01", "1970-01-01T02", "1970-01-02T01", "1970-01-02T02", "1970-01-02T03"])
        assert.deepStrictEqual(yield* keys("user"), [["", 1, 3, 0, 1], ["u1", 2, 3_000_000, 0, 0], ["u2", 2, 10, 1, 0], ["u3", 1, 9_000_000_000, 0, 1]])
        assert.deepStrictEqual((yield* keys("model")).map((k) => k[0]), ["an/claude", "oa/embed", "oa/gpt", "oa/unpriced"])
        assert.deepStrictEqual(yield* keys("agent", { since: 2 * HOUR, until: 26 * HOUR }), [["a1", 2, 10, 1, 0], ["a2", 1, 2_000_000, 0, 0]])
        const cache = (yield* usage.breakdown("user", { userId: "u1" }))[0]
        assert.deepStrictEqual([cache?.cacheReadTokens, cache?.cacheWriteTokens, cache?.outputTokens], [200_000, 400_000, 1_500_000])
      }).pipe(Effect.provide(layer)))

    it.effect("a removed user's calls move to the name they were removed as", () =>
      Effect.gen(function*() {
        yield* scenario
        const usage = yield* UsageLog
        assert.strictEqual(yield* usage.retireUser("u1", "removed-1"), 2)
        assert.strictEqual(yield* usage.retireUser("", "removed-2"), 0)
        const users = (yield* usage.breakdown("user")).map((b) => b.key)
        assert.deepStrictEqual(users, ["", "removed-1", "u2", "u3"])
        assert.strictEqual((yield* usage.totals({ userId: "removed-1" })).reduce((n, t) => n + t.calls, 0), 2)
      }).pipe(Effect.provide(layer)))
  })

suite("SQLite", sqliteTemp)
if (postgresEnabled()) suite("PostgreSQL", pgTemp)
