/**
 * A model reply over the 8 MiB message limit is stored losslessly (split into several assistant
 * messages within the limit), so what the user saw is exactly what memory keeps and gives back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { MAX_MESSAGE_BYTES } from "../../../src/domain/memory/types.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
import { messageText } from "../../../src/domain/message.ts"
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
import { sqliteTemp } from "../../support/db.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
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

const stack = () => {
  const home = mkdtempSync(join(tmpdir(), "anna-big-"))
  homes.push(home)
  return Compose.agentRuntime({ runnerIdle: "1 second" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )
}

describe("a model reply over 8 MiB", () => {
  it.live("is stored whole: what the user saw equals what memory stores and assembles", () =>
    Effect.gen(function*() {
      yield* (yield* ProviderStore).add({
        id: "local",
        type: "openai",
        baseUrl: fake.openAiUrl,
        apiKey: "sk-x",
        models: [],
        defaultModel: "fake-large",
        headers: {},
        enabled: true
      })
      yield* (yield* AgentStore).create("a1", { providerId: "local", tools: [] })
      // ASCII, accents, CJK, emoji and a quote that JSON escapes: 9+ MiB of UTF-8.
      const unit = "line \"quoted\" héllo 世界 🎉 — "
      const reply = unit.repeat(Math.ceil((9 * 1024 * 1024) / Buffer.byteLength(unit)))
      assert.isAbove(Buffer.byteLength(reply), MAX_MESSAGE_BYTES)
      fake.script({ kind: "reply", parts: [{ type: "text", text: reply }], chunk: 65_536 })

      const runtime = yield* RuntimeService
      const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "alice", userName: "Alice" })
      const events = yield* Stream.runCollect(runtime.send(chat, "write a lot"))
      const shown = events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("")
      assert.deepStrictEqual(events.filter((e) => e.type === "notice"), [])
      assert.strictEqual(shown.length, reply.length)
      assert.isTrue(shown === reply)

      const store = yield* MemoryStore
      const conversation = yield* store.getConversation(chat.sessionKey)
      const messages = yield* store.messagesBySeq(conversation.id, 1, 100)
      assert.strictEqual(messages[0]?.role, "user")
      const assistant = messages.slice(1)
      assert.isAbove(assistant.length, 1)
      for (const m of assistant) assert.strictEqual(m.role, "assistant")
      assert.isTrue(assistant.map((m) => messageText(m.message)).join("") === shown, "stored text = shown text")

      const assembled = yield* (yield* MemoryProvider).assemble(chat.sessionKey, { budget: 100_000_000 })
      assert.isTrue(assembled.messages.slice(1).map(messageText).join("") === shown, "assembled text = shown text")
      assert.deepStrictEqual(verifySession(yield* store.verifyInput(conversation.id, chat.sessionKey)), [])
    }).pipe(Effect.provide(stack())), { timeout: 120_000 })
})
