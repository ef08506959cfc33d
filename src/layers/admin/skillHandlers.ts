/**
 * `/api/skills` handlers: `anna skill list|install|remove|rank` over the same services (Skills,
 * SkillRanking). Installing and removing are the operator's (admin only, by the group's declaration);
 * a `user` lists and ranks the skills of the agents they may use, without host paths.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { isAbsolute } from "node:path"
import { AdminApi } from "../../domain/admin/api.ts"
import { BadRequest, CurrentPrincipal, Forbidden } from "../../domain/admin/security.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { type InstalledSkill, Skills } from "../../services/Skills.ts"
import { SkillRanking } from "../../services/SkillRanking.ts"
import { agentAccess } from "./agentAccess.ts"
import { answer } from "./errors.ts"

/** A URL (`https://…`, `file://…`, `ssh://…`) or git's `git@host:path`: not a path of the gateway's working folder. */
const REMOTE = /^([a-z][a-z0-9+.-]*:\/\/|git@[^:]+:)/i

const view = (withPath: boolean) => (s: InstalledSkill) => ({
  name: s.name,
  description: s.description,
  scope: s.scope,
  agent: s.agentId ?? null,
  path: withPath ? s.path : null
})

export const layer = HttpApiBuilder.group(AdminApi, "skills", Effect.fn(function*(handlers) {
  const skills = yield* Skills
  const ranking = yield* SkillRanking
  const agents = yield* AgentStore
  const access = agentAccess(agents, yield* ConfigStore)

  return handlers
    .handle("list", ({ query }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        const admin = p.role === "admin"
        if (query.agent !== undefined) {
          yield* access.require(p, query.agent)
          return (yield* skills.list(query.agent)).map(view(admin))
        }
        if (admin) return (yield* skills.all).map(view(true))
        // A user: the global skills and the own skills of the agents open to them (none when no agent is).
        const open = new Set((yield* access.usable(p)).map((a) => a.id))
        if (open.size === 0) return []
        return (yield* skills.all).filter((s) => s.scope === "global" || open.has(s.agentId ?? "")).map(view(false))
      })))
    .handle("rank", ({ query }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        if (p.role !== "admin") {
          if (query.agent === undefined) return yield* BadRequest.of("name an agent you may use (agent=…)")
          if (query.user !== undefined && query.user !== p.userId) return yield* Forbidden.of("you may rank only your own skills")
        }
        if (query.agent !== undefined) yield* access.require(p, query.agent)
        const { ranked } = yield* ranking.rank({
          agentId: query.agent,
          userId: p.role === "admin" ? query.user : p.userId,
          query: query.q,
          by: query.by ?? "sample",
          seed: query.seed
        })
        return ranked
      })))
    .handle("install", ({ payload }) =>
      answer(Effect.gen(function*() {
        const source = payload.source.trim()
        if (!REMOTE.test(source) && !isAbsolute(source)) {
          return yield* BadRequest.of("give an absolute path on the gateway's host, a git URL or a tarball URL")
        }
        if (payload.agent !== undefined) yield* agents.get(payload.agent)
        const installed = yield* skills.install(source, { agentId: payload.agent, force: payload.force ?? false })
        return installed.map(view(true))
      })))
    .handle("remove", ({ params, query }) =>
      answer(Effect.gen(function*() {
        if (query.agent !== undefined) yield* agents.get(query.agent)
        return view(true)(yield* skills.remove(params.name, query.agent))
      })))
}))
