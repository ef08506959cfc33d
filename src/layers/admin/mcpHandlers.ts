/**
 * `/api/mcp-servers` handlers: `anna mcp add|list|remove` over the same services (McpServers, and
 * McpProbe for `anna mcp list`'s connecting), with the CLI's checks (src/domain/mcp/server.ts's
 * `checkServer`). Header values never leave: every answer shows them masked.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { BadRequest } from "../../domain/admin/security.ts"
import type { Agent } from "../../domain/config/agent.ts"
import { checkServer, maskHeaders, type McpServer } from "../../domain/mcp/server.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { McpProbe, type ServerProbe } from "../../services/McpProbe.ts"
import { McpServers } from "../../services/McpServers.ts"
import { answer } from "./errors.ts"

/** The agent the CLI serves without a row (anna's defaults). */
const DEFAULT_AGENT = "default"

const view = (s: McpServer, probe?: ServerProbe) => ({
  name: s.name,
  agent: s.agentId,
  transport: s.transport,
  command: s.transport === "stdio" ? (s.command ?? []) : null,
  url: s.transport === "stdio" ? null : (s.url ?? ""),
  headers: maskHeaders(s.headers),
  createdAt: s.createdAt,
  probe: probe === undefined ? null : { answers: probe.answers, tools: probe.tools, error: probe.error ?? null }
})

/** The CLI's words (`--url`, `--header`) as the API's fields. */
const fieldWords = (problem: string) => problem.replace(/--(url|header|transport)\b/g, "$1").replace("-- COMMAND…", "command")

export const layer = HttpApiBuilder.group(AdminApi, "mcp", Effect.fn(function*(handlers) {
  const servers = yield* McpServers
  const probe = yield* McpProbe
  const agents = yield* AgentStore

  /** The agent must exist (`default` may be anna's defaults without a row). */
  const known = (id: string) =>
    agents.get(id).pipe(
      Effect.map((a): Agent | undefined => a),
      Effect.catchTag("AgentNotFound", (e) => (id === DEFAULT_AGENT ? Effect.succeed(undefined) : Effect.fail(e)))
    )

  return handlers
    .handle("list", ({ params, query }) =>
      answer(Effect.gen(function*() {
        yield* known(params.agent)
        if (query.probe === "true") return (yield* probe.probe(params.agent)).map((p) => view(p.server, p))
        return (yield* servers.list(params.agent)).map((s) => view(s))
      })))
    .handle("add", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        const checked = checkServer({
          name: payload.name,
          url: payload.url,
          transport: payload.transport,
          headers: Object.entries(payload.headers ?? {}).map(([name, value]) => ({ name, value })),
          command: payload.command ?? []
        })
        if ("problem" in checked) return yield* BadRequest.of(fieldWords(checked.problem))
        yield* known(params.agent)
        return view(yield* servers.add(params.agent, payload.name, checked.input))
      })))
    .handle("remove", ({ params }) => answer(Effect.andThen(known(params.agent), servers.remove(params.agent, params.name))))
    .handle("test", ({ params }) =>
      answer(Effect.gen(function*() {
        yield* known(params.agent)
        const [p] = yield* probe.probe(params.agent, params.name)
        if (p === undefined) return yield* Effect.die(new Error("the probe of one server answered none"))
        return view(p.server, p)
      })))
}))
