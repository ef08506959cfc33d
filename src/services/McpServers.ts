/**
 * McpServers — the MCP servers each agent's `mcp` tool may reach (table `mcp_servers`, issue 14).
 * Owns the rows: one server per (agent, name), a stdio command or a remote URL with its headers.
 * Does not own connecting (src/layers/mcp/connect.ts) nor whether the `mcp` plugin is on
 * (PluginStore). A change bumps the configuration version, so sessions see it from their next runner.
 *
 * Layers: `SqliteMcpServers.layer` (src/layers/mcp/SqliteMcpServers.ts).
 */
import { Context, type Effect } from "effect"
import type { McpServerExists, McpServerNotFound } from "../domain/mcp/errors.ts"
import type { McpServer, McpServerInput } from "../domain/mcp/server.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export class McpServers extends Context.Service<McpServers, {
  /** The agent's servers, by name. */
  readonly list: (agentId: string) => Effect.Effect<ReadonlyArray<McpServer>, StorageError>
  readonly add: (agentId: string, name: string, input: McpServerInput) => Effect.Effect<McpServer, McpServerExists | StorageError>
  readonly remove: (agentId: string, name: string) => Effect.Effect<void, McpServerNotFound | StorageError>
}>()("anna/McpServers") {}
