/**
 * Live configuration across processes (issue 26): a setting changed through one connection reaches
 * another process's LiveConfig — on PostgreSQL at once, through the `anna_config` notification,
 * with its poll set to an hour; on SQLite by its poll (here every 50 ms). Either way the new version
 * is published once, and a read after it sees the new value.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Stream } from "effect"
import * as CachedLiveConfig from "../../../src/layers/config/CachedLiveConfig.ts"
import * as SqliteConfigStore from "../../../src/layers/config/SqliteConfigStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { LiveConfig } from "../../../src/services/LiveConfig.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const HOME = "/srv/anna-home"

for (const db of testDatabases(sqliteTemp)) {
  describe(`LiveConfig across processes (${db.name})`, () => {
    it.live("a change made by another process is published and read", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const stores = SqliteConfigStore.layerWithStores(HOME).pipe(Layer.provideMerge(opened.layer))
        // The gateway: LiveConfig over its own connection; on PostgreSQL it never polls in this test.
        const pollInterval = db.name === "PostgreSQL" ? Duration.hours(1) : Duration.millis(50)
        const gateway = yield* Layer.build(CachedLiveConfig.layer({ pollInterval }).pipe(Layer.provideMerge(stores)))
        const live = Context.get(gateway, LiveConfig)
        if (db.name === "PostgreSQL") assert.isDefined(Context.get(gateway, ConfigStore).changes)
        const before = yield* live.version
        // The CLI: another connection, another store.
        const cli = Context.get(yield* Layer.build(stores), ConfigStore)
        // Subscribed first (the current version, then the next one), then the change.
        const next = yield* live.changes.pipe(Stream.filter((v) => v > before), Stream.take(1), Stream.runCollect, Effect.forkScoped)
        yield* Effect.yieldNow
        yield* cli.setSetting("scheduler.catch_up", "skip")
        // A deadline for a failing test, not a wait: the notification (or the poll) comes well before.
        const published = yield* Fiber.join(next).pipe(Effect.timeout(Duration.seconds(20)))
        assert.strictEqual(published.length, 1)
        assert.isAbove(published[0] ?? 0, before)
        assert.strictEqual(yield* live.setting("scheduler.catch_up"), "skip")
      }).pipe(Effect.scoped), 60_000)
  })
}
