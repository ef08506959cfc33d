/**
 * The admin API's usage group through the typed client against a real server: the tokens the fake
 * LLM server reported for real turns (official OpenAI SDK, real runtime and SQLite) come back by
 * user, agent, model and day with totals, within a date range; the dashboard's live sessions, its
 * hourly/daily series (every bucket of the window) and spend; a user sees only their own; costs are
 * null while no prices are known, in USD once they are (partial where some calls are unpriced), and
 * prices are set, listed and removed through the providers group.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { BadRequest, Forbidden, NotFound, Unauthorized } from "../../../src/domain/admin/security.ts"
import { emptyUsage } from "../../../src/domain/model/types.ts"
import { bucketKey, windowBuckets } from "../../../src/layers/admin/UsageApi.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { account, clientFor, withAdmin } from "./sessionsSetup.ts"

const llm = fakeLlmSuite()


const turn = (userId: string, agentId: string, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve({ platform: "telegram", externalUserId: userId, userId, chatId: "dm", agentId })
    yield* Stream.runDrain(runtime.send(chat, text))
  })

/** Where this test's requests start in the fake server's record (it keeps every test file's). */
let mark = 0
const modelCalls = () => llm.fake.requests.slice(mark).filter((r) => r.method === "POST")

/** A turn whose model call hangs (its runner stays up while it runs); `stop` aborts it. */
const hangingTurn = (userId: string, chatId: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const calls = modelCalls().length
    llm.fake.script({ kind: "hang" })
    const chat = yield* runtime.resolve({ platform: "web", externalUserId: userId, userId, chatId, agentId: "a1" })
    const fiber = yield* Effect.forkChild(Stream.runDrain(runtime.send(chat, "think forever")))
    yield* Effect.promise(() => llm.fake.when(() => modelCalls().length > calls, { what: "the hanging model call" }))
    return { key: chat.sessionKey, stop: Effect.andThen(runtime.abort(chat), Fiber.join(fiber)) }
  })

/** alice: two turns with a1; bob: one with a2; each call reports 100 input and 20 output tokens. */
const seeded = Effect.gen(function*() {
  mark = llm.fake.requests.length
  yield* configureAgent(llm.fake, "a1", { tools: [] })
  yield* configureAgent(llm.fake, "a2", { tools: [] })
  const tokens = { root: yield* account("root", "admin"), alice: yield* account("alice", "user"), bob: yield* account("bob", "user") }
  llm.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "noted" }], usage: { input: 100, output: 20 } }))
  const from = Date.now()
  yield* turn("alice", "a1", "one")
  yield* turn("alice", "a1", "two")
  yield* turn("bob", "a2", "three")
  return { tokens, from, to: Date.now() }
})

/** The buckets the seeded turns fell in (one, unless they straddled a boundary). */
const bucketsOf = (t: { readonly from: number; readonly to: number }, bucket: "hour" | "day") => [...new Set([bucketKey(t.from, bucket), bucketKey(t.to, bucket)])]

interface Point {
  readonly bucket: string
  readonly turns: number
  readonly inputTokens: number
  readonly outputTokens: number
}
/** The series' sums inside the given buckets, and whether every point outside them is empty. */
const within = (series: ReadonlyArray<Point>, buckets: ReadonlyArray<string>) => {
  const inside = series.filter((p) => buckets.includes(p.bucket))
  return {
    turns: inside.reduce((n, p) => n + p.turns, 0),
    inputTokens: inside.reduce((n, p) => n + p.inputTokens, 0),
    outputTokens: inside.reduce((n, p) => n + p.outputTokens, 0),
    restEmpty: series.every((p) => buckets.includes(p.bucket) || (p.turns === 0 && p.inputTokens === 0 && p.outputTokens === 0))
  }
}

