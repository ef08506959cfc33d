/**
 * The MCP server store on a real SQLite file and on PostgreSQL (issue 26): add (both kinds), list per agent, one name per agent,
 * remove; every change bumps the configuration version (so a running gateway sees it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import * as SqliteMcpServers from "../../../src/layers/mcp/SqliteMcpServers.ts"
import { McpServers } from "../../../src/services/McpServers.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const version = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ version: number }>`SELECT version FROM config_version WHERE id = 1`
  return rows[0]?.version ?? -1
})

for (const db of testDatabases(sqliteTemp)) {
  describe(`SqliteMcpServers (${db.name})`, () => {
    it.effect("adds, lists per agent, refuses a second server of one name, removes; each change bumps the config version", () =>
      Effect.gen(function*() {
        const store = yield* McpServers
        const v0 = yield* version
        const files = yield* store.add("a1", "files", { transport: "stdio", command: ["node", "/workspace/fs.mjs", "/workspace"] })
        assert.deepInclude(files, { agentId: "a1", name: "files", transport: "stdio", command: ["node", "/workspace/fs.mjs", "/workspace"], url: undefined, headers: {} })
        yield* store.add("a1", "web", { transport: "sse", url: "https://example.com/sse", headers: { Authorization: "Bearer x" } })
        yield* store.add("a2", "files", { transport: "stdio", command: ["other"] })
        const v1 = yield* version
        assert.strictEqual(v1, v0 + 3)

        const a1 = yield* store.list("a1")
        assert.deepStrictEqual(a1.map((s) => [s.name, s.transport, s.url ?? null]), [["files", "stdio", null], ["web", "sse", "https://example.com/sse"]])
        assert.deepStrictEqual(a1[1]?.headers, { Authorization: "Bearer x" })
        assert.deepStrictEqual((yield* store.list("a2")).map((s) => s.command), [["other"]])
        assert.deepStrictEqual(yield* store.list("nobody"), [])

        const dup = yield* Effect.flip(store.add("a1", "files", { transport: "stdio", command: ["x"] }))
        assert.strictEqual(dup._tag, "McpServerExists")
        assert.strictEqual(yield* version, v1, "a refused add changes nothing")

        yield* store.remove("a1", "files")
        assert.strictEqual(yield* version, v1 + 1)
        assert.deepStrictEqual((yield* store.list("a1")).map((s) => s.name), ["web"])
        const missing = yield* Effect.exit(store.remove("a1", "files"))
        assert.isTrue(Exit.isFailure(missing))
        assert.include(JSON.stringify(missing), "McpServerNotFound")
      }).pipe(Effect.provide(SqliteMcpServers.layer), Effect.provide(db.layer)))

    it.effect("the table refuses a stdio row without a command or with a URL", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const insert = (command: string | null, url: string | null) =>
          Effect.exit(sql`INSERT INTO mcp_servers (agent_id, name, transport, command, url, created_at, updated_at) VALUES ('a', ${`n${Math.random()}`}, 'stdio', ${command}, ${url}, 0, 0)`)
        assert.isTrue(Exit.isFailure(yield* insert(null, null)))
        assert.isTrue(Exit.isFailure(yield* insert("[\"x\"]", "http://x")))
        assert.isTrue(Exit.isSuccess(yield* insert("[\"x\"]", null)))
      }).pipe(Effect.provide(db.layer)))
  })
}
