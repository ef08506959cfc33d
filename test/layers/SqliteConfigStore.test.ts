import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { emptyUsage, type ProviderConfig } from "../../src/domain/model/types.ts"
import * as SqliteConfigStore from "../../src/layers/SqliteConfigStore.ts"
import { AgentStore } from "../../src/services/AgentStore.ts"
import { ProviderStore } from "../../src/services/ProviderStore.ts"
import { UsageLog } from "../../src/services/UsageLog.ts"
import { sqliteTemp } from "../support/db.ts"

const configTemp = SqliteConfigStore.layer.pipe(Layer.provideMerge(sqliteTemp))

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

describe("SqliteConfigStore: providers", () => {
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

describe("SqliteConfigStore: agents", () => {
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

describe("SqliteConfigStore: usage", () => {
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
})
