/**
 * The runtime's hooks of the learning loop (issue 15), with a recording Learning (a fake of our own
 * contract, to test the layer above it: the SessionPool and the slash commands) over the real
 * Runtime on SQLite and the OpenAI SDK talking to the fake LLM server: the playbook section is the
 * system prompt's last part; a runner reaped for being idle ends the burst ("idle"), a shutdown does
 * not; /new ends the old session's burst ("new"); /feedback and /reflect reach Learning.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { BurstTrigger, DiaryEntry } from "../../../src/domain/learning/diary.ts"
import type { ChatTarget } from "../../../src/domain/runtime/types.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { Learning, type TurnChat } from "../../../src/services/Learning.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
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

const GUIDELINES = "## Relevant Guidelines\n\nThe following rules are based on past experience with similar tasks:\n\n1. [NASCENT] Say please (confidence: 0.50)"

/** Everything the runtime asked of Learning, in order. */
interface Recorded {
  readonly calls: Array<string>
}

const recording = (log: Recorded) =>
  Layer.succeed(Learning, Learning.of({
    beforeTurn: (chat: TurnChat, message: string) =>
      Effect.sync(() => {
        log.calls.push(`beforeTurn ${chat.sessionKey} ${message}`)
        return GUIDELINES
      }),
    skillUsed: () => Effect.void,
    endBurst: (sessionKey: string, trigger: BurstTrigger) => Effect.sync(() => void log.calls.push(`endBurst ${sessionKey} ${trigger}`)),
    reflect: (sessionKey: string, trigger: BurstTrigger) =>
      Effect.sync(() => {
        log.calls.push(`reflect ${sessionKey} ${trigger}`)
        return Option.none<DiaryEntry>()
      }),
    feedback: (chat: TurnChat, outcome) =>
      Effect.sync(() => {
        log.calls.push(`feedback ${chat.sessionKey} ${outcome}`)
        return { rules: ["r1", "r2", "r3"], forYou: ["r3"], skills: [] }
      }),
    idle: Effect.void
  }))

const stack = (log: Recorded) => {
  const home = mkdtempSync(join(tmpdir(), "anna-learning-hooks-"))
  homes.push(home)
  const memory = LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))
  return Compose.agentRuntime({ runnerIdle: "1 minute" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(memory),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp),
    Layer.provideMerge(recording(log))
  )
}

const alice: ChatTarget = { platform: "cli", externalUserId: "alice", userName: "Alice" }

const say = (text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve(alice)
    const events = yield* Stream.runCollect(runtime.send(chat, text))
    return { chat, text: events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("") }
  })

const setup = Effect.gen(function*() {
  yield* (yield* ProviderStore).add(localProvider(fake))
  yield* (yield* AgentStore).create("a1", { providerId: "local", tools: [] })
})

const systemOf = (i: number) =>
  String(((fake.requests[i]?.body ?? {}) as { messages?: Array<{ role: string; content: unknown }> }).messages?.find((m) => m.role === "system")?.content)

describe("the runtime's learning hooks", () => {
  it.effect("the playbook section closes the system prompt; an idle runner ends the burst, /new ends it too", () => {
    const log: Recorded = { calls: [] }
    return Effect.gen(function*() {
      yield* setup
      fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
      const { chat } = yield* say("please deploy")
      assert.isTrue(systemOf(0).endsWith(GUIDELINES), systemOf(0))
      assert.deepStrictEqual(log.calls, [`beforeTurn ${chat.sessionKey} please deploy`])

      // The runner is reaped after its idle minute: the burst ended.
      yield* TestClock.adjust("61 seconds")
      yield* Effect.yieldNow
      assert.deepStrictEqual(log.calls.slice(1), [`endBurst ${chat.sessionKey} idle`])

      const fresh = yield* say("/new")
      assert.include(fresh.text, "Started a new conversation")
      assert.deepStrictEqual(log.calls.slice(2), [`endBurst ${chat.sessionKey} new`])
    }).pipe(Effect.provide(stack(log)))
  })

  it.effect("/feedback good|bad and /reflect reach Learning; a bad /feedback word is explained", () => {
    const log: Recorded = { calls: [] }
    return Effect.gen(function*() {
      yield* setup
      const before = fake.requests.length
      const good = yield* say("/feedback good")
      assert.strictEqual(good.text, "Thanks. Strengthened: 2 guidelines and 1 guideline for you (shared with other users: it changes for them once several agree).")
      const bad = yield* say("/feedback bad")
      assert.strictEqual(bad.text, "Thanks. Weakened: 2 guidelines and 1 guideline for you (shared with other users: it changes for them once several agree).")
      assert.strictEqual((yield* say("/feedback maybe")).text, "Say /feedback good or /feedback bad.")
      assert.strictEqual((yield* say("/reflect")).text, "Nothing new to reflect on since the last diary entry.")
      const key = good.chat.sessionKey
      assert.deepStrictEqual(log.calls, [`feedback ${key} success`, `feedback ${key} failure`, `reflect ${key} demand`])
      assert.strictEqual(fake.requests.length, before, "commands never reach the model")
    }).pipe(Effect.provide(stack(log)))
  })

  it.effect("a runner closed by a shutdown does not end its burst", () => {
    const log: Recorded = { calls: [] }
    return Effect.gen(function*() {
      yield* Effect.gen(function*() {
        yield* setup
        fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
        yield* say("hello")
      }).pipe(Effect.provide(stack(log)))
      assert.deepStrictEqual(log.calls.map((c) => c.split(" ")[0]), ["beforeTurn"])
    })
  })
})
