/**
 * The `playbook` tool (issue 15) on the real playbook (YAML in a temporary home) and diary (SQLite):
 * offered with the plugin `learning` and the tool name enabled; search shows every user's rules and
 * the user's own, never another user's; proposals are the user's own and limited; helpful/harmful
 * only on a rule injected into this burst or the user's own, once per rule per burst.
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
      assert.match(yield* call({ action: "propose", text: "Run the tests before committing!", tags: [] }), /^A similar rule exists/)
      assert.include(yield* refused({ action: "propose", text: "x".repeat(MAX_RULE_TEXT + 1) }), `at most ${MAX_RULE_TEXT}`)
      assert.include(yield* refused({ action: "propose", text: "  " }), "give the rule's text")
      for (let i = 1; i < MAX_NEW_USER_RULES_PER_DAY; i++) yield* call({ action: "propose", text: `Distinct guidance number ${i} for topic ${"abcdefghijklmnopqrstu"[i]}` })
      assert.include(yield* refused({ action: "propose", text: "One rule too many today" }), `at most ${MAX_NEW_USER_RULES_PER_DAY} new rules per user per day`)
      // Another user has their own allowance; and the next day this one has again.
      assert.match(yield* call({ action: "propose", text: "One rule too many today" }, { ...ctx, userId: "u2" }), /^Added/)
      yield* TestClock.adjust("25 hours")
      assert.match(yield* call({ action: "propose", text: "One rule too many today" }), /^Added/)
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
      assert.strictEqual(yield* call({ action: "helpful", id: shared }), `${shared} marked helpful; confidence now 0.55.`)
      assert.include(yield* refused({ action: "harmful", id: shared }), "already marked in this task")
      // The user's own rule needs no injection.
      assert.strictEqual(yield* call({ action: "harmful", id: mine }), `${mine} marked harmful; confidence now 0.30.`)
      // Another user's session never saw the rule injected.
      assert.include(yield* refused({ action: "harmful", id: shared }, { sessionKey: `${AGENT}:cli:u3:main`, agentId: AGENT, userId: "u3" }), "was not among")
      yield* (yield* PluginStore).setFor("learning", AGENT, false)
      assert.include(yield* refused({ action: "search" }), "learning is off")
    }).pipe(Effect.provide(stack())))
})
