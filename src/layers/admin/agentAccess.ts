/**
 * The per-agent access policy on the admin API's paths a `user` may take about an agent (their
 * schedules, the skills an agent sees): the same rule the web chat's agent list and the Runtime apply
 * to every turn — an enabled agent whose policy admits the user (their id, their attributes). An
 * admin may use every agent that exists, as the operator.
 *
 * A `user` naming an agent that does not exist or is disabled gets a 404; one closed to them a 403
 * `access_denied`, as `POST /api/chat` answers.
 */
import { Effect, Option } from "effect"
import { EVERYONE, mayUse } from "../../domain/access/policy.ts"
import { Forbidden, NotFound } from "../../domain/admin/security.ts"
import type { Agent } from "../../domain/config/agent.ts"
import type { AgentStore } from "../../services/AgentStore.ts"
import type { Principal } from "../../services/Accounts.ts"
import type { ConfigStore } from "../../services/ConfigStore.ts"

export const agentAccess = (agents: AgentStore["Service"], config: ConfigStore["Service"]) => {
  const subjectOf = (p: Principal) =>
    Effect.map(config.getUser(p.userId), (u) => ({ id: p.userId, attributes: Option.getOrUndefined(u)?.attributes ?? {} }))

  /** The agents `p` may use: every one for an admin; for a user, the enabled agents open to them. */
  const usable = Effect.fn("AdminApi.usableAgents")(function*(p: Principal) {
    const all = yield* agents.list
    if (p.role === "admin") return all
    const subject = yield* subjectOf(p)
    return all.filter((a) => a.enabled && mayUse(a.access ?? EVERYONE, subject))
  })

  /** The agent `id` when `p` may use it (see the header for the answers when not). */
  const require = Effect.fn("AdminApi.requireAgent")(function*(p: Principal, id: string) {
    const agent = yield* agents.get(id)
    if (p.role === "admin") return agent
    if (!agent.enabled) return yield* NotFound.of(`no agent "${id}" to use: it is disabled`, "agent_not_found")
    if (!mayUse(agent.access ?? EVERYONE, yield* subjectOf(p))) return yield* Forbidden.of(`agent ${id} is not open to you`, "access_denied")
    return agent as Agent
  })

  return { usable, require }
}
