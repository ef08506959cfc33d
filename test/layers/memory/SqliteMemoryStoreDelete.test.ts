/**
 * MemoryStore.deleteConversation and importMessages on real SQLite files and PostgreSQL (issue 26): two stores on one file
 * stand for two processes (gateway and CLI).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { planSearch } from "../../../src/domain/search/query.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const open = (database: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Effect.map(
    Layer.build(SqliteMemoryStore.layer.pipe(Layer.provideMerge(database))),
    (ctx) => ({ store: Context.get(ctx, MemoryStore), sql: Context.get(ctx, SqlClient.SqlClient) })
  )

const session = { key: "a1:cli:u1:main", agentId: "a1", userId: "u1" }
const say = (text: string) => ({ role: "user" as const, content: text })

for (const db of testDatabases(sqliteTemp)) {
  describe(`MemoryStore.deleteConversation (${db.name})`, () => {
    it.effect("a gateway that cached the deleted session fails one append, then starts the session afresh", () =>
      Effect.gen(function*() {
        const file = (yield* db.open).layer
        const gateway = yield* open(file)
        const cli = yield* open(file)
        const c = yield* gateway.store.ensureConversation(session)
        yield* gateway.store.appendMessages(c.id, [say("one"), say("two")])
        const deleted = yield* cli.store.deleteConversation(session.key)
        assert.deepStrictEqual(deleted, { sessionKey: session.key, messages: 2, summaries: 0 })
        // SQLite gives the freed id to the next new session; the gateway's stale id must not reach it.
        // (PostgreSQL never gives an id twice.)
        const other = yield* cli.store.ensureConversation({ key: "a1:cli:u2:main", agentId: "a1", userId: "u2" })
        if (db.name === "SQLite") assert.strictEqual(other.id, c.id)
        const failed = yield* gateway.store.appendMessages(c.id, [say("three")]).pipe(Effect.flip)
        assert.include(failed.message, "the session was deleted meanwhile")
        const again = yield* gateway.store.ensureConversation(session)
        assert.notStrictEqual(again.id, c.id)
        assert.deepStrictEqual(yield* gateway.store.appendMessages(again.id, [say("three")]), { firstSeq: 1, lastSeq: 1 })
        const others = yield* cli.store.stats(other.id)
        assert.strictEqual(others.messages, 0, "nothing was appended to the other session")
        assert.deepStrictEqual(yield* gateway.store.integrityCheck, [])
      }))

    it.effect("two processes appending to one session in turn: each lands after the other's, units and search follow", () =>
      Effect.gen(function*() {
        const file = (yield* db.open).layer
        const gateway = yield* open(file)
        const cli = yield* open(file)
        const c = yield* gateway.store.ensureConversation(session)
        const other = yield* cli.store.ensureConversation(session)
        assert.strictEqual(other.id, c.id)
        // Twice in a row from the gateway (on PostgreSQL the second is one round trip after the tail it wrote).
        assert.deepStrictEqual(yield* gateway.store.appendMessages(c.id, [say("one")]), { firstSeq: 1, lastSeq: 1 })
        assert.deepStrictEqual(yield* gateway.store.appendMessages(c.id, [say("two")]), { firstSeq: 2, lastSeq: 2 })
        // The other process appends a tool call: the gateway's idea of the last message is now stale.
        yield* cli.store.appendMessages(c.id, [{ role: "assistant", content: [{ type: "tool_use", id: "t1", name: "x", input: {} }] }])
        // The result continues the call's unit though the gateway never saw the call.
        assert.deepStrictEqual(
          yield* gateway.store.appendMessages(c.id, [{ role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: "done" }] }]),
          { firstSeq: 4, lastSeq: 4 }
        )
        assert.deepStrictEqual(yield* cli.store.appendMessages(c.id, [say("three")]), { firstSeq: 5, lastSeq: 5 })
        assert.deepStrictEqual(yield* gateway.store.appendMessages(c.id, [say("four")]), { firstSeq: 6, lastSeq: 6 })
        const items = yield* cli.store.items(c.id)
        assert.deepStrictEqual(items.map((it) => it.position), [1, 2, 3, 4, 5, 6])
        assert.deepStrictEqual(items.map((it) => it.continuesUnit), [false, false, false, true, false, false])
        const found = yield* cli.store.search(planSearch("four"), { _tag: "Session", sessionKey: session.key }, { limit: 5, context: 0 })
        assert.deepStrictEqual(found.map((h) => h.seq), [6])
        // The user is removed with their sessions kept: the session moves, and the gateway's next append
        // (to the id it knew) goes nowhere near it.
        const moved = yield* cli.store.retireUser(session.userId, "removed-u1")
        assert.strictEqual(moved.sessions.length, 1)
        const refused = yield* gateway.store.appendMessages(c.id, [say("five")]).pipe(Effect.flip)
        assert.include(refused.message, "the session was deleted meanwhile")
        assert.strictEqual((yield* cli.store.stats(c.id)).messages, 6)
        assert.deepStrictEqual(yield* cli.store.integrityCheck, [])
      }))

    it.effect("raw messages stay immutable outside a deletion; a conversation left marked is reported", () =>
      Effect.gen(function*() {
        const file = (yield* db.open).layer
        const { sql, store } = yield* open(file)
        const c = yield* store.ensureConversation(session)
        yield* store.appendMessages(c.id, [say("keep me")])
        const refused = yield* sql`DELETE FROM ctx_messages WHERE conversation_id = ${c.id}`.pipe(Effect.flip)
        assert.include(String(refused.reason.cause), "immutable")
        yield* sql`UPDATE ctx_conversations SET deleting = 1 WHERE id = ${c.id}`
        const problems = yield* store.integrityCheck
        assert.deepStrictEqual(problems, [`${session.key}: marked as being deleted outside a deletion (its messages are unprotected)`])
      }))

    it.effect("importMessages stores nothing, not even the conversation, when a later batch fails", () =>
      Effect.gen(function*() {
        const file = (yield* db.open).layer
        const { store } = yield* open(file)
        const batches = Stream.make([say("a"), say("b")], [say("c")]).pipe(
          Stream.concat(Stream.fail("the file changed"))
        )
        const seen: Array<number> = []
        const r = yield* store.importMessages(session, batches, { append: false, onBatch: (n) => Effect.sync(() => seen.push(n)) }).pipe(Effect.flip)
        assert.strictEqual(r, "the file changed")
        assert.deepStrictEqual(seen, [2, 3])
        assert.deepStrictEqual(yield* store.listConversations({}), [])
        const ok = yield* store.importMessages(session, Stream.make([say("a")]), { append: false, onBatch: () => Effect.void })
        assert.deepStrictEqual(ok, { firstSeq: 1, lastSeq: 1, imported: 1 })
        const refused = yield* store.importMessages(session, Stream.make([say("b")]), { append: false, onBatch: () => Effect.void }).pipe(Effect.flip)
        assert.include(refused.toString(), "already has 1 messages")
      }))
  })
}
