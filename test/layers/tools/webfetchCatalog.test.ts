/**
 * webfetch is a plugin tool: through the real ToolCatalog and the real PluginStore in SQLite, a
 * session is offered it only when the plugin is on for its agent (the agent's own switch over the
 * global state) AND the agent's `tools` setting allows it; a session that was offered the tool before
 * the switch went off is refused on its next call.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as SqlitePluginStore from "../../../src/layers/config/SqlitePluginStore.ts"
import * as ToolCatalog from "../../../src/layers/tools/ToolCatalog.ts"
import * as WebFetchTool from "../../../src/layers/tools/webfetch.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import { ToolCatalog as Catalog, type ToolSession } from "../../../src/services/ToolCatalog.ts"
import { sqliteTemp } from "../../support/db.ts"

const stack = WebFetchTool.layer.pipe(
  Layer.provideMerge(ToolCatalog.layer),
  Layer.provideMerge(SqlitePluginStore.layer),
  Layer.provideMerge(sqliteTemp)
)

const session = (agentId: string, allowed: (name: string) => boolean = () => true): ToolSession => ({
  agentId,
  userId: "u1",
  sessionKey: `${agentId}:u1`,
  enabled: allowed,
  sandbox: Effect.die(new Error("webfetch never needs the sandbox"))
})

const offered = (s: ToolSession) =>
  Effect.flatMap(Catalog, (c) => c.tools(s)).pipe(Effect.map((tools) => tools.map((t) => t.definition.name)))

describe("webfetch as a plugin tool", () => {
  it.effect("is offered only when the plugin is on for the agent and its tools setting allows it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* PluginStore
      for (const id of ["a", "b"]) yield* sql`INSERT INTO agents (id, name, created_at, updated_at) VALUES (${id}, ${id}, 0, 0)`

      assert.deepStrictEqual(yield* offered(session("a")), ["webfetch"])
      assert.deepStrictEqual(yield* offered(session("a", (name) => name !== "webfetch")), [])

      yield* store.setFor("webfetch", "a", false)
      assert.deepStrictEqual(yield* offered(session("a")), [])
      assert.deepStrictEqual(yield* offered(session("b")), ["webfetch"])

      // globally off: b inherits it, a keeps its own (off) switch; then a's own switch on wins
      yield* store.disable("webfetch")
      assert.deepStrictEqual(yield* offered(session("b")), [])
      yield* store.setFor("webfetch", "a", true)
      assert.deepStrictEqual(yield* offered(session("a")), ["webfetch"])
      assert.deepStrictEqual(yield* offered(session("b")), [])
    }).pipe(Effect.provide(stack)))

  it.effect("a tool offered before the plugin went off refuses its next call", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* PluginStore
      yield* sql`INSERT INTO agents (id, name, created_at, updated_at) VALUES ('a', 'a', 0, 0)`
      const [tool] = yield* Effect.flatMap(Catalog, (c) => c.tools(session("a")))
      assert.isDefined(tool)
      if (tool === undefined) return
      yield* store.setFor("webfetch", "a", false)
      const e = yield* Effect.flip(tool.execute({ url: "http://example.com/" }, { agentId: "a", userId: "u1", sessionKey: "a:u1" }))
      assert.strictEqual(e.reason, "the webfetch plugin is disabled for this agent")
    }).pipe(Effect.provide(stack)))
})
