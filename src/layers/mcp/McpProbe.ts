/**
 * McpProbe over the agent's servers (McpServers) and the sessions' MCP clients: what `anna mcp list`
 * did in its own code before the admin API needed the same answer. The sandbox is started only when
 * a stdio server is asked, and removed when the probe ends; remote-only or empty probes never touch it.
 */
import { Context, Duration, Effect, Layer, Option, Scope } from "effect"
import type { Agent } from "../../domain/config/agent.ts"
import { McpServerNotFound } from "../../domain/mcp/errors.ts"
import { SandboxFailure } from "../../domain/sandbox/errors.ts"
import { specFor } from "../../domain/sandbox/spec.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { AppConfig } from "../../services/AppConfig.ts"
import { McpProbe } from "../../services/McpProbe.ts"
import { McpServers } from "../../services/McpServers.ts"
import { Sandbox } from "../../services/Sandbox.ts"
import { oneLine } from "./render.ts"
import { DEFAULT_LIMITS, makeSessionClients } from "./sessionClients.ts"

/** The agent with no row that `anna mcp add` without `--agent` still serves (anna's defaults). */
const DEFAULT_AGENT = "default"
const PROBE_LIMITS = { ...DEFAULT_LIMITS, connectTimeout: Duration.seconds(20), callTimeout: Duration.seconds(20) }

/** `sandbox`: the Sandbox to start stdio servers in (none: they are reported as not answering, and why). */
export const make = (sandbox: Effect.Effect<Option.Option<Sandbox["Service"]>, never, Scope.Scope>) =>
  Effect.gen(function*() {
    const agents = yield* AgentStore
    const servers = yield* McpServers
    const workspaces = (yield* AppConfig).workspaces

    const probe = Effect.fn("McpProbe.probe")(function*(agentId: string, name?: string) {
      const agent = yield* agents.get(agentId).pipe(
        Effect.map((a): Agent | undefined => a),
        Effect.catchTag("AgentNotFound", (e) => (agentId === DEFAULT_AGENT ? Effect.succeed(undefined) : Effect.fail(e)))
      )
      const all = yield* servers.list(agentId)
      const chosen = name === undefined ? all : all.filter((s) => s.name === name)
      if (name !== undefined && chosen.length === 0) return yield* new McpServerNotFound({ agentId, name })
      const spec = specFor(workspaces, agent)
      const results = yield* Effect.scoped(Effect.gen(function*() {
        const scope = yield* Effect.scope
        const session = yield* Effect.cached(Effect.gen(function*() {
          const found = yield* sandbox
          if (Option.isNone(found)) {
            return yield* new SandboxFailure({ operation: "start", detail: "this deployment has no sandbox, so stdio servers cannot run" })
          }
          return yield* found.value.start(spec)
        }).pipe(Scope.provide(scope)))
        const clients = yield* makeSessionClients(chosen, session, PROBE_LIMITS)
        return yield* Effect.forEach(chosen, (s) =>
          clients.run(s.name, "tools/list", (c, signal) => c.listTools(undefined, { signal })).pipe(
            Effect.map(({ tools }) => ({ server: s, answers: true, tools: tools.map((t) => ({ name: t.name, description: oneLine(t.description) })) })),
            Effect.catch((e) => Effect.succeed({ server: s, answers: false, tools: [], error: e.reason }))
          ), { concurrency: 4 })
      }))
      return results
    })

    return McpProbe.of({ probe })
  })

/** The probe with the deployment's Sandbox (the gateway's, whose caps it counts against), if it has one. */
export const layer = Layer.effect(McpProbe, Effect.flatMap(Effect.serviceOption(Sandbox), (s) => make(Effect.succeed(s))))

/** The probe with a sandbox layer built on the first stdio server of each probe (the CLI's: no Docker client otherwise). */
export const layerWith = (sandbox: Layer.Layer<Sandbox>) =>
  Layer.effect(McpProbe, make(Effect.map(Layer.build(sandbox), (ctx) => Option.some(Context.get(ctx, Sandbox)))))
