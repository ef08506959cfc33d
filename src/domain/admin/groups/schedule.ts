/**
 * `/api/schedules`: scheduled jobs as `anna schedule add|list|remove|run|history` manage them.
 * `POST /api/schedules/:id/run` asks the gateway's scheduler to run the job now.
 *
 * An admin manages every job, as the operator. A `user` sees and manages only their own jobs (another
 * user's job is a 404, as one that does not exist), and adds jobs as the `scheduler` tool does: on an
 * agent they may use (its access policy), delivered to themselves only, within the tool's limits
 * (USER_JOB_LIMITS: 20 jobs per agent, `every` at least 1 minute; prompts up to 4,000 characters
 * for everyone). Such a job is recorded as `createdBy: "agent"` — a user's own job, bound by the
 * limits — whether the chat's tool or the console made it.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors, UserAllowed } from "../security.ts"

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

/**
 * As `anna schedule add`: exactly one of cron, every, at; `deliver` is `USER[@CHANNEL]`, or `user`
 * names the owner. A `user` may name only themselves in either (both left out: stored only, theirs).
 */
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
    /** Every job for an admin; a `user`'s own. */
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(JobView), error: CommonErrors }),
    HttpApiEndpoint.post("add", "/", { payload: NewJobBody, success: JobView, error: CommonErrors }),
    HttpApiEndpoint.delete("remove", "/:id", { params: id, error: CommonErrors }),
    HttpApiEndpoint.post("run", "/:id/run", { params: id, success: JobView, error: CommonErrors }),
    HttpApiEndpoint.get("history", "/:id/history", { params: id, success: Schema.Array(RunView), error: CommonErrors })
  )
  .annotate(UserAllowed, true)
  .middleware(AdminAuth)
  .prefix("/schedules")
{}
