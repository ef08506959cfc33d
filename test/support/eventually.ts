/**
 * Waiting for work that ends in real time inside a test on the TestClock. A `TestClock.adjust` wakes
 * a poll or a schedule and returns once the woken fibers are suspended: with SQLite their reads and
 * writes ended within the step; with PostgreSQL (`ANNA_TEST_DATABASE=postgres`) they are round trips
 * still under way. `eventually` runs the test's check again until it passes.
 */
import { Effect } from "effect"

const realPause = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/**
 * Runs `check` until it succeeds (an assertion that throws counts as a failure), pausing 5 ms of real
 * time between tries; after `timeoutMs` of real time, the last failure is the test's.
 */
export const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, timeoutMs = 10_000): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const exit = yield* Effect.exit(check)
      if (exit._tag === "Success" || Date.now() > deadline) return yield* exit
      yield* realPause(5)
    }
  })
