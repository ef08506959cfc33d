/**
 * `/model` picks only what the operator allows (the agent's model, its allowed ids, or with "*"
 * what the provider lists), and `/new` starts contexts no other chat can name — through the real
 * Runtime on SQLite, with the OpenAI SDK talking to the fake LLM server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { Agent } from "../../../src/domain/config/agent.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import { type ChatTarget, chatNameProblem } from "../../../src/domain/runtime/types.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { nextContext } from "../../../src/layers/runtime/commands.ts"
import { allowedModels, modelAllowed, turnModel } from "../../../src/layers/runtime/models.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime as RuntimeService } from "../../../src/services/Runtime.ts"
import { sqliteTemp } from "../../support/db.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const stack = () => {
  const home = mkdtempSync(join(tmpdir(), "anna-model-"))
  homes.push(home)
  const memory = LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))
  return Compose.agentRuntime({ runnerIdle: "1 second" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(memory),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )
}

const provider = () => localProvider(fake, { models: ["declared-model"] })

/** Agent a1 on the fake server's default model (fake-large: the agent names none). */
const setup = (allowed: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    yield* (yield* ProviderStore).add(provider())
    yield* (yield* AgentStore).create("a1", { providerId: "local", tools: [], allowedModels: allowed })
  })

const alice: ChatTarget = { platform: "cli", externalUserId: "alice", userName: "Alice" }

const say = (target: ChatTarget, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* RuntimeService
    const chat = yield* runtime.resolve(target)
    const events = yield* Stream.runCollect(runtime.send(chat, text))
    return { chat, text: events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("") }
  })

/** The model of the last request the fake server got. */
const lastModel = () => (fake.requests[fake.requests.length - 1]?.body as { model?: string } | undefined)?.model

const turnOn = (target: ChatTarget) =>
  Effect.gen(function*() {
    fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
    yield* say(target, "hello")
    return lastModel()
  })

describe("/model", () => {
  it.effect("without allowed models, only the agent's own model: another name is refused and never sent upstream", () =>
    Effect.gen(function*() {
      yield* setup([])
      const refused = yield* say(alice, "/model gpt-most-expensive")
      assert.include(refused.text, `"gpt-most-expensive" is not a model this agent may use`)
      assert.include(refused.text, "1. fake-large (current)")
      assert.strictEqual(yield* turnOn(alice), "fake-large")
      const shown = yield* say(alice, "/model")
      assert.include(shown.text, "Model: fake-large.")
      assert.include(shown.text, "This agent lets no other model be chosen.")
      assert.notInclude(shown.text, "fake-small")
    }).pipe(Effect.provide(stack())))

  it.effect("allowed ids may be picked; others are refused with the list of what may be", () =>
    Effect.gen(function*() {
      yield* setup(["fake-small"])
      assert.include((yield* say(alice, "/model fake-small")).text, "now uses fake-small")
      assert.strictEqual(yield* turnOn(alice), "fake-small")
      const refused = yield* say(alice, "/model fake-xl")
      assert.include(refused.text, `"fake-xl" is not a model this agent may use`)
      assert.include(refused.text, "1. fake-large\n2. fake-small (current)")
      assert.strictEqual(yield* turnOn(alice), "fake-small")
      assert.include((yield* say(alice, "/model default")).text, "Back to the agent's model (fake-large)")
      assert.strictEqual(yield* turnOn(alice), "fake-large")
    }).pipe(Effect.provide(stack())))

  it.effect("with *, what the provider lists or declares may be picked, nothing else (not even \"*\")", () =>
    Effect.gen(function*() {
      fake.models = ["fake-large", "fake-small", "fake-xl"]
      yield* setup(["*"])
      const shown = yield* say(alice, "/model")
      assert.include(shown.text, "1. fake-large (current)\n2. declared-model\n3. fake-small\n4. fake-xl")
      // By its number in the list, as a platform without a picker offers it.
      assert.include((yield* say(alice, "/model 3")).text, "now uses fake-small")
      assert.include((yield* say(alice, "/model 9")).text, `"9" is not a model this agent may use`)
      assert.include((yield* say(alice, "/model fake-xl")).text, "now uses fake-xl")
      assert.strictEqual(yield* turnOn(alice), "fake-xl")
      assert.include((yield* say(alice, "/model declared-model")).text, "now uses declared-model")
      for (const name of ["not-listed", "*"]) {
        assert.include((yield* say(alice, `/model ${name}`)).text, `"${name}" is not a model this agent may use`)
      }
      assert.strictEqual(yield* turnOn(alice), "declared-model")
    }).pipe(Effect.provide(stack())))

  it.effect("a choice the operator has since disallowed is shown as dropped", () =>
    Effect.gen(function*() {
      yield* setup(["fake-small"])
      yield* say(alice, "/model fake-small")
      yield* (yield* AgentStore).update("a1", { allowedModels: [] })
      const shown = yield* say(alice, "/model")
      assert.include(shown.text, "Model: fake-large (fake-small, chosen earlier, is no longer allowed).")
      assert.include((yield* say(alice, "/whoami")).text, "model: the agent's default")
      // And the next turn really runs on the agent's model, not on the stale choice.
      const before = fake.requests.length
      yield* say(alice, "hello")
      assert.deepStrictEqual(fake.requests.slice(before).map((r) => (r.body as { model?: string }).model), ["fake-large"])
    }).pipe(Effect.provide(stack())))
})

