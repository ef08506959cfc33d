/** The exactly-once ledger on a real SQLite file: claims, replies, answered, open, cursors, pruning. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import * as SqliteChannelLedger from "../../../src/layers/channels/SqliteChannelLedger.ts"
import { ChannelLedger } from "../../../src/services/ChannelLedger.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

for (const db of testDatabases(sqliteTemp)) {
  const ledgerLayer = SqliteChannelLedger.layer.pipe(Layer.provideMerge(db.layer))

  describe(`SqliteChannelLedger (${db.name})`, () => {
    it.effect("claims a message once, however often and however concurrently it is delivered", () =>
      Effect.gen(function*() {
        const ledger = yield* ChannelLedger
        const claims = yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => i), () => ledger.claim("telegram", "7", "{}"), { concurrency: 20 })
        assert.strictEqual(claims.filter(Boolean).length, 1)
        assert.isTrue(yield* ledger.claim("telegram", "8", "{}"))
        // Another channel's id space is its own.
        assert.isTrue(yield* ledger.claim("wechat", "7", "{}"))
      }).pipe(Effect.provide(ledgerLayer)))

    it.effect("lists what was claimed and not answered, with the reply's message ids, oldest first", () =>
      Effect.gen(function*() {
        const ledger = yield* ChannelLedger
        yield* TestClock.setTime(1_000)
        yield* ledger.claim("telegram", "1", "{\"update_id\":1}")
        yield* TestClock.setTime(2_000)
        yield* ledger.claim("telegram", "2", "{\"update_id\":2}")
        yield* ledger.recordReply("telegram", "2", ["55", "56"])
        yield* ledger.claim("telegram", "3", "{\"update_id\":3}")
        yield* ledger.answered("telegram", "3")
        const open = yield* ledger.open("telegram", 0)
        assert.deepStrictEqual(open.map((o) => [o.key, o.payload, o.reply]), [
          ["1", "{\"update_id\":1}", []],
          ["2", "{\"update_id\":2}", ["55", "56"]]
        ])
        assert.deepStrictEqual((yield* ledger.open("telegram", 1_500)).map((o) => o.key), ["2"])
        assert.deepStrictEqual(yield* ledger.open("wechat", 0), [])
      }).pipe(Effect.provide(ledgerLayer)))

    it.effect("keeps a cursor per channel; prunes only answered messages older than the limit", () =>
      Effect.gen(function*() {
        const ledger = yield* ChannelLedger
        assert.isTrue(Option.isNone(yield* ledger.cursor("telegram")))
        yield* ledger.setCursor("telegram", "41")
        yield* ledger.setCursor("telegram", "42")
        yield* ledger.setCursor("qq", "s:9")
        assert.deepStrictEqual(yield* ledger.cursor("telegram"), Option.some("42"))
        assert.deepStrictEqual(yield* ledger.cursor("qq"), Option.some("s:9"))
        yield* TestClock.setTime(1_000)
        yield* ledger.claim("telegram", "old-answered", "{}")
        yield* ledger.answered("telegram", "old-answered")
        yield* ledger.claim("telegram", "old-open", "{}")
        yield* TestClock.setTime(10_000)
        yield* ledger.claim("telegram", "new-answered", "{}")
        yield* ledger.answered("telegram", "new-answered")
        assert.strictEqual(yield* ledger.prune("telegram", 5_000), 1)
        // A pruned message would be claimable again; an open one never is pruned.
        assert.isTrue(yield* ledger.claim("telegram", "old-answered", "{}"))
        assert.isFalse(yield* ledger.claim("telegram", "old-open", "{}"))
        assert.isFalse(yield* ledger.claim("telegram", "new-answered", "{}"))
      }).pipe(Effect.provide(ledgerLayer)))
  })
}
