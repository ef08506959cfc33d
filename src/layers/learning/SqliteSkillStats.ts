/**
 * SkillStats on the skill_stats table (migration 0021); rows are Schema-decoded. An outcome is one
 * upsert (INSERT … ON CONFLICT DO UPDATE … RETURNING): two bursts settling the same skill at once
 * both count, without a read-modify-write race.
 */
import { Clock, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Outcome } from "../../domain/learning/confidence.ts"
import type { Arm } from "../../domain/learning/thompson.ts"
import { type SkillKey, type SkillRecord, SkillStats } from "../../services/SkillStats.ts"
import { storageError } from "../sql/errors.ts"

const Row = Schema.Struct({
  agent_id: Schema.String,
  user_id: Schema.String,
  name: Schema.String,
  successes: Schema.Number,
  failures: Schema.Number,
  updated_at: Schema.Number
})
const Counts = Schema.Struct({ successes: Schema.Number, failures: Schema.Number })
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))
const decodeCounts = Schema.decodeUnknownEffect(Schema.Array(Counts))

const toRecord = (r: typeof Row.Type): SkillRecord => ({
  agentId: r.agent_id,
  userId: r.user_id,
  name: r.name,
  successes: r.successes,
  failures: r.failures,
  updatedAt: r.updated_at
})

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const fail = (operation: string) => Effect.mapError(storageError(operation))

  const arms = Effect.fn("SkillStats.arms")(function*(agentId: string, userId: string, names: ReadonlyArray<string>) {
    const out = new Map<string, Arm>()
    if (names.length === 0) return out as ReadonlyMap<string, Arm>
    const rows = yield* sql`SELECT * FROM skill_stats WHERE agent_id = ${agentId} AND user_id = ${userId} AND name IN ${sql.in(names)}`.pipe(
      Effect.flatMap(decodeRows),
      fail("read skill outcomes")
    )
    for (const r of rows) out.set(r.name, { successes: r.successes, failures: r.failures })
    return out as ReadonlyMap<string, Arm>
  })

  const list = Effect.fn("SkillStats.list")(function*(agentId: string | undefined, userId?: string) {
    const agent = agentId ?? null
    const user = userId ?? null
    const rows = yield* sql`SELECT * FROM skill_stats WHERE (CAST(${agent} AS TEXT) IS NULL OR agent_id = ${agent})
      AND (CAST(${user} AS TEXT) IS NULL OR user_id = ${user}) ORDER BY agent_id, user_id, name`.pipe(Effect.flatMap(decodeRows), fail("list skill outcomes"))
    return rows.map(toRecord) as ReadonlyArray<SkillRecord>
  })

  const record = Effect.fn("SkillStats.record")(function*(key: SkillKey, outcome: Outcome) {
    const now = yield* Clock.currentTimeMillis
    const success = outcome === "success" ? 1 : 0
    const rows = yield* sql`INSERT INTO skill_stats (agent_id, user_id, name, successes, failures, updated_at)
      VALUES (${key.agentId}, ${key.userId}, ${key.name}, ${success}, ${1 - success}, ${now})
      ON CONFLICT (agent_id, user_id, name) DO UPDATE SET successes = skill_stats.successes + excluded.successes,
        failures = skill_stats.failures + excluded.failures, updated_at = excluded.updated_at
      RETURNING successes, failures`.pipe(Effect.flatMap(decodeCounts), fail("record a skill outcome"))
    const row = rows[0]
    return row === undefined ? yield* Effect.die(new Error("INSERT … RETURNING gave no row")) : ({ successes: row.successes, failures: row.failures } as Arm)
  })

  const removeUser = Effect.fn("SkillStats.removeUser")(function*(userId: string) {
    // '' is the operator's skills, never a user's.
    if (userId === "") return 0
    const rows = yield* sql<{ name: string }>`DELETE FROM skill_stats WHERE user_id = ${userId} RETURNING name`.pipe(fail("delete a removed user's skill outcomes"))
    return rows.length
  })

  return SkillStats.of({ arms, list, record, removeUser })
})

export const layer = Layer.effect(SkillStats, make)
