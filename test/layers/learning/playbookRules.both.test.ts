/**
 * The Playbook on both databases (issue 28): on SQLite its rules are the YAML files under ANNA_HOME,
 * on PostgreSQL rows of playbook_rules (src/layers/learning/pgPlaybookRules.ts). Proposals, feedback,
 * removal, replacing a scope (what `anna playbook import` does) and the rules' order survive a second
 * instance opening the same database; on PostgreSQL two instances (two gateways, two pools) proposing
 * into one scope at once lose nothing and never overshoot MAX_RULES_PER_FILE nor a user's limit, and
 * a row that does not decode is a PlaybookInvalid naming its scope and rule, never dropped.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { PlaybookRule } from "../../../src/domain/learning/rule.ts"
import * as YamlPlaybook from "../../../src/layers/learning/YamlPlaybook.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { Playbook } from "../../../src/services/Playbook.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const newHome = () => {
  const h = mkdtempSync(join(tmpdir(), "anna-playbook-rules-"))
  homes.push(h)
  return h
}

/** A Playbook (as a gateway builds it) and its SqlClient on `layer`'s database, with `home` as ANNA_HOME. */
const gateway = (layer: Layer.Layer<SqlClient.SqlClient, unknown>, home: string) =>
  Effect.map(
    Layer.build(YamlPlaybook.layer.pipe(Layer.provideMerge(Layer.merge(layer, AppConfig.at(home))))),
    (context) => ({ playbook: Context.get(context, Playbook), sql: Context.get(context, SqlClient.SqlClient) })
  )

const proposal = (text: string, over: { readonly agentId?: string; readonly user?: string; readonly limits?: { perDay: number; total: number } } = {}) => ({
  agentId: over.agentId,
  user: over.user,
  text,
  tags: ["docker"],
  sourceEntries: [],
  antiPattern: false,
  ...(over.limits === undefined ? {} : { limits: over.limits })
})

const T0 = Date.UTC(2026, 0, 1)
const rule = (id: string, over: Partial<PlaybookRule> = {}): PlaybookRule => ({
  id, text: `Rule ${id}`, confidence: 0.8, maturity: "nascent", successCount: 0, failureCount: 0, antiPattern: false,
  sourceEntries: [], tags: ["docker"], createdAt: T0, lastAppliedAt: null, ...over
})

const at = <A>(xs: ReadonlyArray<A>, i: number): A => {
  const x = xs[i]
  if (x === undefined) throw new Error(`no element ${i}`)
  return x
}

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? (exit.cause.reasons.find((r) => r._tag === "Fail") as { error: E } | undefined)?.error : undefined

