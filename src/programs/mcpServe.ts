/**
 * `anna mcp serve --user U [--agent A]` (issue 14): anna's memory as an MCP server on stdio, so other
 * agents and editors (Claude Desktop, IDEs, any MCP client) can search and open one user's
 * conversations: tools `status`, `search`, `describe`, `expand`, scoped to that user's sessions (and
 * to agent A's, with --agent); nothing outside is reachable (src/layers/mcp/memoryServer.ts).
 *
 * Read-only, and safe next to a running gateway (SQLite in WAL mode). stdout carries only the
 * protocol: a bad --user or --agent is one line on stderr and exit code 2, before anything is served.
 */
import { Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import * as MemoryServer from "../layers/mcp/memoryServer.ts"
import { serveStdio } from "../layers/mcp/memoryServerStdio.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { VERSION } from "./cli.ts"
import { Memory } from "./layers.ts"
import { usageError } from "./output.ts"

const PATH = ["anna", "mcp", "serve"]

const CLIENT_CONFIG = JSON.stringify({ mcpServers: { anna: { command: "anna", args: ["mcp", "serve", "--user", "alice"] } } })

export const mcpServeCommand = Command.make("serve", {
  user: Flag.String("user").pipe(Flag.withDescription("The anna user whose sessions are served (anna user list)")),
  agent: Flag.String("agent").pipe(Flag.withDescription("Only the user's sessions with this agent"), Flag.optional)
}, (f) =>
  Effect.gen(function*() {
    const user = yield* (yield* ConfigStore).getUser(f.user)
    if (Option.isNone(user)) return yield* usageError(PATH, `no user "${f.user}" (see: anna user list)`)
    const agentId = Option.getOrUndefined(f.agent)
    if (agentId !== undefined) {
      // An agent that exists, or one the user has sessions with (kept after the agent was removed).
      const known = yield* (yield* AgentStore).get(agentId).pipe(
        Effect.as(true),
        Effect.catchTag("AgentNotFound", () => Effect.succeed(false))
      )
      const sessions = known ? [] : yield* (yield* MemoryStore).listConversations({ userId: f.user, agentId, limit: 1 })
      if (!known && sessions.length === 0) return yield* usageError(PATH, `no agent "${agentId}" (see: anna agent list)`)
    }
    const server = yield* MemoryServer.make({ userId: user.value.id, agentId })
    yield* serveStdio(server, { name: "anna-memory", version: VERSION })
  })).pipe(
    Command.withDescription(
      `Serve one user's memory (status, search, describe, expand; read-only) to MCP clients over stdio, e.g. an editor or another agent. Client configuration: ${CLIENT_CONFIG}`
    ),
    Command.withExamples([
      { command: "anna mcp serve --user alice", description: "alice's sessions with every agent" },
      { command: "anna mcp serve --user alice --agent coder", description: "only alice's sessions with the agent coder" }
    ]),
    Command.provide(Memory)
  )
