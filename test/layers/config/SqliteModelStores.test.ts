import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { emptyUsage, type ProviderConfig } from "../../../src/domain/model/types.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { modelStores, sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

for (const db of testDatabases(sqliteTemp)) {
  const configTemp = modelStores.pipe(Layer.provideMerge(db.layer))

  const provider = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
    id: "openai",
    type: "openai",
    baseUrl: "http://127.0.0.1:11434/v1",
    apiKey: "sk-secret-1234567890",
    models: ["llama3", "qwen2"],
    defaultModel: "llama3",
    headers: { "x-org": "family" },
    enabled: true,
    ...overrides
  })

  describe(`SqliteProviderStore (${db.name})`, () => {
    it.effect("adds, lists, gets and removes providers exactly as given", () =>
      Effect.gen(function*() {
        const store = yield* ProviderStore
        yield* store.add(provider())
        yield* store.add(provider({ id: "claude", type: "anthropic", baseUrl: "", models: [], defaultModel: "claude-x", headers: {} }))
        assert.deepStrictEqual(yield* store.get("openai"), provider())
        assert.deepStrictEqual((yield* store.list).map((p) => p.id), ["openai", "claude"])
        yield* store.remove("claude")
        assert.deepStrictEqual((yield* store.list).map((p) => p.id), ["openai"])
        assert.strictEqual((yield* Effect.flip(store.get("claude")))._tag, "ProviderNotFound")
        assert.strictEqual((yield* Effect.flip(store.remove("claude")))._tag, "ProviderNotFound")
      }).pipe(Effect.provide(configTemp)))

    it.effect("refuses a duplicate id and invalid configurations with a reason", () =>
      Effect.gen(function*() {
        const store = yield* ProviderStore
        yield* store.add(provider())
        assert.strictEqual((yield* Effect.flip(store.add(provider())))._tag, "ProviderExists")
        const invalid = [
          provider({ id: "a/b" }),
          provider({ id: "" }),
          provider({ baseUrl: "ftp://example.com" }),
          provider({ baseUrl: "not a url" }),
          provider({ defaultModel: " " }),
          provider({ headers: { "bad header": "x" } })
        ]
        for (const p of invalid) {
          const e = yield* Effect.flip(store.add({ ...p, id: p.id === "openai" ? "other" : p.id }))
          assert.strictEqual(e._tag, "InvalidConfig", JSON.stringify(p))
        }
        assert.strictEqual((yield* store.list).length, 1)
      }).pipe(Effect.provide(configTemp)))

    it.effect("refuses to remove a provider an agent uses, naming the agents", () =>
      Effect.gen(function*() {
        const store = yield* ProviderStore
        const agents = yield* AgentStore
        yield* store.add(provider())
        yield* store.add(provider({ id: "cheap" }))
        yield* agents.create("a1", { providerId: "openai", summaryProviderId: "cheap" })
        const e = yield* Effect.flip(store.remove("cheap"))
        assert.strictEqual(e._tag, "ProviderInUse")
        assert.include(e.message, "a1")
        yield* agents.update("a1", { summaryProviderId: null })
        yield* store.remove("cheap")
        assert.strictEqual((yield* store.list).length, 1)
      }).pipe(Effect.provide(configTemp)))
  })

  describe(`SqliteAgentStore (${db.name})`, () => {
    it.effect("creates and updates agents, validates provider references and limits", () =>
      Effect.gen(function*() {
        const providers = yield* ProviderStore
        const agents = yield* AgentStore
        yield* providers.add(provider())
        assert.isTrue(Option.isNone(yield* agents.defaultAgent))
        const created = yield* agents.create("default", { providerId: "openai", model: "" })
        assert.deepStrictEqual(
          [created.name, created.providerId, created.summaryProviderId, created.summaryMaxCalls, created.summaryWindowSeconds],
          ["default", "openai", null, 60, 3600]
        )
        const updated = yield* agents.update("default", { summaryProviderId: "openai", summaryModel: "qwen2", summaryMaxCalls: 5 })
        assert.deepStrictEqual([updated.summaryProviderId, updated.summaryModel, updated.summaryMaxCalls, updated.model], [
          "openai",
          "qwen2",
          5,
          ""
        ])
        assert.strictEqual((yield* Effect.flip(agents.update("default", { providerId: "nope" })))._tag, "ProviderNotFound")
        assert.strictEqual((yield* Effect.flip(agents.update("default", { summaryMaxCalls: -1 })))._tag, "InvalidConfig")
        assert.strictEqual((yield* Effect.flip(agents.update("default", { summaryWindowSeconds: 0 })))._tag, "InvalidConfig")
        assert.strictEqual((yield* Effect.flip(agents.update("ghost", {})))._tag, "AgentNotFound")
        assert.strictEqual((yield* Effect.flip(agents.create("bad:id", {})))._tag, "InvalidConfig")
        yield* agents.create("second", {})
        yield* agents.update("default", { enabled: false })
        const fallback = yield* agents.defaultAgent
        assert.strictEqual(Option.getOrUndefined(fallback)?.id, "second")
      }).pipe(Effect.provide(configTemp)))
  })

  describe(`SqliteAgentStore: runtime settings (${db.name})`, () => {
    it.effect("stores context budget, tools (a list or null = all) and turn limit; refuses bad values", () =>
      Effect.gen(function*() {
        const agents = yield* AgentStore
        const fresh = yield* agents.create("a1", {})
        assert.deepStrictEqual([fresh.contextTokens, fresh.tools, fresh.maxTurns], [0, null, 25])
        const set = yield* agents.update("a1", { contextTokens: 64_000, tools: ["read", "bash"], maxTurns: 7 })
        assert.deepStrictEqual([set.contextTokens, set.tools, set.maxTurns], [64_000, ["read", "bash"], 7])
        assert.deepStrictEqual((yield* agents.update("a1", { tools: [] })).tools, [])
        assert.deepStrictEqual((yield* agents.update("a1", { name: "x" })).tools, [], "a patch without tools keeps them")
        assert.strictEqual((yield* agents.update("a1", { tools: null })).tools, null)
        const bad = [
          { tools: ["bash", "rm"] },
          { tools: ["bash", "bash"] },
          { contextTokens: -1 },
          { contextTokens: 128 },
          { contextTokens: 1.5 },
          { maxTurns: 0 },
          { maxTurns: 2.5 },
          { maxTurns: 100_000 }
        ]
        for (const patch of bad) {
          assert.strictEqual((yield* Effect.flip(agents.update("a1", patch)))._tag, "InvalidConfig", JSON.stringify(patch))
        }
        const after = yield* agents.get("a1")
        assert.deepStrictEqual([after.contextTokens, after.tools, after.maxTurns], [64_000, null, 7])
      }).pipe(Effect.provide(configTemp)))
  })

  describe(`SqliteUsageLog (${db.name})`, () => {
    it.effect("records every call and counts summary calls per session within a window", () =>
      Effect.gen(function*() {
        const usage = yield* UsageLog
        const entry = { providerId: "openai", model: "m", sessionKey: "s1", agentId: "a1" }
        yield* usage.record({ ...entry, purpose: "summary", usage: { ...emptyUsage, inputTokens: 100, outputTokens: 20 } })
        yield* usage.record({ ...entry, purpose: "summary", usage: emptyUsage, error: "HTTP 500" })
        yield* usage.record({ ...entry, purpose: "chat", usage: { ...emptyUsage, inputTokens: 7, outputTokens: 3 } })
        yield* usage.record({ ...entry, sessionKey: "s2", purpose: "summary", usage: emptyUsage })
        assert.strictEqual(yield* usage.summaryCallsSince("s1", 0), 2)
        assert.strictEqual(yield* usage.summaryCallsSince("s1", Date.now() + 60_000), 0)
        const totals = yield* usage.totals({ sessionKey: "s1" })
        assert.deepStrictEqual(
          totals.map((t) => [t.purpose, t.calls, t.failed, t.inputTokens, t.outputTokens]),
          [["chat", 1, 0, 7, 3], ["summary", 2, 1, 100, 20]]
        )
      }).pipe(Effect.provide(configTemp)))

    it.effect("records the user of a call and filters totals by user and agent", () =>
      Effect.gen(function*() {
        const usage = yield* UsageLog
        const call = (agentId: string, userId: string | undefined, inputTokens: number) =>
          usage.record({
            providerId: "p",
            model: "m",
            purpose: "chat",
            sessionKey: `${agentId}:cli:${userId ?? "-"}:main`,
            agentId,
            userId,
            usage: { ...emptyUsage, inputTokens }
          })
        yield* call("a1", "u1", 1)
        yield* call("a1", "u2", 10)
        yield* call("a2", "u1", 100)
        yield* call("a2", undefined, 1000)
        const input = (t: ReadonlyArray<{ inputTokens: number }>) => t.reduce((n, x) => n + x.inputTokens, 0)
        assert.strictEqual(input(yield* usage.totals({ userId: "u1" })), 101)
        assert.strictEqual(input(yield* usage.totals({ agentId: "a1" })), 11)
        assert.strictEqual(input(yield* usage.totals({ agentId: "a2", userId: "u1" })), 100)
        assert.strictEqual(input(yield* usage.totals({ userId: "" })), 1000)
        assert.strictEqual(input(yield* usage.totals()), 1111)
      }).pipe(Effect.provide(configTemp)))
  })
}
