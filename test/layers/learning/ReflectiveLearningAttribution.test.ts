/**
 * The learning loop's feedback and background work on real layers with the fake LLM: a burst's
 * status flows to the rules injected during it (+0.05 / −0.20, mixed: nothing) exactly once,
 * explicit feedback settles at once (rules and skills), endBurst never waits for the model (a hung
 * request, released by the TestClock passing the transport's timeout), and a closed layer leaves an
 * unreflected burst reflectable.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll } from "vitest"
import * as ReflectiveLearning from "../../../src/layers/learning/ReflectiveLearning.ts"
import { Diary } from "../../../src/services/Diary.ts"
import { Learning } from "../../../src/services/Learning.ts"
import { Playbook } from "../../../src/services/Playbook.ts"
import { SkillStats } from "../../../src/services/SkillStats.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { text } from "../../support/fakeLlm/script.ts"
import { AGENT, append, exchange, infra, KEY, reflectionJson, setup, stack, USER } from "./ReflectiveLearningHarness.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(() => fake.close())

const chat = { sessionKey: KEY, agentId: AGENT, userId: USER }

/**
 * A rule of the user's own: their outcomes apply to it as they come. (On a rule for every user they
 * are the user's vote, which moves it only when enough users agree: sharedRuleFeedback.test.ts.)
 */
const addRule = Playbook.use((p) =>
  p.propose({ agentId: AGENT, user: USER, text: "Pin Docker base images", tags: ["docker"], sourceEntries: [], antiPattern: false }))

const ruleState = (id: string) =>
  Effect.map(Playbook.use((p) => p.get(AGENT, id)), ({ rule }) => [rule.confidence, rule.successCount, rule.failureCount])

/** One burst: the rule injected by beforeTurn, an exchange, and a reflection whose status is `status`. */
const burst = (status: "success" | "failure" | "mixed", inject = true) =>
  Effect.gen(function*() {
    const learning = yield* Learning
    if (inject) assert.notStrictEqual(yield* learning.beforeTurn(chat, "a docker question"), "")
    yield* append(exchange())
    fake.script(text(reflectionJson({ status, rules: [] })))
    const entry = yield* learning.reflect(KEY, "demand")
    assert.strictEqual(Option.map(entry, (e) => e.status).pipe(Option.getOrUndefined), status)
  })

describe("ReflectiveLearning: attribution and feedback", () => {
  it.effect("a success adds 0.05 to the injected rules, a failure takes 0.20, mixed nothing; each burst counts once", () =>
    Effect.gen(function*() {
      fake.reset()
      yield* setup(fake)
      const { rule } = yield* addRule
      yield* burst("success")
      assert.deepStrictEqual(yield* ruleState(rule.id), [0.55, 1, 0])
      yield* burst("failure")
      assert.deepStrictEqual(yield* ruleState(rule.id), [0.35, 1, 1])
      yield* burst("mixed")
      assert.deepStrictEqual(yield* ruleState(rule.id), [0.35, 1, 1])
      assert.deepStrictEqual(yield* (yield* Diary).openUses(KEY), [], "a mixed burst settles its uses too")
      // Injected on three turns of one burst: one application.
      const learning = yield* Learning
      yield* learning.beforeTurn(chat, "docker")
      yield* learning.beforeTurn(chat, "docker")
      yield* burst("success")
      assert.deepStrictEqual(yield* ruleState(rule.id), [0.4, 2, 1])
      // A burst without the rule: settled uses are never counted again.
      yield* burst("success", false)
      yield* burst("failure", false)
      assert.deepStrictEqual(yield* ruleState(rule.id), [0.4, 2, 1])
    }).pipe(Effect.provide(stack())))

  it.effect("explicit feedback applies at once to the burst's rules and skills, and only once", () =>
    Effect.gen(function*() {
      fake.reset()
      yield* setup(fake)
      const { rule } = yield* addRule
      const learning = yield* Learning
      yield* learning.beforeTurn(chat, "docker")
      yield* learning.skillUsed(chat, "deploy", "operator")
      yield* learning.skillUsed(chat, "deploy", "operator")
      yield* learning.skillUsed(chat, "notes", "user")
      const report = yield* learning.feedback(chat, "failure")
      assert.deepStrictEqual(report, { rules: [rule.id], forYou: [], skills: ["deploy", "notes"] })
      assert.deepStrictEqual(yield* ruleState(rule.id), [0.3, 0, 1])
      const stats = yield* SkillStats
      const operator = yield* stats.arms(AGENT, "", ["deploy", "notes"])
      assert.deepStrictEqual(operator.get("deploy"), { successes: 0, failures: 1 })
      assert.strictEqual(operator.get("notes")?.failures ?? 0, 0, "the user's own skill is not counted as the operator's")
      assert.deepStrictEqual((yield* stats.arms(AGENT, USER, ["notes"])).get("notes"), { successes: 0, failures: 1 })
      assert.deepStrictEqual(yield* learning.feedback(chat, "success"), { rules: [], forYou: [], skills: [] }, "nothing open any more")
      yield* append(exchange())
      fake.script(text(reflectionJson({ rules: [] })))
      yield* learning.reflect(KEY, "demand")
      assert.deepStrictEqual(yield* ruleState(rule.id), [0.3, 0, 1], "the reflection finds the uses settled")
    }).pipe(Effect.provide(stack())))
})

