/** `/api/schedules` handlers: `anna schedule add|list|remove|run|history`, with the CLI's checks. */
import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { NotFound } from "../../domain/admin/security.ts"
import { JobNotFound } from "../../domain/scheduler/errors.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { JobStore } from "../../services/JobStore.ts"
import * as SqliteJobStore from "../scheduler/SqliteJobStore.ts"
import { addOperatorJob } from "../scheduler/newJob.ts"
import { answer } from "./errors.ts"

/** An unknown job is a 404 (answer's table does not know the scheduler's tag). */
const notFound = <E extends { readonly _tag: string; readonly message: string }>(e: E): E | NotFound =>
  e instanceof JobNotFound ? NotFound.of(e.message) : e

export const layer = HttpApiBuilder.group(AdminApi, "schedules", Effect.fn(function*(handlers) {
  const jobs = yield* JobStore
  const agents = yield* AgentStore
  const config = yield* ConfigStore
  return handlers
    .handle("list", () => answer(jobs.list()))
    .handle("add", ({ payload }) =>
      answer(addOperatorJob(payload).pipe(
        Effect.provideService(JobStore, jobs),
        Effect.provideService(AgentStore, agents),
        Effect.provideService(ConfigStore, config)
      )))
    .handle("remove", ({ params }) => answer(jobs.remove(params.id).pipe(Effect.mapError(notFound))))
    .handle("run", ({ params }) => answer(jobs.requestRun(params.id).pipe(Effect.mapError(notFound))))
    .handle("history", ({ params }) =>
      answer(Effect.gen(function*() {
        const runs = yield* jobs.history(params.id)
        if (runs.length === 0 && Option.isNone(yield* jobs.get(params.id))) return yield* new JobNotFound({ id: params.id })
        return runs
      }).pipe(Effect.mapError(notFound))))
})).pipe(Layer.provide(SqliteJobStore.layer))
