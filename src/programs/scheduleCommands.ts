/**
 * `anna schedule add|list|remove|run|history`: scheduled jobs (issue 14). A job runs an agent turn
 * with its prompt on a schedule — `--cron` (5 fields, in `--tz`), `--every` (a duration) or `--at`
 * (one time) — as its owner, and delivers the reply to them on a chat platform through the running
 * gateway's notification dispatcher. The gateway runs the jobs; these commands only change the
 * table it reads (it sees a change within seconds). `run <id>` asks the running gateway to run the
 * job now (with delivery); without a running gateway it runs at the next start.
 */
import { Clock, Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { describeSchedule } from "../domain/scheduler/schedule.ts"
import { JobNotFound } from "../domain/scheduler/errors.ts"
import type { Job } from "../domain/scheduler/types.ts"
import * as SqliteJobStore from "../layers/scheduler/SqliteJobStore.ts"
import { addOperatorJob, type OperatorJob, operatorJobProblem } from "../layers/scheduler/newJob.ts"
import { JobStore } from "../services/JobStore.ts"
import { Stores } from "./layers.ts"
import { iso, printJson, table, usageError } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const id = Argument.String("id").pipe(Argument.withDescription("The job's id (anna schedule list)"))
const opt = (name: string, description: string) => Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)

const target = (j: Job) => (j.deliverUser === null ? `(stored; owner ${j.userId})` : `${j.deliverUser}${j.deliverChannel === null ? "" : `@${j.deliverChannel}`}`)

const add = Command.make("add", {
  agent: Flag.String("agent").pipe(Flag.withDescription("The agent that runs the job")),
  cron: opt("cron", "A 5-field cron expression, e.g. \"0 8 * * *\" (minute hour day month weekday)"),
  tz: opt("tz", "Time zone of --cron or --at, e.g. Europe/Berlin (default UTC)"),
  every: opt("every", "An interval instead: 2s, 30m, 1h30m, 1d"),
  at: opt("at", "One time instead (the job is removed after it runs): 2026-12-01T08:00:00+01:00, or 2026-12-01T08:00 with --tz"),
  prompt: Flag.String("prompt").pipe(Flag.withDescription("What the agent is asked at each run")),
  sessionMode: Flag.Literals("session-mode", ["reuse", "new"]).pipe(
    Flag.withDescription("reuse: one conversation for all runs (default); new: a fresh one for each run"),
    Flag.optional
  ),
  deliver: opt("deliver", "USER[@CHANNEL]: the owner, who gets each reply (on CHANNEL, or where they wrote from last)"),
  user: opt("user", "The owner when nothing is delivered (replies are stored only)"),
  catchUp: Flag.Literals("catch-up", ["run", "skip"]).pipe(
    Flag.withDescription("Runs missed while the gateway was down: run once at start, or skip (default: the setting scheduler.catch_up)"),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const input: OperatorJob = {
      agent: f.agent,
      cron: Option.getOrUndefined(f.cron),
      every: Option.getOrUndefined(f.every),
      at: Option.getOrUndefined(f.at),
      tz: Option.getOrUndefined(f.tz),
      prompt: f.prompt,
      sessionMode: Option.getOrUndefined(f.sessionMode),
      deliver: Option.getOrUndefined(f.deliver),
      user: Option.getOrUndefined(f.user),
      catchUp: Option.getOrUndefined(f.catchUp)
    }
    // A value that cannot be scheduled as given is a usage error; an unknown agent or owner is refused (exit 1).
    const problem = operatorJobProblem(input, yield* Clock.currentTimeMillis)
    if (problem !== undefined) return yield* usageError(["anna", "schedule", "add"], problem)
    const job = yield* addOperatorJob(input)
    yield* f.json ? printJson(job) : Console.log(`Added ${job.id}: ${describeSchedule(job)}, next run ${iso(job.nextRunAt)}, to ${target(job)}.`)
  })).pipe(Command.withDescription("Add a job: --agent A (--cron EXPR [--tz ZONE] | --every DURATION | --at TIME) --prompt TEXT [--deliver USER[@CHANNEL]]"))

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const jobs = yield* (yield* JobStore).list()
    if (f.json) return yield* printJson(jobs)
    if (jobs.length === 0) return yield* Console.log("No scheduled jobs (anna schedule add).")
    yield* Console.log(table(
      ["ID", "AGENT", "SCHEDULE", "NEXT", "DELIVER", "PROMPT"],
      jobs.map((j) => [j.id, j.agentId, describeSchedule(j), j.runRequested ? "now (asked)" : iso(j.nextRunAt), target(j), j.prompt.length > 50 ? `${j.prompt.slice(0, 50)}…` : j.prompt])
    ))
  })).pipe(Command.withDescription("List the scheduled jobs"))

const remove = Command.make("remove", { id, json }, (f) =>
  Effect.gen(function*() {
    yield* (yield* JobStore).remove(f.id)
    yield* f.json ? printJson({ id: f.id, removed: true }) : Console.log(`Removed ${f.id} and its history.`)
  })).pipe(Command.withDescription("Remove a job and its run history"))

const run = Command.make("run", { id, json }, (f) =>
  Effect.gen(function*() {
    const job = yield* (yield* JobStore).requestRun(f.id)
    yield* f.json
      ? printJson({ id: job.id, requested: true })
      : Console.log(`Asked the gateway to run ${job.id} now (it does within seconds when running, else at its next start); see anna schedule history ${job.id}.`)
  })).pipe(Command.withDescription("Run a job now, through the running gateway (replies are delivered as usual); its schedule is unchanged"))

const history = Command.make("history", {
  id,
  limit: Flag.Int("limit").pipe(
    Flag.withDescription("At most this many runs, newest first (default 20)"),
    Flag.filter((n) => n > 0, (n) => `--limit must be positive, got ${n}`),
    Flag.withDefault(20)
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const runs = yield* store.history(f.id, Math.max(1, f.limit))
    if (runs.length === 0 && Option.isNone(yield* store.get(f.id))) return yield* new JobNotFound({ id: f.id })
    if (f.json) return yield* printJson(runs.map((r) => ({ ...r, start: iso(r.startedAt), end: r.endedAt === null ? null : iso(r.endedAt) })))
    if (runs.length === 0) return yield* Console.log(`${f.id} has not run yet.`)
    yield* Console.log(table(
      ["START", "END", "STATUS", "TRIGGER", "DELIVERED", "REPLY / ERROR"],
      runs.map((r) => [iso(r.startedAt), iso(r.endedAt), r.status, r.trigger, r.deliveredTo ?? "-", oneLine(r.error ?? r.reply ?? "")])
    ))
  })).pipe(Command.withDescription("A job's runs: start, end, status, reply and error"))

const oneLine = (s: string) => {
  const flat = s.replace(/\s+/g, " ").trim()
  return flat.length > 80 ? `${flat.slice(0, 80)}…` : flat || "-"
}

export const scheduleCommand = Command.make("schedule").pipe(
  Command.withDescription("Scheduled jobs: add, list, remove, run, history"),
  Command.withSubcommands([add, list, remove, run, history]),
  Command.provide(SqliteJobStore.layer),
  Command.provide(Stores)
)
