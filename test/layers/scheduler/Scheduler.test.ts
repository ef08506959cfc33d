import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import { ChannelError } from "../../../src/domain/channels/errors.ts"
import { KEEP_RUNS, type NewJob } from "../../../src/domain/scheduler/types.ts"
import type { ChatTarget, ResolvedChat, TurnEvent } from "../../../src/domain/runtime/types.ts"
import * as Scheduler from "../../../src/layers/scheduler/Scheduler.ts"
import * as SqliteJobStore from "../../../src/layers/scheduler/SqliteJobStore.ts"
import { JobStore } from "../../../src/services/JobStore.ts"
import { LiveConfig } from "../../../src/services/LiveConfig.ts"
import { Notifier } from "../../../src/services/Notifier.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"
import { eventually } from "../../support/eventually.ts"
import { done } from "../../support/fakeRuntime.ts"

const MIN = 60_000
const HOUR = 60 * MIN

/** A runtime whose turns are `answer(prompt, n)` (n counts turns from 1); records targets. */
const fakeRuntime = (answer: (prompt: string, n: number) => Effect.Effect<ReadonlyArray<TurnEvent>>) => {
  const targets: Array<ChatTarget> = []
  let n = 0
  const resolve = (target: ChatTarget) =>
    Effect.sync(() => {
      targets.push(target)
      const chat: ResolvedChat = {
        userId: target.userId ?? "", userName: "", agentId: target.agentId ?? "", platform: target.platform, chatId: target.chatId ?? "dm",
        isGroup: false, context: target.chatId ?? "dm", sessionKey: "", model: ""
      }
      return chat
    })
  const send = (_chat: ResolvedChat, message: unknown) =>
    Stream.unwrap(Effect.map(Effect.suspend(() => answer(String(message), ++n)), Stream.fromIterable))
  return { targets, turns: () => n, service: Runtime.of({ resolve, send, abort: () => Effect.succeed(false) }) }
}

const reply = (text: string): ReadonlyArray<TurnEvent> => [{ type: "text", text }, done("end_turn")]

const fakeNotifier = (fail = false) => {
  const sent: Array<{ user: string; text: string; channel: string | undefined }> = []
  const service = Notifier.of({
    notify: (user, message, options) =>
      fail
        ? Effect.fail(new ChannelError({ channel: "telegram", reason: "the user blocked the bot" }))
        : Effect.sync(() => {
          sent.push({ user, text: message.text ?? "", channel: options?.channel })
          return options?.channel ?? "telegram"
        }),
    channels: Effect.succeed(["telegram"])
  })
  return { sent, service }
}

const liveConfig = (catchUp = "run") =>
  Layer.succeed(LiveConfig, LiveConfig.of({
    snapshot: () => Effect.die("unused"),
    setting: (key) => Effect.succeed(key === "scheduler.catch_up" ? catchUp : ""),
    channels: Effect.succeed([]),
    version: Effect.succeed(1),
    changes: Stream.empty
  }))

const job = (over: Partial<NewJob>): NewJob => ({
  agentId: "default", userId: "alice", prompt: "summarise my open tasks", createdBy: "operator", deliverUser: "alice", ...over
})

const start = (runtime: Runtime["Service"], notifier: Notifier["Service"] | undefined, catchUp = "run") =>
  Scheduler.make({ notifier, recheck: "1 hour", heartbeat: false }).pipe(
    Effect.provide(Layer.merge(Layer.succeed(Runtime, runtime), liveConfig(catchUp)))
  )

const withStore = <A, E>(self: Effect.Effect<A, E, JobStore | import("effect").Scope.Scope>) =>
  self.pipe(Effect.provide(SqliteJobStore.layer.pipe(Layer.provideMerge(sqliteTemp))))

