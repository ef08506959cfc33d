/**
 * `/api/schedules`: scheduled jobs as `anna schedule add|list|remove|run|history` manage them
 * (admin only). `POST /api/schedules/:id/run` asks the gateway's scheduler to run the job now.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const JobView = Schema.Struct({
  id: Schema.String,
  agentId: Schema.String,
  userId: Schema.String,
  kind: Schema.Literals(["cron", "every", "at"]),
  spec: Schema.String,
  tz: Schema.NullOr(Schema.String),
  prompt: Schema.String,
  sessionMode: Schema.Literals(["reuse", "new"]),
  deliverUser: Schema.NullOr(Schema.String),
  deliverChannel: Schema.NullOr(Schema.String),
  catchUp: Schema.NullOr(Schema.Literals(["run", "skip"])),
  createdBy: Schema.Literals(["operator", "agent"]),
  createdAt: Schema.Number,
  nextRunAt: Schema.NullOr(Schema.Number),
  runRequested: Schema.Boolean
})

export const RunView = Schema.Struct({
  id: Schema.Number,
  jobId: Schema.String,
  trigger: Schema.Literals(["schedule", "catch_up", "manual", "heartbeat"]),
  startedAt: Schema.Number,
  endedAt: Schema.NullOr(Schema.Number),
  status: Schema.Literals(["ok", "error", "skipped", "running"]),
  reply: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  deliveredTo: Schema.NullOr(Schema.String)
})

/** As `anna schedule add`: exactly one of cron, every, at; `deliver` is `USER[@CHANNEL]`, or `user` names the owner. */
export const NewJobBody = Schema.Struct({
  agent: Schema.String,
  cron: Schema.optionalKey(Schema.String),
  tz: Schema.optionalKey(Schema.String),
  every: Schema.optionalKey(Schema.String),
  at: Schema.optionalKey(Schema.String),
  prompt: Schema.String,
  sessionMode: Schema.optionalKey(Schema.Literals(["reuse", "new"])),
  deliver: Schema.optionalKey(Schema.String),
  user: Schema.optionalKey(Schema.String),
  catchUp: Schema.optionalKey(Schema.Literals(["run", "skip"]))
})

const id = { id: Schema.String }

export class ScheduleGroup extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(JobView), error: CommonErrors }),
    HttpApiEndpoint.post("add", "/", { payload: NewJobBody, success: JobView, error: CommonErrors }),
    HttpApiEndpoint.delete("remove", "/:id", { params: id, error: CommonErrors }),
    HttpApiEndpoint.post("run", "/:id/run", { params: id, success: JobView, error: CommonErrors }),
    HttpApiEndpoint.get("history", "/:id/history", { params: id, success: Schema.Array(RunView), error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/schedules")
{}
