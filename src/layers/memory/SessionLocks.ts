/**
 * SessionLocks as an RcMap of Semaphore(1): a lock lives while someone holds or waits for it and is
 * dropped `idleTimeToLive` after its last use, so millions of sessions over months do not
 * accumulate locks. Each acquisition gets its own scope, so releasing the lock never closes
 * resources the caller opened.
 */
import { Duration, Effect, Layer, RcMap, Scope, Semaphore } from "effect"
import { SessionLocks } from "../../services/SessionLocks.ts"

/** The locks plus the keys that currently hold one (so tests can see idle locks being evicted). */
export const makeInspectable = (idleTimeToLive: Duration.Input = Duration.minutes(5)) =>
  Effect.gen(function*() {
    const locks = yield* RcMap.make({
      lookup: (_key: string) => Semaphore.make(1),
      idleTimeToLive
    })
    // RcMap forks its lookup and idle-eviction fibers with the current context and keeps them for
    // `idleTimeToLive`. The caller's context holds its Effect.fn stack frames, whose call-site Errors
    // keep the calls' arguments reachable (a whole `append` batch per session, for 5 minutes), so
    // the lock bookkeeping runs in the context the locks were made in instead.
    const base = yield* Effect.context<never>()
    const detached = Effect.setContext(base)
    const withLock = (key: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.acquireUseRelease(
        Scope.make(),
        (scope) =>
          RcMap.get(locks, key).pipe(
            Scope.provide(scope),
            detached,
            Effect.flatMap((semaphore) => semaphore.withPermits(1)(self))
          ),
        (scope, exit) => detached(Scope.close(scope, exit))
      )
    const keys = Effect.map(RcMap.keys(locks), (ks) => Array.from(ks))
    return { locks: SessionLocks.of({ withLock }), keys }
  })

export const make = (idleTimeToLive: Duration.Input = Duration.minutes(5)) =>
  Effect.map(makeInspectable(idleTimeToLive), (r) => r.locks)

export const layer = Layer.effect(SessionLocks, make())
