import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as MemoryFromPlugins from "../../../src/layers/memory/MemoryFromPlugins.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import * as SqlitePluginStore from "../../../src/layers/config/SqlitePluginStore.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { sqliteTemp, tempDbFile } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const enabledMemory = Effect.gen(function*() {
  const store = yield* PluginStore
  return (yield* store.list).filter((p) => p.kind === "memory" && p.enabled).map((p) => p.id)
})

for (const db of testDatabases(sqliteTemp)) {
  const pluginsTemp = SqlitePluginStore.layer.pipe(Layer.provideMerge(db.layer))

  describe(`SqlitePluginStore (${db.name})`, () => {
    it.effect("lists the installed plugins with memory/lcm enabled by default", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        assert.deepStrictEqual(yield* store.list, [
          { id: "learning", kind: "learning", enabled: true, config: {} },
          { id: "memory/lcm", kind: "memory", enabled: true, config: {} },
          { id: "memory/simple", kind: "memory", enabled: false, config: {} },
          { id: "mcp", kind: "tool", enabled: true, config: {} },
          { id: "webfetch", kind: "tool", enabled: true, config: {} }
        ])
        assert.strictEqual(yield* store.enabledMemory, "memory/lcm")
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("enabling memory/simple disables memory/lcm, and back", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        assert.deepStrictEqual(yield* store.enable("memory/simple"), { enabled: ["memory/simple"], disabled: ["memory/lcm"] })
        assert.deepStrictEqual(yield* enabledMemory, ["memory/simple"])
        assert.strictEqual(yield* store.enabledMemory, "memory/simple")
        // enabling what is already enabled changes nothing
        assert.deepStrictEqual(yield* store.enable("memory/simple"), { enabled: [], disabled: [] })
        assert.deepStrictEqual(yield* store.enable("memory/lcm"), { enabled: ["memory/lcm"], disabled: ["memory/simple"] })
        assert.deepStrictEqual(yield* enabledMemory, ["memory/lcm"])
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("disabling memory/lcm switches to memory/simple, and back", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        assert.deepStrictEqual(yield* store.disable("memory/lcm"), { enabled: ["memory/simple"], disabled: ["memory/lcm"] })
        assert.deepStrictEqual(yield* enabledMemory, ["memory/simple"])
        // disabling what is already disabled changes nothing
        assert.deepStrictEqual(yield* store.disable("memory/lcm"), { enabled: [], disabled: [] })
        assert.deepStrictEqual(yield* store.disable("memory/simple"), { enabled: ["memory/lcm"], disabled: ["memory/simple"] })
        assert.deepStrictEqual(yield* enabledMemory, ["memory/lcm"])
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("keeps exactly one memory plugin enabled after any sequence of changes", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        const ids = ["memory/lcm", "memory/simple"] as const
        // a fixed pseudo-random sequence (LCG) of 200 operations
        let seed = 12345
        const next = () => {
          seed = (seed * 1103515245 + 12345) % 2147483648
          return seed
        }
        for (let i = 0; i < 200; i++) {
          const id = ids[next() % 2] ?? "memory/lcm"
          const op = next() % 2 === 0 ? store.enable(id) : store.disable(id)
          yield* op
          const on = yield* enabledMemory
          assert.strictEqual(on.length, 1, `after step ${i}: ${on.join(", ")}`)
          assert.strictEqual(yield* store.enabledMemory, on[0])
        }
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("fails with PluginNotFound for an unknown id", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        const e = yield* store.enable("memory/nope").pipe(Effect.flip)
        assert.strictEqual(e._tag, "PluginNotFound")
        if (e._tag !== "PluginNotFound") return
        assert.strictEqual(e.id, "memory/nope")
        assert.deepStrictEqual([...e.known].sort(), ["learning", "mcp", "memory/lcm", "memory/simple", "webfetch"])
        assert.include(e.message, "memory/nope")
        const d = yield* store.disable("").pipe(Effect.flip)
        assert.strictEqual(d._tag, "PluginNotFound")
        assert.deepStrictEqual(yield* enabledMemory, ["memory/lcm"])
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("refuses to disable the memory plugin when the replacement is ambiguous, and rolls back", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* PluginStore
        yield* sql`INSERT INTO plugins (id, kind, enabled, updated_at) VALUES ('memory/other', 'memory', 0, 0)`
        const e = yield* store.disable("memory/lcm").pipe(Effect.flip)
        assert.strictEqual(e._tag, "PluginRuleViolation")
        assert.include(e.message, "memory/simple")
        assert.include(e.message, "memory/other")
        // the UPDATE that ran before the failure was rolled back
        assert.deepStrictEqual(yield* enabledMemory, ["memory/lcm"])
        // enabling one of three still leaves exactly one
        yield* store.enable("memory/other")
        assert.deepStrictEqual(yield* enabledMemory, ["memory/other"])
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("leaves memory plugins alone when toggling a plugin of another kind", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* PluginStore
        yield* sql`INSERT INTO plugins (id, kind, enabled, config, updated_at) VALUES ('tool/webfetch', 'tool', 0, '{"timeout":5}', 0)`
        assert.deepStrictEqual(yield* store.enable("tool/webfetch"), { enabled: ["tool/webfetch"], disabled: [] })
        assert.deepStrictEqual(yield* store.disable("tool/webfetch"), { enabled: [], disabled: ["tool/webfetch"] })
        assert.deepStrictEqual(yield* enabledMemory, ["memory/lcm"])
        const webfetch = (yield* store.list).find((p) => p.id === "tool/webfetch")
        assert.deepStrictEqual(webfetch, { id: "tool/webfetch", kind: "tool", enabled: false, config: { timeout: 5 } })
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("falls back to memory/lcm when the table has no enabled memory plugin", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* PluginStore
        yield* sql`UPDATE plugins SET enabled = 0`
        assert.strictEqual(yield* store.enabledMemory, "memory/lcm")
      }).pipe(Effect.provide(pluginsTemp)))
  })

  describe(`SqlitePluginStore per agent (${db.name})`, () => {
    const addAgents = (...ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        for (const id of ids) yield* sql`INSERT INTO agents (id, name, created_at, updated_at) VALUES (${id}, ${id}, 0, 0)`
      })

    it.effect("the agent's own switch wins over the global state, whatever the order of changes (model check)", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        yield* addAgents("a", "b")
        const agents = ["a", "b"] as const
        const plugins = ["mcp", "webfetch"] as const
        const global = new Map<string, boolean>([["mcp", true], ["webfetch", true]])
        const own = new Map<string, boolean | undefined>()
        let seed = 987654
        const next = (n: number) => {
          seed = (seed * 1103515245 + 12345) % 2147483648
          return seed % n
        }
        for (let i = 0; i < 300; i++) {
          const plugin = plugins[next(2)] ?? "mcp"
          const agent = agents[next(2)] ?? "a"
          const op = next(5)
          if (op < 2) {
            yield* op === 0 ? store.enable(plugin) : store.disable(plugin)
            global.set(plugin, op === 0)
          } else {
            const value = op === 2 ? true : op === 3 ? false : undefined
            const before = own.get(`${agent}/${plugin}`) ?? global.get(plugin)
            const change = yield* store.setFor(plugin, agent, value)
            own.set(`${agent}/${plugin}`, value)
            const after = value ?? global.get(plugin)
            assert.deepStrictEqual(change, {
              enabled: !before && after ? [plugin] : [],
              disabled: before && !after ? [plugin] : []
            }, `step ${i}`)
          }
          for (const a of agents) {
            const view = yield* store.listFor(a)
            for (const p of plugins) {
              const mine = own.get(`${a}/${p}`)
              const expected = mine ?? global.get(p)
              assert.strictEqual(yield* store.enabledFor(p, a), expected, `step ${i}: ${p} for ${a}`)
              const row = view.find((x) => x.id === p)
              assert.strictEqual(row?.enabled, expected)
              assert.strictEqual(row?.source, mine === undefined ? "global" : "agent")
            }
          }
          // the memory plugins are never switched per agent
          assert.deepStrictEqual((yield* store.listFor("a")).filter((p) => p.kind === "memory").map((p) => p.enabled), [true, false])
        }
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("merges the agent's configuration over the global one, key by key", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        yield* addAgents("a", "b")
        assert.deepStrictEqual(yield* store.configure("webfetch", undefined, { set: { allow_private: false, x: 1 }, unset: [] }), { allow_private: false, x: 1 })
        assert.deepStrictEqual(yield* store.configure("webfetch", "a", { set: { allow_private: true, hosts: ["h"] }, unset: [] }), { allow_private: true, hosts: ["h"] })
        assert.deepStrictEqual(yield* store.configFor("webfetch", "a"), { allow_private: true, x: 1, hosts: ["h"] })
        assert.deepStrictEqual(yield* store.configFor("webfetch", "b"), { allow_private: false, x: 1 })
        // a configuration row does not switch the plugin for the agent
        assert.strictEqual((yield* store.listFor("a")).find((p) => p.id === "webfetch")?.source, "global")
        assert.deepStrictEqual(yield* store.configure("webfetch", "a", { set: {}, unset: ["allow_private"] }), { hosts: ["h"] })
        assert.deepStrictEqual(yield* store.configFor("webfetch", "a"), { allow_private: false, x: 1, hosts: ["h"] })
        // switching keeps the configuration
        yield* store.setFor("webfetch", "a", false)
        assert.deepStrictEqual(yield* store.configFor("webfetch", "a"), { allow_private: false, x: 1, hosts: ["h"] })
        assert.deepStrictEqual((yield* store.list).find((p) => p.id === "webfetch")?.config, { allow_private: false, x: 1 })
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("refuses memory plugins per agent, unknown agents and unknown plugins on writes", () =>
      Effect.gen(function*() {
        const store = yield* PluginStore
        yield* addAgents("a")
        const memory = yield* Effect.flip(store.setFor("memory/simple", "a", true))
        assert.strictEqual(memory._tag, "PluginRuleViolation")
        assert.include(memory.message, "memory plugins are switched for every agent at once")
        assert.strictEqual((yield* Effect.flip(store.setFor("webfetch", "ghost", true)))._tag, "AgentNotFound")
        assert.strictEqual((yield* Effect.flip(store.configure("webfetch", "ghost", { set: { a: 1 }, unset: [] })))._tag, "AgentNotFound")
        assert.strictEqual((yield* Effect.flip(store.listFor("ghost")))._tag, "AgentNotFound")
        assert.strictEqual((yield* Effect.flip(store.setFor("nope", "a", true)))._tag, "PluginNotFound")
        assert.strictEqual(yield* store.enabledFor("nope", "a"), false)
        assert.strictEqual(yield* store.enabledMemory, "memory/lcm")
      }).pipe(Effect.provide(pluginsTemp)))

    it.effect("a stored configuration that is not a JSON object is a StorageError", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* PluginStore
        yield* addAgents("a")
        yield* sql`INSERT INTO agent_plugins (agent_id, plugin_id, enabled, config, updated_at) VALUES ('a', 'webfetch', 1, '[1,2]', 0)`
        assert.strictEqual((yield* Effect.flip(store.configFor("webfetch", "a")))._tag, "StorageError")
      }).pipe(Effect.provide(pluginsTemp)))
  })
}

describe("MemoryFromPlugins", () => {
  const memoryOn = (file: string) =>
    MemoryFromPlugins.layer.pipe(Layer.provide(DeterministicSummarizer.layer), Layer.provideMerge(SqlitePluginStore.layer), Layer.provideMerge(Sqlite.layer(file)))

  it.effect("builds the memory layer of the enabled plugin", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const probe = Effect.gen(function*() {
        const memory = yield* MemoryProvider
        return {
          name: memory.name,
          compactor: Option.isSome(yield* Effect.serviceOption(Compactor)),
          searcher: Option.isSome(yield* Effect.serviceOption(Searcher))
        }
      })
      assert.deepStrictEqual(yield* probe.pipe(Effect.provide(memoryOn(file))), {
        name: "memory/lcm",
        compactor: true,
        searcher: true
      })
      yield* Effect.flatMap(PluginStore, (s) => s.enable("memory/simple")).pipe(Effect.provide(memoryOn(file)))
      assert.deepStrictEqual(yield* probe.pipe(Effect.provide(memoryOn(file))), {
        name: "memory/simple",
        compactor: true,
        searcher: false
      })
      yield* Effect.flatMap(PluginStore, (s) => s.disable("memory/simple")).pipe(Effect.provide(memoryOn(file)))
      assert.strictEqual((yield* probe.pipe(Effect.provide(memoryOn(file)))).name, "memory/lcm")
    }))
})
