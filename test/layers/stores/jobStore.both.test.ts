/**
 * JobStore on both databases (issue 26): jobs added, listed by owner, read, run on request,
 * rescheduled, retired and removed the same way on a SQLite file and on PostgreSQL; an owner's limit
 * holds against parallel adds from two connections (as two gateways would make them); runs are
 * recorded, kept to the newest KEEP_RUNS, marked interrupted, and a removed user's heartbeat history
 * moves to the name they were removed as.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { KEEP_RUNS, type NewJob } from "../../../src/domain/scheduler/types.ts"
import * as SqliteJobStore from "../../../src/layers/scheduler/SqliteJobStore.ts"
import { JobStore } from "../../../src/services/JobStore.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const job = (over: Partial<NewJob> = {}): NewJob => ({
  agentId: "default",
  userId: "alice",
  prompt: "summarise my open tasks",
  createdBy: "operator",
  every: "1h",
  ...over
})

for (const db of testDatabases(sqliteTemp)) {
  describe(`JobStore (${db.name})`, () => {
    const layer = SqliteJobStore.layer.pipe(Layer.provideMerge(db.layer))

    it.effect("adds, lists by owner, gets, requests a run, reschedules, retires and removes", () =>
      Effect.gen(function*() {
        const store = yield* JobStore
        // A second apart: jobs list by creation time (then by their random ids).
        const a = yield* store.add(job({ cron: "0 9 * * 1-5", every: undefined, tz: "Europe/Paris", deliverUser: "alice", deliverChannel: "telegram" }))
        yield* TestClock.adjust(1000)
        const b = yield* store.add(job({ userId: "bob", at: "2099-01-01T00:00:00Z", every: undefined, sessionMode: "new", catchUp: "skip" }))
        yield* TestClock.adjust(1000)
        const c = yield* store.add(job({ agentId: "other" }))
        assert.deepStrictEqual(
          [a.kind, a.spec, a.tz, a.deliverUser, a.deliverChannel, a.sessionMode, a.runRequested],
          ["cron", "0 9 * * 1-5", "Europe/Paris", "alice", "telegram", "reuse", false]
        )
        assert.deepStrictEqual([b.kind, b.sessionMode, b.catchUp, b.nextRunAt], ["at", "new", "skip", Date.parse("2099-01-01T00:00:00Z")])
        assert.deepStrictEqual((yield* store.list()).map((j) => j.id), [a.id, b.id, c.id])
        assert.deepStrictEqual((yield* store.list({ userId: "alice" })).map((j) => j.id), [a.id, c.id])
        assert.deepStrictEqual((yield* store.list({ userId: "alice", agentId: "other" })).map((j) => j.id), [c.id])
        assert.deepStrictEqual(Option.getOrUndefined(yield* store.get(a.id)), a)
        assert.isTrue((yield* store.requestRun(c.id)).runRequested)
        yield* store.claim(c.id, { nextRunAt: c.nextRunAt, runRequested: true }, 12_345)
        assert.deepInclude(Option.getOrUndefined(yield* store.get(c.id)), { nextRunAt: 12_345, runRequested: false })
        yield* store.claim(c.id, { nextRunAt: 12_345, runRequested: false }, null)
        assert.isNull(Option.getOrUndefined(yield* store.get(c.id))?.nextRunAt)
        // A due run is taken once: only while the job is still as the taker read it (NULL included).
        assert.isTrue(yield* store.claim(c.id, { nextRunAt: null, runRequested: false }, 20_000))
        assert.isFalse(yield* store.claim(c.id, { nextRunAt: null, runRequested: false }, 30_000))
        assert.isFalse(yield* store.claim(c.id, { nextRunAt: 20_000, runRequested: true }, 30_000))
        yield* store.requestRun(c.id)
        assert.isFalse(yield* store.claim(c.id, { nextRunAt: 20_000, runRequested: false }, 30_000), "a run was asked for meanwhile")
        assert.isTrue(yield* store.claim(c.id, { nextRunAt: 20_000, runRequested: true }, 20_000))
        assert.deepInclude(Option.getOrUndefined(yield* store.get(c.id)), { nextRunAt: 20_000, runRequested: false })
        assert.isFalse(yield* store.claim("no-such-job", { nextRunAt: null, runRequested: false }, 1))
        // A heartbeat's beat is taken once per gap, by whoever comes first.
        assert.isTrue(yield* store.claimBeat("heartbeat:a1:alice", 100_000, 50_000))
        assert.isFalse(yield* store.claimBeat("heartbeat:a1:alice", 149_999, 50_000))
        assert.isTrue(yield* store.claimBeat("heartbeat:a1:bob", 149_999, 50_000))
        assert.isTrue(yield* store.claimBeat("heartbeat:a1:alice", 150_000, 50_000))
        assert.isFalse(yield* store.claimBeat("heartbeat:a1:alice", 150_000, 50_000))
        yield* store.retire(b.id)
        yield* store.remove(a.id)
        assert.deepStrictEqual((yield* store.list()).map((j) => j.id), [c.id])
        assert.strictEqual((yield* Effect.flip(store.remove(a.id)))._tag, "JobNotFound")
        assert.strictEqual((yield* Effect.flip(store.requestRun("job-none")))._tag, "JobNotFound")
        assert.strictEqual((yield* Effect.flip(store.add(job({ prompt: "  " }))))._tag, "InvalidSchedule")
      }).pipe(Effect.provide(layer)))

    it.effect("an owner's limit holds against parallel adds from two connections", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const one = Context.get(yield* Layer.build(SqliteJobStore.layer.pipe(Layer.provide(opened.layer))), JobStore)
        const two = Context.get(yield* Layer.build(SqliteJobStore.layer.pipe(Layer.provide(opened.layer))), JobStore)
        const limits = { maxPerOwner: 5, minEveryMs: 60_000 }
        const outcomes = yield* Effect.all(
          Array.from({ length: 16 }, (_, i) => Effect.result((i % 2 === 0 ? one : two).add(job(), limits))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(outcomes.filter((o) => o._tag === "Success").length, 5)
        assert.strictEqual((yield* one.list({ userId: "alice" })).length, 5)
      }))

    it.effect("records runs, keeps the newest KEEP_RUNS, marks running ones interrupted, moves a removed user's heartbeat history", () =>
      Effect.gen(function*() {
        const store = yield* JobStore
        const j = yield* store.add(job())
        for (let i = 0; i < KEEP_RUNS + 3; i++) yield* store.recordRun(j.id, "schedule", { status: "ok", reply: `r${i}` })
        const history = yield* store.history(j.id)
        assert.strictEqual(history.length, KEEP_RUNS)
        assert.strictEqual(history[0]?.reply, `r${KEEP_RUNS + 2}`)
        assert.strictEqual(history.at(-1)?.reply, "r3")
        assert.deepStrictEqual((yield* store.history(j.id, 2)).map((r) => r.reply), [`r${KEEP_RUNS + 2}`, `r${KEEP_RUNS + 1}`])
        const running = yield* store.startRun(j.id, "manual")
        assert.isNumber(running)
        assert.strictEqual(yield* store.interruptRunning, 1)
        assert.deepInclude((yield* store.history(j.id, 1))[0], { id: running, status: "error", trigger: "manual" })
        // heartbeat runs are recorded under `heartbeat:{agent}:{user}`
        yield* store.recordRun("heartbeat:default:alice", "heartbeat", { status: "ok" })
        yield* store.recordRun("heartbeat:default:malice", "heartbeat", { status: "ok" })
        yield* store.recordRun("heartbeat:default:alice", "heartbeat", { status: "skipped" })
        assert.strictEqual(yield* store.moveUserHistory("alice", "removed-1"), 2)
        assert.strictEqual((yield* store.history("heartbeat:default:removed-1")).length, 2)
        assert.strictEqual((yield* store.history("heartbeat:default:malice")).length, 1)
        assert.strictEqual(yield* store.moveUserHistory("nobody", "removed-2"), 0)
      }).pipe(Effect.provide(layer)))
  })
}
