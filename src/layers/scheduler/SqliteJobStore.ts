/** JobStore on the scheduler_jobs and scheduler_runs tables (migration 0019); rows are Schema-decoded. */
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { InvalidSchedule, JobNotFound } from "../../domain/scheduler/errors.ts"
import { checkZone, nextAfter, parseAt, parseCron, parseEvery } from "../../domain/scheduler/schedule.ts"
import { type Job, KEEP_RUNS, MAX_PROMPT_CHARS, MIN_EVERY_MS, type NewJob, type OwnerLimits, type Run, type ScheduleKind } from "../../domain/scheduler/types.ts"
import { JobStore, type JobFilter, type RunOutcome } from "../../services/JobStore.ts"
import { immediate } from "../sql/Sqlite.ts"
import { storageError } from "../sql/errors.ts"

const JobRow = Schema.Struct({
  id: Schema.String,
  agent_id: Schema.String,
  user_id: Schema.String,
  kind: Schema.Literals(["cron", "every", "at"]),
  spec: Schema.String,
  tz: Schema.NullOr(Schema.String),
  prompt: Schema.String,
  session_mode: Schema.Literals(["reuse", "new"]),
  deliver_user: Schema.NullOr(Schema.String),
  deliver_channel: Schema.NullOr(Schema.String),
  catch_up: Schema.NullOr(Schema.Literals(["run", "skip"])),
  created_by: Schema.Literals(["operator", "agent"]),
  created_at: Schema.Number,
  next_run_at: Schema.NullOr(Schema.Number),
  run_requested: Schema.Number
})
const RunRow = Schema.Struct({
  id: Schema.Number,
  job_id: Schema.String,
  trigger: Schema.Literals(["schedule", "catch_up", "manual", "heartbeat"]),
  started_at: Schema.Number,
  ended_at: Schema.NullOr(Schema.Number),
  status: Schema.Literals(["ok", "error", "skipped", "running"]),
  reply: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  delivered_to: Schema.NullOr(Schema.String)
})
const decodeJobs = Schema.decodeUnknownEffect(Schema.Array(JobRow))
const decodeRuns = Schema.decodeUnknownEffect(Schema.Array(RunRow))

const toJob = (r: typeof JobRow.Type): Job => ({
  id: r.id,
  agentId: r.agent_id,
  userId: r.user_id,
  kind: r.kind,
  spec: r.spec,
  tz: r.tz,
  prompt: r.prompt,
  sessionMode: r.session_mode,
  deliverUser: r.deliver_user,
  deliverChannel: r.deliver_channel,
  catchUp: r.catch_up,
  createdBy: r.created_by,
  createdAt: r.created_at,
  nextRunAt: r.next_run_at,
  runRequested: r.run_requested === 1
})
const toRun = (r: typeof RunRow.Type): Run => ({
  id: r.id,
  jobId: r.job_id,
  trigger: r.trigger,
  startedAt: r.started_at,
  endedAt: r.ended_at,
  status: r.status,
  reply: r.reply,
  error: r.error,
  deliveredTo: r.delivered_to
})

const invalid = (reason: string) => new InvalidSchedule({ reason })

