/** McpServers on the `mcp_servers` table; rows are decoded with Schema (the JSON columns included). */
import { Clock, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { McpServerExists, McpServerNotFound } from "../../domain/mcp/errors.ts"
import { CommandJson, HeadersJson, type McpServer, type McpServerInput, TRANSPORTS } from "../../domain/mcp/server.ts"
import { McpServers } from "../../services/McpServers.ts"
import { storageError } from "../sql/errors.ts"

const Row = Schema.Struct({
  agent_id: Schema.String,
  name: Schema.String,
  transport: Schema.Literals(TRANSPORTS),
  command: Schema.NullOr(CommandJson),
  url: Schema.NullOr(Schema.String),
  headers: HeadersJson,
  created_at: Schema.Number,
  updated_at: Schema.Number
})
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))

const toServer = (r: typeof Row.Type): McpServer => ({
  agentId: r.agent_id,
  name: r.name,
  transport: r.transport,
  command: r.command ?? undefined,
  url: r.url ?? undefined,
  headers: r.headers,
  createdAt: r.created_at,
  updatedAt: r.updated_at
})

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const select = (agentId: string, name?: string) =>
    (name === undefined
      ? sql`SELECT * FROM mcp_servers WHERE agent_id = ${agentId} ORDER BY name`
      : sql`SELECT * FROM mcp_servers WHERE agent_id = ${agentId} AND name = ${name}`).pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => rows.map(toServer))
      )

  const list = Effect.fn("McpServers.list")(function*(agentId: string) {
    return yield* select(agentId)
  }, Effect.mapError(storageError("list MCP servers")))

  const add = Effect.fn("McpServers.add")(function*(agentId: string, name: string, input: McpServerInput) {
    const now = yield* Clock.currentTimeMillis
    const inserted = yield* sql`INSERT INTO mcp_servers ${
      sql.insert({
        agent_id: agentId,
        name,
        transport: input.transport,
        command: input.transport === "stdio" ? JSON.stringify(input.command) : null,
        url: input.transport === "stdio" ? null : input.url,
        headers: JSON.stringify(input.transport === "stdio" ? {} : input.headers),
        created_at: now,
        updated_at: now
      })
    } ON CONFLICT (agent_id, name) DO NOTHING RETURNING name`.pipe(Effect.mapError(storageError("add MCP server")))
    if (inserted.length === 0) return yield* new McpServerExists({ agentId, name })
    const [server] = yield* select(agentId, name).pipe(Effect.mapError(storageError("add MCP server")))
    if (server === undefined) return yield* Effect.die(new Error("the MCP server just added is gone"))
    return server
  })

  const remove = Effect.fn("McpServers.remove")(function*(agentId: string, name: string) {
    const gone = yield* sql`DELETE FROM mcp_servers WHERE agent_id = ${agentId} AND name = ${name} RETURNING name`.pipe(
      Effect.mapError(storageError("remove MCP server"))
    )
    if (gone.length === 0) return yield* new McpServerNotFound({ agentId, name })
  })

  return McpServers.of({ list, add, remove })
})

export const layer = Layer.effect(McpServers, make)
