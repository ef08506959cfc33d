/**
 * The `scheduler` tool (issue 14): lets an agent schedule its own work for the user it is talking
 * to — "every morning at 8, summarise my open tasks and send them to me" — and list, inspect and
 * remove those jobs. A job made here belongs to the session's user and agent and delivers to that
 * same user only (a chat user can never schedule messages to someone else); the tool sees only that
 * user's jobs on that agent. Limits against a hostile chat user (USER_JOB_LIMITS, the same as the
 * console's "my schedules"): MAX_TOOL_JOBS jobs per user and agent, `every` at least
 * MIN_TOOL_EVERY_MS, prompts up to MAX_PROMPT_CHARS.
 *
 * The running gateway's scheduler sees a new job at its next look (a few seconds).
 */
import { Effect, Layer, Option, Schema } from "effect"
import { describeSchedule } from "../../domain/scheduler/schedule.ts"
import { type Job, MAX_PROMPT_CHARS, USER_JOB_LIMITS } from "../../domain/scheduler/types.ts"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import { JobStore } from "../../services/JobStore.ts"
import type { ToolSource } from "../../services/ToolCatalog.ts"
import * as SqliteJobStore from "../scheduler/SqliteJobStore.ts"
import * as ToolCatalogLayer from "./ToolCatalog.ts"

export const TOOL_NAME = "scheduler"

const Input = Schema.Struct({
  action: Schema.Literals(["add", "list", "remove", "history"]).annotate({
    description: "add a job, list your jobs, remove one (id), or show one's recent runs (id)."
  }),
  cron: Schema.optionalKey(Schema.String.annotate({ description: "add: a 5-field cron expression, e.g. \"0 8 * * *\" (8:00 every day), in `tz`." })),
  tz: Schema.optionalKey(Schema.String.annotate({ description: "add: the IANA time zone of `cron` or `at`, e.g. Europe/Berlin (default UTC)." })),
  every: Schema.optionalKey(Schema.String.annotate({ description: "add: an interval instead, e.g. 30m, 2h, 1d (at least 1m)." })),
  at: Schema.optionalKey(Schema.String.annotate({ description: "add: one time instead, ISO 8601, e.g. 2026-12-01T08:00:00+01:00 (runs once)." })),
  prompt: Schema.optionalKey(Schema.String.annotate({
    description: `add: what you will be asked to do at each run, as an instruction to yourself (at most ${MAX_PROMPT_CHARS} characters).`
  })),
  session_mode: Schema.optionalKey(Schema.Literals(["reuse", "new"]).annotate({
    description: "add: reuse (default) keeps one conversation for all runs of the job; new starts a fresh one for each run."
  })),
  deliver: Schema.optionalKey(Schema.Boolean.annotate({ description: "add: send each run's answer to the user (default true); false keeps it stored only." })),
  channel: Schema.optionalKey(Schema.String.annotate({ description: "add: the app to deliver on (default: where the user wrote from most recently)." })),
  id: Schema.optionalKey(Schema.String.annotate({ description: "remove/history: the job's id (from list)." }))
})
const decode = Schema.decodeUnknownEffect(Input)

const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })

const line = (j: Job): string =>
  `${j.id}: ${describeSchedule(j)}; next ${j.nextRunAt === null ? "-" : new Date(j.nextRunAt).toISOString()}; ` +
  `${j.deliverUser === null ? "stored only" : "delivered to you"}; prompt: ${j.prompt.length > 120 ? `${j.prompt.slice(0, 120)}…` : j.prompt}`

export const schedulerTool = (store: JobStore["Service"]): Tool => {
  const own = (ctx: ToolCallContext, id: string | undefined) =>
    Effect.gen(function*() {
      if (id === undefined || id.trim() === "") return yield* fail("give the job's id (see action list)")
      const job = yield* store.get(id.trim()).pipe(Effect.mapError((e) => fail(e.message)))
      if (Option.isNone(job) || job.value.userId !== ctx.userId || job.value.agentId !== ctx.agentId) {
        return yield* fail(`you have no job "${id}" (see action list)`)
      }
      return job.value
    })

  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Schedule work for yourself on behalf of the user you are talking to: at each run you get the prompt as a",
        "message, and your answer is sent to the user (their chat app). Use it for reminders, daily summaries,",
        "periodic checks. Give exactly one of cron (with tz), every or at. You see and manage only this user's jobs."
      ].join(" "),
      inputSchema: inputSchemaOf(Input)
    },
    execute: (raw, ctx) =>
      Effect.gen(function*() {
        const input = yield* decode(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
        const mine = store.list({ userId: ctx.userId, agentId: ctx.agentId }).pipe(Effect.mapError((e) => fail(e.message)))
        switch (input.action) {
          case "list": {
            const jobs = yield* mine
            return jobs.length === 0 ? "You have no scheduled jobs." : jobs.map(line).join("\n")
          }
          case "remove": {
            const job = yield* own(ctx, input.id)
            yield* store.remove(job.id).pipe(Effect.mapError((e) => fail(e.message)))
            return `Removed ${job.id}.`
          }
          case "history": {
            const job = yield* own(ctx, input.id)
            const runs = yield* store.history(job.id, 10).pipe(Effect.mapError((e) => fail(e.message)))
            if (runs.length === 0) return `${job.id} has not run yet.`
            return runs.map((r) =>
              `${new Date(r.startedAt).toISOString()} ${r.status}${r.error === null ? "" : ` (${r.error})`}${r.reply === null ? "" : `: ${r.reply.slice(0, 200)}`}`
            ).join("\n")
          }
          case "add": {
            if (input.prompt === undefined) return yield* fail("give the prompt")
            // The user's limits (count, shortest interval) are checked by the store with the insert.
            const job = yield* store.add({
              agentId: ctx.agentId,
              userId: ctx.userId,
              cron: input.cron,
              every: input.every,
              at: input.at,
              tz: input.tz,
              prompt: input.prompt,
              sessionMode: input.session_mode,
              deliverUser: input.deliver === false ? undefined : ctx.userId,
              deliverChannel: input.deliver === false ? undefined : input.channel,
              createdBy: "agent"
            }, USER_JOB_LIMITS).pipe(Effect.mapError((e) => fail(e.message.replace(/--(cron|every|at|tz)\b/g, "$1"))))
            return `Scheduled ${line(job)}`
          }
        }
      })
  }
}

const source = Effect.gen(function*() {
  const store = yield* JobStore
  const tool = schedulerTool(store)
  return { id: TOOL_NAME, tools: (session) => Effect.succeed(session.enabled(TOOL_NAME) ? [tool] : []) } satisfies ToolSource
})

export const layer = ToolCatalogLayer.register(source).pipe(Layer.provide(SqliteJobStore.layer))
