/**
 * The write fence of a cluster's sessions (issue 28), on a real PostgreSQL: once another node has
 * taken a session (a newer epoch in `session_fences`), writes made under the former owner's fence
 * are refused — by the one-round-trip append and by the locked path (the store's `immediate`, which
 * compaction's writes take too) — and nothing of them is stored; writes under the current epoch, and writes outside any turn, go on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentFence, FENCED_REASON } from "../../../src/domain/cluster/fence.ts"
import * as SessionFences from "../../../src/layers/cluster/SessionFences.ts"
import { entityIdOf } from "../../../src/layers/cluster/SessionEntity.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { pgTemp, postgresEnabled } from "../../support/postgres.ts"

if (postgresEnabled()) {
  describe("session fences (PostgreSQL)", () => {
    it.effect("a former owner's writes are refused once another node took the session; the current owner's go through", () =>
      Effect.gen(function*() {
        const store = yield* MemoryStore
        const sql = yield* SqlClient.SqlClient
        const key = "a:http:u:x"
        const entityId = entityIdOf(key)
        const session = { key, agentId: "a", userId: "u" }
        const conversation = yield* store.ensureConversation(session)
        const count = () => store.messageCount(conversation.id)
        // Node a takes the session.
        const a = yield* SessionFences.make(sql, "a").take(entityId)
        assert.strictEqual(a, 1)
        const asA = <X, E, R>(e: Effect.Effect<X, E, R>) => e.pipe(Effect.provideService(CurrentFence, { entityId, epoch: a }))
        // The first append takes the locked path, the next ones the one-round-trip function.
        yield* asA(store.appendMessages(conversation.id, [{ role: "user", content: "one" }]))
        yield* asA(store.appendMessages(conversation.id, [{ role: "assistant", content: "two" }]))
        yield* asA(store.appendMessages(conversation.id, [{ role: "user", content: "three" }]))
        assert.strictEqual(yield* count(), 3)
        // Node b takes it over (a froze past its lease); a thaws and tries to write.
        const b = yield* SessionFences.make(sql, "b").take(entityId)
        assert.strictEqual(b, 2)
        const fast = yield* Effect.flip(asA(store.appendMessages(conversation.id, [{ role: "assistant", content: "zombie" }])))
        assert.strictEqual(fast._tag, "StorageError")
        assert.include(fast.message, FENCED_REASON)
        // The locked path (the store learns the tail again after a refusal) is refused too.
        const again = yield* Effect.flip(asA(store.appendMessages(conversation.id, [{ role: "assistant", content: "zombie again" }])))
        assert.include(again.message, FENCED_REASON)
        assert.strictEqual(yield* count(), 3)
        // The new owner writes; so does anything outside a turn.
        yield* store.appendMessages(conversation.id, [{ role: "assistant", content: "four" }]).pipe(
          Effect.provideService(CurrentFence, { entityId, epoch: b })
        )
        yield* store.appendMessages(conversation.id, [{ role: "user", content: "five" }])
        assert.strictEqual(yield* count(), 5)
        const texts = (yield* sql<{ text: string }>`SELECT text FROM ctx_messages WHERE conversation_id = ${conversation.id} ORDER BY seq`).map((r) => r.text)
        assert.deepStrictEqual(texts, ["one", "two", "three", "four", "five"])
      }).pipe(Effect.provide(SqliteMemoryStore.layer.pipe(Layer.provideMerge(pgTemp)))))

    it.effect("turn ids: the first start of an id is new, every later one (any node) is not", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const a = SessionFences.make(sql, "a")
        const b = SessionFences.make(sql, "b")
        assert.isTrue(yield* a.firstStart("http:u:k1", "e"))
        assert.isFalse(yield* a.firstStart("http:u:k1", "e"))
        assert.isFalse(yield* b.firstStart("http:u:k1", "e"))
        assert.isTrue(yield* b.firstStart("http:u:k2", "e"))
        yield* sql`UPDATE session_turns SET started_at = now() - interval '25 hours' WHERE turn_id = 'http:u:k1'`
        yield* a.prune
        assert.deepStrictEqual((yield* sql<{ turn_id: string }>`SELECT turn_id FROM session_turns ORDER BY turn_id`).map((r) => r.turn_id), ["http:u:k2"])
      }).pipe(Effect.provide(pgTemp)))
  })
}
