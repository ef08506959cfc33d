/**
 * The memory store's vectors on both databases (issue 26): rows waiting for a vector of a model,
 * newest first and below a bound; vectors stored (a row's vector of the model replaced), read back
 * bit for bit for export, stored by position on import, and gone with their session.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const session = { key: "a1:cli:u1:main", agentId: "a1", userId: "u1" }
const vector = (...xs: ReadonlyArray<number>) => Float32Array.from(xs)

for (const db of testDatabases(sqliteTemp)) {
  describe(`MemoryStore vectors (${db.name})`, () => {
    it.effect("pending rows, store and replace, read back exactly, store by position, gone with the session", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const c = yield* store.ensureConversation(session)
        yield* store.appendMessages(c.id, [
          { role: "user", content: "first" },
          { role: "assistant", content: "second" },
          { role: "user", content: "   " },
          { role: "assistant", content: "fourth" }
        ])
        const other = yield* store.ensureConversation({ ...session, key: "a2:cli:u1:main", agentId: "a2" })
        yield* store.appendMessages(other.id, [{ role: "user", content: "not a1's" }])
        const pending = yield* store.pendingEmbeddings({ agentId: "a1", model: "m1", source: "message", afterId: 0, limit: 10 })
        // newest first, the blank one left out, only a1's sessions
        assert.deepStrictEqual(pending.map((p) => p.text), ["fourth", "second", "first"])
        const [fourth, second, first] = pending.map((p) => p.id)
        assert.isTrue(fourth !== undefined && second !== undefined && first !== undefined)
        const below = yield* store.pendingEmbeddings({ agentId: "a1", model: "m1", source: "message", afterId: 0, beforeId: fourth, limit: 1 })
        assert.deepStrictEqual(below.map((p) => p.text), ["second"])
        assert.isAtLeast(yield* store.embeddingCeiling("message"), fourth ?? 0)
        assert.isFalse(yield* store.hasVectors("m1"))
        const stored = yield* store.putVectors("m1", [
          { source: "message", id: first ?? 0, vector: vector(1, 0, 0) },
          { source: "message", id: second ?? 0, vector: vector(0, 1, 0.5) },
          { source: "message", id: 999_999, vector: vector(1, 1, 1) }
        ])
        assert.strictEqual(stored, 2, "a row that is not there is skipped")
        assert.isTrue(yield* store.hasVectors("m1"))
        // replaced, not added
        assert.strictEqual(yield* store.putVectors("m1", [{ source: "message", id: first ?? 0, vector: vector(0.25, -3.5, 1e-7) }]), 1)
        const read = yield* store.messageVectors(c.id, 1, 4)
        assert.deepStrictEqual(read.map((v) => [v.seq, v.model, Array.from(v.vector)]), [
          [1, "m1", Array.from(vector(0.25, -3.5, 1e-7))],
          [2, "m1", Array.from(vector(0, 1, 0.5))]
        ])
        assert.deepStrictEqual(
          (yield* store.pendingEmbeddings({ agentId: "a1", model: "m1", source: "message", afterId: 0, limit: 10 })).map((p) => p.text),
          ["fourth"]
        )
        // by position (import): another model's vector for seq 4
        assert.strictEqual(yield* store.putMessageVectors(c.id, [{ seq: 4, model: "m2", vector: vector(9, 8) }, { seq: 40, model: "m2", vector: vector(1) }]), 1)
        assert.deepStrictEqual((yield* store.messageVectors(c.id, 4, 4)).map((v) => [v.model, Array.from(v.vector)]), [["m2", [9, 8]]])
        yield* store.deleteConversation(session.key)
        assert.isFalse(yield* store.hasVectors("m1"))
        assert.isFalse(yield* store.hasVectors("m2"))
      }).pipe(Effect.provide(SqliteMemoryStore.layer.pipe(Layer.provideMerge(db.layer)))))
  })
}
