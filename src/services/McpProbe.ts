/**
 * McpProbe — asks an agent's MCP servers whether they answer and which tools they offer: `anna mcp
 * list` and the admin API's listing and "test". A stdio server is started in a throwaway sandbox of
 * the agent (its shared workspace, the agent's image, network and limits: never on the host), which is
 * removed when the probe ends; a remote one is reached by the gateway itself (the logged EX-009
 * path). Each server gets at most 20 s to start and 20 s to list its tools; a server that does not
 * is reported with the reason, never as a failure of the probe.
 *
 * Owns connecting for a look; not the servers' rows (McpServers) nor the sessions' connections
 * (src/layers/mcp/sessionClients.ts, which it reuses).
 *
 * Layers: `McpProbe.layer` (the deployment's Sandbox, when it has one) and `McpProbe.layerWith(sandbox)`
 * (a sandbox layer built only when a stdio server is asked: the CLI), src/layers/mcp/McpProbe.ts.
 */
import { Context, type Effect } from "effect"
import type { AgentNotFound } from "../domain/config/errors.ts"
import type { McpServerNotFound } from "../domain/mcp/errors.ts"
import type { McpServer } from "../domain/mcp/server.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export interface ServerProbe {
  readonly server: McpServer
  readonly answers: boolean
  /** Its tools, by name, with the first line of each description. */
  readonly tools: ReadonlyArray<{ readonly name: string; readonly description: string }>
  /** Why it does not answer. */
  readonly error?: string | undefined
}

export class McpProbe extends Context.Service<McpProbe, {
  /** Each of the agent's servers (or only `name`), asked; the agent `default` may have no row. */
  readonly probe: (agentId: string, name?: string) => Effect.Effect<ReadonlyArray<ServerProbe>, AgentNotFound | McpServerNotFound | StorageError>
}>()("anna/McpProbe") {}
