/**
 * RuleVotes on both databases (issue 26): votes cast, tallied, taken back, forgotten and moved with a
 * removed user the same way on SQLite and PostgreSQL; many users voting at once from two connections
 * (two gateways) are each counted once, and every counted vote is in the rule's tally.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as SqliteRuleVotes from "../../../src/layers/learning/SqliteRuleVotes.ts"
import { personalKey, RuleVotes } from "../../../src/services/RuleVotes.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const rule = { scope: "", ruleId: "r-deploy" }

for (const db of testDatabases(sqliteTemp)) {
  describe(`RuleVotes (${db.name})`, () => {
    it.effect("casts, tallies, reads personal weights, takes back, moves a removed user, forgets", () =>
      Effect.gen(function*() {
        const votes = yield* RuleVotes
        const first = yield* votes.cast(rule, "alice", "success", 1)
        assert.strictEqual(first.agreeing, 1)
        yield* votes.cast(rule, "bob", "success", 2)
        yield* votes.cast(rule, "carol", "failure", 3)
        yield* votes.cast({ scope: "a1", ruleId: "r-other" }, "alice", "failure", 4)
        assert.deepStrictEqual(yield* votes.tally(rule), { ...(yield* votes.tally(rule)), success: 2, failure: 1 })
        const mine = yield* votes.personal("alice", ["", "a1"])
        assert.isTrue(mine.has(personalKey(rule)) && mine.has(personalKey({ scope: "a1", ruleId: "r-other" })))
        assert.deepStrictEqual(yield* votes.personal("alice", []), new Map())
        yield* votes.uncount(rule, ["alice", "bob"])
        assert.strictEqual((yield* votes.tally(rule)).counted, 0)
        assert.strictEqual(yield* votes.moveUser("alice", "removed-1"), 2)
        assert.strictEqual((yield* votes.personal("alice", ["", "a1"])).size, 0)
        yield* votes.forget(rule)
        assert.deepStrictEqual(yield* votes.tally(rule), { success: 0, failure: 0, counted: 0 })
      }).pipe(Effect.provide(SqliteRuleVotes.layer.pipe(Layer.provideMerge(db.layer)))))

    it.effect("forty users voting at once from two connections are each counted once", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const one = Context.get(yield* Layer.build(SqliteRuleVotes.layer.pipe(Layer.provide(opened.layer))), RuleVotes)
        const two = Context.get(yield* Layer.build(SqliteRuleVotes.layer.pipe(Layer.provide(opened.layer))), RuleVotes)
        const casts = yield* Effect.all(
          Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).cast(rule, `u${i}`, "success", i)),
          { concurrency: "unbounded" }
        )
        const tally = yield* one.tally(rule)
        assert.strictEqual(tally.success, 40)
        // Each user is counted into the rule at most once, and the tally holds exactly those counted.
        const counted = casts.flatMap((c) => c.counted)
        assert.strictEqual(new Set(counted).size, counted.length)
        assert.strictEqual(tally.counted, counted.length)
        assert.deepStrictEqual(casts.map((c) => c.agreeing).sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i + 1))
      }))
  })
}
