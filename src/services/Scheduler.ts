/**
 * Scheduler — the gateway's loop that runs scheduled jobs (JobStore) as agent turns and delivers
 * their replies (Notifier), and the heartbeat (agents reading HEARTBEAT.md at an interval). One
 * fiber sleeps until the next due job; a change made in this process wakes it (`wake`), a change
 * made by another process (the CLI) is seen at its next look (at most `recheck` later). A job's
 * runs never overlap; a failing run is recorded and the schedule goes on.
 *
 * Owns when jobs run, catch-up after downtime and the no-overlap rule; not the jobs' storage
 * (JobStore) nor the turn itself (Runtime).
 *
 * Layers: `Scheduler.layer` (src/layers/scheduler/Scheduler.ts), started by the gateway once its
 * channels and the Notifier run.
 */
import { Context, type Effect } from "effect"

export class Scheduler extends Context.Service<Scheduler, {
  /** Look at the jobs again now (one was added, removed or asked to run in this process). */
  readonly wake: Effect.Effect<void>
  /** Ids of the jobs whose run is going on now. */
  readonly running: Effect.Effect<ReadonlyArray<string>>
}>()("anna/Scheduler") {}
