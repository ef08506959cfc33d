/**
 * RuleVotes on the rule_votes table (migration 0024); rows are Schema-decoded. A cast reads the
 * rule's votes and writes the changed ones in one BEGIN IMMEDIATE transaction: SQLite's write lock
 * serialises it against every other writer, in this process and in others, so two users (or two
 * processes) voting at once never both count the same vote, nor miss a consensus.
 */
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Outcome } from "../../domain/learning/confidence.ts"
import { castVote, tally as tallyOf, uncount as uncountVote, type Vote } from "../../domain/learning/consensus.ts"
import { personalKey, type RuleKey, RuleVotes } from "../../services/RuleVotes.ts"
import { storageError } from "../sql/errors.ts"
import { immediate } from "../sql/Sqlite.ts"

const OutcomeSchema = Schema.Literals(["success", "failure"])
const Row = Schema.Struct({
  user_id: Schema.String,
  vote: OutcomeSchema,
  personal: Schema.Number,
  counted: Schema.NullOr(OutcomeSchema),
  at: Schema.Number
})
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))
const Personal = Schema.Struct({ scope: Schema.String, rule_id: Schema.String, personal: Schema.Number })
const decodePersonal = Schema.decodeUnknownEffect(Schema.Array(Personal))

const toVote = (r: typeof Row.Type): Vote => ({ userId: r.user_id, vote: r.vote, personal: r.personal, counted: r.counted, at: r.at })

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const fail = (operation: string) => Effect.mapError(storageError(operation))
  const inTransaction = immediate(sql)

  const votesOf = (key: RuleKey) =>
    sql`SELECT user_id, vote, personal, counted, at FROM rule_votes WHERE scope = ${key.scope} AND rule_id = ${key.ruleId} ORDER BY user_id`.pipe(
      Effect.flatMap(decodeRows),
      Effect.map((rows) => rows.map(toVote))
    )

  const store = (key: RuleKey, votes: ReadonlyArray<Vote>) =>
    Effect.forEach(votes, (v) =>
      sql`INSERT INTO rule_votes (scope, rule_id, user_id, vote, personal, counted, at)
        VALUES (${key.scope}, ${key.ruleId}, ${v.userId}, ${v.vote}, ${v.personal}, ${v.counted}, ${v.at})
        ON CONFLICT (scope, rule_id, user_id) DO UPDATE SET vote = excluded.vote, personal = excluded.personal,
          counted = excluded.counted, at = excluded.at`, { discard: true })

  const cast = Effect.fn("RuleVotes.cast")(function*(key: RuleKey, userId: string, outcome: Outcome, at: number) {
    return yield* inTransaction(Effect.gen(function*() {
      const result = castVote(yield* votesOf(key), userId, outcome, at)
      yield* store(key, result.changed)
      return result
    })).pipe(fail("record feedback on a playbook rule"))
  })

  const uncount = Effect.fn("RuleVotes.uncount")(function*(key: RuleKey, userIds: ReadonlyArray<string>) {
    if (userIds.length === 0) return
    const wanted = new Set(userIds)
    yield* inTransaction(Effect.gen(function*() {
      yield* store(key, (yield* votesOf(key)).filter((v) => wanted.has(v.userId)).map(uncountVote))
    })).pipe(fail("take back feedback on a playbook rule"))
  })

  const personal = Effect.fn("RuleVotes.personal")(function*(userId: string, scopes: ReadonlyArray<string>) {
    const out = new Map<string, number>()
    if (scopes.length === 0) return out as ReadonlyMap<string, number>
    const rows = yield* sql`SELECT scope, rule_id, personal FROM rule_votes
      WHERE user_id = ${userId} AND scope IN ${sql.in(scopes)} AND personal != 0`.pipe(Effect.flatMap(decodePersonal), fail("read a user's feedback on playbook rules"))
    for (const r of rows) out.set(personalKey({ scope: r.scope, ruleId: r.rule_id }), r.personal)
    return out as ReadonlyMap<string, number>
  })

  const tally = Effect.fn("RuleVotes.tally")(function*(key: RuleKey) {
    return tallyOf(yield* votesOf(key).pipe(fail("read feedback on a playbook rule")))
  })

  const forget = Effect.fn("RuleVotes.forget")(function*(key: RuleKey) {
    yield* sql`DELETE FROM rule_votes WHERE scope = ${key.scope} AND rule_id = ${key.ruleId}`.pipe(fail("forget feedback on a playbook rule"))
  })

  const moveUser = Effect.fn("RuleVotes.moveUser")(function*(userId: string, removedAs: string) {
    const rows = yield* sql<{ n: number }>`UPDATE rule_votes SET user_id = ${removedAs} WHERE user_id = ${userId} RETURNING 1 AS n`.pipe(
      fail("move a removed user's feedback")
    )
    return rows.length
  })

  return RuleVotes.of({ cast, uncount, personal, tally, forget, moveUser })
})

/** Needs SqlClient. */
export const layer = Layer.effect(RuleVotes, make)