const agent = (model: string, allowed: ReadonlyArray<string>): Agent => ({
  id: "a1",
  name: "a1",
  providerId: "local",
  model,
  summaryProviderId: null,
  summaryModel: "",
  summaryMaxCalls: 60,
  summaryWindowSeconds: 3600,
  systemPrompt: "",
  sandboxImage: "",
  sandboxNetwork: "disabled",
  sandboxMemoryMb: 1024,
  sandboxCpus: 1,
  sandboxPids: 256,
  sandboxWorkspace: "user",
  sandboxDiskMb: 1024,
  allowedModels: allowed,
  turnTimeoutSeconds: 900,
  contextTokens: 0,
  tools: null,
  maxTurns: 25,
  enabled: true,
  createdAt: 0,
  updatedAt: 0
})

describe("modelAllowed and turnModel", () => {
  it("allow the agent's model, listed ids, and with * the provider's listing (trusted when no listing is given)", () => {
    assert.isTrue(modelAllowed(agent("m1", []), ""))
    assert.isTrue(modelAllowed(agent("m1", []), "m1"))
    assert.isFalse(modelAllowed(agent("m1", []), "m2"))
    assert.isFalse(modelAllowed(agent("", []), "m2"))
    assert.isTrue(modelAllowed(agent("m1", ["m2"]), "m2"))
    assert.isFalse(modelAllowed(agent("m1", ["m2"]), "m3", ["m3"]))
    assert.isTrue(modelAllowed(agent("m1", ["*"]), "m3", ["m3"]))
    assert.isFalse(modelAllowed(agent("m1", ["*"]), "m4", ["m3"]))
    assert.isTrue(modelAllowed(agent("m1", ["*"]), "m4"))
    assert.isFalse(modelAllowed(agent("m1", ["*"]), "*"))
    assert.isFalse(modelAllowed(agent("m1", ["*"]), "*", ["*"]))
  })

  it("turnModel falls back to the agent's model when the stored choice is no longer allowed", () => {
    assert.strictEqual(turnModel(agent("", ["m2"]), "default-m", "m2"), "m2")
    assert.strictEqual(turnModel(agent("", []), "default-m", "m2"), "default-m")
    assert.strictEqual(turnModel(agent("", []), "default-m", ""), "default-m")
    assert.deepStrictEqual(allowedModels(agent("", ["m2", "*"]), "d", ["m3", "d"]), ["d", "m2", "m3"])
  })
})

