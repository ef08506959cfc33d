/**
 * The Scheduler's loop. At start: runs left `running` by a gateway that died are marked
 * interrupted, and jobs whose time passed while the gateway was down are run once (catch-up `run`)
 * or skipped (`skip`, recorded as a skipped run) — the job's own choice, else the setting
 * scheduler.catch_up — and the first look at the jobs is taken. Then one fiber: sleep until the next
 * due time (measured after the look, whose reads take time; at most `recheck`, so jobs added by
 * another process are seen) or until `wake`, and run what is due. Each run is its own fiber;
 * a job whose previous run is still going when it is due again gets a `skipped` run instead of a
 * second one. A one-shot (`at`) job is removed once it has run; its history stays.
 *
 * A due run is taken in the database before it starts (`JobStore.claim`: the next due time moves
 * only if it is still the one this scheduler read), so two schedulers on one database — two
 * gateways, or one frozen past a job's time that wakes while another has taken over — run each
 * due time once between them.
 */
import { Clock, Duration, Effect, FiberSet, Layer, Queue } from "effect"
import * as Metrics from "../../domain/observability/metrics.ts"
import { nextAfter } from "../../domain/scheduler/schedule.ts"
import type { Job, RunTrigger } from "../../domain/scheduler/types.ts"
import { JobStore } from "../../services/JobStore.ts"
import { LiveConfig } from "../../services/LiveConfig.ts"
import type { Notifier } from "../../services/Notifier.ts"
import { Runtime } from "../../services/Runtime.ts"
import { Scheduler } from "../../services/Scheduler.ts"
import * as Heartbeat from "./heartbeat.ts"
import { runJob } from "./runJob.ts"

export interface SchedulerOptions {
  /** Delivers replies; without it, a job with a delivery target records the reply as undeliverable. */
  readonly notifier?: Notifier["Service"] | undefined
  /** The longest the loop sleeps before looking at the jobs again (default 5 s). */
  readonly recheck?: Duration.Input | undefined
  /** `layer` runs the heartbeat too (default true). */
  readonly heartbeat?: boolean | undefined
}

export const make = (options: SchedulerOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const runtime = yield* Runtime
    const live = yield* LiveConfig
    const recheck = Duration.toMillis(Duration.fromInputUnsafe(options.recheck ?? "5 seconds"))
    const wakeUp = yield* Queue.sliding<void>(1)
    const fibers = yield* FiberSet.make()
    const running = new Set<string>()

    const execute = (job: Job, trigger: RunTrigger, runStart: number) =>
      Effect.gen(function*() {
        const runId = yield* store.startRun(job.id, trigger)
        const outcome = yield* runJob(runtime, options.notifier, job, runId)
        yield* Metrics.schedulerRun(outcome.status)
        yield* store.finishRun(runId, outcome)
        if (outcome.status === "error") yield* Effect.logWarning(`scheduler: job ${job.id} failed: ${outcome.error ?? ""}`)
        if (job.kind === "at" && (trigger !== "manual" || job.nextRunAt === null || job.nextRunAt <= runStart)) yield* store.retire(job.id)
      }).pipe(
        Effect.catch((e) => Effect.logError(`scheduler: job ${job.id}: ${e.message}`)),
        Effect.ensuring(Effect.sync(() => running.delete(job.id)))
      )

    /** Starts a run of `job` now (or records a skipped one), and moves its next due time on. */
    const fire = (job: Job, trigger: RunTrigger, now: number) =>
      Effect.gen(function*() {
        // A manual run leaves the schedule as it was (unless it is overdue: then the manual run
        // counts as that one); a scheduled one moves it past now.
        const overdue = job.nextRunAt !== null && job.nextRunAt <= now
        const next = trigger === "manual" && !overdue ? job.nextRunAt : job.kind === "at" ? null : nextAfter(job, now)
        // Another scheduler (a second gateway, or this one's earlier self frozen past the time) took this run.
        if (!(yield* store.claim(job.id, job, next))) return
        if (running.has(job.id)) {
          yield* Metrics.schedulerRun("skipped")
          yield* store.recordRun(job.id, trigger, { status: "skipped", error: "the previous run was still going" })
          if (job.kind === "at" && trigger !== "manual") yield* store.retire(job.id)
          return
        }
        running.add(job.id)
        yield* FiberSet.run(fibers, execute(job, trigger, now))
      })

    const catchUp = Effect.gen(function*() {
      const interrupted = yield* store.interruptRunning
      if (interrupted > 0) yield* Effect.logWarning(`scheduler: ${interrupted} run(s) were interrupted by the last stop`)
      const fallback = yield* live.setting("scheduler.catch_up")
      const now = yield* Clock.currentTimeMillis
      for (const job of yield* store.list()) {
        if (job.runRequested || job.nextRunAt === null || job.nextRunAt > now) continue
        if ((job.catchUp ?? fallback) === "run") {
          yield* fire(job, "catch_up", now)
          continue
        }
        if (!(yield* store.claim(job.id, job, job.kind === "at" ? null : nextAfter(job, now)))) continue
        yield* Metrics.schedulerRun("skipped")
        yield* store.recordRun(job.id, "catch_up", { status: "skipped", error: "missed while the gateway was down (catch-up: skip)" })
        if (job.kind === "at") yield* store.retire(job.id)
      }
    })

    const tick = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      let soonest = now + recheck
      for (const job of yield* store.list()) {
        if (job.runRequested) yield* fire(job, "manual", now)
        else if (job.nextRunAt !== null && job.nextRunAt <= now) {
          yield* fire(job, "schedule", now)
          const next = job.kind === "at" ? null : nextAfter(job, now)
          if (next !== null) soonest = Math.min(soonest, next)
        } else if (job.nextRunAt !== null) soonest = Math.min(soonest, job.nextRunAt)
      }
      return soonest
    }).pipe(Effect.catch((e) => Effect.andThen(Effect.logError(`scheduler: ${e.message}`), Effect.map(Clock.currentTimeMillis, (now) => now + recheck))))

    /** Sleeps until the time `at` (measured after the look's reads, which take time), or a wake. */
    const sleepUntil = (at: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.raceFirst(Effect.sleep(Duration.millis(Math.max(0, at - now))), Queue.take(wakeUp)))

    yield* catchUp.pipe(Effect.catch((e) => Effect.logError(`scheduler: catch-up failed: ${e.message}`)))
    // The first look is done when the scheduler is up; then the loop.
    const first = yield* tick
    yield* sleepUntil(first).pipe(
      Effect.andThen(Effect.forever(Effect.flatMap(tick, sleepUntil))),
      Effect.forkScoped
    )

    return Scheduler.of({
      wake: Effect.asVoid(Queue.offer(wakeUp, undefined)),
      running: Effect.sync(() => [...running])
    })
  })

/** The job loop and (unless `heartbeat: false`) the heartbeat, for the layer's lifetime. */
export const layer = (options: SchedulerOptions = {}) =>
  Layer.effect(
    Scheduler,
    Effect.tap(make(options), () => (options.heartbeat === false ? Effect.void : Heartbeat.start(options.notifier)))
  )
