/**
 * The `playbook` tool (issue 15) on the real playbook (YAML in a temporary home) and diary (SQLite):
 * offered with the plugin `learning` and the tool name enabled; search shows every user's rules and
 * the user's own, never another user's; proposals are the user's own and limited (the limit holds
 * against proposals made at once), and a duplicate says what it did; helpful/harmful only on a rule
 * injected into this burst or the user's own, once per rule per burst (on a rule for every user: the
 * user's vote).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type { ToolCallContext } from "../../../src/domain/tool.ts"
import { MAX_RULE_TEXT } from "../../../src/domain/learning/rule.ts"
import { MAX_NEW_USER_RULES_PER_DAY, source } from "../../../src/layers/tools/playbook.ts"
import { Learning } from "../../../src/services/Learning.ts"
import { Playbook } from "../../../src/services/Playbook.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import type { ToolSession } from "../../../src/services/ToolCatalog.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { AGENT, KEY, stack, USER } from "../learning/ReflectiveLearningHarness.ts"

const ctx: ToolCallContext = { sessionKey: KEY, agentId: AGENT, userId: USER }

const session = (enabled: boolean): ToolSession => ({
  agentId: AGENT,
  userId: USER,
  sessionKey: KEY,
  enabled: (name) => enabled || name !== "playbook",
  sandbox: Effect.die(new Error("the playbook tool needs no sandbox"))
})

const tool = Effect.gen(function*() {
  const tools = yield* (yield* source).tools(session(true))
  const found = tools[0]
  assert.strictEqual(found?.definition.name, "playbook")
  if (found === undefined) return yield* Effect.die(new Error("no tool"))
  return found
})

/** The tool's calls and refusals (one tool, as a runner holds it: its once-per-burst marks live in it). */
const using = Effect.map(tool, (t) => {
  const call = (input: unknown, as: ToolCallContext = ctx) => t.execute(input, as)
  const refused = (input: unknown, as: ToolCallContext = ctx) => Effect.map(Effect.flip(call(input, as)), (e) => e.reason)
  return { call, refused }
})

const rule = (text: string, tags: ReadonlyArray<string>, user?: string) =>
  Playbook.use((p) => p.propose({ agentId: AGENT, user, text, tags, sourceEntries: [], antiPattern: false })).pipe(Effect.map((r) => r.rule.id))

const withAgent = AgentStore.use((a) => a.create(AGENT, {}))