describe("/new", () => {
  it.effect("starts a context no other chat can name: chat w2y after /new and chat w2y-2 stay apart", () =>
    Effect.gen(function*() {
      yield* setup([])
      const w2y: ChatTarget = { ...alice, chatId: "w2y" }
      const other: ChatTarget = { ...alice, chatId: "w2y-2" }
      const before = (yield* say(w2y, "/whoami")).chat.sessionKey
      yield* say(w2y, "/new")
      fake.script({ kind: "reply", parts: [{ type: "text", text: "one" }] }, { kind: "reply", parts: [{ type: "text", text: "two" }] })
      const first = yield* say(w2y, "from w2y")
      const second = yield* say(other, "from w2y-2")
      assert.notStrictEqual(first.chat.sessionKey, before)
      assert.notStrictEqual(first.chat.sessionKey, second.chat.sessionKey)
      assert.match(first.chat.sessionKey, /^a1:cli:u_[a-z0-9]+:w2y#2$/)
      assert.isUndefined(chatNameProblem("w2y-2"))
      assert.isDefined(chatNameProblem(first.chat.context))
      const memory = yield* MemoryProvider
      const texts = (key: string) =>
        Effect.map(memory.assemble(key, { budget: 100_000 }), (a) => a.messages.filter((m) => m.role === "user").map((m) => m.content))
      assert.deepStrictEqual(yield* texts(first.chat.sessionKey), ["from w2y"])
      assert.deepStrictEqual(yield* texts(second.chat.sessionKey), ["from w2y-2"])
      // The key keeps its shape: owner and agent are read back from it.
      const ref = sessionRefFromKey(first.chat.sessionKey)
      assert.deepStrictEqual([ref.agentId, ref.userId], ["a1", first.chat.userId])
      yield* say(w2y, "/new")
      assert.match((yield* say(w2y, "/whoami")).chat.sessionKey, /:w2y#3$/)
    }).pipe(Effect.provide(stack())))

  it("counts on from the chat's own contexts only, including the old dash scheme", () => {
    assert.strictEqual(nextContext("dm", "main"), "dm#2")
    assert.strictEqual(nextContext("dm", "dm#2"), "dm#3")
    assert.strictEqual(nextContext("dm", "dm-3"), "dm#4")
    assert.strictEqual(nextContext("a-1", "main"), "a-1#2")
    assert.strictEqual(nextContext("a-1", "a-1#9"), "a-1#10")
    assert.strictEqual(nextContext("dm", "dm-x"), "dm#2")
  })

  it("chat names cannot hold the context mark, control characters, or be empty or too long", () => {
    for (const bad of ["w2y#2", "", "  ", "a\u001b]0;x\u0007", "a\u009bb", "x".repeat(129)]) assert.isDefined(chatNameProblem(bad), JSON.stringify(bad))
    for (const ok of ["dm", "w2y-2", "Work: Q3 plans", "x".repeat(128), "日本語"]) assert.isUndefined(chatNameProblem(ok), ok)
  })
})

describe("/agent over HTTP", () => {
  it.effect("says plainly that the HTTP channel routes by the request's model, and changes nothing", () =>
    Effect.gen(function*() {
      yield* setup([])
      yield* (yield* AgentStore).create("helper", { providerId: "local" })
      const http: ChatTarget = { platform: "http", externalUserId: "carol", userName: "Carol", agentId: "a1", chatId: "default" }
      const reply = yield* say(http, "/agent helper")
      assert.include(reply.text, `Over HTTP the agent is the request's "model": send "model": "helper"`)
      const user = yield* (yield* ConfigStore).getUser(reply.chat.userId)
      assert.strictEqual(user._tag === "Some" ? user.value.defaultAgentId : "missing", null, "the user's default agent is unchanged")
      const cli = yield* say(alice, "/agent helper")
      assert.include(cli.text, "You are now talking to helper", "other channels still switch")
    }).pipe(Effect.provide(stack())))
})
