/**
 * Feedback on a shared playbook rule (issue 23, item 3) through the real runtime: the slash commands
 * `/feedback bad` and `/new` of several chat users, the real Learning loop, the YAML playbook and
 * the SQLite votes, the OpenAI SDK talking to the fake LLM server. One user, however many bursts,
 * never moves an operator's rule for anyone else (only their own prompt drops it); CONSENSUS_USERS
 * distinct users do, and only then is its inversion queued for the operator; reflection outcomes
 * obey the same bound; the operator's own feedback applies to everyone at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { CONSENSUS_USERS } from "../../../src/domain/learning/consensus.ts"
import type { ChatTarget } from "../../../src/domain/runtime/types.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { Learning } from "../../../src/services/Learning.ts"
import { Playbook } from "../../../src/services/Playbook.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { sqliteTemp } from "../../support/db.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const AGENT = "a1"
const RULE = "Deploy with the blue-green script"
const line = (confidence: string) => `1. [NASCENT] ${RULE} (confidence: ${confidence})`

interface Body {
  readonly model?: string
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
}
const body = (r: RecordedRequest) => r.body as Body
/** Reflection asks the agent's summary model; chat turns its default model. */
const isReflection = (r: RecordedRequest) => body(r).model === "fake-small"

const reflectionAnswer = (status: "failure" | "mixed") =>
  JSON.stringify({
    accomplishments: ["deployed"],
    decisions: [],
    challenges: [],
    key_learnings: [],
    tags: [],
    status,
    quality_score: 0.5,
    rules: []
  })

/** Chat turns answer "ok"; every reflection answers `status` (mixed: no outcome reaches the rules). */
const answering = (status: "failure" | "mixed") =>
  fake.respondWith((r) => ({ kind: "reply", parts: [{ type: "text", text: isReflection(r) ? reflectionAnswer(status) : "ok" }] }))

const stack = () => {
  const home = mkdtempSync(join(tmpdir(), "anna-shared-rule-"))
  homes.push(home)
  const memory = LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))
  return Compose.learningRuntime({ runnerIdle: "1 hour" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(memory),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(AppConfig.at(home)),
    Layer.provideMerge(sqliteTemp)
  )
}

const user = (name: string): ChatTarget => ({ platform: "cli", externalUserId: name, userName: name })

/** One message of `who`; the reply's text and the system prompt the model got for it. */
const say = (who: string, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve(user(who))
    const before = fake.requests.length
    const events = yield* Stream.runCollect(runtime.send(chat, text))
    const reply = events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("")
    const turn = fake.requests.slice(before).find((r) => !isReflection(r))
    const system = turn === undefined ? "" : String(body(turn).messages?.find((m) => m.role === "system")?.content ?? "")
    return { reply, system, chat }
  })

/** What `who` is given for a message about deploying (the turn's system prompt). */
const promptOf = (who: string) => Effect.map(say(who, "please deploy the app"), (t) => t.system)

/** One burst of `who`: a deploy turn (the rule injected), `/feedback bad` unless `feedback` is false, `/new`; reflection waited for. */
const badBurst = (who: string, feedback = true) =>
  Effect.gen(function*() {
    const system = yield* promptOf(who)
    if (feedback) assert.match((yield* say(who, "/feedback bad")).reply, /^Thanks\. Weakened: 1 guideline( for you \(shared with other users: it changes for them once several agree\))?\.$/)
    yield* say(who, "/new")
    yield* Learning.use((l) => l.idle)
    return system
  })

const setup = Effect.gen(function*() {
  yield* (yield* ProviderStore).add(localProvider(fake))
  yield* (yield* AgentStore).create(AGENT, { providerId: "local", summaryProviderId: "local", summaryModel: "fake-small", tools: [] })
  // The operator's rule, for every user of the agent.
  const { rule } = yield* Playbook.use((p) =>
    p.propose({ agentId: AGENT, user: undefined, text: RULE, tags: ["deploy"], sourceEntries: [], antiPattern: false })
  )
  return rule.id
})

const shared = (id: string) => Effect.map(Playbook.use((p) => p.get(AGENT, id)), ({ rule }) => [rule.confidence, rule.successCount, rule.failureCount])
const review = Effect.map(Playbook.use((p) => p.review(AGENT)), (ps) => ps.map((p) => [p.original.id, p.original.failureCount]))

describe("feedback on a shared rule", () => {
  beforeEach(() => fake.reset())

  it.effect("one user's /feedback bad over three bursts drops the rule from their own prompt only; nobody else's changes, nothing is queued for inversion", () =>
    Effect.gen(function*() {
      answering("mixed")
      const id = yield* setup
      // The user's own view adapts at once: 0.50, 0.30, 0.10 in their prompts, then gone.
      const seen: Array<string> = []
      for (let i = 0; i < 3; i++) seen.push(yield* badBurst("mallory"))
      assert.include(seen[0], line("0.50"))
      assert.include(seen[1], line("0.30"))
      assert.include(seen[2], line("0.10"))
      assert.notInclude(yield* promptOf("mallory"), RULE, "the user who said bad three times no longer gets it")
      // Everyone else still gets the operator's rule as it was.
      assert.include(yield* promptOf("bob"), line("0.50"))
      assert.include(yield* promptOf("carol"), line("0.50"))
      assert.deepStrictEqual(yield* shared(id), [0.5, 0, 0])
      assert.deepStrictEqual(yield* review, [], "no AVOID rule is proposed to the operator on one user's word")
    }).pipe(Effect.provide(stack())))

  it.effect(`${CONSENSUS_USERS} distinct users saying bad take the rule out of everyone's prompt, and only then is its inversion queued`, () =>
    Effect.gen(function*() {
      answering("mixed")
      const id = yield* setup
      assert.strictEqual(CONSENSUS_USERS, 3)
      yield* badBurst("alice")
      yield* badBurst("alice")
      yield* badBurst("bob")
      assert.include(yield* promptOf("dave"), line("0.50"), "two users are not enough")
      assert.deepStrictEqual(yield* review, [])
      yield* badBurst("carol")
      // Three users agree: each one's failure counts once (0.50 → 0.30 → 0.10 → 0.00) for everyone.
      assert.deepStrictEqual(yield* shared(id), [0, 0, 3])
      assert.notInclude(yield* promptOf("dave"), RULE)
      assert.deepStrictEqual(yield* review, [[id, 3]])
    }).pipe(Effect.provide(stack())))

  it.effect("failing reflections of one user's bursts obey the same bound", () =>
    Effect.gen(function*() {
      answering("failure")
      const id = yield* setup
      for (let i = 0; i < 4; i++) yield* badBurst("mallory", false)
      assert.notInclude(yield* promptOf("mallory"), RULE)
      assert.include(yield* promptOf("bob"), line("0.50"))
      assert.deepStrictEqual(yield* shared(id), [0.5, 0, 0])
      assert.deepStrictEqual(yield* review, [])
    }).pipe(Effect.provide(stack())))

  it.effect("the operator's feedback applies to every user at once", () =>
    Effect.gen(function*() {
      answering("mixed")
      const id = yield* setup
      const [result] = yield* Playbook.use((p) => p.feedback(AGENT, [id], "failure", "operator"))
      assert.strictEqual(result?.effect, "applied")
      assert.include(yield* promptOf("bob"), line("0.30"))
      assert.include(yield* promptOf("carol"), line("0.30"))
      assert.deepStrictEqual(yield* shared(id), [0.3, 0, 1])
    }).pipe(Effect.provide(stack())))
})
