/**
 * The `mcp` tool (issue 14): one generic tool for every MCP server of the agent (`anna mcp add`),
 * as the original design has it — the servers' tools are never added as first-class tools, so the
 * tool list the model sees stays small; it asks for a tool's schema when it needs it.
 *
 * Actions: `list_servers` (name, transport, state), `list_tools` (a server's tools, one line each:
 * at most LIST_TOOLS_MAX by name, then how many more — `query` narrows by name or description, since
 * a server may advertise thousands), `describe` (one tool's JSON input schema), `call` (a tool with
 * arguments → its text; images described; an error result comes back as a ToolError). Every answer
 * is cut at the agent's `maxResultChars`, itself at most the loop's cap on any tool result
 * (MAX_TOOL_RESULT_CHARS). Offered when the agent's `tools` setting
 * allows `mcp`, the `mcp` plugin is on for the agent, and the agent has at least one server.
 *
 * Servers connect on first use, within the session runner's scope (sessionClients.ts): a stdio
 * server starts in the session's sandbox, never on the host; remote ones are the logged EX-009
 * exception.
 */
import { Effect, Layer, Schema } from "effect"
import type { McpFailure } from "../../domain/mcp/errors.ts"
import { formatCount } from "../../domain/text.ts"
import { MAX_TOOL_RESULT_CHARS, type Tool, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import { decodeCallResult, capText, oneLine, resultText } from "../mcp/render.ts"
import { DEFAULT_LIMITS, limitsFrom, type McpLimits, makeSessionClients, type SessionClients } from "../mcp/sessionClients.ts"
import * as SqliteMcpServers from "../mcp/SqliteMcpServers.ts"
import { McpServers } from "../../services/McpServers.ts"
import { PluginStore } from "../../services/PluginStore.ts"
import * as ToolCatalogLayer from "./ToolCatalog.ts"

export const TOOL_NAME = "mcp"

const ACTIONS = ["list_servers", "list_tools", "describe", "call"] as const

/** Tools `list_tools` shows (by name); past it, the count of the others and how to search them. */
export const LIST_TOOLS_MAX = 100
/** Tool names the "no tool …" error suggests. */
const SUGGEST_MAX = 20

const Input = Schema.Struct({
  action: Schema.Literals(ACTIONS).annotate({
    description: "list_servers: your MCP servers; list_tools: a server's tools; describe: one tool's input schema; call: run a tool."
  }),
  server: Schema.optionalKey(Schema.String.annotate({ description: "The server (list_tools, describe, call)." })),
  tool: Schema.optionalKey(Schema.String.annotate({ description: "The server's tool (describe, call)." })),
  query: Schema.optionalKey(
    Schema.String.annotate({ description: "list_tools: only the tools whose name or description contains this (any case)." })
  ),
  arguments: Schema.optionalKey(
    Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "The tool's arguments (call), as its schema (describe) says." })
  )
})
const decode = Schema.decodeUnknownEffect(Input)

const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })
const required = <A>(value: A | undefined, what: string, action: string) =>
  value === undefined ? Effect.fail(fail(`${action} needs "${what}"`)) : Effect.succeed(value)

interface Listed {
  readonly name: string
  readonly description?: string | undefined
}

const byName = (tools: ReadonlyArray<Listed>): Array<Listed> => [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

/** The tools matching `query` (name or description, any case), or all. */
const matching = (tools: ReadonlyArray<Listed>, query: string | undefined): Array<Listed> => {
  const q = (query ?? "").trim().toLowerCase()
  return q === "" ? [...tools] : tools.filter((t) => t.name.toLowerCase().includes(q) || (t.description ?? "").toLowerCase().includes(q))
}

/** A server's tools, LIST_TOOLS_MAX at most, one line each, and what was left out. */
const toolList = (server: string, tools: ReadonlyArray<Listed>, query: string | undefined): string => {
  const found = byName(matching(tools, query))
  const about = query === undefined || query.trim() === "" ? "" : ` matching "${query.trim()}"`
  if (found.length === 0) return tools.length === 0 ? `${server} offers no tools.` : `${server} has no tools${about} (of ${formatCount(tools.length)}).`
  const shown = found.slice(0, LIST_TOOLS_MAX)
  const lines = [`${server} tools${about} (use describe for a tool's arguments):`, ...shown.map((t) => `- ${t.name}: ${oneLine(t.description)}`)]
  if (found.length > shown.length) {
    lines.push(`… and ${formatCount(found.length - shown.length)} more (${formatCount(found.length)} in all); use list_tools with query to search them by name or description.`)
  }
  return lines.join("\n")
}

/** The "no tool" error: a few names (those sharing a word with the asked one first), never all of them. */
const noTool = (server: string, name: string, tools: ReadonlyArray<Listed>): string => {
  if (tools.length === 0) return `${server} has no tool "${name}"; it offers no tools`
  const words = name.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 2)
  const near = (t: Listed) => words.some((w) => t.name.toLowerCase().includes(w))
  const sorted = byName(tools)
  const names = [...sorted.filter(near), ...sorted.filter((t) => !near(t))].slice(0, SUGGEST_MAX).map((t) => t.name)
  const rest = tools.length - names.length
  return `${server} has no tool "${name}"; of its ${formatCount(tools.length)} tools: ${names.join(", ")}` +
    (rest > 0 ? `, … (list_tools with query finds the others)` : "")
}

