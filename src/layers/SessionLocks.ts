/**
 * SessionLocks as an RcMap of Semaphore(1): a lock lives while someone holds or waits for it and is
 * dropped `idleTimeToLive` after its last use, so millions of sessions over months do not
 * accumulate locks. Each acquisition gets its own scope, so releasing the lock never closes
 * resources the caller opened.
 */
import { Duration, Effect, Exit, Layer, RcMap, Scope, Semaphore } from "effect"
import { SessionLocks } from "../services/SessionLocks.ts"

export const make = (idleTimeToLive: Duration.Input = Duration.minutes(5)) =>
  Effect.gen(function*() {
    const locks = yield* RcMap.make({
      lookup: (_key: string) => Semaphore.make(1),
      idleTimeToLive
    })
    const withLock = (key: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.acquireUseRelease(
        Scope.make(),
        (scope) =>
          RcMap.get(locks, key).pipe(
            Scope.provide(scope),
            Effect.flatMap((semaphore) => semaphore.withPermits(1)(self))
          ),
        (scope, exit) => Scope.close(scope, Exit.isSuccess(exit) ? Exit.void : exit)
      )
    return SessionLocks.of({ withLock })
  })

export const layer = Layer.effect(SessionLocks, make())
