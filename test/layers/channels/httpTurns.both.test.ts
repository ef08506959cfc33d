/**
 * The HTTP channel's Idempotency-Key claims (src/layers/channels/http/idempotency.ts, issue 28) on
 * both databases: a claim, its answer replayed, another body refused, a running claim held until its
 * deadline and then taken over — and the old holder, come back, can neither store its answer over the
 * new holder's claim nor free it (the claim id fences them). Keys are per user and kept a day.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as HttpTurns from "../../../src/layers/channels/http/idempotency.ts"
import type { WireEvent } from "../../../src/layers/channels/http/openaiWire.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const meta = { id: "chatcmpl-1", created: 1_800_000_000, model: "default" }
const events: ReadonlyArray<WireEvent> = [
  { type: "text", text: "hello" },
  { type: "done", stopReason: "end_turn", usage: { inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 }, modelCalls: 1, toolCalls: 0 }
]
const T = 1_000_000

for (const db of testDatabases(sqliteTemp)) {
  describe(`HTTP Idempotency-Key claims (${db.name})`, () => {
    it.effect("claim, replay, mismatch; a claim past its deadline is taken over and fenced from its old holder", () =>
      Effect.gen(function*() {
        const turns = HttpTurns.make(yield* SqlClient.SqlClient)
        const first = yield* turns.claim("ann", "k1", "h1", T, T + 60_000)
        assert.strictEqual(first._tag, "Claimed")
        if (first._tag !== "Claimed") return
        assert.deepStrictEqual(yield* turns.claim("ann", "k1", "h1", T + 1, T + 60_001), { _tag: "Running" })
        assert.deepStrictEqual(yield* turns.claim("ann", "k1", "other", T + 1, T + 60_001), { _tag: "Mismatch" })
        // Bob's k1 is another key.
        assert.strictEqual((yield* turns.claim("bob", "k1", "h1", T + 1, T + 60_001))._tag, "Claimed")
        // Past the deadline, a retry takes the claim over (its gateway is taken for dead).
        const second = yield* turns.claim("ann", "k1", "h1", T + 60_001, T + 120_000)
        assert.strictEqual(second._tag, "Claimed")
        if (second._tag !== "Claimed") return
        assert.notStrictEqual(second.id, first.id)
        // The old holder comes back: neither its answer nor its release touches the new claim.
        yield* turns.finish("ann", "k1", first.id, { meta: { ...meta, id: "chatcmpl-stale" }, events })
        yield* turns.release("ann", "k1", first.id)
        assert.deepStrictEqual(yield* turns.claim("ann", "k1", "h1", T + 60_002, T + 120_002), { _tag: "Running" })
        // The holder's answer is replayed, exactly.
        yield* turns.finish("ann", "k1", second.id, { meta, events })
        assert.deepStrictEqual(yield* turns.claim("ann", "k1", "h1", T + 60_003, T + 120_003), { _tag: "Replay", answer: { meta, events } })
        // A released claim is free again; a day later every key is.
        const third = yield* turns.claim("ann", "k2", "h2", T, T + 60_000)
        if (third._tag !== "Claimed") return assert.fail("k2 not claimed")
        yield* turns.release("ann", "k2", third.id)
        assert.strictEqual((yield* turns.claim("ann", "k2", "h2", T + 1, T + 60_001))._tag, "Claimed")
        const dayLater = T + 60_001 + HttpTurns.KEEP_MS
        assert.strictEqual((yield* turns.claim("ann", "k1", "changed", dayLater, dayLater + 60_000))._tag, "Claimed")
      }).pipe(Effect.provide(db.layer)))

    if (db.name === "PostgreSQL") {
      it.effect("on a cluster, a claim whose node is gone is taken over at once; a live node's holds until its deadline", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const a = HttpTurns.make(sql, "node-a")
          const b = HttpTurns.make(sql, "node-b")
          yield* sql`INSERT INTO cluster_nodes (node_id, address, version) VALUES ('node-a', '10.0.0.1:1', 't')`
          assert.strictEqual((yield* a.claim("ann", "k1", "h1", T, T + 900_000))._tag, "Claimed")
          // node-a is up (it wrote its row just now): its claim holds.
          assert.deepStrictEqual(yield* b.claim("ann", "k1", "h1", T + 1, T + 900_001), { _tag: "Running" })
          // node-a stops writing its row (it died): a retry on node-b takes the claim, long before the deadline.
          yield* sql`UPDATE cluster_nodes SET seen_at = now() - interval '1 minute' WHERE node_id = 'node-a'`
          assert.strictEqual((yield* b.claim("ann", "k1", "h1", T + 2, T + 900_002))._tag, "Claimed")
          // node-b's own claim (its row missing here too) is still its own.
          assert.deepStrictEqual(yield* b.claim("ann", "k1", "h1", T + 3, T + 900_003), { _tag: "Running" })
        }).pipe(Effect.provide(db.layer)))
    }

    it("keys: 1–255 visible ASCII characters", () => {
      assert.isUndefined(HttpTurns.keyProblem("0b1f6c1e-4f0e-4a39-9a55-2f7e1f0c9d11"))
      for (const bad of ["", "x".repeat(256), "with space", "tab\there", "ключ"]) assert.isDefined(HttpTurns.keyProblem(bad), bad)
    })
  })
}