describe("admin API: usage", () => {
  it.live("report: tokens by user, agent, model and day with totals; a date range narrows it; costs unknown", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens, ...at } = yield* seeded
      const root = yield* clientFor(tokens.root)
      const r = yield* root.usage.report({ query: {} })
      assert.deepStrictEqual(r.totals, { calls: 3, failed: 0, inputTokens: 300, outputTokens: 60, cacheReadTokens: 0, cacheWriteTokens: 0, cost: null, unpricedCalls: 3 })
      assert.isNull(r.currency)
      const pick = (rows: ReadonlyArray<{ readonly key: string; readonly calls: number; readonly inputTokens: number; readonly cost: number | null }>) =>
        rows.map((x) => [x.key, x.calls, x.inputTokens, x.cost])
      assert.deepStrictEqual(pick(r.byUser), [["alice", 2, 200, null], ["bob", 1, 100, null]])
      assert.deepStrictEqual(pick(r.byAgent), [["a1", 2, 200, null], ["a2", 1, 100, null]])
      assert.deepStrictEqual(pick(r.byModel), [["local/fake-large", 3, 300, null]])
      assert.includeMembers(bucketsOf(at, "day"), r.byDay.map((x) => x.key))
      assert.strictEqual(r.byDay.reduce((n, x) => n + x.inputTokens, 0), 300)
      assert.strictEqual(r.until - r.since, 30 * 24 * 3600_000)

      const agentOnly = yield* root.usage.report({ query: { agent: "a2" } })
      assert.deepStrictEqual(pick(agentOnly.byUser), [["bob", 1, 100, null]])
      // A range after the calls, and one before them, hold none.
      const later = yield* root.usage.report({ query: { since: Date.now() + 3600_000, until: Date.now() + 7200_000 } })
      assert.strictEqual(later.totals.calls, 0)
      assert.deepStrictEqual(later.byUser, [])
      const earlier = yield* root.usage.report({ query: { since: 0, until: r.since } })
      assert.strictEqual(earlier.totals.calls, 0)
    })))

  it.live("a user gets only their own usage, whatever they ask for; anonymous gets 401", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens } = yield* seeded
      const alice = yield* clientFor(tokens.alice)
      const r = yield* alice.usage.report({ query: { user: "bob" } })
      assert.strictEqual(r.totals.calls, 2)
      assert.deepStrictEqual(r.byUser.map((x) => x.key), ["alice"])
      assert.deepStrictEqual(r.byAgent.map((x) => x.key), ["a1"])
      // Bob's turn is running now; alice's dashboard does not show it.
      const bobs = yield* hangingTurn("bob", "busy")
      const d = yield* alice.usage.dashboard({ query: {} })
      assert.isTrue(d.live.list.every((s) => s.userId === "alice"))
      assert.strictEqual(d.live.running, 0)
      assert.strictEqual(d.series.reduce((n, p) => n + p.turns, 0), 2)
      assert.deepStrictEqual(d.spendByUser.map((x) => x.key), ["alice"])
      const all = yield* (yield* clientFor(tokens.root)).usage.dashboard({ query: {} })
      assert.deepInclude(all.live.list.find((s) => s.sessionKey === bobs.key), { userId: "bob", running: true })
      yield* bobs.stop

      const anonymous = yield* clientFor()
      assert.instanceOf(yield* Effect.flip(anonymous.usage.report({ query: {} })), Unauthorized)
      assert.instanceOf(yield* Effect.flip(anonymous.usage.dashboard({ query: {} })), Unauthorized)
    })))

  it.live("dashboard: live sessions now, turns and tokens in every bucket of the window, spend by user and agent", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens, ...at } = yield* seeded
      const root = yield* clientFor(tokens.root)
      const day = yield* root.usage.dashboard({ query: {} })
      assert.strictEqual(day.bucket, "hour")
      // Every hour of the window, the last being the one the server's clock is in.
      assert.deepStrictEqual(day.series.map((p) => p.bucket), windowBuckets(day.until - 1, "hour", 24).keys)
      assert.strictEqual(day.since, windowBuckets(day.until - 1, "hour", 24).since)
      assert.deepStrictEqual(within(day.series, bucketsOf(at, "hour")), { turns: 3, inputTokens: 300, outputTokens: 60, restEmpty: true })
      assert.strictEqual(day.live.running, 0)
      assert.strictEqual(day.live.sessions, day.live.list.length)
      assert.deepStrictEqual(day.spendByUser.map((x) => [x.key, x.outputTokens, x.cost]), [["alice", 40, null], ["bob", 20, null]])
      assert.deepStrictEqual(day.spendByAgent.map((x) => [x.key, x.calls]), [["a1", 2], ["a2", 1]])

      const week = yield* root.usage.dashboard({ query: { window: "7d" } })
      assert.strictEqual(week.bucket, "day")
      assert.strictEqual(week.series.length, 7)
      assert.deepStrictEqual(week.series.map((p) => p.bucket), windowBuckets(week.until - 1, "day", 7).keys)
      assert.deepStrictEqual(within(week.series, bucketsOf(at, "day")), { turns: 3, inputTokens: 300, outputTokens: 60, restEmpty: true })
      assert.strictEqual((yield* root.usage.dashboard({ query: { window: "30d" } })).series.length, 30)

      // A turn running now is counted at once.
      const busy = yield* hangingTurn("alice", "busy")
      const now = yield* root.usage.dashboard({ query: {} })
      assert.strictEqual(now.live.running, 1)
      assert.deepInclude(now.live.list.find((s) => s.sessionKey === busy.key), { userId: "alice", agentId: "a1", running: true })
      yield* busy.stop
      assert.strictEqual((yield* root.usage.dashboard({ query: {} })).live.running, 0)
    })))

  it.live("prices: set, listed and removed by an admin; costs in USD from them, partial where a call is unpriced", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens } = yield* seeded
      const root = yield* clientFor(tokens.root)
      const set = yield* root.providers.setPrice({ params: { id: "local", model: "fake-large" }, payload: { input: 1, output: 10 } })
      assert.deepStrictEqual(set, { providerId: "local", model: "fake-large", input: 1, output: 10, cacheRead: null, cacheWrite: null })
      // A model id with a slash and a colon (OpenRouter, Ollama) is one path segment.
      const odd = "vendor/odd-model:7b"
      yield* root.providers.setPrice({ params: { id: "local", model: odd }, payload: { input: 2, output: 2, cacheRead: 0.5 } })
      assert.deepStrictEqual((yield* root.providers.prices({ params: { id: "local" } })).map((p) => [p.model, p.cacheRead]), [["fake-large", null], [odd, 0.5]])
      yield* root.providers.removePrice({ params: { id: "local", model: odd } })
      assert.instanceOf(yield* Effect.flip(root.providers.removePrice({ params: { id: "local", model: odd } })), NotFound)
      assert.instanceOf(yield* Effect.flip(root.providers.setPrice({ params: { id: "local", model: "m" }, payload: { input: -1, output: 1 } })), BadRequest)
      assert.instanceOf(yield* Effect.flip(root.providers.prices({ params: { id: "nope" } })), NotFound)
      const alice = yield* clientFor(tokens.alice)
      assert.instanceOf(yield* Effect.flip(alice.providers.prices({ params: { id: "local" } })), Forbidden)

      // One more call of alice's, on a model without a price.
      yield* (yield* UsageLog).record({
        providerId: "local",
        model: "unpriced",
        purpose: "chat",
        sessionKey: "a1:web:alice:x",
        agentId: "a1",
        userId: "alice",
        usage: { ...emptyUsage, inputTokens: 50, outputTokens: 5 }
      })
      // Each seeded call: 100 input tokens at $1 and 20 output at $10 per million = $0.0003.
      const micro = (cost: number | null) => (cost === null ? null : Math.round(cost * 1e6))
      const r = yield* root.usage.report({ query: {} })
      assert.strictEqual(r.currency, "USD")
      assert.deepStrictEqual([micro(r.totals.cost), r.totals.unpricedCalls], [900, 1])
      assert.deepStrictEqual(r.byUser.map((x) => [x.key, micro(x.cost), x.unpricedCalls]), [["alice", 600, 1], ["bob", 300, 0]])
      assert.deepStrictEqual(r.byModel.map((x) => [x.key, micro(x.cost), x.unpricedCalls]), [["local/fake-large", 900, 0], ["local/unpriced", null, 1]])
      const d = yield* root.usage.dashboard({ query: {} })
      assert.strictEqual(d.currency, "USD")
      assert.deepStrictEqual(d.spendByUser.map((x) => [x.key, micro(x.cost), x.unpricedCalls]), [["alice", 600, 1], ["bob", 300, 0]])
      assert.deepStrictEqual(d.spendByAgent.map((x) => [x.key, micro(x.cost)]), [["a1", 600], ["a2", 300]])
      // A user sees the cost of their own calls.
      const own = yield* alice.usage.report({ query: {} })
      assert.deepStrictEqual([micro(own.totals.cost), own.totals.unpricedCalls], [600, 1])
    })))
})
