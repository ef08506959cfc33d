/**
 * `/api/schedules` handlers: `anna schedule add|list|remove|run|history`, with the CLI's checks. An
 * admin acts as the operator on every job. A `user` has "my schedules": their own jobs only (another
 * user's is "not found", so ids cannot be probed), added as the `scheduler` tool adds them — on an
 * agent they may use, delivered to themselves only, within USER_JOB_LIMITS, which the store checks
 * with the insert.
 */
import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import type { NewJobBody } from "../../domain/admin/groups/schedule.ts"
import { CurrentPrincipal, Forbidden } from "../../domain/admin/security.ts"
import { canPush, PUSH_CHANNELS } from "../../domain/channels/notify.ts"
import { InvalidSchedule, JobNotFound } from "../../domain/scheduler/errors.ts"
import { parseDeliver } from "../../domain/scheduler/schedule.ts"
import { USER_JOB_LIMITS } from "../../domain/scheduler/types.ts"
import type { Principal } from "../../services/Accounts.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { JobStore } from "../../services/JobStore.ts"
import * as SqliteJobStore from "../scheduler/SqliteJobStore.ts"
import { addOperatorJob } from "../scheduler/newJob.ts"
import { agentAccess } from "./agentAccess.ts"
import { answer } from "./errors.ts"

export const layer = HttpApiBuilder.group(AdminApi, "schedules", Effect.fn(function*(handlers) {
  const jobs = yield* JobStore
  const agents = yield* AgentStore
  const config = yield* ConfigStore
  const access = agentAccess(agents, config)

  /** The job when the caller may see it: any for an admin, their own for a user. */
  const visible = (id: string) =>
    Effect.gen(function*() {
      const p = yield* CurrentPrincipal
      const job = yield* jobs.get(id)
      if (Option.isNone(job) || (p.role !== "admin" && job.value.userId !== p.userId)) return yield* new JobNotFound({ id })
      return job.value
    })

  /** A user's own job: they are its owner and its only recipient, on an agent open to them. */
  const addOwn = (p: Principal, body: typeof NewJobBody.Type) =>
    Effect.gen(function*() {
      if (body.user !== undefined && body.user !== p.userId) return yield* Forbidden.of("you may schedule jobs only for yourself")
      let channel: string | undefined
      if (body.deliver !== undefined) {
        const target = parseDeliver(body.deliver)
        if ("problem" in target) return yield* new InvalidSchedule({ reason: target.problem })
        if (target.ok.user !== p.userId) return yield* Forbidden.of("a job of yours delivers to you only")
        channel = target.ok.channel ?? undefined
        if (channel !== undefined && !canPush(channel)) {
          return yield* new InvalidSchedule({ reason: `channel "${channel}" cannot deliver messages (use one of ${PUSH_CHANNELS.join(", ")})` })
        }
      }
      yield* access.require(p, body.agent)
      return yield* jobs.add({
        agentId: body.agent,
        userId: p.userId,
        cron: body.cron,
        every: body.every,
        at: body.at,
        tz: body.tz,
        prompt: body.prompt,
        sessionMode: body.sessionMode,
        deliverUser: body.deliver === undefined ? undefined : p.userId,
        deliverChannel: channel,
        catchUp: body.catchUp,
        createdBy: "agent"
      }, USER_JOB_LIMITS)
    })

  return handlers
    .handle("list", () =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        return yield* jobs.list(p.role === "admin" ? {} : { userId: p.userId })
      })))
    .handle("add", ({ payload }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        if (p.role !== "admin") return yield* addOwn(p, payload)
        return yield* addOperatorJob(payload).pipe(
          Effect.provideService(JobStore, jobs),
          Effect.provideService(AgentStore, agents),
          Effect.provideService(ConfigStore, config)
        )
      })))
    .handle("remove", ({ params }) => answer(Effect.flatMap(visible(params.id), (job) => jobs.remove(job.id))))
    .handle("run", ({ params }) => answer(Effect.flatMap(visible(params.id), (job) => jobs.requestRun(job.id))))
    .handle("history", ({ params }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        // A user's own job only; an admin also reads runs that outlived their job (a one-shot, a heartbeat).
        if (p.role !== "admin") return yield* jobs.history((yield* visible(params.id)).id)
        const runs = yield* jobs.history(params.id)
        if (runs.length === 0 && Option.isNone(yield* jobs.get(params.id))) return yield* new JobNotFound({ id: params.id })
        return runs
      })))
})).pipe(Layer.provide(SqliteJobStore.layer))
