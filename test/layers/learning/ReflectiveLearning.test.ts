/**
 * The learning loop on real layers (SQLite file, YAML playbook in a temporary home) with the fake LLM
 * as the summary model: reflection from a good answer, a bad answer asked once more, the heuristic
 * fallback, nothing new to reflect on, and the injected rules' text before a turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { afterAll, beforeAll } from "vitest"
import { formatForPrompt } from "../../../src/domain/learning/context.ts"
import { Diary } from "../../../src/services/Diary.ts"
import { Learning } from "../../../src/services/Learning.ts"
import { Playbook } from "../../../src/services/Playbook.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { text } from "../../support/fakeLlm/script.ts"
import { AGENT, append, exchange, KEY, reflectionJson, setup, stack, USER } from "./ReflectiveLearningHarness.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(() => fake.close())

const chat = { sessionKey: KEY, agentId: AGENT, userId: USER }
const bodyOf = (i: number) => JSON.stringify(fake.requests[i]?.body ?? null)

const reflectOnce = Effect.gen(function*() {
  const entry = yield* (yield* Learning).reflect(KEY, "demand")
  assert.isTrue(Option.isSome(entry))
  return Option.getOrThrow(entry)
})

describe("ReflectiveLearning: reflection", () => {
  it.effect("a good JSON answer becomes a model entry; its rules are proposed scoped to the user", () =>
    Effect.gen(function*() {
      fake.reset()
      fake.script(text(`\`\`\`json\n${reflectionJson()}\n\`\`\``))
      yield* setup(fake)
      const { firstSeq, lastSeq } = yield* append(exchange())
      const before = fake.requests.length
      const entry = yield* reflectOnce
      assert.strictEqual(fake.requests.length - before, 1)
      const request = bodyOf(before)
      assert.include(request, "fake-small", "the agent's summary model")
      assert.include(request, "User: How do I pin the docker base image?")
      assert.deepStrictEqual(
        [entry.source, entry.status, entry.qualityScore, entry.fromSeq, entry.toSeq, entry.agentId, entry.userId, entry.trigger],
        ["model", "success", 0.9, firstSeq, lastSeq, AGENT, USER, "demand"]
      )
      assert.match(entry.id, /^diary_0_[0-9a-z]{6}$/)
      assert.deepStrictEqual(entry.tags, ["docker"])
      const stored = yield* (yield* Diary).get(entry.id)
      assert.deepStrictEqual(stored, entry)
      const rules = yield* (yield* Playbook).list(AGENT)
      assert.deepStrictEqual(rules.map((s) => [s.source, s.rule.text, s.rule.user, s.rule.sourceEntries, s.rule.tags]), [
        ["agent", "Pin Docker base images by digest", USER, [entry.id], ["docker"]]
      ])
      const usage = yield* (yield* UsageLog).totals({ sessionKey: KEY })
      assert.deepStrictEqual(usage.map((u) => [u.model, u.purpose, u.calls]), [["fake-small", "summary", 1]])
    }).pipe(Effect.provide(stack())))

  it.effect("a reply that does not decode is asked for once more, with the error quoted", () =>
    Effect.gen(function*() {
      fake.reset()
      fake.script(text("Here is what happened: it went well."), text(reflectionJson({ status: "mixed", rules: [] })))
      yield* setup(fake)
      yield* append(exchange())
      const before = fake.requests.length
      const entry = yield* reflectOnce
      assert.strictEqual(fake.requests.length - before, 2)
      assert.include(bodyOf(before + 1), "Your answer could not be used: the reply contains no JSON object")
      assert.include(bodyOf(before + 1), "Here is what happened: it went well.", "the bad answer is part of the conversation")
      assert.deepStrictEqual([entry.source, entry.status], ["model", "mixed"])
      assert.deepStrictEqual(yield* (yield* Playbook).list(AGENT), [])
    }).pipe(Effect.provide(stack())))

  it.effect("two answers that do not decode: the heuristic writes the entry", () =>
    Effect.gen(function*() {
      fake.reset()
      fake.script(text(reflectionJson({ status: "great" })), text("{ not json"))
      yield* setup(fake)
      yield* append([...exchange(), { role: "user", content: "Thanks, that works now!" }])
      const before = fake.requests.length
      const entry = yield* reflectOnce
      assert.strictEqual(fake.requests.length - before, 2)
      assert.include(bodyOf(before + 1), "does not match the format")
      assert.deepStrictEqual([entry.source, entry.status], ["heuristic", "success"])
      assert.deepStrictEqual(entry.keyLearnings, [])
      assert.deepStrictEqual(yield* (yield* Playbook).list(AGENT), [], "a heuristic proposes no rule")
    }).pipe(Effect.provide(stack())))

  it.effect("the provider failing, or no provider at all: the heuristic writes the entry", () =>
    Effect.gen(function*() {
      fake.reset()
      fake.script({ kind: "error", status: 503, message: "overloaded" })
      yield* setup(fake)
      yield* append([...exchange(), { role: "user", content: "No, that's wrong." }])
      const before = fake.requests.length
      const failed = yield* reflectOnce
      assert.strictEqual(fake.requests.length - before, 1)
      assert.deepStrictEqual([failed.source, failed.status], ["heuristic", "failure"])
      const usage = yield* (yield* UsageLog).totals({ sessionKey: KEY })
      assert.deepStrictEqual(usage.map((u) => [u.purpose, u.calls, u.failed]), [["summary", 1, 1]], "the failed call is recorded")

      const other = "x:cli:u2:main"
      yield* append(exchange(), other)
      yield* (yield* ProviderStore).update("local", { enabled: false })
      const entry = yield* (yield* Learning).reflect(other, "new")
      assert.deepStrictEqual(Option.map(entry, (e) => [e.source, e.trigger, e.userId]), Option.some(["heuristic", "new", "u2"]))
      assert.strictEqual(fake.requests.length - before, 1, "no request without an enabled provider")
    }).pipe(Effect.provide(stack())))

  it.effect("nothing new is None; too little is skipped with its reason; an unknown session is skipped", () =>
    Effect.gen(function*() {
      fake.reset()
      fake.respondWith(() => text(reflectionJson()))
      yield* setup(fake)
      const learning = yield* Learning
      yield* append(exchange())
      const first = yield* reflectOnce
      const before = fake.requests.length
      assert.isTrue(Option.isNone(yield* learning.reflect(KEY, "demand")))
      yield* append([{ role: "user", content: "one more thing" }])
      const little = yield* Effect.flip(learning.reflect(KEY, "demand"))
      assert.match(little.message, /nothing to reflect on: only 1 new message/)
      yield* append([{ role: "user", content: "and another" }])
      const noReply = yield* Effect.flip(learning.reflect(KEY, "demand"))
      assert.match(noReply.message, /no reply of the agent/)
      const unknown = yield* Effect.flip(learning.reflect("nobody:cli:x:main", "demand"))
      assert.match(unknown.message, /no such session/)
      assert.strictEqual(fake.requests.length, before, "nothing was asked")
      yield* append([{ role: "assistant", content: "Here you go." }])
      const next = yield* reflectOnce
      assert.strictEqual(next.fromSeq, first.toSeq + 1, "the next burst starts after the last entry")
    }).pipe(Effect.provide(stack())))

  it.effect("learning off for the agent: no reflection, beforeTurn gives \"\" and records nothing", () =>
    Effect.gen(function*() {
      fake.reset()
      yield* setup(fake)
      yield* (yield* Playbook).propose({ agentId: AGENT, user: undefined, text: "Pin Docker base images", tags: ["docker"], sourceEntries: [], antiPattern: false })
      yield* append(exchange())
      yield* (yield* PluginStore).setFor("learning", AGENT, false)
      const learning = yield* Learning
      assert.strictEqual(yield* learning.beforeTurn(chat, "docker again"), "")
      yield* learning.skillUsed(chat, "deploy", "operator")
      assert.deepStrictEqual(yield* (yield* Diary).openUses(KEY), [])
      const off = yield* Effect.flip(learning.reflect(KEY, "demand"))
      assert.match(off.message, /learning is off for agent a1/)
      assert.deepStrictEqual(yield* learning.feedback(chat, "failure"), { rules: [], forYou: [], skills: [] })
      yield* (yield* PluginStore).setFor("learning", AGENT, true)
      assert.notStrictEqual(yield* learning.beforeTurn(chat, "docker again"), "")
    }).pipe(Effect.provide(stack())))

  it.effect("beforeTurn returns the exact guidelines text and records one use per rule chosen", () =>
    Effect.gen(function*() {
      fake.reset()
      yield* setup(fake)
      const playbook = yield* Playbook
      const pin = yield* playbook.propose({ agentId: AGENT, user: undefined, text: "Pin Docker base images", tags: ["docker"], sourceEntries: [], antiPattern: false })
      const avoid = yield* playbook.propose({ agentId: AGENT, user: undefined, text: "Running containers as root", tags: ["docker"], sourceEntries: [], antiPattern: true })
      yield* playbook.propose({ agentId: AGENT, user: "someone-else", text: "Use their private registry", tags: ["docker"], sourceEntries: [], antiPattern: false })
      yield* playbook.propose({ agentId: AGENT, user: undefined, text: "Prefer uv for Python", tags: ["python"], sourceEntries: [], antiPattern: false })
      const learning = yield* Learning
      const injected = yield* learning.beforeTurn(chat, "My Docker build is slow")
      assert.strictEqual(
        injected,
        [
          "## Relevant Guidelines",
          "",
          "The following rules are based on past experience with similar tasks:",
          "",
          "1. [NASCENT] Pin Docker base images (confidence: 0.50)",
          "",
          "## Patterns to Avoid",
          "",
          "These patterns have caused problems in similar past work:",
          "",
          "1. AVOID: Running containers as root (confidence: 0.50)"
        ].join("\n")
      )
      const context = yield* playbook.context({ agentId: AGENT, userId: USER, tags: ["docker"] })
      assert.strictEqual(formatForPrompt(context), injected)
      const uses = yield* (yield* Diary).openUses(KEY)
      assert.deepStrictEqual(uses.map((u) => [u.kind, u.ref]).sort(), [["rule", avoid.rule.id], ["rule", pin.rule.id]].sort())
      assert.strictEqual(yield* learning.beforeTurn(chat, "nothing relevant here"), "")
      assert.strictEqual((yield* (yield* Diary).openUses(KEY)).length, 2, "no rule chosen, nothing recorded")
    }).pipe(Effect.provide(stack())))
})