describe("Scheduler", () => {
  it.effect("runs a cron job at its time and delivers the reply", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime(() => Effect.succeed(reply("3 open tasks")))
      const notifier = fakeNotifier()
      const added = yield* store.add(job({ cron: "0 8 * * *", deliverChannel: "telegram" }))
      yield* start(rt.service, notifier.service)
      yield* TestClock.adjust(8 * HOUR - MIN)
      expect(rt.turns()).toBe(0)
      yield* TestClock.adjust(MIN)
      yield* eventually(Effect.gen(function*() {
        expect(notifier.sent).toEqual([{ user: "alice", text: "3 open tasks", channel: "telegram" }])
        const [run] = yield* store.history(added.id)
        expect(run).toMatchObject({ status: "ok", startedAt: 8 * HOUR, reply: "3 open tasks", deliveredTo: "alice@telegram", trigger: "schedule" })
      }))
      expect(rt.targets[0]).toMatchObject({ platform: "scheduler", userId: "alice", agentId: "default", chatId: added.id })
      expect(Option.map(yield* store.get(added.id), (j) => j.nextRunAt)).toEqual(Option.some(32 * HOUR))
      yield* TestClock.adjust(24 * HOUR)
      yield* eventually(Effect.sync(() => expect(notifier.sent).toHaveLength(2)))
    })))

  it.effect("runs an every job each interval, in a fresh session per run in session mode new", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime((_, n) => Effect.succeed(reply(`tick ${n}`)))
      const added = yield* store.add(job({ every: "2m", sessionMode: "new", deliverUser: undefined }))
      yield* start(rt.service, undefined)
      for (let n = 1; n <= 3; n++) {
        yield* TestClock.adjust(2 * MIN)
        yield* eventually(Effect.map(store.history(added.id), (runs) => expect(runs.filter((r) => r.status === "ok")).toHaveLength(n)))
      }
      const runs = yield* store.history(added.id)
      expect(runs.map((r) => [r.status, r.startedAt, r.reply, r.deliveredTo])).toEqual([
        ["ok", 6 * MIN, "tick 3", null],
        ["ok", 4 * MIN, "tick 2", null],
        ["ok", 2 * MIN, "tick 1", null]
      ])
      expect(new Set(rt.targets.map((t) => t.chatId)).size).toBe(3)
    })))

  it.effect("catch-up run: a job missed while down runs once at start, then on its schedule", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime(() => Effect.succeed(reply("late")))
      const added = yield* store.add(job({ every: "1h", deliverUser: undefined }))
      yield* TestClock.adjust(5 * HOUR + 30 * MIN) // the gateway is down: five runs missed
      yield* start(rt.service, undefined, "run")
      yield* eventually(Effect.map(store.history(added.id), ([run]) =>
        expect(run).toMatchObject({ trigger: "catch_up", status: "ok", startedAt: 5 * HOUR + 30 * MIN })
      ))
      expect(rt.turns()).toBe(1)
      yield* TestClock.adjust(HOUR)
      yield* eventually(Effect.sync(() => expect(rt.turns()).toBe(2)))
    })))

  it.effect("catch-up skip: a missed job is recorded as skipped and waits for its next time", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime(() => Effect.succeed(reply("late")))
      const added = yield* store.add(job({ every: "1h", deliverUser: undefined }))
      const own = yield* store.add(job({ every: "1h", deliverUser: undefined, catchUp: "run" }))
      yield* TestClock.adjust(3 * HOUR + 10 * MIN)
      yield* start(rt.service, undefined, "skip")
      yield* eventually(Effect.map(store.history(own.id), ([run]) => expect(run).toMatchObject({ status: "ok", trigger: "catch_up" })))
      expect(rt.turns()).toBe(1) // only the job whose own catch-up is `run`
      expect((yield* store.history(added.id)).map((r) => r.status)).toEqual(["skipped"])
      yield* TestClock.adjust(HOUR)
      yield* eventually(Effect.map(store.history(added.id), (runs) => expect(runs.map((r) => r.status)).toEqual(["ok", "skipped"])))
    })))

  it.effect("never overlaps: a run still going when the job is due again gives skipped ticks, not a second run", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const release = yield* Deferred.make<void>()
      const rt = fakeRuntime((_, n) => n === 1 ? Effect.as(Deferred.await(release), reply("slow")) : Effect.succeed(reply("fast")))
      const added = yield* store.add(job({ every: "1m", deliverUser: undefined }))
      yield* start(rt.service, undefined)
      yield* TestClock.adjust(MIN)
      yield* eventually(Effect.sync(() => expect(rt.turns()).toBe(1)))
      for (let skipped = 1; skipped <= 2; skipped++) {
        yield* TestClock.adjust(MIN)
        yield* eventually(Effect.map(store.history(added.id), (runs) => expect(runs.filter((r) => r.status === "skipped")).toHaveLength(skipped)))
      }
      expect(rt.turns()).toBe(1)
      yield* Deferred.succeed(release, undefined)
      yield* eventually(Effect.map(store.history(added.id), (runs) => expect(runs.at(-1)?.status).toBe("ok")))
      yield* TestClock.adjust(MIN)
      yield* eventually(Effect.map(store.history(added.id), (runs) => expect(runs[0]?.status).toBe("ok")))
      expect(rt.turns()).toBe(2)
      const runs = yield* store.history(added.id)
      expect(runs.map((r) => [r.status, r.startedAt])).toEqual([
        ["ok", 4 * MIN],
        ["skipped", 3 * MIN],
        ["skipped", 2 * MIN],
        ["ok", MIN]
      ])
    })))

  it.effect("a failing run is recorded with its error and the schedule goes on; a failed delivery too", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime((_, n) =>
        Effect.succeed(n === 1 ? [{ type: "notice", text: "The model provider is unavailable." }, done("unavailable")] : reply("fine"))
      )
      const added = yield* store.add(job({ every: "1m", deliverUser: undefined }))
      const delivered = yield* store.add(job({ cron: "30 0 * * *" }))
      yield* start(rt.service, fakeNotifier(true).service)
      yield* TestClock.adjust(MIN)
      yield* eventually(Effect.map(store.history(added.id), (runs) => expect(runs).toHaveLength(1)))
      yield* TestClock.adjust(MIN)
      yield* eventually(Effect.map(store.history(added.id), (runs) =>
        expect(runs.map((r) => [r.status, r.error])).toEqual([
          ["ok", null],
          ["error", "The model provider is unavailable."]
        ])
      ))
      yield* TestClock.adjust(28 * MIN)
      yield* eventually(Effect.map(store.history(delivered.id), ([run]) =>
        expect(run).toMatchObject({ status: "error", reply: "fine", error: "delivery failed: channel telegram: the user blocked the bot" })
      ))
    })))

  it.effect("a one-shot job runs once and is removed; its history stays", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime(() => Effect.succeed(reply("reminder")))
      const added = yield* store.add(job({ at: new Date(10 * MIN).toISOString(), deliverUser: undefined }))
      yield* start(rt.service, undefined)
      yield* TestClock.adjust(10 * MIN)
      yield* eventually(Effect.map(store.get(added.id), (left) => expect(Option.isNone(left)).toBe(true)))
      expect(rt.turns()).toBe(1)
      expect((yield* store.history(added.id)).map((r) => r.status)).toEqual(["ok"])
      yield* TestClock.adjust(HOUR)
      expect(rt.turns()).toBe(1)
    })))

  it.effect("a run asked for (anna schedule run) runs now and leaves the schedule; runs cut by a stop are marked interrupted", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime(() => Effect.succeed(reply("now")))
      const added = yield* store.add(job({ every: "1d", deliverUser: undefined }))
      const cut = yield* store.startRun(added.id, "schedule")
      const scheduler = yield* start(rt.service, undefined)
      expect((yield* store.history(added.id)).find((r) => r.id === cut)).toMatchObject({ status: "error", error: expect.stringContaining("interrupted") })
      yield* TestClock.adjust(MIN)
      yield* store.requestRun(added.id)
      yield* scheduler.wake
      yield* TestClock.adjust(0)
      yield* eventually(Effect.map(store.history(added.id), ([run]) => expect(run).toMatchObject({ status: "ok", trigger: "manual", startedAt: MIN })))
      expect(rt.turns()).toBe(1)
      expect(Option.map(yield* store.get(added.id), (j) => [j.nextRunAt, j.runRequested])).toEqual(Option.some([24 * HOUR, false]))
    })))

  it.effect("a run asked for while the job is overdue counts as its run: one run, the schedule moves on", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const rt = fakeRuntime(() => Effect.succeed(reply("caught up")))
      const every = yield* store.add(job({ every: "1h", deliverUser: undefined }))
      const once = yield* store.add(job({ at: new Date(HOUR).toISOString(), deliverUser: undefined }))
      yield* TestClock.adjust(2 * HOUR) // down while both became due
      yield* store.requestRun(every.id)
      yield* store.requestRun(once.id)
      yield* start(rt.service, undefined, "run")
      yield* TestClock.adjust(MIN)
      yield* eventually(Effect.gen(function*() {
        expect((yield* store.history(every.id)).map((r) => [r.trigger, r.status])).toEqual([["manual", "ok"]])
        expect(Option.isNone(yield* store.get(once.id))).toBe(true)
      }))
      expect(rt.turns()).toBe(2)
      expect(Option.map(yield* store.get(every.id), (j) => j.nextRunAt)).toEqual(Option.some(3 * HOUR))
      expect(Option.isNone(yield* store.get(once.id))).toBe(true)
      expect((yield* store.history(once.id)).map((r) => [r.trigger, r.status])).toEqual([["manual", "ok"]])
    })))

  it.effect("keeps the last KEEP_RUNS runs of a job", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const added = yield* store.add(job({ every: "1h", deliverUser: undefined }))
      for (let i = 0; i < KEEP_RUNS + 5; i++) yield* store.recordRun(added.id, "schedule", { status: "ok", reply: `run ${i}` })
      const runs = yield* store.history(added.id, 1_000)
      expect(runs).toHaveLength(KEEP_RUNS)
      expect([runs[0]?.reply, runs.at(-1)?.reply]).toEqual([`run ${KEEP_RUNS + 4}`, "run 5"])
    })))

  it.effect("refuses bad schedules with one clear reason", () =>
    withStore(Effect.gen(function*() {
      const store = yield* JobStore
      const reason = (j: NewJob) => store.add(j).pipe(Effect.flip, Effect.map((e) => e.message))
      expect(yield* reason(job({ cron: "0 8 * * *", every: "1h" }))).toBe("give exactly one of --cron, --every or --at")
      expect(yield* reason(job({}))).toBe("give exactly one of --cron, --every or --at")
      expect(yield* reason(job({ at: new Date(0).toISOString() }))).toBe("1970-01-01T00:00:00.000Z is in the past")
      expect(yield* reason(job({ cron: "0 8 * * *", tz: "Nowhere/Else" }))).toContain("unknown time zone")
      expect(yield* reason(job({ every: "1h", prompt: "x".repeat(4_001) }))).toContain("longer than 4000")
    })))
})

