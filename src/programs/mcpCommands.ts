/**
 * `anna mcp add|list|remove` (issue 14, the MCP client): the MCP servers an agent's `mcp` tool
 * reaches — stdio servers (`-- command…`), run inside the agent's sandbox, never on the host; remote
 * ones (`--url`, Streamable HTTP falling back to SSE, or `--transport sse`) with their headers,
 * which are secrets: stored, never printed. `list` connects to each server (stdio ones in a
 * sandbox of the agent) to say whether it answers and what tools it offers. And `anna mcp serve`
 * (./mcpServe.ts): anna's memory as an MCP server.
 */
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { Agent } from "../domain/config/agent.ts"
import { checkServer, type Header, maskHeaders, type McpServer, parseHeader } from "../domain/mcp/server.ts"
import * as SqliteMcpServers from "../layers/mcp/SqliteMcpServers.ts"
import * as McpProbeLayer from "../layers/mcp/McpProbe.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { McpProbe } from "../services/McpProbe.ts"
import { McpServers } from "../services/McpServers.ts"
import * as Layers from "./layers.ts"
import { mcpServeCommand } from "./mcpServe.ts"
import { printJson, table, usageError } from "./output.ts"

const DEFAULT_AGENT = "default"
const agentFlag = Flag.String("agent").pipe(Flag.withDescription(`The agent (default: ${DEFAULT_AGENT})`), Flag.withDefault(DEFAULT_AGENT))
const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const nameArg = Argument.String("name").pipe(Argument.withDescription("The server's name (a-z, 0-9, '_', '-'; at most 32)"))

/** The agent's settings; the default agent may have no row (anna's defaults then). */
const agentNamed = (id: string) =>
  Effect.flatMap(AgentStore, (store) => store.get(id)).pipe(
    Effect.map((a): Agent | undefined => a),
    Effect.catchTag("AgentNotFound", (e) => (id === DEFAULT_AGENT ? Effect.succeed(undefined) : Effect.fail(e)))
  )

const target = (s: McpServer) => (s.transport === "stdio" ? (s.command ?? []).join(" ") : (s.url ?? ""))

const add = Command.make("add", {
  name: nameArg,
  agent: agentFlag,
  url: Flag.String("url").pipe(Flag.withDescription("A remote server's URL (Streamable HTTP; SSE when it answers that with 4xx)"), Flag.optional),
  header: Flag.String("header").pipe(Flag.withDescription("NAME=VALUE sent to a remote server (repeatable; a secret, never printed)"), Flag.atLeast(0)),
  transport: Flag.Literals("transport", ["http", "sse"] as const).pipe(Flag.withDescription("Remote transport (default http)"), Flag.optional),
  json,
  command: Argument.String("command").pipe(Argument.withDescription("A stdio server: the command run in the agent's sandbox, after --"), Argument.variadic())
}, (f) =>
  Effect.gen(function*() {
    const path = ["anna", "mcp", "add"]
    const headers: Array<Header> = []
    for (const raw of f.header) {
      const h = parseHeader(raw)
      if ("problem" in h) return yield* usageError(path, h.problem)
      headers.push(h)
    }
    const checked = checkServer({ name: f.name, url: Option.getOrUndefined(f.url), transport: Option.getOrUndefined(f.transport), headers, command: f.command })
    if ("problem" in checked) return yield* usageError(path, checked.problem)
    const input = checked.input
    yield* agentNamed(f.agent)
    const server = yield* (yield* McpServers).add(f.agent, f.name, input)
    yield* f.json
      ? printJson({ ...server, headers: maskHeaders(server.headers) })
      : Console.log(`Added MCP server ${server.name} (${server.transport}: ${target(server)}) for agent ${server.agentId}.`)
  })).pipe(
    Command.withDescription("Add an MCP server for an agent: a stdio one (-- COMMAND…, run inside the agent's sandbox) or a remote one (--url)"),
    Command.withExamples([
      { command: "anna mcp add files -- node /workspace/.mcp/filesystem.mjs /workspace", description: "A stdio server, started in the sandbox" },
      { command: "anna mcp add search --url https://mcp.example.com/mcp --header 'Authorization=Bearer …'", description: "A remote server" }
    ])
  )

const list = Command.make("list", { agent: agentFlag, json }, (f) =>
  Effect.gen(function*() {
    const probed = yield* (yield* McpProbe).probe(f.agent)
    const rows = probed.map(({ server: s, answers, tools, error }) => ({
      name: s.name,
      agent: s.agentId,
      transport: s.transport,
      ...(s.transport === "stdio" ? { command: s.command ?? [] } : { url: s.url ?? "", headers: maskHeaders(s.headers) }),
      answers,
      tools,
      ...(error === undefined ? {} : { error })
    }))
    if (f.json) return yield* printJson(rows)
    if (rows.length === 0) return yield* Console.log(`Agent ${f.agent} has no MCP servers (anna mcp add).`)
    yield* Console.log(table(
      ["NAME", "TRANSPORT", "TARGET", "ANSWERS", "TOOLS"],
      probed.map(({ server: s, answers, tools, error }) => {
        const headers = Object.keys(s.headers).length === 0 ? "" : ` (headers: ${Object.keys(s.headers).join(", ")})`
        return [s.name, s.transport, `${target(s)}${headers}`, answers ? "yes" : `no: ${error ?? ""}`, tools.map((t) => t.name).join(", ") || "-"]
      })
    ))
  })).pipe(
    Command.withDescription("List an agent's MCP servers: each is connected to (stdio ones in the agent's sandbox) to show whether it answers and its tools")
  )

const remove = Command.make("remove", { name: nameArg, agent: agentFlag, json }, (f) =>
  Effect.gen(function*() {
    yield* (yield* McpServers).remove(f.agent, f.name)
    yield* f.json ? printJson({ name: f.name, agent: f.agent, removed: true }) : Console.log(`Removed MCP server ${f.name} of agent ${f.agent}.`)
  })).pipe(Command.withDescription("Remove an agent's MCP server"))

export const mcpCommand = Command.make("mcp").pipe(
  Command.withDescription("MCP: servers the agents use (add, list, remove), and anna's memory as an MCP server (serve)"),
  Command.withSubcommands([
    add.pipe(Command.provide(SqliteMcpServers.layer), Command.provide(Layers.Stores)),
    list.pipe(Command.provide(McpProbeLayer.layerWith(Layers.Sandbox).pipe(Layer.provideMerge(SqliteMcpServers.layer))), Command.provide(Layers.Stores)),
    remove.pipe(Command.provide(SqliteMcpServers.layer), Command.provide(Layers.Stores)),
    mcpServeCommand
  ])
)
