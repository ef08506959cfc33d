/**
 * Properties of chat users' feedback on a shared playbook rule (issue 23, item 3), on the real
 * Playbook (YAML files in a temp $ANNA_HOME) and its SQLite votes, over random sequences of
 * feedback from a handful of users (the clock stands still, so no decay blurs the numbers):
 *
 * - any sequence of feedback from ONE user, however long (each call is a burst of its own), leaves
 *   the rule unchanged for everyone, while that user's own view follows their feedback (±1 at most);
 * - every user's feedback is counted into the shared rule at most once in total, so the rule moves
 *   by at most one feedback step (FAILURE_DECREMENT = 0.20 down, SUCCESS_INCREMENT = 0.05 up) per
 *   distinct user, and not at all until CONSENSUS_USERS distinct users' latest feedback agrees;
 * - exactly: a user is counted once CONSENSUS_USERS users' latest feedback agrees with theirs, with
 *   that outcome (a reference model of the rule, checked against the stored counts).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Arbitrary, Effect, Layer, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { FAILURE_DECREMENT, type Outcome, SUCCESS_INCREMENT } from "../../src/domain/learning/confidence.ts"
import { CONSENSUS_USERS, MAX_PERSONAL } from "../../src/domain/learning/consensus.ts"
import * as YamlPlaybook from "../../src/layers/learning/YamlPlaybook.ts"
import { AppConfig } from "../../src/services/AppConfig.ts"
import { Playbook } from "../../src/services/Playbook.ts"
import { sqliteTemp } from "../support/db.ts"

const AGENT = "a1"
const USERS = ["u0", "u1", "u2", "u3", "u4"] as const

const home = Layer.unwrap(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-consensus-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => AppConfig.at(dir)))
)
const stack = YamlPlaybook.layer.pipe(Layer.provideMerge(Layer.merge(sqliteTemp, home)))

const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
const outcome = Arbitrary.schema(Schema.Literals(["success", "failure"]))
const event = Arbitrary.all({ who: int(0, USERS.length - 1), outcome })

const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x))
const step = (o: Outcome) => (o === "success" ? SUCCESS_INCREMENT : -FAILURE_DECREMENT)

let rules = 0
/** A fresh rule for every user of the agent, at 0.50 (the operator's). */
const freshRule = Playbook.use((p) =>
  p.propose({ agentId: AGENT, user: undefined, text: `Shared rule number ${rules++} ${"x".repeat(rules % 7)}`, tags: ["t"], sourceEntries: [], antiPattern: false })
).pipe(Effect.map((r) => r.rule.id))

const sharedOf = (id: string) => Effect.map(Playbook.use((p) => p.get(AGENT, id)), ({ rule }) => rule)
const viewOf = (id: string, user: string) =>
  Effect.map(Playbook.use((p) => p.view(AGENT, user)), (rs) => rs.find((s) => s.rule.id === id)?.rule.confidence)

const feed = (id: string, user: string, o: Outcome) => Playbook.use((p) => p.feedback(AGENT, [id], o, { user }))

describe("feedback on a shared rule", () => {
  layer(stack)((it) => {
    it.effect.prop("one user's feedback, however much, never moves the rule for anyone else; their own view follows it", {
      outcomes: Arbitrary.array(outcome, { minLength: 1, maxLength: 40 })
    }, ({ outcomes }) =>
      Effect.gen(function*() {
        const id = yield* freshRule
        let personal = 0
        for (const o of outcomes) {
          yield* feed(id, "u0", o)
          personal = clamp(personal + step(o), -MAX_PERSONAL, MAX_PERSONAL)
        }
        const rule = yield* sharedOf(id)
        assert.deepStrictEqual([rule.confidence, rule.successCount, rule.failureCount], [0.5, 0, 0])
        assert.strictEqual(yield* viewOf(id, "u1"), 0.5, "another user's view is the shared rule")
        const own = yield* viewOf(id, "u0")
        assert.closeTo(own ?? -1, clamp(0.5 + personal, 0, 1), 1e-4)
        return true
      }), { arbitrary: { runs: 40 } })

    it.effect.prop("each user counts at most once, and only once enough users agree: at most one step per distinct user", {
      events: Arbitrary.array(event, { maxLength: 40 })
    }, ({ events }) =>
      Effect.gen(function*() {
        const id = yield* freshRule
        // The reference model: each user's latest vote, and the outcome they were counted with.
        const latest = new Map<string, Outcome>()
        const counted = new Map<string, Outcome>()
        for (const e of events) {
          const user = USERS[e.who] ?? "u0"
          yield* feed(id, user, e.outcome)
          latest.set(user, e.outcome)
          const agreeing = [...latest].filter(([, o]) => o === e.outcome).map(([u]) => u)
          if (agreeing.length >= CONSENSUS_USERS) for (const u of agreeing) if (!counted.has(u)) counted.set(u, e.outcome)
        }
        const rule = yield* sharedOf(id)
        const voters = new Set(events.map((e) => USERS[e.who])).size
        const failures = [...counted.values()].filter((o) => o === "failure").length
        const successes = counted.size - failures
        assert.deepStrictEqual([rule.failureCount, rule.successCount], [failures, successes])
        assert.isAtMost(rule.failureCount + rule.successCount, voters, "each user counted at most once")
        if (voters < CONSENSUS_USERS) assert.strictEqual(rule.confidence, 0.5)
        assert.isAtLeast(rule.confidence, 0.5 - FAILURE_DECREMENT * failures - 1e-9)
        assert.isAtMost(rule.confidence, 0.5 + SUCCESS_INCREMENT * successes + 1e-9)
        return true
      }), { arbitrary: { runs: 40 } })
  })
})