/** Distinct texts no two of which are near duplicates (src/domain/learning/dedupe.ts). */
const texts = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix} alpha${i} bravo${i} charlie${i}`)

for (const db of testDatabases(sqliteTemp)) {
  const onPostgres = db.name === "PostgreSQL"

  describe(`Playbook rules (${db.name})`, () => {
    it.effect("propose, feedback, remove, replace and the order survive another instance; paths say where the rules are", () =>
      Effect.gen(function*() {
        const home = newHome()
        const opened = yield* db.open
        const one = (yield* gateway(opened.layer, home)).playbook
        const [a, b, c] = yield* Effect.forEach(texts(3, "Global"), (t) => one.propose(proposal(t)))
        const own = yield* one.propose(proposal("Agent only rule delta", { agentId: "a1" }))
        assert.isTrue(a !== undefined && b !== undefined && c !== undefined && a.created && b.created && c.created && own.created)
        const ids = [a, b, c].map((r) => r?.rule.id ?? "")
        const again = yield* one.propose({ ...proposal(texts(3, "Global")[1] ?? ""), tags: ["ci"] })
        assert.isFalse(again.created, "a duplicate is merged into the rule")
        const [done] = yield* one.feedback(undefined, [ids[1] ?? ""], "success", "operator")
        assert.strictEqual(done?.rule.successCount, 1)
        yield* one.remove(undefined, ids[0] ?? "")

        // A second instance (another process, another connection) reads what the first wrote, in order.
        const two = (yield* gateway(opened.layer, home)).playbook
        const global = (yield* two.list(undefined)).map((s) => s.rule)
        assert.deepStrictEqual(global.map((r) => r.id), [ids[1], ids[2]])
        assert.deepStrictEqual(global[0]?.tags, ["docker", "ci"])
        assert.strictEqual(global[0]?.successCount, 1)
        assert.deepStrictEqual(global[0], done?.rule && { ...done.rule, tags: ["docker", "ci"] })
        assert.deepStrictEqual((yield* two.list("a1")).map((s) => [s.rule.id, s.source]), [[own.rule.id, "agent"], [ids[1], "global"], [ids[2], "global"]])
        assert.deepStrictEqual((yield* two.rules(undefined)).rules, global)
        assert.deepStrictEqual((yield* two.rules("a1")).rules.map((r) => r.id), [own.rule.id])

        // Replacing a scope (anna playbook import): reordered, one changed, one added; then two removed.
        const edited = [rule("hand-written", { user: "alice", lastAppliedAt: T0 + 1 }), { ...at(global, 1), text: "Edited by hand" }, at(global, 0)]
        const report = yield* two.replace(undefined, edited)
        assert.deepStrictEqual(report, { added: ["hand-written"], changed: [ids[2]], removed: [], unchanged: 1, invalid: [] })
        assert.deepStrictEqual((yield* one.rules(undefined)).rules, edited, "the first instance reads the replaced rules, in their order")
        assert.deepStrictEqual(yield* one.replace(undefined, edited), { added: [], changed: [], removed: [], unchanged: 3, invalid: [] })
        const shorter = yield* one.replace(undefined, [at(edited, 2)])
        assert.deepStrictEqual(shorter, { added: [], changed: [], removed: ["hand-written", ids[2]], unchanged: 1, invalid: [] })
        assert.deepStrictEqual((yield* two.rules(undefined)).rules, [edited[2]])
        assert.deepStrictEqual((yield* two.rules("a1")).rules.map((r) => r.id), [own.rule.id], "another scope is untouched")

        const paths = two.paths("a1")
        if (onPostgres) {
          assert.deepStrictEqual(paths, { agent: "table playbook_rules (agent a1)", global: "table playbook_rules (global)" })
          assert.isFalse(existsSync(join(home, "playbook.yaml")), "no file is written on PostgreSQL")
        } else {
          assert.deepStrictEqual(paths, { agent: join(home, "workspaces", "a1", "playbook.yaml"), global: join(home, "playbook.yaml") })
          assert.isTrue(existsSync(paths.global) && existsSync(paths.agent ?? ""))
        }
      }))
  })

  if (onPostgres) describe(`Playbook rules shared by two gateways (${db.name})`, () => {
    it.effect("two instances proposing into one scope, and giving feedback on one rule, at once lose nothing", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const [one, two] = [(yield* gateway(opened.layer, newHome())).playbook, (yield* gateway(opened.layer, newHome())).playbook]
        const wanted = texts(40, "Shared")
        const made = yield* Effect.all(
          wanted.map((t, i) => (i % 2 === 0 ? one : two).propose(proposal(t, { agentId: "a1" }))),
          { concurrency: "unbounded" }
        )
        assert.isTrue(made.every((m) => m.created))
        const stored = (yield* one.rules("a1")).rules
        assert.strictEqual(stored.length, 40)
        assert.strictEqual(new Set(stored.map((r) => r.id)).size, 40)
        assert.deepStrictEqual(stored.map((r) => r.text).sort(), [...wanted].sort())
        assert.deepStrictEqual(stored.map((r) => r.id).sort(), made.map((m) => m.rule.id).sort())

        // Read-modify-writes of one rule at once (the operator's feedback): every step is counted.
        const target = made[0]?.rule.id ?? ""
        yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? one : two).feedback("a1", [target], "success", "operator")),
          { concurrency: "unbounded" }
        )
        assert.strictEqual((yield* two.get("a1", target)).rule.successCount, 20)
      }))

    it.effect("a user's limit and MAX_RULES_PER_FILE hold across two instances proposing at once", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const [one, two] = [(yield* gateway(opened.layer, newHome())).playbook, (yield* gateway(opened.layer, newHome())).playbook]
        const limits = { perDay: 100, total: 7 }
        const tries = yield* Effect.all(
          texts(30, "Limited").map((t, i) => Effect.exit((i % 2 === 0 ? one : two).propose(proposal(t, { user: "u", limits })))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(tries.filter(Exit.isSuccess).length, 7)
        assert.isTrue(tries.filter(Exit.isFailure).every((e) => (failureOf(e) as { _tag: string } | undefined)?._tag === "RuleRejected"))
        assert.strictEqual((yield* two.rules(undefined)).rules.filter((r) => r.user === "u").length, 7)

        // Filled to two short of the most a scope may hold, then ten proposals at once: two get in.
        const filler = Array.from({ length: YamlPlaybook.MAX_RULES_PER_FILE - 2 }, (_, i) => rule(`filler-${i}`, { text: `Filler ${i}` }))
        yield* one.replace("a2", filler)
        const last = yield* Effect.all(
          texts(10, "Overflow").map((t, i) => Effect.exit((i % 2 === 0 ? one : two).propose(proposal(t, { agentId: "a2" })))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(last.filter(Exit.isSuccess).length, 2)
        assert.include((failureOf(at(last.filter(Exit.isFailure), 0)) as { message: string }).message, `holds ${YamlPlaybook.MAX_RULES_PER_FILE} rules`)
        const stored = (yield* two.rules("a2")).rules
        assert.strictEqual(stored.length, YamlPlaybook.MAX_RULES_PER_FILE)
        assert.deepStrictEqual(stored.slice(0, filler.length), filler, "the order of the rules already there is kept")
      }), { timeout: 60_000 })

    it.effect("a row that does not decode is a PlaybookInvalid naming its scope and rule, never overwritten but by an import", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const { playbook, sql } = yield* gateway(opened.layer, newHome())
        yield* playbook.propose(proposal("A good global rule"))
        const good = yield* playbook.propose(proposal("A good agent rule", { agentId: "a1" }))
        const typo = JSON.stringify({ id: "bad-rule", text: "Typo", confidense: 0.5, created_at: "2026-01-01" })
        yield* sql`INSERT INTO playbook_rules (scope, rule_id, position, rule) VALUES ('a1', 'bad-rule', 5, CAST(${typo} AS jsonb))`
        const listed = failureOf(yield* Effect.exit(playbook.list("a1")))
        assert.strictEqual(listed?._tag, "PlaybookInvalid")
        assert.include(listed?.message, "table playbook_rules (agent a1)")
        assert.include(listed?.message, `rule "bad-rule": unknown field "confidense"`)
        assert.include(listed?.message, "anna playbook export and import")
        // A write to the scope fails the same way and changes nothing; other scopes work.
        assert.strictEqual(failureOf(yield* Effect.exit(playbook.propose(proposal("Another agent rule", { agentId: "a1" }))))?._tag, "PlaybookInvalid")
        assert.strictEqual(failureOf(yield* Effect.exit(playbook.remove("a1", good.rule.id)))?._tag, "PlaybookInvalid")
        assert.strictEqual((yield* playbook.list(undefined)).length, 1)
        const rows = yield* sql<{ rule_id: string }>`SELECT rule_id FROM playbook_rules WHERE scope = 'a1' ORDER BY position`
        assert.deepStrictEqual(rows.map((r) => r.rule_id), [good.rule.id, "bad-rule"])

        // Other ways a row can be wrong: a bad time, an id that is not the row's, not a rule at all.
        const cases: ReadonlyArray<readonly [string, string]> = [
          [JSON.stringify({ id: "bad-rule", text: "Typo", created_at: "2026-13-01" }), "created_at is not an ISO 8601 time"],
          [JSON.stringify({ id: "other-id", text: "Typo", created_at: "2026-01-01" }), `the row's rule holds the id "other-id"`],
          [JSON.stringify({ id: "bad-rule", text: "Typo", confidence: 2, created_at: "2026-01-01" }), "confidence:"],
          [JSON.stringify(["not", "a", "rule"]), "must be a mapping"]
        ]
        for (const [json, says] of cases) {
          yield* sql`UPDATE playbook_rules SET rule = CAST(${json} AS jsonb) WHERE scope = 'a1' AND rule_id = 'bad-rule'`
          const e = failureOf(yield* Effect.exit(playbook.list("a1")))
          assert.strictEqual(e?._tag, "PlaybookInvalid", says)
          assert.include(e?.message, `table playbook_rules (agent a1): rule "bad-rule": `)
          assert.include(e?.message, says)
        }

        // Export and import are the way to fix it: export leaves the row out and names it, import replaces it.
        const stored = yield* playbook.rules("a1")
        assert.deepStrictEqual(stored.rules.map((r) => r.id), [good.rule.id])
        assert.deepStrictEqual(stored.invalid, [{ id: "bad-rule", reason: "a rule must be a mapping of fields (id, text, created_at, …)" }])
        const fixed = yield* playbook.replace("a1", [...stored.rules, rule("bad-rule", { text: "Fixed by hand" })])
        assert.deepStrictEqual(fixed, { added: ["bad-rule"], changed: [], removed: [], unchanged: 1, invalid: ["bad-rule"] })
        assert.deepStrictEqual((yield* playbook.list("a1")).filter((s) => s.source === "agent").map((s) => s.rule.text), ["A good agent rule", "Fixed by hand"])
        yield* sql`UPDATE playbook_rules SET rule = CAST(${cases[0]?.[0] ?? ""} AS jsonb) WHERE scope = 'a1' AND rule_id = 'bad-rule'`
        const dropped = yield* playbook.replace("a1", stored.rules)
        assert.deepStrictEqual(dropped, { added: [], changed: [], removed: [], unchanged: 1, invalid: ["bad-rule"] })
        const rowsAfter = yield* sql<{ rule_id: string }>`SELECT rule_id FROM playbook_rules WHERE scope = 'a1'`
        assert.deepStrictEqual(rowsAfter.map((r) => r.rule_id), [good.rule.id], "a broken row is deleted even when the rules that decode are unchanged")

        // Positions set by hand (gaps): the order is kept by the next write.
        yield* sql`UPDATE playbook_rules SET position = 10 WHERE scope = 'a1'`
        const later = yield* playbook.propose(proposal("A later agent rule", { agentId: "a1" }))
        assert.deepStrictEqual((yield* playbook.rules("a1")).rules.map((r) => r.id), [good.rule.id, later.rule.id])
      }))
  })
}