describe("playbook tool", () => {
  it.effect("is offered with the plugin on and the tool enabled; its version follows the plugin", () =>
    Effect.gen(function*() {
      yield* withAgent
      const src = yield* source
      assert.strictEqual((yield* src.tools(session(true))).length, 1)
      assert.strictEqual((yield* src.tools(session(false))).length, 0)
      assert.strictEqual(yield* (src.version?.(AGENT) ?? Effect.succeed("none")), "on")
      yield* (yield* PluginStore).setFor("learning", AGENT, false)
      assert.strictEqual((yield* src.tools(session(true))).length, 0)
      assert.strictEqual(yield* (src.version?.(AGENT) ?? Effect.succeed("none")), "off")
    }).pipe(Effect.provide(stack())))

  it.effect("search shows every user's rules and the user's own, never another user's", () =>
    Effect.gen(function*() {
      yield* withAgent
      const { call } = yield* using
      const shared = yield* rule("Pin Docker base images", ["docker"])
      const mine = yield* rule("Use compose profiles for my stack", ["docker", "compose"], USER)
      const theirs = yield* rule("Deploy to their private registry", ["docker"], "u2")
      const all = yield* call({ action: "search" })
      assert.include(all, shared)
      assert.include(all, `${mine} [NASCENT] (confidence 0.50; tags: docker, compose; yours) Use compose profiles for my stack`)
      assert.notInclude(all, theirs)
      assert.notInclude(all, "private registry")
      const byQuery = yield* call({ action: "search", query: "COMPOSE profiles" })
      assert.include(byQuery, mine)
      assert.notInclude(byQuery, shared)
      assert.strictEqual(yield* call({ action: "search", tags: ["python"] }), "No playbook rule matches.")
    }).pipe(Effect.provide(stack())))

  it.effect("a proposal is the user's own; too long and too many are refused", () =>
    Effect.gen(function*() {
      yield* withAgent
      const { call, refused } = yield* using
      const added = yield* call({ action: "propose", text: "Run the tests before committing", tags: ["Git"] })
      assert.match(added, /^Added \S+ \(for this user only; confidence 0\.50\)\.$/)
      const rules = yield* Playbook.use((p) => p.list(AGENT))
      assert.deepStrictEqual(rules.map((s) => [s.rule.text, s.rule.user, s.rule.tags, s.source]), [
        ["Run the tests before committing", USER, ["git"], "agent"]
      ])
      assert.match(
        yield* call({ action: "propose", text: "Run the tests before committing!", tags: [] }),
        /^You already have this rule: \S+ \(Run the tests before committing\)\. Nothing was changed\.$/
      )
      assert.include(yield* refused({ action: "propose", text: "x".repeat(MAX_RULE_TEXT + 1) }), `at most ${MAX_RULE_TEXT}`)
      assert.include(yield* refused({ action: "propose", text: "  " }), "give the rule's text")
      for (let i = 1; i < MAX_NEW_USER_RULES_PER_DAY; i++) yield* call({ action: "propose", text: `Distinct guidance number ${i} for topic ${"abcdefghijklmnopqrstu"[i]}` })
      assert.include(yield* refused({ action: "propose", text: "One rule too many today" }), `at most ${MAX_NEW_USER_RULES_PER_DAY} new rules per user per day`)
      // Another user has their own allowance; and the next day this one has again.
      assert.match(yield* call({ action: "propose", text: "One rule too many today" }, { ...ctx, userId: "u2" }), /^Added/)
      yield* TestClock.adjust("25 hours")
      assert.match(yield* call({ action: "propose", text: "One rule too many today" }), /^Added/)
    }).pipe(Effect.provide(stack())))

  it.effect("a proposal that repeats a rule says what it did: a rule for every user is left as it is, the user's own gains the new tags", () =>
    Effect.gen(function*() {
      yield* withAgent
      const { call } = yield* using
      const shared = yield* rule("Pin Docker base images by digest", ["docker"])
      const mine = yield* rule("Use compose profiles for my stack", ["compose"], USER)
      assert.strictEqual(
        yield* call({ action: "propose", text: "Pin docker base images by digest.", tags: ["security", "docker"] }),
        `A rule for every user already says this: ${shared} (Pin Docker base images by digest). Nothing was changed: a user's proposal never changes a rule every user is given.`
      )
      assert.deepStrictEqual((yield* Playbook.use((p) => p.get(AGENT, shared))).rule.tags, ["docker"], "the shared rule's tags are untouched")
      assert.strictEqual(
        yield* call({ action: "propose", text: "Use compose profiles for my stack", tags: ["docker", "Compose"] }),
        `You already have this rule: ${mine} (Use compose profiles for my stack). Added its tag: docker.`
      )
      assert.deepStrictEqual((yield* Playbook.use((p) => p.get(AGENT, mine))).rule.tags, ["compose", "docker"])
      assert.strictEqual((yield* Playbook.use((p) => p.list(AGENT))).length, 2, "nothing was added")
    }).pipe(Effect.provide(stack())))

  it.effect(`40 proposals at once add exactly ${MAX_NEW_USER_RULES_PER_DAY}: the limit is checked in the same step as the insert`, () =>
    Effect.gen(function*() {
      yield* withAgent
      const { call } = yield* using
      const texts = Array.from({ length: 40 }, (_, i) => `Guidance ${i}: ${"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"[i]} ${i * 7919} ${i * 104729}`)
      const results = yield* Effect.forEach(texts, (text) => Effect.result(call({ action: "propose", text, tags: ["x"] })), { concurrency: "unbounded" })
      const added = results.filter((r) => r._tag === "Success")
      const refusals = results.flatMap((r) => (r._tag === "Failure" ? [r.failure.reason] : []))
      assert.strictEqual(added.length, MAX_NEW_USER_RULES_PER_DAY)
      assert.strictEqual(refusals.length, 40 - MAX_NEW_USER_RULES_PER_DAY)
      for (const reason of refusals) assert.include(reason, `at most ${MAX_NEW_USER_RULES_PER_DAY} new rules per user per day`)
      const own = (yield* Playbook.use((p) => p.list(AGENT))).filter((s) => s.rule.user === USER)
      assert.strictEqual(own.length, MAX_NEW_USER_RULES_PER_DAY)
    }).pipe(Effect.provide(stack())))

  it.effect("helpful/harmful: only a rule injected into this burst or the user's own, once per burst", () =>
    Effect.gen(function*() {
      yield* withAgent
      const { call, refused } = yield* using
      const shared = yield* rule("Pin Docker base images", ["docker"])
      const mine = yield* rule("Use compose profiles", ["compose"], USER)
      const theirs = yield* rule("Deploy to their registry", ["docker"], "u2")
      assert.include(yield* refused({ action: "harmful", id: shared }), "was not among this conversation's guidelines")
      assert.include(yield* refused({ action: "harmful", id: theirs }), `no rule "${theirs}"`)
      assert.include(yield* refused({ action: "helpful", id: "nope" }), `no rule "nope"`)
      assert.include(yield* refused({ action: "helpful" }), "give the rule's id")
      assert.deepStrictEqual((yield* Playbook.use((p) => p.get(AGENT, shared))).rule.failureCount, 0, "a refused mark changes nothing")
      // Injected into this burst: it may be marked, once.
      yield* Learning.use((l) => l.beforeTurn(ctx, "my docker build"))
      // A rule for every user: this user's vote, their own view moves at once, everyone's waits for consensus.
      assert.strictEqual(
        yield* call({ action: "helpful", id: shared }),
        `${shared} marked helpful for this user: confidence for them now 0.55. It changes for every user once 3 users agree (1 so far).`
      )
      assert.strictEqual((yield* Playbook.use((p) => p.get(AGENT, shared))).rule.confidence, 0.5)
      assert.include(yield* refused({ action: "harmful", id: shared }), "already marked in this task")
      // The user's own rule needs no injection.
      assert.strictEqual(yield* call({ action: "harmful", id: mine }), `${mine} marked harmful; confidence now 0.30.`)
      // Another user's session never saw the rule injected.
      assert.include(yield* refused({ action: "harmful", id: shared }, { sessionKey: `${AGENT}:cli:u3:main`, agentId: AGENT, userId: "u3" }), "was not among")
      yield* (yield* PluginStore).setFor("learning", AGENT, false)
      assert.include(yield* refused({ action: "search" }), "learning is off")
    }).pipe(Effect.provide(stack())))
})
