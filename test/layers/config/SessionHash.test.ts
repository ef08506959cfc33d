/**
 * SessionHash (issue 27): `anna.session.hash` is an HMAC of the session key with the home's secret,
 * generated once and kept in the home's database — the same across restarts of one home, different
 * between homes, and not the key's plain SHA-256 (which anyone knowing the agent, platform and user
 * could compute).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as SessionHashLayer from "../../../src/layers/config/SessionHash.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { SessionHash } from "../../../src/services/SessionHash.ts"
import { tempDbFile } from "../../support/db.ts"

const KEY = "agent:default:telegram:42:dm"

/** A process starting on the home whose database is `file`: the layer built afresh, the key's hash and the stored secret. */
const start = (file: string) =>
  Effect.gen(function*() {
    const hash = (yield* SessionHash).of(KEY)
    const stored = yield* (yield* ConfigStore).getSetting(SessionHashLayer.SESSION_HASH_KEY)
    return { hash, stored: Option.getOrUndefined(stored) }
  }).pipe(
    Effect.provide(SessionHashLayer.layer.pipe(Layer.provideMerge(SqliteRuntimeConfig.layerWithStores("/srv/anna-home")), Layer.provideMerge(Sqlite.layer(file))))
  )

describe("SessionHash", () => {
  it.effect("is the same across restarts of one home, from a secret generated once", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const first = yield* start(file)
      const again = yield* start(file)
      assert.match(first.hash, /^[0-9a-f]{16}$/)
      assert.strictEqual(again.hash, first.hash)
      assert.isString(first.stored)
      assert.isAtLeast(Buffer.from(first.stored ?? "", "base64url").length, 32, "32 random bytes")
      assert.strictEqual(again.stored, first.stored, "generated once")
    }).pipe(Effect.scoped))

  it.effect("differs between homes, and is not the session key's plain SHA-256", () =>
    Effect.gen(function*() {
      const one = yield* start(yield* tempDbFile)
      const other = yield* start(yield* tempDbFile)
      assert.notStrictEqual(one.hash, other.hash)
      assert.notStrictEqual(one.stored, other.stored)
      const unkeyed = createHash("sha256").update(KEY, "utf8").digest("hex").slice(0, 16)
      assert.notStrictEqual(one.hash, unkeyed)
    }).pipe(Effect.scoped))
})
