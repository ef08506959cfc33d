/**
 * The runtime end to end without a sandbox: routing, the tool loop (memory tool), parallel tool
 * calls, slash commands, compaction in the loop, failures shown as notices, abort, max_turns —
 * through the OpenAI Chat Completions SDK against the fake LLM server, on real SQLite.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { ChatTarget, TurnEvent } from "../../../src/domain/runtime/types.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime as RuntimeService } from "../../../src/services/Runtime.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
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
beforeEach(() => fake.reset())
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const stack = () => {
  const home = mkdtempSync(join(tmpdir(), "anna-rt-"))
  homes.push(home)
  const stores = SqliteRuntimeConfig.layerWithStores(home)
  const memory = LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))
  return Compose.agentRuntime({ runnerIdle: "1 second" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(memory),
    Layer.provideMerge(stores),
    Layer.provideMerge(sqliteTemp)
  )
}

const provider = () => localProvider(fake)

const setup = (agent: Parameters<AgentStore["Service"]["create"]>[1] = {}) =>
  Effect.gen(function*() {
    yield* (yield* ProviderStore).add(provider())
    yield* (yield* AgentStore).create("a1", { providerId: "local", tools: ["memory"], ...agent })
  })

const alice: ChatTarget = { platform: "cli", externalUserId: "alice", userName: "Alice" }

const say = (target: ChatTarget, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* RuntimeService
    const chat = yield* runtime.resolve(target)
    const events = yield* Stream.runCollect(runtime.send(chat, text))
    return { chat, events, text: events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("") }
  })

const bodyOf = (r: RecordedRequest | undefined) => JSON.stringify(r?.body ?? null)

describe("Runtime", () => {
  it.effect("routes a first message, streams the reply and stores both sides", () =>
    Effect.gen(function*() {
      yield* setup()
      fake.script({ kind: "reply", parts: [{ type: "text", text: "Hello Alice, nice to meet you." }], usage: { input: 50, output: 9 }, chunk: 5 })
      const r = yield* say(alice, "hi, I am Alice")
      assert.strictEqual(r.chat.agentId, "a1")
      assert.match(r.chat.sessionKey, /^a1:cli:u_[a-z0-9]+:dm$/)
      assert.isAbove(r.events.filter((e) => e.type === "text").length, 3)
      assert.strictEqual(r.text, "Hello Alice, nice to meet you.")
      const last = r.events[r.events.length - 1]
      assert.deepStrictEqual(last?.type === "done" ? [last.stopReason, last.usage.inputTokens, last.modelCalls] : [], ["end_turn", 50, 1])
      const history = yield* (yield* MemoryProvider).assemble(r.chat.sessionKey, { budget: 100_000 })
      assert.deepStrictEqual(history.messages.map((m) => m.role), ["user", "assistant"])
      const req = fake.requests[fake.requests.length - 1]
      assert.include(bodyOf(req), "Name: Alice")
      assert.include(bodyOf(req), "\"name\":\"memory\"")
      const totals = yield* (yield* UsageLog).totals({ sessionKey: r.chat.sessionKey })
      assert.deepStrictEqual(totals.map((t) => [t.purpose, t.calls, t.inputTokens]), [["chat", 1, 50]])
      // Same person, same chat: same session next time.
      fake.script({ kind: "reply", parts: [{ type: "text", text: "again" }] })
      assert.strictEqual((yield* say(alice, "again")).chat.sessionKey, r.chat.sessionKey)
    }).pipe(Effect.provide(stack())))

  it.effect("runs the tool loop: parallel tool calls, results stored in order, then the final answer", () =>
    Effect.gen(function*() {
      yield* setup()
      fake.script(
        {
          kind: "reply",
          parts: [
            { type: "text", text: "Let me check." },
            { type: "tool_call", id: "c1", name: "memory", input: { action: "status" } },
            { type: "tool_call", id: "c2", name: "memory", input: { action: "profile_get" } }
          ]
        },
        { kind: "reply", parts: [{ type: "text", text: "All good." }] }
      )
      const r = yield* say(alice, "how big is our chat?")
      const tools = r.events.filter((e): e is Extract<TurnEvent, { type: "tool_end" }> => e.type === "tool_end")
      assert.deepStrictEqual(tools.map((t) => [t.id, t.isError]).sort(), [["c1", false], ["c2", false]])
      assert.include(tools.find((t) => t.id === "c1")?.output ?? "", "messages")
      assert.strictEqual(r.text, "Let me check.All good.")
      const second = fake.requests[fake.requests.length - 1]
      assert.include(bodyOf(second), "\"tool_call_id\":\"c1\"")
      assert.include(bodyOf(second), "\"tool_call_id\":\"c2\"")
      const history = yield* (yield* MemoryProvider).assemble(r.chat.sessionKey, { budget: 100_000 })
      assert.deepStrictEqual(history.messages.map((m) => m.role), ["user", "assistant", "tool_result", "assistant"])
    }).pipe(Effect.provide(stack())))

  it.effect("answers slash commands: /whoami, /new moves the session on, /model switches, /agent lists and switches, unknown", () =>
    Effect.gen(function*() {
      yield* setup({ allowedModels: ["fake-small"] })
      yield* (yield* AgentStore).create("a2", { providerId: "local", tools: [] })
      const who = yield* say(alice, "/whoami")
      assert.include(who.text, "agent: a1")
      assert.strictEqual(who.events[who.events.length - 1]?.type === "done" ? who.events[who.events.length - 1] && "command" : "", "command")
      const before = who.chat.sessionKey
      yield* say(alice, "/new")
      const after = yield* say(alice, "/whoami")
      assert.notStrictEqual(after.chat.sessionKey, before)
      assert.match(after.chat.sessionKey, /:dm#2$/)
      yield* say(alice, "/model fake-small")
      fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
      yield* say(alice, "hello")
      assert.strictEqual((fake.requests[fake.requests.length - 1]?.body as { model?: string } | undefined)?.model, "fake-small")
      const agents = yield* say(alice, "/agent")
      assert.include(agents.text, "1. a1 (current)\n2. a2")
      // By number, as listed; by id.
      yield* say(alice, "/agent 2")
      assert.strictEqual((yield* say(alice, "/whoami")).chat.agentId, "a2")
      yield* say(alice, "/agent a1")
      assert.strictEqual((yield* say(alice, "/whoami")).chat.agentId, "a1")
      yield* say(alice, "/agent a2")
      assert.strictEqual((yield* say(alice, "/whoami")).chat.agentId, "a2")
      assert.include((yield* say(alice, "/frobnicate")).text, "Unknown command /frobnicate")
    }).pipe(Effect.provide(stack())))

  it.effect("compacts in the loop when the context outgrows the agent's budget, and stays lossless", () =>
    Effect.gen(function*() {
      yield* setup({ contextTokens: 12_000 })
      fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Noted. ".repeat(40) }] }))
      let notices = 0
      let key = ""
      for (let i = 0; i < 60; i++) {
        const r = yield* say(alice, `Fact number ${i}: the cabin code is ${1000 + i}. ${"Some more words to take space. ".repeat(20)}`)
        key = r.chat.sessionKey
        notices += r.events.filter((e) => e.type === "notice" && e.text.startsWith("compacted")).length
      }
      assert.isAtLeast(notices, 1)
      const store = yield* MemoryStore
      const c = yield* store.getConversation(key)
      assert.deepStrictEqual(verifySession(yield* store.verifyInput(c.id, key)), [])
      assert.strictEqual((yield* store.stats(c.id)).messages, 120)
    }).pipe(Effect.provide(stack())))

  it.effect("shows failures as notices and keeps the user's message, marked as not answered: no model, provider errors", () =>
    Effect.gen(function*() {
      yield* setup()
      fake.script({ kind: "error", status: 401, message: "bad key" })
      const r = yield* say(alice, "are you there?")
      const notice = r.events.find((e) => e.type === "notice")
      assert.include(notice?.type === "notice" ? notice.text : "", "refused the API key")
      const last = r.events[r.events.length - 1]
      assert.strictEqual(last?.type === "done" ? last.stopReason : "", "unavailable")
      // The message is kept, marked as not answered, so the next turn's history alternates and says why.
      const history = yield* (yield* MemoryProvider).assemble(r.chat.sessionKey, { budget: 100_000 })
      assert.deepStrictEqual(history.messages.map((m) => m.role), ["user", "assistant"])
      assert.match(JSON.stringify(history.messages[1]?.content), /^"\[not answered: .*refused the API key/)
      fake.script({ kind: "reply", parts: [{ type: "text", text: "yes" }] })
      yield* say(alice, "and now?")
      const sent = (fake.requests[fake.requests.length - 1]?.body as { messages?: Array<{ role: string }> } | undefined)?.messages ?? []
      assert.deepStrictEqual(sent.map((m) => m.role), ["system", "user", "assistant", "user"])
      yield* (yield* AgentStore).create("nomodel", {})
      const none = yield* say({ ...alice, agentId: "nomodel" }, "hello?")
      assert.include(none.events.find((e) => e.type === "notice")?.type === "notice" ? JSON.stringify(none.events) : "", "has no usable model")
    }).pipe(Effect.provide(stack())))

  it.effect("fails resolve clearly when no agent exists", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip((yield* RuntimeService).resolve(alice))
      assert.strictEqual(e._tag, "NoAgent")
      assert.include(e.message, "anna onboard --from-env")
    }).pipe(Effect.provide(stack())))

  it.live("/abort interrupts a running turn; the stream ends with done(aborted)", () =>
    Effect.gen(function*() {
      yield* setup()
      fake.script({ kind: "hang" })
      const runtime = yield* RuntimeService
      const chat = yield* runtime.resolve(alice)
      const before = fake.requests.length
      const fiber = yield* Effect.forkChild(Stream.runCollect(runtime.send(chat, "this will hang")))
      // The turn is running once the model request reached the server (which never answers it).
      const request = yield* Effect.promise(() => fake.request(before))
      assert.strictEqual(request.method, "POST")
      assert.isFalse(request.aborted, "the model request is still open before /abort")
      const aborted = yield* Stream.runCollect(runtime.send(chat, "/abort"))
      assert.include(aborted.map((e) => (e.type === "text" ? e.text : "")).join(""), "Stopped the running turn")
      const events = yield* Fiber.join(fiber)
      const last = events[events.length - 1]
      assert.strictEqual(last?.type === "done" ? last.stopReason : "", "aborted")
      // The server sees the connection go away without an answer.
      yield* Effect.promise(() => fake.when(() => request.aborted, { what: "the abort of the model request" }))
      assert.isTrue(request.aborted, "the model request was cancelled")
      assert.strictEqual(fake.requests.length, before + 1, "no other model request was made")
      const history = yield* (yield* MemoryProvider).assemble(chat.sessionKey, { budget: 100_000 })
      assert.deepStrictEqual(history.messages.map((m) => [m.role, m.content]), [
        ["user", "this will hang"],
        ["assistant", "[not answered: the turn was stopped before the model answered]"]
      ])
    }).pipe(Effect.provide(stack())))

  it.effect("stops at max_turns when the model keeps calling tools", () =>
    Effect.gen(function*() {
      yield* setup({ maxTurns: 3 })
      fake.respondWith(() => ({ kind: "reply", parts: [{ type: "tool_call", id: `c${fake.requests.length}`, name: "memory", input: { action: "status" } }] }))
      const r = yield* say(alice, "loop forever")
      const last = r.events[r.events.length - 1]
      assert.deepStrictEqual(last?.type === "done" ? [last.stopReason, last.modelCalls, last.toolCalls] : [], ["max_turns", 3, 3])
      assert.isTrue(r.events.some((e) => e.type === "notice" && e.text.includes("max_turns")))
    }).pipe(Effect.provide(stack())))
})
