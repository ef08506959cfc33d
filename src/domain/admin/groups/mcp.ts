/**
 * `/api/mcp-servers/{agent}`: an agent's MCP servers as `anna mcp add|list|remove` manage them (admin
 * only: a server's command runs in the agent's sandbox for every user of it, a remote server is
 * reached by the gateway itself — the logged exception EX-009 — and its headers are secrets).
 *
 * - `GET /{agent}` lists them (header values masked, `***`); `?probe=true` also connects to each, as
 *   `anna mcp list` does, and says whether it answers and its tools (or why not).
 * - `POST /{agent}` adds one: `{name, command: [...]}` (stdio, run in the agent's sandbox) or
 *   `{name, url, headers?, transport?}` (remote, Streamable HTTP falling back to SSE, or `sse`).
 * - `DELETE /{agent}/{name}` removes one; `POST /{agent}/{name}/test` connects to it and lists its tools.
 *
 * The agent `default` may have no row (anna's defaults), as in the CLI.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const McpToolView = Schema.Struct({ name: Schema.String, description: Schema.String })

export const McpProbeView = Schema.Struct({
  answers: Schema.Boolean,
  tools: Schema.Array(McpToolView),
  /** Why it does not answer. */
  error: Schema.NullOr(Schema.String)
})

export const McpServerView = Schema.Struct({
  name: Schema.String,
  agent: Schema.String,
  transport: Schema.Literals(["stdio", "http", "sse"]),
  /** stdio: the command and its arguments. */
  command: Schema.NullOr(Schema.Array(Schema.String)),
  /** Remote: the URL. */
  url: Schema.NullOr(Schema.String),
  /** Remote: the header names, each value `***` (write-only). */
  headers: Schema.Record(Schema.String, Schema.String),
  createdAt: Schema.Number,
  /** With `probe=true` (and from `test`): whether it answered. */
  probe: Schema.NullOr(McpProbeView)
})

export const NewMcpServer = Schema.Struct({
  name: Schema.String,
  /** A stdio server: the command and its arguments. */
  command: Schema.optionalKey(Schema.Array(Schema.String)),
  /** A remote server: http(s), without credentials in it (give them as headers). */
  url: Schema.optionalKey(Schema.String),
  /** Sent with every request to a remote server: secrets, stored and never shown again. */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  transport: Schema.optionalKey(Schema.Literals(["http", "sse"]))
})

const agent = { agent: Schema.String }
const server = { agent: Schema.String, name: Schema.String }

export class McpGroup extends HttpApiGroup.make("mcp")
  .add(
    HttpApiEndpoint.get("list", "/:agent", {
      params: agent,
      query: { probe: Schema.optional(Schema.Literals(["true", "false"])) },
      success: Schema.Array(McpServerView),
      error: CommonErrors
    }),
    HttpApiEndpoint.post("add", "/:agent", { params: agent, payload: NewMcpServer, success: McpServerView, error: CommonErrors }),
    HttpApiEndpoint.delete("remove", "/:agent/:name", { params: server, error: CommonErrors }),
    HttpApiEndpoint.post("test", "/:agent/:name/test", { params: server, success: McpServerView, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/mcp-servers")
{}
