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

const pluginsTemp = SqlitePluginStore.layer.pipe(Layer.provideMerge(sqliteTemp))

const enabledMemory = Effect.gen(function*() {
  const store = yield* PluginStore
  return (yield* store.list).filter((p) => p.kind === "memory" && p.enabled).map((p) => p.id)
})

describe("SqlitePluginStore", () => {
  it.effect("lists the installed plugins with memory/lcm enabled by default", () =>
    Effect.gen(function*() {
      const store = yield* PluginStore
      assert.deepStrictEqual(yield* store.list, [
        { id: "memory/lcm", kind: "memory", enabled: true, config: {} },
        { id: "memory/simple", kind: "memory", enabled: false, config: {} }
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
      assert.deepStrictEqual([...e.known].sort(), ["memory/lcm", "memory/simple"])
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
