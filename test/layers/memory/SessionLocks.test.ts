import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as SessionLocks from "../../../src/layers/memory/SessionLocks.ts"
import { SessionLocks as SessionLocksService } from "../../../src/services/SessionLocks.ts"

/** Lets forked fibers run until they block. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})

describe("SessionLocks", () => {
  it.effect("serializes effects on the same key (no overlap)", () =>
    Effect.gen(function*() {
      const locks = yield* SessionLocks.make()
      const log: Array<string> = []
      let inside = 0
      let maxInside = 0
      const task = (i: number) =>
        Effect.gen(function*() {
          inside++
          maxInside = Math.max(maxInside, inside)
          log.push(`enter ${i}`)
          for (let k = 0; k < 5; k++) yield* Effect.yieldNow
          log.push(`exit ${i}`)
          inside--
          return i
        }).pipe(locks.withLock("same"))
      const results = yield* Effect.all(Array.from({ length: 8 }, (_, i) => task(i)), { concurrency: "unbounded" })
      assert.deepStrictEqual(results, [0, 1, 2, 3, 4, 5, 6, 7])
      assert.strictEqual(maxInside, 1)
      assert.strictEqual(log.length, 16)
      for (let j = 0; j < log.length; j += 2) {
        const n = log[j]?.split(" ")[1]
        assert.strictEqual(log[j], `enter ${n}`)
        assert.strictEqual(log[j + 1], `exit ${n}`)
      }
    }))

  it.effect("runs effects on different keys in parallel", () =>
    Effect.gen(function*() {
      const locks = yield* SessionLocks.make()
      const gate = yield* Deferred.make<void>()
      const entered = new Set<string>()
      const hold = (key: string, name: string) =>
        Effect.gen(function*() {
          entered.add(name)
          yield* Deferred.await(gate)
        }).pipe(locks.withLock(key))
      const a = yield* Effect.forkChild(hold("a", "a"))
      const b = yield* Effect.forkChild(hold("b", "b"))
      // a second holder of "a" must wait
      const a2 = yield* Effect.forkChild(hold("a", "a2"))
      yield* settle
      assert.deepStrictEqual([...entered].sort(), ["a", "b"])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(a)
      yield* Fiber.join(b)
      yield* Fiber.join(a2)
      assert.deepStrictEqual([...entered].sort(), ["a", "a2", "b"])
    }))

  it.effect("releases the lock when the effect fails, dies or is interrupted", () =>
    Effect.gen(function*() {
      const locks = yield* SessionLocks.make()
      const withK = locks.withLock("k")
      const failed = yield* withK(Effect.fail("boom")).pipe(Effect.flip)
      assert.strictEqual(failed, "boom")
      assert.strictEqual(yield* withK(Effect.succeed(1)), 1)
      const died = yield* withK(Effect.die(new Error("bug"))).pipe(Effect.exit)
      assert.isTrue(Exit.hasDies(died))
      assert.strictEqual(yield* withK(Effect.succeed(2)), 2)
      const holder = yield* Effect.forkChild(withK(Effect.never))
      yield* settle
      const waiter = yield* Effect.forkChild(withK(Effect.succeed(3)))
      yield* settle
      assert.isUndefined(waiter.pollUnsafe())
      yield* Fiber.interrupt(holder)
      assert.strictEqual(yield* Fiber.join(waiter), 3)
    }))

  it.effect("an interrupted waiter does not keep the lock", () =>
    Effect.gen(function*() {
      const locks = yield* SessionLocks.make()
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(locks.withLock("k")(Deferred.await(gate)))
      yield* settle
      const waiter = yield* Effect.forkChild(locks.withLock("k")(Effect.succeed("never")))
      yield* settle
      yield* Fiber.interrupt(waiter)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      assert.strictEqual(yield* locks.withLock("k")(Effect.succeed("free")), "free")
    }))

  it.effect("evicts idle locks after the idle time-to-live, never a held one", () =>
    Effect.gen(function*() {
      const { locks, keys } = yield* SessionLocks.makeInspectable("1 minute")
      assert.deepStrictEqual(yield* keys, [])
      yield* locks.withLock("idle")(Effect.void)
      assert.deepStrictEqual(yield* keys, ["idle"])
      const gate = yield* Deferred.make<void>()
      const held = yield* Effect.forkChild(locks.withLock("held")(Deferred.await(gate)))
      yield* settle
      yield* TestClock.adjust("59 seconds")
      assert.deepStrictEqual((yield* keys).sort(), ["held", "idle"])
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(yield* keys, ["held"])
      yield* TestClock.adjust("10 minutes")
      assert.deepStrictEqual(yield* keys, ["held"])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(held)
      yield* TestClock.adjust("61 seconds")
      assert.deepStrictEqual(yield* keys, [])
      // an evicted key gets a fresh lock that works
      assert.strictEqual(yield* locks.withLock("idle")(Effect.succeed("again")), "again")
    }))

  it.effect("a use within the time-to-live keeps the lock", () =>
    Effect.gen(function*() {
      const { locks, keys } = yield* SessionLocks.makeInspectable("1 minute")
      yield* locks.withLock("k")(Effect.void)
      yield* TestClock.adjust("50 seconds")
      yield* locks.withLock("k")(Effect.void)
      yield* TestClock.adjust("50 seconds")
      assert.deepStrictEqual(yield* keys, ["k"])
      yield* TestClock.adjust("11 seconds")
      assert.deepStrictEqual(yield* keys, [])
    }))

  it.effect("releasing the lock does not close the caller's scoped resources", () =>
    Effect.gen(function*() {
      const locks = yield* SessionLocks.make()
      let released = false
      yield* Effect.scoped(Effect.gen(function*() {
        const resource = yield* locks.withLock("k")(
          Effect.acquireRelease(Effect.succeed("open"), () => Effect.sync(() => (released = true)))
        )
        assert.strictEqual(resource, "open")
        assert.isFalse(released)
      }))
      assert.isTrue(released)
    }))

  it.effect("the layer provides the service", () =>
    Effect.gen(function*() {
      const locks = yield* SessionLocksService
      assert.strictEqual(yield* locks.withLock("x")(Effect.succeed(7)), 7)
    }).pipe(Effect.provide(SessionLocks.layer)))
})
