/**
 * `/api/skills`: the operator's skills as `anna skill list|install|remove|rank` manage them.
 *
 * - `GET /api/skills?agent=A`: without an agent, every installed skill (global and each agent's own);
 *   with one, what that agent sees (its own, then the global ones it does not shadow).
 * - `GET /api/skills/rank?agent=A&q=&by=sample|mean|ucb&seed=N&user=U`: as `anna skill rank`.
 * - `POST /api/skills` `{source, agent?, force?}` installs from a folder or tarball on the gateway's
 *   host, a git URL or a tarball URL — the very code of `anna skill install` (all or nothing, the
 *   same refusals and limits), run by the gateway with its own disk, network and git credentials:
 *   an operator's action, admin only. A relative path is refused (the gateway's working folder is
 *   nobody's business).
 * - `DELETE /api/skills/{name}?agent=A`: removes a global skill or an agent's own (admin only).
 *
 * A `user` may list and rank, read-only: only the skills of agents they may use (their access
 * policies), never host paths; their rank adds their own skills that have outcomes.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors, UserAllowed } from "../security.ts"

export const SkillView = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  scope: Schema.Literals(["global", "agent"]),
  /** The agent whose own skill it is (scope `agent`). */
  agent: Schema.NullOr(Schema.String),
  /** Its folder on the gateway's host (null for a `user`). */
  path: Schema.NullOr(Schema.String)
})

export const RankedSkillView = Schema.Struct({
  rank: Schema.Number,
  name: Schema.String,
  description: Schema.String,
  scope: Schema.Literals(["global", "agent", "user"]),
  successes: Schema.Number,
  failures: Schema.Number,
  alpha: Schema.Number,
  beta: Schema.Number,
  /** The draw, the mean or the bound, as `by` says. */
  score: Schema.Number
})

export const InstallBody = Schema.Struct({
  /** An absolute path on the gateway's host (a folder, a .tar/.tar.gz/.tgz), a git URL (`#ref`, `#ref:folder`) or a tarball URL. */
  source: Schema.String,
  /** Install as this agent's own skill (default: global). */
  agent: Schema.optionalKey(Schema.String),
  /** Replace an installed skill of the same name. */
  force: Schema.optionalKey(Schema.Boolean)
})

export class SkillsGroup extends HttpApiGroup.make("skills")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: { agent: Schema.optional(Schema.String) },
      success: Schema.Array(SkillView),
      error: CommonErrors
    }).annotate(UserAllowed, true),
    HttpApiEndpoint.get("rank", "/rank", {
      query: {
        /** Required for a `user` (an agent they may use). */
        agent: Schema.optional(Schema.String),
        q: Schema.optional(Schema.String),
        by: Schema.optional(Schema.Literals(["sample", "mean", "ucb"])),
        seed: Schema.optional(Schema.Int),
        /** Admin only: add this user's own skills (a `user` always gets their own). */
        user: Schema.optional(Schema.String)
      },
      success: Schema.Array(RankedSkillView),
      error: CommonErrors
    }).annotate(UserAllowed, true),
    HttpApiEndpoint.post("install", "/", { payload: InstallBody, success: Schema.Array(SkillView), error: CommonErrors }),
    HttpApiEndpoint.delete("remove", "/:name", {
      params: { name: Schema.String },
      query: { agent: Schema.optional(Schema.String) },
      success: SkillView,
      error: CommonErrors
    })
  )
  .middleware(AdminAuth)
  .prefix("/skills")
{}