// Two schedulers on one database (issue 28: two gateways, or one frozen past a job's time that wakes
// while another has taken over): each due time runs once between them, taken in the database.
for (const db of testDatabases(sqliteTemp)) {
  describe(`Scheduler: two on one database (${db.name})`, () => {
    it.effect("run each due time once between them, and a catch-up once", () =>
      Effect.gen(function*() {
        const store = yield* JobStore
        const a = fakeRuntime((_, n) => Effect.succeed(reply(`a ${n}`)))
        const b = fakeRuntime((_, n) => Effect.succeed(reply(`b ${n}`)))
        const every = yield* store.add(job({ every: "2m", deliverUser: undefined }))
        const missed = yield* store.add(job({ every: "1h", deliverUser: undefined }))
        yield* TestClock.adjust(HOUR + MIN) // both were down past `missed`'s time (and `every`'s)
        const schedulers = [yield* start(a.service, undefined, "run"), yield* start(b.service, undefined, "run")]
        const ok = (n: number) => eventually(Effect.map(store.history(every.id), (runs) => expect(runs.filter((r) => r.status === "ok")).toHaveLength(n)))
        yield* ok(1)
        for (let n = 2; n <= 5; n++) {
          yield* TestClock.adjust(2 * MIN)
          // A loop still busy with its last look (PostgreSQL answers in real time) looks again at once.
          for (const s of schedulers) yield* s.wake
          yield* ok(n)
        }
        const runs = yield* store.history(every.id)
        // The catch-up at start, then one run per two minutes: no due time twice, none skipped as "still going".
        expect(runs.map((r) => [r.trigger, r.startedAt])).toEqual([
          ["schedule", HOUR + 9 * MIN],
          ["schedule", HOUR + 7 * MIN],
          ["schedule", HOUR + 5 * MIN],
          ["schedule", HOUR + 3 * MIN],
          ["catch_up", HOUR + MIN]
        ])
        expect((yield* store.history(missed.id)).map((r) => r.trigger)).toEqual(["catch_up"])
        expect(a.turns() + b.turns()).toBe(6)
      }).pipe(Effect.provide(SqliteJobStore.layer.pipe(Layer.provideMerge(db.layer)))))
  })
}