describe("ReflectiveLearning: background reflection", () => {
  it.effect("endBurst returns while the model hangs; idle waits for the queue; a session queued twice is reflected once", () =>
    Effect.gen(function*() {
      fake.reset()
      yield* setup(fake)
      const learning = yield* Learning
      const diary = yield* Diary
      const other = `${AGENT}:cli:u2:main`
      yield* append(exchange())
      yield* append(exchange("How do I list containers?", "docker ps"), other)
      fake.script({ kind: "hang" })
      fake.respondWith(() => text(reflectionJson({ rules: [] })))
      const before = fake.requests.length
      yield* learning.endBurst(KEY, "idle")
      yield* Effect.promise(() => fake.request(before))
      // The worker is stuck on KEY: `other`, queued twice meanwhile, waits its turn once.
      yield* learning.endBurst(other, "new")
      yield* learning.endBurst(other, "new")
      assert.deepStrictEqual(yield* diary.list({}), [], "endBurst did not wait for the model")
      const idle = yield* Effect.forkChild(learning.idle)
      yield* TestClock.adjust("6 seconds")
      yield* Fiber.join(idle)
      const entries = yield* diary.list({})
      assert.deepStrictEqual(entries.map((e) => [e.sessionKey, e.source, e.trigger]).sort(), [
        [KEY, "heuristic", "idle"],
        [other, "model", "new"]
      ].sort())
      assert.strictEqual(fake.requests.length - before, 2)
      yield* learning.idle
    }).pipe(Effect.provide(stack())))

  it.effect("closing the layer interrupts the worker; the burst stays reflectable", () =>
    Effect.gen(function*() {
      fake.reset()
      yield* setup(fake)
      const { firstSeq } = yield* append(exchange())
      fake.script({ kind: "hang" })
      const before = fake.requests.length
      yield* Effect.gen(function*() {
        yield* (yield* Learning).endBurst(KEY, "idle")
        yield* Effect.promise(() => fake.request(before))
      }).pipe(Effect.provide(ReflectiveLearning.layer))
      yield* Effect.promise(() => fake.when(() => fake.requests[before]?.aborted === true, { what: "the hung request aborted" }))
      assert.deepStrictEqual(yield* (yield* Diary).list({}), [])
      fake.script(text(reflectionJson({ rules: [] })))
      const entry = yield* Learning.use((l) => l.reflect(KEY, "demand")).pipe(Effect.provide(ReflectiveLearning.layer))
      assert.deepStrictEqual(Option.map(entry, (e): ReadonlyArray<unknown> => [e.source, e.fromSeq]), Option.some(["model", firstSeq]))
    }).pipe(Effect.provide(infra())))
})
