/**
 * A running scheduler and `anna user remove` in another process on the same database (issue 23): the
 * removed user's job stops firing at the scheduler's next look (no "unknown user" run every minute),
 * its run history stays, and a new user made later with the same id inherits no job. Time is the
 * TestClock's; the runtime is a fake that answers as the user it resolves, through the real store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ChatTarget, ResolvedChat } from "../../../src/domain/runtime/types.ts"
import { NoAgent } from "../../../src/domain/runtime/errors.ts"
import * as SqliteConfigStore from "../../../src/layers/config/SqliteConfigStore.ts"
import * as Scheduler from "../../../src/layers/scheduler/Scheduler.ts"
import * as SqliteJobStore from "../../../src/layers/scheduler/SqliteJobStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { JobStore } from "../../../src/services/JobStore.ts"
import { LiveConfig } from "../../../src/services/LiveConfig.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { anna } from "../../support/cli.ts"
import { done } from "../../support/fakeRuntime.ts"
import { homeDatabase } from "../../support/db.ts"
import { eventually } from "../../support/eventually.ts"

const MIN = 60_000

const liveConfig = Layer.succeed(LiveConfig, LiveConfig.of({
  snapshot: () => Effect.die("unused"),
  setting: (key) => Effect.succeed(key === "scheduler.catch_up" ? "run" : ""),
  channels: Effect.succeed([]),
  version: Effect.succeed(1),
  changes: Stream.empty
}))

/** Turns answered as the user the real store resolves (an unknown user fails, as in the Runtime). */
const runtimeOver = (config: ConfigStore["Service"]) => {
  const turns: Array<string> = []
  const resolve = (target: ChatTarget) =>
    Effect.gen(function*() {
      const user = Option.getOrUndefined(yield* config.getUser(target.userId ?? "").pipe(Effect.orDie))
      if (user === undefined) return yield* new NoAgent({ reason: `unknown user ${target.userId ?? ""}` })
      turns.push(`${user.id}@${user.createdAt}`)
      const chat: ResolvedChat = {
        userId: user.id, userName: user.name, agentId: target.agentId ?? "", platform: target.platform, chatId: target.chatId ?? "dm",
        isGroup: false, context: target.chatId ?? "dm", sessionKey: "", model: ""
      }
      return chat
    })
  const send = () => Stream.fromIterable([{ type: "text" as const, text: "done" }, done("end_turn")])
  return { turns, service: Runtime.of({ resolve, send, abort: () => Effect.succeed(false) }) }
}

const cli = (home: string, ...args: ReadonlyArray<string>) =>
  Effect.promise(() => anna(home, ...args)).pipe(
    Effect.tap((r) => Effect.sync(() => assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stdout}${r.stderr}`)))
  )

const home = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-sched-removed-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("Scheduler and a removed user", () => {
  it.effect("stops firing the removed user's job at its next look; a new user of the same id inherits no job", () =>
    Effect.gen(function*() {
      const dir = yield* home
      yield* Effect.gen(function*() {
        const config = yield* ConfigStore
        const store = yield* JobStore
        yield* config.createUser("alice", "Alice")
        yield* config.createUser("bob", "Bob")
        const alices = yield* store.add({ agentId: "a1", userId: "alice", every: "1m", prompt: "water the plants", createdBy: "operator" })
        const bobs = yield* store.add({ agentId: "a1", userId: "bob", every: "1m", prompt: "feed the cat", createdBy: "operator" })
        const rt = runtimeOver(config)
        yield* Scheduler.make({ recheck: "1 hour", heartbeat: false }).pipe(
          Effect.provide(Layer.merge(Layer.succeed(Runtime, rt.service), liveConfig))
        )
        const runs = (id: string, n: number) => eventually(Effect.map(store.history(id), (r) => assert.lengthOf(r.filter((run) => run.status === "ok"), n)))
        yield* TestClock.adjust(MIN)
        yield* runs(alices.id, 1)
        yield* runs(bobs.id, 1)
        assert.deepStrictEqual(rt.turns.map((t) => t.split("@")[0]).sort(), ["alice", "bob"])

        yield* cli(dir, "user", "remove", "alice", "--keep-sessions")
        for (let n = 2; n <= 4; n++) {
          yield* TestClock.adjust(MIN)
          yield* runs(bobs.id, n)
        }
        assert.deepStrictEqual((yield* store.history(alices.id)).map((r) => [r.status, r.startedAt]), [["ok", MIN]],
          "no run after the removal (not even a failed one), and the one before stays")
        assert.strictEqual((yield* store.history(bobs.id)).length, 4, "bob's job runs on")
        assert.deepStrictEqual((yield* store.list()).map((j) => j.userId), ["bob"])

        yield* cli(dir, "user", "add", "alice")
        for (let n = 5; n <= 6; n++) {
          yield* TestClock.adjust(MIN)
          yield* runs(bobs.id, n)
        }
        assert.deepStrictEqual(rt.turns.filter((t) => t.startsWith("alice@")).length, 1, "the new alice runs nothing of the old one's")
        assert.deepStrictEqual((yield* store.list({ userId: "alice" })), [])
      }).pipe(Effect.provide(SqliteJobStore.layer.pipe(
        Layer.provideMerge(SqliteConfigStore.layerWithStores(dir)),
        Layer.provideMerge(homeDatabase(dir))
      )))
    }), { timeout: 60_000 })
})
