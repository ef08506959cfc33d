/**
 * The YAML playbook on real files in a temp $ANNA_HOME, with TestClock time: precedence of an
 * agent's rules over global ones, user scoping, decay in the injected context, deduplicated
 * proposals, feedback in the file a rule lives in, sweep, review/apply, promote and remove, and
 * files that are refused (typos, FIFOs, links, oversize) without ever being overwritten.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, ManagedRuntime } from "effect"
import { TestClock } from "effect/testing"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { DAY_MS } from "../../../src/domain/learning/confidence.ts"
import type { PlaybookError, RuleNotFound, RuleRejected } from "../../../src/domain/learning/errors.ts"
import type { StorageError } from "../../../src/domain/storage/errors.ts"
import type { PlaybookRule } from "../../../src/domain/learning/rule.ts"
import { parsePlaybook, stringifyPlaybook } from "../../../src/domain/learning/yaml.ts"
import * as SqliteRuleVotes from "../../../src/layers/learning/SqliteRuleVotes.ts"
import * as YamlPlaybook from "../../../src/layers/learning/YamlPlaybook.ts"
import { MAX_PLAYBOOK_BYTES } from "../../../src/layers/learning/playbookFile.ts"
import { sqliteTemp } from "../../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const newHome = () => {
  const h = mkdtempSync(join(tmpdir(), "anna-playbook-"))
  homes.push(h)
  return h
}

/** Users' votes on shared rules (RuleVotes), on one SQLite file for the whole file's tests (these give the operator's feedback). */
const votes = ManagedRuntime.make(SqliteRuleVotes.layer.pipe(Layer.provide(sqliteTemp)))
afterAll(() => votes.dispose())
/** The playbook on `home`. */
const make = (options: YamlPlaybook.Options) => Effect.flatMap(votes.contextEffect, (context) => YamlPlaybook.make(options).pipe(Effect.provide(context)))

const T0 = Date.UTC(2026, 0, 1)
const rule = (id: string, over: Partial<PlaybookRule> = {}): PlaybookRule => ({
  id, text: `Rule ${id}`, confidence: 0.8, maturity: "nascent", successCount: 0, failureCount: 0, antiPattern: false,
  sourceEntries: [], tags: ["docker"], createdAt: T0, lastAppliedAt: null, ...over
})
const write = (path: string, rules: ReadonlyArray<PlaybookRule>) => {
  mkdirSync(join(path, ".."), { recursive: true })
  writeFileSync(path, stringifyPlaybook(rules))
}
const fileRules = (path: string) => {
  const r = parsePlaybook(readFileSync(path, "utf8"), path)
  if (r._tag === "Failure") throw new Error(r.failure.message)
  return r.success
}
const proposal = (text: string, over: Partial<{ agentId: string; user: string; tags: Array<string>; sourceEntries: Array<string>; antiPattern: boolean }> = {}) => ({
  agentId: over.agentId, user: over.user, text, tags: over.tags ?? ["docker"], sourceEntries: over.sourceEntries ?? [], antiPattern: over.antiPattern ?? false
})
const failureTag = <A, E>(exit: Exit.Exit<A, E>): string | undefined =>
  Exit.isFailure(exit) ? (exit.cause.reasons.find((r) => r._tag === "Fail") as { error: { _tag: string } } | undefined)?.error._tag : undefined

