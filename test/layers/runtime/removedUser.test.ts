/**
 * A user removed while a gateway runs (issue 23): the removal is made by `anna user remove` in another
 * process, on the same database, as operators do it. The running runtime must not serve a later user
 * of the same id from what it holds for the old one (its runner and sandbox, the conversation it
 * cached), and it ends the old user's running turns and runners as soon as its watcher sees the change.
 * A local sandbox (no Docker) stands for the Docker one and counts the sandboxes started.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ChatTarget } from "../../../src/domain/runtime/types.ts"
import * as SqliteConfigStore from "../../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { SessionPool } from "../../../src/services/SessionPool.ts"
import { anna } from "../../support/cli.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import * as LocalSandbox from "../../support/localSandbox.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"
import { homeDatabase } from "../../support/db.ts"

const suite = fakeLlmSuite()

const stack = (home: string, configPoll: Duration.Input, started: { count: number }) =>
  Compose.agentRuntime({ runnerIdle: "1 hour", configPoll }).pipe(
    Layer.provide(LocalSandbox.sandboxLayer({}, started)),
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteConfigStore.layerWithStores(home)),
    Layer.provideMerge(homeDatabase(home))
  )

/** alice over the HTTP channel (a token names the user), in chat `main`. */
const alice: ChatTarget = { platform: "http", externalUserId: "alice", userId: "alice", chatId: "main" }

const turn = (text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve(alice)
    return { chat, events: yield* Stream.runCollect(runtime.send(chat, text)) }
  })

/** `anna …` in another process on the same ANNA_HOME; fails the test when it fails. */
const cli = (home: string, ...args: ReadonlyArray<string>) =>
  Effect.promise(() => anna(home, ...args)).pipe(
    Effect.tap((r) => Effect.sync(() => assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stdout}${r.stderr}`)))
  )

const setUp = Effect.gen(function*() {
  yield* (yield* ProviderStore).add(localProvider(suite.fake))
  yield* (yield* AgentStore).create("a1", { providerId: "local", tools: ["bash", "memory"] })
  yield* (yield* ConfigStore).createUser("alice", "Alice")
})

/** The body of the model request `index` of this test (the server's list spans the file's tests). */
const sentText = (base: number, index: number) => JSON.stringify(suite.fake.requests[base + index]?.body ?? {})

describe("a user removed while the runtime runs", () => {
  it.effect("a new user of the same id gets a new runner and a new conversation, not the old one's", () => {
    const home = suite.keep(mkdtempSync(join(tmpdir(), "anna-removed-")))
    const started = { count: 0 }
    return Effect.gen(function*() {
      yield* setUp
      const base = suite.fake.requests.length
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "noted" }] }))
      const first = yield* turn("the marmalade lighthouse recipe is in the attic")
      assert.strictEqual(started.count, 1)
      assert.include(sentText(base, 0), "marmalade")

      // The watcher never polls here (1 hour): only what each turn reads can tell the old alice from the new.
      yield* cli(home, "user", "remove", "alice", "--keep-sessions")
      yield* cli(home, "user", "add", "alice")
      const second = yield* turn("hello, I am new here")
      assert.strictEqual(second.chat.sessionKey, first.chat.sessionKey, "the same chat of the same id")
      assert.notInclude(sentText(base, 1), "marmalade", "the model saw nothing of the old alice's conversation")
      assert.strictEqual(started.count, 2, "the new alice got a sandbox of her own, not the old one's runner")

      const store = yield* MemoryStore
      const now = yield* store.loadConversation(first.chat.sessionKey)
      assert.strictEqual(now.userId, "alice")
      assert.strictEqual(yield* store.messageCount(now.id), 2, "her conversation holds her turn only")
      const kept = (yield* store.listConversations({})).filter((c) => c.userId.startsWith("alice~removed-"))
      assert.deepStrictEqual(kept.map((c) => c.messages), [2], "the old turn stays with the old alice")
    }).pipe(Effect.provide(stack(home, "1 hour", started)))
  }, { timeout: 60_000 })

  it.effect("the watcher stops the removed user's running turn and closes their runner", () => {
    const home = suite.keep(mkdtempSync(join(tmpdir(), "anna-removed-")))
    const started = { count: 0 }
    return Effect.gen(function*() {
      yield* setUp
      const pool = yield* SessionPool
      const runtime = yield* Runtime
      const chat = yield* runtime.resolve(alice)
      const base = suite.fake.requests.length
      suite.fake.script({ kind: "hang" })
      const running = yield* Effect.forkChild(Stream.runCollect(runtime.send(chat, "take your time")))
      yield* Effect.promise(() => suite.fake.request(base))
      assert.deepStrictEqual((yield* pool.live).map((s) => [s.userId, s.running]), [["alice", true]])

      yield* cli(home, "user", "remove", "alice", "--keep-sessions")
      yield* TestClock.adjust("1 second")
      const events = yield* Fiber.join(running)
      assert.deepStrictEqual(events.at(-1), {
        type: "done",
        stopReason: "aborted",
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
        modelCalls: 0,
        toolCalls: 0
      })
      assert.deepStrictEqual(yield* pool.live, [], "the runner (and its sandbox) is gone")
    }).pipe(Effect.provide(stack(home, "1 second", started)))
  }, { timeout: 60_000 })
})
