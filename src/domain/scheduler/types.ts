/** A scheduled job and a run of it, as the scheduler stores and shows them. */

export type ScheduleKind = "cron" | "every" | "at"
export type SessionMode = "reuse" | "new"
export type CatchUp = "run" | "skip"
export type RunStatus = "ok" | "error" | "skipped" | "running"
export type RunTrigger = "schedule" | "catch_up" | "manual" | "heartbeat"

export interface Job {
  readonly id: string
  readonly agentId: string
  /** The owner: runs go through the agent's access policy as this user. */
  readonly userId: string
  readonly kind: ScheduleKind
  /** The cron expression, the duration as written (`2s`), or the ISO time. */
  readonly spec: string
  readonly tz: string | null
  readonly prompt: string
  readonly sessionMode: SessionMode
  /** Who gets the reply (null: stored only), and on which channel (null: where they wrote last). */
  readonly deliverUser: string | null
  readonly deliverChannel: string | null
  /** Missed runs while the gateway was down: run once at start, or skip (null: the setting scheduler.catch_up). */
  readonly catchUp: CatchUp | null
  readonly createdBy: "operator" | "agent"
  readonly createdAt: number
  /** Next time the job is due (null: a one-shot that has run). */
  readonly nextRunAt: number | null
  /** `anna schedule run`: the running gateway runs it at its next look, whatever the schedule. */
  readonly runRequested: boolean
}

export interface Run {
  readonly id: number
  readonly jobId: string
  readonly trigger: RunTrigger
  readonly startedAt: number
  readonly endedAt: number | null
  readonly status: RunStatus
  readonly reply: string | null
  readonly error: string | null
  readonly deliveredTo: string | null
}

/** What `add` takes; the schedule is checked by `schedule.ts`. */
export interface NewJob {
  readonly agentId: string
  readonly userId: string
  readonly cron?: string | undefined
  readonly every?: string | undefined
  readonly at?: string | undefined
  readonly tz?: string | undefined
  readonly prompt: string
  readonly sessionMode?: SessionMode | undefined
  readonly deliverUser?: string | undefined
  readonly deliverChannel?: string | undefined
  readonly catchUp?: CatchUp | undefined
  readonly createdBy: "operator" | "agent"
}

/** Bounds on a job a user makes for themselves (`JobStore.add`'s `limits`). */
export interface OwnerLimits {
  /** Jobs the owner may have on the agent, the new one included. */
  readonly maxPerOwner: number
  /** The shortest `every`. */
  readonly minEveryMs: number
}

/** Prompts are instructions, not documents. */
export const MAX_PROMPT_CHARS = 4_000
/** Jobs one user may have on one agent through the `scheduler` tool. */
export const MAX_TOOL_JOBS = 20
/** The shortest `every` the `scheduler` tool accepts (operators may go down to 1 s). */
export const MIN_TOOL_EVERY_MS = 60_000
export const MIN_EVERY_MS = 1_000
/** Runs kept per job (older ones are dropped when a run is recorded). */
export const KEEP_RUNS = 100

/**
 * A user's own jobs, whether made by the `scheduler` tool in a chat or in the console: what the tool
 * has always allowed (operators, through the CLI or as admins, are not bound by it).
 */
export const USER_JOB_LIMITS: OwnerLimits = { maxPerOwner: MAX_TOOL_JOBS, minEveryMs: MIN_TOOL_EVERY_MS }