/** The job's kind, spec (as stored) and first due time, or why it cannot be scheduled. */
/** `60000` as `1m`, `1000` as `1s`: the shortest interval as people write it. */
const durationText = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.ceil(ms / 1000)}s`)

export const checkSchedule = (
  job: NewJob,
  now: number,
  minEveryMs = MIN_EVERY_MS
): { kind: ScheduleKind; spec: string; tz: string | null; first: number } | { problem: string } => {
  const given = [job.cron, job.every, job.at].filter((x) => x !== undefined)
  if (given.length !== 1) return { problem: "give exactly one of --cron, --every or --at" }
  const tz = job.tz ?? null
  if (tz !== null) {
    const zone = checkZone(tz)
    if ("problem" in zone) return zone
  }
  if (job.cron !== undefined) {
    const cron = parseCron(job.cron, tz)
    if ("problem" in cron) return cron
    const spec = job.cron.trim().split(/\s+/).join(" ")
    return { kind: "cron", spec, tz, first: nextAfter({ kind: "cron", spec, tz }, now) ?? now }
  }
  if (job.every !== undefined) {
    if (tz !== null) return { problem: "--tz goes with --cron or --at, not --every" }
    const every = parseEvery(job.every)
    if ("problem" in every) return every
    if (every.ok < Math.max(MIN_EVERY_MS, minEveryMs)) return { problem: `--every must be at least ${durationText(Math.max(MIN_EVERY_MS, minEveryMs))}` }
    return { kind: "every", spec: job.every.trim().toLowerCase(), tz, first: now + every.ok }
  }
  const at = parseAt(job.at ?? "", tz, now)
  if ("problem" in at) return at
  return { kind: "at", spec: new Date(at.ok).toISOString(), tz, first: at.ok }
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const fail = (operation: string) => Effect.mapError(storageError(operation))

  const list = Effect.fn("JobStore.list")(function*(filter: JobFilter = {}) {
    const rows = yield* sql`SELECT * FROM scheduler_jobs WHERE (CAST(${filter.userId ?? null} AS TEXT) IS NULL OR user_id = ${filter.userId ?? null})
      AND (CAST(${filter.agentId ?? null} AS TEXT) IS NULL OR agent_id = ${filter.agentId ?? null}) ORDER BY created_at, id`.pipe(
      Effect.flatMap(decodeJobs),
      fail("list scheduled jobs")
    )
    return rows.map(toJob)
  })

  const get = Effect.fn("JobStore.get")(function*(id: string) {
    const rows = yield* sql`SELECT * FROM scheduler_jobs WHERE id = ${id}`.pipe(Effect.flatMap(decodeJobs), fail("read a scheduled job"))
    return Option.map(Option.fromNullishOr(rows[0]), toJob)
  })

  const add = Effect.fn("JobStore.add")(function*(job: NewJob, limits?: OwnerLimits) {
    const now = yield* Clock.currentTimeMillis
    if (job.prompt.trim() === "") return yield* invalid("the prompt is empty")
    if (job.prompt.length > MAX_PROMPT_CHARS) return yield* invalid(`the prompt is longer than ${MAX_PROMPT_CHARS} characters`)
    const checked = checkSchedule(job, now, limits?.minEveryMs)
    if ("problem" in checked) return yield* invalid(checked.problem)
    const id = `job-${randomBytes(4).toString("hex")}`
    const insert = sql`INSERT INTO scheduler_jobs (id, agent_id, user_id, kind, spec, tz, prompt, session_mode, deliver_user, deliver_channel,
      catch_up, created_by, created_at, next_run_at, run_requested) VALUES (${id}, ${job.agentId}, ${job.userId}, ${checked.kind},
      ${checked.spec}, ${checked.tz}, ${job.prompt}, ${job.sessionMode ?? "reuse"}, ${job.deliverUser ?? null}, ${job.deliverChannel ?? null},
      ${job.catchUp ?? null}, ${job.createdBy}, ${now}, ${checked.first}, 0)`
    if (limits === undefined) {
      yield* insert.pipe(fail("add a scheduled job"))
    } else {
      // The count and the insert in one write transaction: parallel adds (a model's parallel tool
      // calls, two console tabs, two gateways on PostgreSQL) see each other, so the owner never passes the limit.
      const full = yield* immediate(sql)(Effect.gen(function*() {
        const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM scheduler_jobs WHERE user_id = ${job.userId} AND agent_id = ${job.agentId}`
        if (Number(rows[0]?.n ?? 0) >= limits.maxPerOwner) return true
        yield* insert
        return false
      })).pipe(fail("add a scheduled job"))
      if (full) return yield* invalid(`you already have ${limits.maxPerOwner} jobs on agent ${job.agentId}; remove one first`)
    }
    const stored = yield* get(id)
    return yield* Option.match(stored, { onNone: () => Effect.die(new Error(`job ${id} vanished`)), onSome: Effect.succeed })
  })

  const remove = Effect.fn("JobStore.remove")(function*(id: string) {
    if (Option.isNone(yield* get(id))) return yield* new JobNotFound({ id })
    yield* sql.withTransaction(Effect.andThen(sql`DELETE FROM scheduler_runs WHERE job_id = ${id}`, sql`DELETE FROM scheduler_jobs WHERE id = ${id}`)).pipe(
      fail("remove a scheduled job")
    )
  })

  const retire = Effect.fn("JobStore.retire")(function*(id: string) {
    yield* sql`DELETE FROM scheduler_jobs WHERE id = ${id}`.pipe(fail("retire a one-shot job"))
  })

  const requestRun = Effect.fn("JobStore.requestRun")(function*(id: string) {
    yield* sql`UPDATE scheduler_jobs SET run_requested = 1 WHERE id = ${id}`.pipe(fail("request a run"))
    const job = yield* get(id)
    return yield* Option.match(job, { onNone: () => Effect.fail(new JobNotFound({ id })), onSome: Effect.succeed })
  })

  const claim = Effect.fn("JobStore.claim")(function*(
    id: string,
    seen: { readonly nextRunAt: number | null; readonly runRequested: boolean },
    nextRunAt: number | null
  ) {
    // IS NOT DISTINCT FROM: equal, or both NULL (SQLite ≥ 3.39 and PostgreSQL alike).
    const rows = yield* sql<{ id: string }>`UPDATE scheduler_jobs SET next_run_at = ${nextRunAt}, run_requested = 0
      WHERE id = ${id} AND next_run_at IS NOT DISTINCT FROM ${seen.nextRunAt} AND run_requested = ${seen.runRequested ? 1 : 0}
      RETURNING id`.pipe(fail("take a job's due run"))
    return rows.length > 0
  })

  const prune = (jobId: string) =>
    sql`DELETE FROM scheduler_runs WHERE job_id = ${jobId} AND id NOT IN
      (SELECT id FROM scheduler_runs WHERE job_id = ${jobId} ORDER BY id DESC LIMIT ${KEEP_RUNS})`

  const startRun = Effect.fn("JobStore.startRun")(function*(jobId: string, trigger: Run["trigger"]) {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql<{ id: number }>`INSERT INTO scheduler_runs (job_id, trigger, started_at, status) VALUES (${jobId}, ${trigger}, ${now}, 'running')
      RETURNING id`.pipe(fail("record a run"))
    const id = rows[0]?.id
    return typeof id === "number" ? id : yield* Effect.die(new Error("INSERT … RETURNING gave no id"))
  })

  const finishRun = Effect.fn("JobStore.finishRun")(function*(runId: number, o: RunOutcome) {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql<{ job_id: string }>`UPDATE scheduler_runs SET ended_at = ${now}, status = ${o.status}, reply = ${o.reply ?? null},
      error = ${o.error ?? null}, delivered_to = ${o.deliveredTo ?? null} WHERE id = ${runId} RETURNING job_id`.pipe(fail("record a run's end"))
    const jobId = rows[0]?.job_id
    if (jobId !== undefined) yield* prune(jobId).pipe(fail("drop old runs"))
  })

  const recordRun = Effect.fn("JobStore.recordRun")(function*(jobId: string, trigger: Run["trigger"], o: RunOutcome) {
    const id = yield* startRun(jobId, trigger)
    yield* finishRun(id, o)
  })

  const history = Effect.fn("JobStore.history")(function*(jobId: string, limit = KEEP_RUNS) {
    const rows = yield* sql`SELECT * FROM scheduler_runs WHERE job_id = ${jobId} ORDER BY id DESC LIMIT ${limit}`.pipe(
      Effect.flatMap(decodeRuns),
      fail("read run history")
    )
    return rows.map(toRun)
  })

  const moveUserHistory = Effect.fn("JobStore.moveUserHistory")(function*(userId: string, removedAs: string) {
    // The heartbeat's job ids (./heartbeat.ts `heartbeatJobId`) end with `:{user}`; agent ids hold no ':'.
    const suffix = `:${userId}`
    const ids = yield* sql<{ job_id: string }>`SELECT DISTINCT job_id FROM scheduler_runs
      WHERE substr(job_id, 1, 10) = 'heartbeat:' AND length(job_id) > ${suffix.length + 10}
        AND substr(job_id, length(job_id) - ${suffix.length - 1}) = ${suffix}`
    let moved = 0
    for (const { job_id } of ids) {
      const agentId = job_id.slice("heartbeat:".length, -suffix.length)
      if (agentId === "" || agentId.includes(":")) continue
      const rows = yield* sql<{ id: number }>`UPDATE scheduler_runs SET job_id = ${`heartbeat:${agentId}:${removedAs}`}
        WHERE job_id = ${job_id} RETURNING id`
      moved += rows.length
      // A later user of the same id gets their first beat on time.
      yield* sql`DELETE FROM heartbeat_beats WHERE job_id = ${job_id}`
    }
    return moved
  }, fail("move a removed user's run history"))

  const claimBeat = Effect.fn("JobStore.claimBeat")(function*(jobId: string, now: number, gapMs: number) {
    const rows = yield* sql<{ job_id: string }>`INSERT INTO heartbeat_beats (job_id, beat_at) VALUES (${jobId}, ${now})
      ON CONFLICT (job_id) DO UPDATE SET beat_at = excluded.beat_at WHERE heartbeat_beats.beat_at <= ${now - gapMs}
      RETURNING job_id`.pipe(fail("take a heartbeat's beat"))
    return rows.length > 0
  })

  const interruptRunning = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql<{ id: number }>`UPDATE scheduler_runs SET status = 'error', error = 'interrupted (the gateway stopped during the run)',
      ended_at = ${now} WHERE status = 'running' RETURNING id`.pipe(fail("mark interrupted runs"))
    return rows.length
  }).pipe(Effect.withSpan("JobStore.interruptRunning"))

  return JobStore.of({ add, list, get, remove, retire, requestRun, claim, claimBeat, startRun, finishRun, recordRun, history, moveUserHistory, interruptRunning })
})

export const layer = Layer.effect(JobStore, make)
