/**
 * JobStore — the scheduler's jobs and their run history (tables scheduler_jobs, scheduler_runs).
 * Owns checking a new job's schedule and prompt (domain/scheduler/schedule.ts), the next due time of
 * each job, and the history kept (the last KEEP_RUNS runs per job; a one-shot job's runs outlive it).
 * Does not own whether the agent or the users exist (the callers check, with the configuration),
 * nor running anything (the Scheduler does).
 *
 * Layers: `SqliteJobStore.layer` (src/layers/scheduler/SqliteJobStore.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { InvalidSchedule, JobNotFound } from "../domain/scheduler/errors.ts"
import type { Job, NewJob, OwnerLimits, Run, RunStatus, RunTrigger } from "../domain/scheduler/types.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export interface JobFilter {
  readonly userId?: string | undefined
  readonly agentId?: string | undefined
}

export interface RunOutcome {
  readonly status: Exclude<RunStatus, "running">
  readonly reply?: string | null | undefined
  readonly error?: string | null | undefined
  readonly deliveredTo?: string | null | undefined
}

export class JobStore extends Context.Service<JobStore, {
  /**
   * Checks and stores a job; its first due time is computed from now (Clock). With `limits` (a
   * user's own job), also the owner's count on the agent and the shortest interval, checked in the
   * same transaction as the insert (parallel adds cannot pass the count together).
   */
  readonly add: (job: NewJob, limits?: OwnerLimits) => Effect.Effect<Job, InvalidSchedule | StorageError>
  readonly list: (filter?: JobFilter) => Effect.Effect<ReadonlyArray<Job>, StorageError>
  readonly get: (id: string) => Effect.Effect<Option.Option<Job>, StorageError>
  /** Removes the job and its history. */
  readonly remove: (id: string) => Effect.Effect<void, JobNotFound | StorageError>
  /** Removes the job, keeping its history (a one-shot job that has run). */
  readonly retire: (id: string) => Effect.Effect<void, StorageError>
  /** Asks the running gateway to run the job at its next look. */
  readonly requestRun: (id: string) => Effect.Effect<Job, JobNotFound | StorageError>
  /**
   * Takes the job's due run: sets its next due time and clears a run request only if both are still
   * as `seen` (what the caller read); true when this caller took it. Two schedulers that saw the same
   * due time (two gateways, or one that froze past its turn and woke) take it once between them.
   */
  readonly claim: (
    id: string,
    seen: { readonly nextRunAt: number | null; readonly runRequested: boolean },
    nextRunAt: number | null
  ) => Effect.Effect<boolean, StorageError>
  /**
   * Takes a heartbeat's beat at `now` (job `heartbeat:{agent}:{user}`): true unless that workspace
   * already had one less than `gapMs` ago, whoever gave it — two gateways (or a frozen one that
   * woke) give a workspace one beat per interval between them.
   */
  readonly claimBeat: (jobId: string, now: number, gapMs: number) => Effect.Effect<boolean, StorageError>
  /** Records a run that starts now (status running); its id. */
  readonly startRun: (jobId: string, trigger: RunTrigger) => Effect.Effect<number, StorageError>
  /** Records how a run ended (now) and drops runs past KEEP_RUNS. */
  readonly finishRun: (runId: number, outcome: RunOutcome) => Effect.Effect<void, StorageError>
  /** Records a run that did not start (skipped) or failed at once, started and ended now. */
  readonly recordRun: (jobId: string, trigger: RunTrigger, outcome: RunOutcome) => Effect.Effect<void, StorageError>
  /** The job's runs, newest first. */
  readonly history: (jobId: string, limit?: number) => Effect.Effect<ReadonlyArray<Run>, StorageError>
  /**
   * Moves the runs recorded under a removed user's id — the heartbeat's, as job
   * `heartbeat:{agent}:{user}` — to the id they are removed as, so a later user of the same id starts
   * with no history; how many. (Other jobs' ids are random: their history stays as it is.)
   */
  readonly moveUserHistory: (userId: string, removedAs: string) => Effect.Effect<number, StorageError>
  /** Marks runs left `running` by a gateway that died as failed ("interrupted"); how many. */
  readonly interruptRunning: Effect.Effect<number, StorageError>
}>()("anna/JobStore") {}