export const mcpTool = (clients: SessionClients, configured: McpLimits): Tool => {
  // The loop cuts any tool result at MAX_TOOL_RESULT_CHARS: cutting here first keeps our own note.
  const limits = { ...configured, maxResultChars: Math.min(configured.maxResultChars, MAX_TOOL_RESULT_CHARS) }
  const listTools = (server: string) => clients.run(server, "tools/list", (c, signal) => c.listTools(undefined, { signal }))

  const run = (input: typeof Input.Type): Effect.Effect<string, ToolError | McpFailure> =>
    Effect.gen(function*() {
      switch (input.action) {
        case "list_servers": {
          const lines = yield* Effect.forEach(clients.servers, (s) =>
            Effect.map(clients.state(s.name), (state) =>
              `- ${s.name} (${s.transport}): ${typeof state === "string" ? state : `failed: ${state.failed}`}`))
          return `MCP servers:\n${lines.join("\n")}`
        }
        case "list_tools": {
          const server = yield* required(input.server, "server", "list_tools")
          const { tools } = yield* listTools(server)
          return capText(toolList(server, tools, input.query), limits.maxResultChars)
        }
        case "describe": {
          const server = yield* required(input.server, "server", "describe")
          const name = yield* required(input.tool, "tool", "describe")
          const { tools } = yield* listTools(server)
          const tool = tools.find((t) => t.name === name)
          if (tool === undefined) return yield* fail(noTool(server, name, tools))
          return capText(JSON.stringify({ name: tool.name, description: tool.description ?? "", inputSchema: tool.inputSchema }, null, 2), limits.maxResultChars)
        }
        case "call": {
          const server = yield* required(input.server, "server", "call")
          const name = yield* required(input.tool, "tool", "call")
          const raw = yield* clients.run(server, `the call of ${name}`, (c, signal) =>
            c.callTool({ name, arguments: input.arguments ?? {} }, undefined, {
              signal,
              // The deadline is ours (sessionClients.ts); the SDK's own is only a backstop.
              timeout: 24 * 60 * 60 * 1000
            }))
          const result = yield* decodeCallResult(raw).pipe(Effect.mapError((e) => fail(`${server} answered something that is not a tool result: ${e.message}`)))
          const text = capText(resultText(result), limits.maxResultChars)
          if (result.isError === true) return yield* fail(`${server}/${name} failed: ${text}`)
          return text === "" ? "(the tool returned nothing)" : text
        }
      }
    })

  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Use the tools of your MCP servers. list_servers shows them; list_tools shows a server's tools;",
        "describe gives one tool's input schema (ask before the first call of a tool); call runs it with",
        `arguments. Results are text (at most ${limits.maxResultChars} characters).`
      ].join(" "),
      inputSchema: inputSchemaOf(Input)
    },
    execute: (raw) =>
      decode(raw).pipe(
        Effect.mapError((e) => fail(`invalid input: ${e.message}`)),
        Effect.flatMap(run),
        Effect.catchTag("McpFailure", (e) => Effect.fail(fail(e.message)))
      )
  }
}

/** The source: the tool when the agent may use it and has servers; its clients live with the runner. */
export const makeLayer = (limits: McpLimits = DEFAULT_LIMITS) =>
  ToolCatalogLayer.register(Effect.gen(function*() {
    const store = yield* McpServers
    const plugins = yield* PluginStore
    return {
      id: TOOL_NAME,
      // A server added, changed or removed, or the plugin switched, gives the agent's sessions new runners.
      version: (agentId: string) =>
        Effect.all([plugins.enabledFor(TOOL_NAME, agentId), store.list(agentId)]).pipe(
          Effect.map(([on, servers]) => (on ? servers.map((s) => `${s.name}@${s.updatedAt}`).join(",") : "off")),
          Effect.orElseSucceed(() => "unreadable")
        ),
      tools: (session) =>
        Effect.gen(function*() {
          if (!session.enabled(TOOL_NAME)) return []
          if (!(yield* plugins.enabledFor(TOOL_NAME, session.agentId))) return []
          const servers = yield* store.list(session.agentId)
          if (servers.length === 0) return []
          const own = yield* limitsFrom(limits, yield* plugins.configFor(TOOL_NAME, session.agentId))
          return [mcpTool(yield* makeSessionClients(servers, session.sandbox, own), own)]
        }).pipe(
          Effect.catchTag("StorageError", (e) =>
            Effect.as(Effect.logWarning("the mcp tool is off for this session: its servers cannot be read").pipe(Effect.annotateLogs({ error: e.message })), []))
        )
    }
  })).pipe(Layer.provide(SqliteMcpServers.layer))

export const layer = makeLayer()