describe("YamlPlaybook", () => {
  it.effect("an agent sees its rules and the global ones it does not shadow; paths are the documented ones", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      const paths = pb.paths("a1")
      assert.deepStrictEqual(paths, { agent: join(home, "workspaces", "a1", "playbook.yaml"), global: join(home, "playbook.yaml") })
      assert.deepStrictEqual(pb.paths(undefined), { global: join(home, "playbook.yaml") })
      assert.deepStrictEqual(yield* pb.list("a1"), [], "no files: no rules")
      write(paths.global, [rule("shared", { text: "global version", tags: ["Git"] }), rule("g-only", { tags: ["ci"] })])
      write(paths.agent ?? "", [rule("shared", { text: "agent version" }), rule("a-only")])
      const seen = (yield* pb.list("a1")).map((s) => [s.rule.id, s.source, s.rule.text])
      assert.deepStrictEqual(seen, [["shared", "agent", "agent version"], ["a-only", "agent", "Rule a-only"], ["g-only", "global", "Rule g-only"]])
      assert.deepStrictEqual((yield* pb.list(undefined)).map((s) => [s.rule.id, s.source]), [["shared", "global"], ["g-only", "global"]])
      assert.deepStrictEqual([...(yield* pb.tags("a1"))].sort(), ["ci", "docker"])
      assert.strictEqual((yield* pb.get("a1", "shared")).rule.text, "agent version")
      assert.strictEqual(failureTag(yield* Effect.exit(pb.get("a1", "nope"))), "RuleNotFound")
    }))

  it.effect("context: decay is visible at 0, 90 and 180 days, and a rule of another user is never chosen", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      yield* TestClock.setTime(T0)
      write(join(home, "playbook.yaml"), [
        rule("mine", { text: "Use compose files", user: "alice" }),
        rule("all", { text: "Pin image tags", confidence: 0.6, maturity: "established" }),
        rule("avoid", { text: "AVOID: latest tags", antiPattern: true, confidence: 0.5 })
      ])
      write(join(home, "workspaces", "a1", "playbook.yaml"), [])
      const at = (userId: string) => pb.context({ agentId: "a1", userId, tags: ["DOCKER"] })
      const alice = yield* at("alice")
      assert.deepStrictEqual(alice.rules.map((s) => s.rule.id), ["mine", "all"])
      assert.strictEqual(alice.text, [
        "## Relevant Guidelines", "", "The following rules are based on past experience with similar tasks:", "",
        "1. [NASCENT] Use compose files (confidence: 0.80)", "2. [ESTABLISHED] Pin image tags (confidence: 0.60)", "",
        "## Patterns to Avoid", "", "These patterns have caused problems in similar past work:", "",
        "1. AVOID: latest tags (confidence: 0.50)"
      ].join("\n"))
      assert.deepStrictEqual((yield* at("bob")).rules.map((s) => s.rule.id), ["all"])
      yield* TestClock.adjust(`${90 * DAY_MS} millis`)
      assert.include((yield* at("alice")).text, "Use compose files (confidence: 0.40)")
      yield* TestClock.adjust(`${90 * DAY_MS} millis`)
      const late = yield* at("alice")
      assert.include(late.text, "Use compose files (confidence: 0.20)")
      assert.include(late.text, "Pin image tags (confidence: 0.15)")
      assert.strictEqual((yield* pb.context({ agentId: "a1", userId: "alice", tags: ["python"] })).text, "", "no tag matches: nothing")
    }))

  it.effect("propose: a new rule with a rule_<time36>_<rand4> id, dedupe by same users, refusals leave the file alone", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      yield* TestClock.setTime(T0)
      const first = yield* pb.propose(proposal("  Always pin the base image. ", { agentId: "a1", tags: ["Docker", "CI"], sourceEntries: ["d1"] }))
      assert.isTrue(first.created)
      assert.match(first.rule.id, new RegExp(`^rule_${T0.toString(36)}_[0-9a-z]{4}$`))
      assert.deepStrictEqual([first.rule.text, first.rule.confidence, first.rule.maturity, first.rule.tags, first.rule.createdAt],
        ["Always pin the base image.", 0.5, "nascent", ["docker", "ci"], T0])
      const path = join(home, "workspaces", "a1", "playbook.yaml")
      assert.deepStrictEqual(fileRules(path), [first.rule])
      assert.strictEqual(statSync(path).mode & 0o777, 0o600)

      const again = yield* pb.propose(proposal("always PIN the base image", { agentId: "a1", tags: ["build"], sourceEntries: ["d2"] }))
      assert.deepStrictEqual([again.created, again.rule.id, again.rule.sourceEntries, again.rule.tags], [false, first.rule.id, ["d1", "d2"], ["docker", "ci", "build"]])
      const near = yield* pb.propose(proposal("Always pin the base image version.", { agentId: "a1", sourceEntries: ["d3"] }))
      assert.isFalse(near.created, "a near duplicate is the same rule")
      // Alice's rule is hers: the same words proposed for every user, or for Bob, make a rule of their own.
      const alice = yield* pb.propose(proposal("Deploy on Fridays is fine", { agentId: "a1", user: "alice" }))
      const everyone = yield* pb.propose(proposal("Deploy on Fridays is fine", { agentId: "a1" }))
      const bob = yield* pb.propose(proposal("Deploy on Fridays is fine", { agentId: "a1", user: "bob" }))
      assert.deepStrictEqual([alice.created, everyone.created, bob.created], [true, true, false], "Bob sees the rule for everyone")
      assert.strictEqual(bob.rule.id, everyone.rule.id)
      // A user's proposal never changes a rule every user relies on (its tags decide when it is chosen).
      const everyoneBefore = fileRules(path).find((r) => r.id === everyone.rule.id)
      const bobTags = yield* pb.propose(proposal("Deploy on Fridays is fine", { agentId: "a1", user: "bob", tags: ["friday", "zzz"], sourceEntries: ["bob1"] }))
      assert.isFalse(bobTags.created)
      assert.deepStrictEqual(fileRules(path).find((r) => r.id === everyone.rule.id), everyoneBefore)
      assert.strictEqual(alice.rule.user, "alice")
      assert.strictEqual(fileRules(path).length, 3)

      const before = readFileSync(path, "utf8")
      for (const text of ["", "   ", "two\nlines", "x".repeat(501), "bell\u0007"]) {
        assert.strictEqual(failureTag(yield* Effect.exit(pb.propose(proposal(text, { agentId: "a1" })))), "RuleRejected", JSON.stringify(text))
      }
      assert.strictEqual(readFileSync(path, "utf8"), before)
      const global = yield* pb.propose(proposal("Global rule", {}))
      assert.deepStrictEqual(fileRules(join(home, "playbook.yaml")).map((r) => r.id), [global.rule.id])
    }))

  it.effect("feedback goes to the file a rule lives in, one write per file; unknown ids are skipped", () =>
    Effect.gen(function*() {
      const home = newHome()
      let renames = 0
      const pb = yield* make({ home, hooks: { beforeRename: async () => void renames++ } })
      yield* TestClock.setTime(T0)
      write(join(home, "playbook.yaml"), [rule("shared", { confidence: 0.5 }), rule("g1", { confidence: 0.5 }), rule("g2", { confidence: 0.5 })])
      write(join(home, "workspaces", "a1", "playbook.yaml"), [rule("shared", { confidence: 0.5 }), rule("a1r", { confidence: 0.5 })])
      yield* TestClock.adjust("1 day")
      const updated = (yield* pb.feedback("a1", ["shared", "a1r", "g1", "g2", "nope", "g1"], "success", "operator")).map((f) => f.rule)
      assert.deepStrictEqual(updated.map((r) => [r.id, r.successCount, r.lastAppliedAt]).sort(), [
        ["a1r", 1, T0 + DAY_MS], ["g1", 1, T0 + DAY_MS], ["g2", 1, T0 + DAY_MS], ["shared", 1, T0 + DAY_MS]
      ])
      assert.strictEqual(renames, 2, "one write per file")
      const global = fileRules(join(home, "playbook.yaml"))
      assert.deepStrictEqual(global.map((r) => [r.id, r.successCount]), [["shared", 0], ["g1", 1], ["g2", 1]], "the agent's copy shadowed the global one")
      const failed = (yield* pb.feedback(undefined, ["g1"], "failure", "operator")).map((f) => f.rule)
      assert.strictEqual(failed[0]?.failureCount, 1)
      assert.isBelow(failed[0]?.confidence ?? 1, 0.4)
      assert.deepStrictEqual(yield* pb.feedback("a1", ["nope"], "success", "operator"), [])
      assert.strictEqual(renames, 3, "nothing to change: nothing written")
    }))

  it.effect("sweep writes only when a maturity moved; a second sweep the same day changes nothing", () =>
    Effect.gen(function*() {
      const home = newHome()
      let renames = 0
      const pb = yield* make({ home, hooks: { beforeRename: async () => void renames++ } })
      yield* TestClock.setTime(T0)
      const path = join(home, "workspaces", "a1", "playbook.yaml")
      write(path, [
        rule("up", { confidence: 0.6, successCount: 3 }),
        rule("down", { confidence: 0.25, maturity: "established", successCount: 1, failureCount: 3 }),
        rule("gone", { confidence: 0.05, failureCount: 2 })
      ])
      const report = yield* pb.sweep("a1")
      assert.deepStrictEqual(report, { promoted: 1, demoted: 1, flagged: 1, demotionCandidates: ["gone"], removalCandidates: ["gone"] })
      assert.deepStrictEqual(fileRules(path).map((r) => r.maturity), ["established", "nascent", "nascent"])
      assert.strictEqual(renames, 1)
      const second = yield* pb.sweep("a1")
      assert.deepStrictEqual([second.promoted, second.demoted, renames], [0, 0, 1])
      assert.deepStrictEqual(yield* pb.sweep(undefined), { promoted: 0, demoted: 0, flagged: 0, demotionCandidates: [], removalCandidates: [] })
    }))

  it.effect("review proposes inversions without writing; apply deprecates the original and adds the AVOID rule", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      yield* TestClock.setTime(T0)
      const path = join(home, "playbook.yaml")
      write(path, [rule("bad", { text: "Use latest tags", failureCount: 3, user: "alice" }), rule("fine", { failureCount: 3, successCount: 2 })])
      const before = readFileSync(path, "utf8")
      const proposals = yield* pb.review(undefined)
      assert.deepStrictEqual(proposals.map((p) => [p.original.id, p.inverted.id, p.inverted.text]), [
        ["bad", "bad-avoid", "AVOID: Use latest tags -- this pattern has caused repeated issues (3 failures vs 0 successes)."]
      ])
      assert.strictEqual(readFileSync(path, "utf8"), before, "review writes nothing")
      assert.strictEqual(failureTag(yield* Effect.exit(pb.apply(undefined, ["bad", "fine"]))), "RuleNotFound")
      assert.strictEqual(readFileSync(path, "utf8"), before, "one id without a proposal: nothing applied")
      const applied = yield* pb.apply(undefined, ["bad"])
      assert.deepStrictEqual(applied.map((p) => p.original.id), ["bad"])
      const after = fileRules(path)
      assert.deepStrictEqual(after.map((r) => [r.id, r.confidence, r.antiPattern, r.user]), [
        ["bad", 0, false, "alice"], ["fine", 0.8, false, undefined], ["bad-avoid", 0.5, true, "alice"]
      ])
      assert.deepStrictEqual(yield* pb.review(undefined), [], "an applied inversion is not proposed again")
      const ctx = yield* pb.context({ agentId: "a1", userId: "alice", tags: ["docker"] })
      assert.deepStrictEqual(ctx.antiPatterns.map((s) => s.rule.id), ["bad-avoid"])
    }))

  it.effect("promote clears the user, or moves the rule to the global playbook; remove takes a rule out", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      const agentPath = join(home, "workspaces", "a1", "playbook.yaml")
      const globalPath = join(home, "playbook.yaml")
      write(agentPath, [rule("r1", { user: "alice" }), rule("r2", { user: "alice" }), rule("r3")])
      write(globalPath, [rule("g1", { user: "bob" })])
      const p1 = yield* pb.promote("a1", "r1", { global: false })
      assert.isFalse("user" in p1)
      assert.deepStrictEqual(fileRules(agentPath).map((r) => [r.id, r.user]), [["r1", undefined], ["r2", "alice"], ["r3", undefined]])
      yield* pb.promote("a1", "r2", { global: true })
      assert.deepStrictEqual(fileRules(agentPath).map((r) => r.id), ["r1", "r3"])
      assert.deepStrictEqual(fileRules(globalPath).map((r) => [r.id, r.user]), [["g1", "bob"], ["r2", undefined]])
      yield* pb.promote("a1", "g1", { global: false })
      assert.deepStrictEqual(fileRules(globalPath).map((r) => [r.id, r.user]), [["g1", undefined], ["r2", undefined]])
      assert.strictEqual(failureTag(yield* Effect.exit(pb.promote("a1", "nope", { global: true }))), "RuleNotFound")

      assert.strictEqual((yield* pb.remove("a1", "r3")).id, "r3")
      assert.deepStrictEqual(fileRules(agentPath).map((r) => r.id), ["r1"])
      assert.strictEqual(failureTag(yield* Effect.exit(pb.remove("a1", "g1"))), "RuleNotFound", "a global rule is removed without --agent")
      yield* pb.remove(undefined, "g1")
      assert.deepStrictEqual(fileRules(globalPath).map((r) => r.id), ["r2"])
    }))

  it.effect("a hand-edited file with a mistake is reported with its line and never overwritten", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      const path = join(home, "playbook.yaml")
      const text = `rules:\n  - id: a\n    text: Pin tags\n    confidense: 0.9\n    created_at: 2026-01-01\n`
      writeFileSync(path, text)
      const exit = yield* Effect.exit(pb.list(undefined))
      assert.isTrue(Exit.isFailure(exit))
      const err = Exit.isFailure(exit) ? (exit.cause.reasons.find((r) => r._tag === "Fail") as { error: { _tag: string; message: string; line: number } } | undefined)?.error : undefined
      assert.deepStrictEqual([err?._tag, err?.line], ["PlaybookInvalid", 4])
      assert.include(err?.message ?? "", `${path}:4: unknown field "confidense"`)
      const ops: ReadonlyArray<Effect.Effect<unknown, PlaybookError | RuleNotFound | RuleRejected | StorageError>> = [
        pb.propose(proposal("New", {})), pb.feedback(undefined, ["a"], "success", "operator"), pb.sweep(undefined), pb.remove(undefined, "a"), pb.apply(undefined, ["a"])
      ]
      for (const op of ops) {
        assert.strictEqual(failureTag(yield* Effect.exit(op)), "PlaybookInvalid")
      }
      assert.strictEqual(failureTag(yield* Effect.exit(pb.context({ agentId: "a1", userId: "u", tags: ["docker"] }))), "PlaybookInvalid")
      assert.strictEqual(readFileSync(path, "utf8"), text)
      writeFileSync(path, text.replace("confidense", "confidence"))
      assert.deepStrictEqual((yield* pb.list(undefined)).map((s) => s.rule.confidence), [0.9], "the fixed file is read again")
    }))

  it.effect("only a regular file of at most 1 MiB is read: a FIFO does not block, a link and an oversize file are refused", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      const path = join(home, "playbook.yaml")
      execFileSync("mkfifo", [path])
      const fifo = yield* Effect.exit(pb.list(undefined))
      assert.strictEqual(failureTag(fifo), "PlaybookInvalid")
      rmSync(path)
      const real = join(home, "elsewhere.yaml")
      write(real, [rule("x")])
      symlinkSync(real, path)
      assert.strictEqual(failureTag(yield* Effect.exit(pb.list(undefined))), "PlaybookInvalid")
      assert.strictEqual(failureTag(yield* Effect.exit(pb.propose(proposal("New", {})))), "PlaybookInvalid")
      rmSync(path)
      writeFileSync(path, `# ${"x".repeat(MAX_PLAYBOOK_BYTES)}\nrules: []\n`)
      const big = yield* Effect.exit(pb.list(undefined))
      assert.strictEqual(failureTag(big), "PlaybookInvalid")
      assert.include(String(Exit.isFailure(big) ? (big.cause.reasons[0] as { error?: { message: string } }).error?.message : ""), `${path}: larger than`)
    }))
})
