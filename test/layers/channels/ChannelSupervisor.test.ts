/**
 * The Channel port as a new channel meets it: a channel kind written for this test (a settings
 * Schema and a layer that provides `Channel`, nothing else) is run by the ChannelSupervisor from the
 * stored configuration — started, given its decoded settings, restarted when they change, stopped
 * when disabled, refused with the key named when they are wrong — and `notify` reaches it. The
 * configuration is real (SQLite, LiveConfig); time is the TestClock, which drives the watcher.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { ChannelError } from "../../../src/domain/channels/errors.ts"
import * as CachedLiveConfig from "../../../src/layers/config/CachedLiveConfig.ts"
import * as SqliteConfigStore from "../../../src/layers/config/SqliteConfigStore.ts"
import * as ChannelSupervisor from "../../../src/layers/channels/ChannelSupervisor.ts"
import { Channel, type ChannelDefinition } from "../../../src/services/Channel.ts"
import { Channels } from "../../../src/services/Channels.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { sqliteTemp, tempDir } from "../../support/db.ts"
import { eventually } from "../../support/eventually.ts"

/** What the test channel did: every start with its settings, every stop, every message delivered. */
interface Log {
  readonly events: Array<string>
  readonly delivered: Array<string>
}

const PagerSettings = Schema.Struct({
  room: Schema.String.check(Schema.makeFilter((s: string) => s !== "" || "must name a room")),
  volume: Schema.optionalKey(Schema.Number)
})

/** A whole channel kind: its id, its settings Schema, its layer. */
const pager = (log: Log): ChannelDefinition<typeof PagerSettings.Type, ChannelError> => ({
  id: "pager",
  settings: PagerSettings,
  layer: (settings) =>
    Layer.effect(Channel, Effect.gen(function*() {
      if (settings.room === "busy") return yield* new ChannelError({ channel: "pager", reason: "the room is busy" })
      log.events.push(`start ${settings.room}`)
      yield* Effect.addFinalizer(() => Effect.sync(() => log.events.push(`stop ${settings.room}`)))
      return Channel.of({
        id: "pager",
        description: `pager in room ${settings.room}`,
        notify: (target, message) => Effect.sync(() => void log.delivered.push(`${settings.room}/${target.userId}: ${message.text}`))
      })
    }))
})

const stores = (home: string) => SqliteConfigStore.layerWithStores(home).pipe(Layer.provideMerge(sqliteTemp))

describe("ChannelSupervisor", () => {
  it.effect("runs an enabled channel kind from its stored settings, restarts it when they change, stops it when disabled", () => {
    const log: Log = { events: [], delivered: [] }
    return Effect.gen(function*() {
      const config = yield* ConfigStore
      yield* config.setChannel("pager", { enabled: true, config: { room: "ops" } })
      yield* Effect.gen(function*() {
        const channels = yield* Channels
        assert.deepStrictEqual(yield* channels.status, [{ id: "pager", state: "running", description: "pager in room ops" }])
        yield* channels.notify("pager", { userId: "u1" }, { text: "disk full" })
        assert.deepStrictEqual(log.delivered, ["ops/u1: disk full"])
        const unknown = yield* Effect.flip(channels.notify("telegram", { userId: "u1" }, { text: "x" }))
        assert.strictEqual(unknown.message, "channel telegram: it is not enabled on this gateway")

        yield* config.setChannel("pager", { config: { room: "dev", volume: 3 } })
        yield* TestClock.adjust("1 second")
        yield* eventually(Effect.sync(() => assert.deepStrictEqual(log.events, ["start ops", "stop ops", "start dev"])))
        yield* channels.notify("pager", { userId: "u2" }, { text: "deployed" })
        assert.deepStrictEqual(log.delivered.at(-1), "dev/u2: deployed")

        // Bad settings stored by hand: that channel is down, with the key named; nothing is left running.
        yield* config.setChannel("pager", { config: { room: "" } })
        yield* TestClock.adjust("1 second")
        yield* eventually(Effect.map(channels.status, (status) =>
          assert.deepStrictEqual(status, [{ id: "pager", state: "failed", error: "channel pager: room must name a room" }])
        ))
        assert.deepStrictEqual(log.events.at(-1), "stop dev")
        const down = yield* Effect.flip(channels.notify("pager", { userId: "u1" }, { text: "x" }))
        assert.strictEqual(down.message, "channel pager: it is not running now")

        yield* config.setChannel("pager", { config: { room: "ops" } })
        yield* TestClock.adjust("1 second")
        yield* eventually(Effect.sync(() => assert.deepStrictEqual(log.events.at(-1), "start ops")))
        yield* config.setChannel("pager", { enabled: false })
        yield* TestClock.adjust("1 second")
        yield* eventually(Effect.map(channels.status, (status) => assert.deepStrictEqual(status, [])))
        assert.deepStrictEqual(log.events.slice(-2), ["start ops", "stop ops"])
      }).pipe(Effect.provide(ChannelSupervisor.layer({ channels: [ChannelSupervisor.runnable(pager(log))] })))
    }).pipe(Effect.provide(CachedLiveConfig.layer().pipe(Layer.provideMerge(stores(tempDir())))))
  })

  it.effect("at the gateway's start a channel that cannot start fails it, saying which and why; overrides win over stored settings", () => {
    const log: Log = { events: [], delivered: [] }
    return Effect.gen(function*() {
      const config = yield* ConfigStore
      yield* config.setChannel("pager", { enabled: true, config: { room: "busy" } })
      const exit = yield* Effect.exit(Layer.build(ChannelSupervisor.layer({ channels: [ChannelSupervisor.runnable(pager(log))] })))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(Cause.pretty(exit.cause), "channel pager could not start: channel pager: the room is busy")

      const withOverride = ChannelSupervisor.layer({ channels: [ChannelSupervisor.runnable(pager(log))], overrides: { pager: { room: "night" } } })
      const status = yield* Effect.gen(function*() {
        return yield* (yield* Channels).status
      }).pipe(Effect.provide(withOverride))
      assert.deepStrictEqual(status.map((s) => s.description), ["pager in room night"])
    }).pipe(Effect.provide(CachedLiveConfig.layer().pipe(Layer.provideMerge(stores(tempDir())))))
  })
})
