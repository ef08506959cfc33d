/** Failures of the MCP client a caller can act on (issue 14). */
import { Schema } from "effect"

export class McpServerNotFound extends Schema.TaggedError<McpServerNotFound>()("McpServerNotFound", {
  agentId: Schema.String,
  name: Schema.String
}) {
  override get message() {
    return `agent ${this.agentId} has no MCP server "${this.name}" (see: anna mcp list --agent ${this.agentId})`
  }
}

export class McpServerExists extends Schema.TaggedError<McpServerExists>()("McpServerExists", {
  agentId: Schema.String,
  name: Schema.String
}) {
  override get message() {
    return `agent ${this.agentId} already has an MCP server "${this.name}" (remove it first: anna mcp remove ${this.name} --agent ${this.agentId})`
  }
}

/** Connecting to, or talking with, a server failed; `reason` says how, in words for the model or the operator. */
export class McpFailure extends Schema.TaggedError<McpFailure>()("McpFailure", {
  server: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `MCP server ${this.server}: ${this.reason}`
  }
}
