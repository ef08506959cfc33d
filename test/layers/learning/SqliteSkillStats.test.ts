/**
 * SqliteSkillStats on a real migrated SQLite file: outcomes upserted per (agent, user, name), absent
 * skills read as 0/0, listing by agent and user, and concurrent records that all count.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import * as SqliteSkillStats from "../../../src/layers/learning/SqliteSkillStats.ts"
import { SkillStats } from "../../../src/services/SkillStats.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const deploy = { agentId: "a1", userId: "", name: "deploy" }

for (const db of testDatabases(sqliteTemp)) {
  const stores = SqliteSkillStats.layer.pipe(Layer.provideMerge(db.layer))

  describe(`SqliteSkillStats (${db.name})`, () => {
    it.effect("upserts outcomes: the first record creates the row, later ones add to it, each returns the counts", () =>
      Effect.gen(function*() {
        const stats = yield* SkillStats
        yield* TestClock.setTime(1_000)
        assert.deepStrictEqual(yield* stats.record(deploy, "success"), { successes: 1, failures: 0 })
        yield* TestClock.setTime(2_000)
        assert.deepStrictEqual(yield* stats.record(deploy, "failure"), { successes: 1, failures: 1 })
        assert.deepStrictEqual(yield* stats.record(deploy, "success"), { successes: 2, failures: 1 })
        const rows = yield* stats.list("a1")
        assert.deepStrictEqual(rows, [{ agentId: "a1", userId: "", name: "deploy", successes: 2, failures: 1, updatedAt: 2_000 }])
        // One row, not one per outcome.
        const sql = yield* SqlClient.SqlClient
        const count = yield* sql<{ n: number }>`SELECT count(*) AS n FROM skill_stats`
        assert.strictEqual(count[0]?.n, 1)
      }).pipe(Effect.provide(stores)))

    it.effect("keeps agents, users and names apart; absent skills are left out of arms (0/0 to the caller)", () =>
      Effect.gen(function*() {
        const stats = yield* SkillStats
        yield* stats.record(deploy, "success")
        yield* stats.record({ ...deploy, agentId: "a2" }, "failure")
        yield* stats.record({ ...deploy, userId: "ann" }, "failure")
        yield* stats.record({ agentId: "a1", userId: "ann", name: "mine" }, "success")

        const operator = yield* stats.arms("a1", "", ["deploy", "mine", "never"])
        assert.deepStrictEqual([...operator.entries()], [["deploy", { successes: 1, failures: 0 }]])
        const anns = yield* stats.arms("a1", "ann", ["deploy", "mine"])
        assert.deepStrictEqual(anns.get("deploy"), { successes: 0, failures: 1 })
        assert.deepStrictEqual(anns.get("mine"), { successes: 1, failures: 0 })
        assert.strictEqual((yield* stats.arms("a1", "", [])).size, 0)

        assert.deepStrictEqual((yield* stats.list("a1")).map((r) => [r.userId, r.name]), [["", "deploy"], ["ann", "deploy"], ["ann", "mine"]])
        assert.deepStrictEqual((yield* stats.list("a1", "ann")).map((r) => r.name), ["deploy", "mine"])
        assert.deepStrictEqual((yield* stats.list(undefined, "")).map((r) => [r.agentId, r.failures]), [["a1", 0], ["a2", 1]])
        assert.strictEqual((yield* stats.list(undefined)).length, 4)
      }).pipe(Effect.provide(stores)))

    it.effect("50 concurrent records all count", () =>
      Effect.gen(function*() {
        const stats = yield* SkillStats
        const outcomes = Array.from({ length: 50 }, (_, i) => (i % 5 === 0 ? "failure" as const : "success" as const))
        yield* Effect.forEach(outcomes, (o) => stats.record(deploy, o), { concurrency: "unbounded", discard: true })
        assert.deepStrictEqual((yield* stats.arms("a1", "", ["deploy"])).get("deploy"), { successes: 40, failures: 10 })
      }).pipe(Effect.provide(stores)))
  })
}
