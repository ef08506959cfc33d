/**
 * End to end through the fake LLM server: a 300-turn conversation with repeated compaction where a
 * fact from turn 1 is found again through the memory tool; 50 users at once over the HTTP channel
 * with nothing lost, duplicated or shown to the wrong user.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { verifySession } from "../../src/domain/memory/verify.ts"
import type { TurnEvent } from "../../src/domain/runtime/types.ts"
import { messageText } from "../../src/domain/message.ts"
import { ConfigStore } from "../../src/services/ConfigStore.ts"
import { HttpAddress } from "../../src/services/HttpAddress.ts"
import { MemoryStore } from "../../src/services/MemoryStore.ts"
import { Runtime } from "../../src/services/Runtime.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { configureAgent, httpStack, runtimeStack, tempHome } from "../support/runtimeStack.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

type ChatMessage = { readonly role: string; readonly content?: unknown }
const messagesOf = (r: RecordedRequest): ReadonlyArray<ChatMessage> => (r.body as { messages?: Array<ChatMessage> }).messages ?? []
const textOf = (m: ChatMessage | undefined): string => (typeof m?.content === "string" ? m.content : JSON.stringify(m?.content ?? ""))

describe("e2e: long conversation", () => {
  it.live("300 turns, several compactions, and the fact from turn 1 is found through the memory tool", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["memory"], contextTokens: 6_000 })
        // The model: asked about the locker, it searches memory; given the search result, it answers.
        fake.respondWith((req) => {
          const messages = messagesOf(req)
          const last = messages[messages.length - 1]
          if (last?.role === "tool") {
            const code = /code\W* is (\d{4})/.exec(textOf(last))?.[1] ?? "unknown"
            return { kind: "reply", parts: [{ type: "text", text: `Your locker code is ${code}.` }] }
          }
          if (textOf(last).includes("What is my locker code")) {
            return { kind: "reply", parts: [{ type: "tool_call", id: `call_${req.path.length}_${messages.length}`, name: "memory", input: { action: "search", query: "locker code" } }] }
          }
          return { kind: "reply", parts: [{ type: "text", text: `Noted (${messages.length} messages in context). ${"Acknowledged. ".repeat(10)}` }] }
        })
        const runtime = yield* Runtime
        const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "dana", userName: "Dana" })
        let compactions = 0
        const turn = (text: string) =>
          Stream.runCollect(runtime.send(chat, text)).pipe(
            Effect.tap((events) => Effect.sync(() => (compactions += events.filter((e) => e.type === "notice" && e.text.startsWith("compacted")).length)))
          )
        yield* turn("Please remember: my locker code is 4821.")
        for (let i = 2; i < 300; i++) yield* turn(`Turn ${i}: here is more about the garden project, with details about soil, seeds and watering schedules.`)
        const last = yield* turn("What is my locker code?")
        assert.isAtLeast(compactions, 2, "compaction ran several times")
        const answer = last.filter((e): e is Extract<TurnEvent, { type: "text" }> => e.type === "text").map((e) => e.text).join("")
        assert.strictEqual(answer, "Your locker code is 4821.")
        const searched = last.find((e): e is Extract<TurnEvent, { type: "tool_end" }> => e.type === "tool_end")
        assert.include(searched?.output ?? "", "4821")
        // The context window really lost the raw first message: it was compacted away.
        const beforeAnswer = fake.requests[fake.requests.length - 2]
        assert.notInclude(JSON.stringify(beforeAnswer?.body ?? ""), "Please remember: my locker code is 4821.")
        const store = yield* MemoryStore
        const c = yield* store.getConversation(chat.sessionKey)
        assert.deepStrictEqual(verifySession(yield* store.verifyInput(c.id, chat.sessionKey)), [])
      }).pipe(Effect.provide(runtimeStack(home)))
    })), 300_000)
})

describe("e2e: many users over HTTP", () => {
  it.live("50 users at once: every reply goes to its own user, nothing lost or duplicated", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: [] })
        // Echo the newest user message, so a reply proves which message it answers.
        fake.respondWith((req) => {
          const users = messagesOf(req).filter((m) => m.role === "user")
          return { kind: "reply", parts: [{ type: "text", text: `echo: ${textOf(users[users.length - 1])}` }], chunk: 3 }
        })
        const config = yield* ConfigStore
        const address = yield* HttpAddress
        const users = yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => `user${i}`), (id) =>
          config.createUser(id, id).pipe(Effect.andThen(config.issueToken(id, "e2e")), Effect.map((token) => ({ id, token }))))
        const results = yield* Effect.forEach(users, (u) =>
          Effect.promise(async () => {
            const client = new OpenAI({ baseURL: `${address.url}/v1`, apiKey: u.token, maxRetries: 0 })
            const replies: Array<string> = []
            for (let n = 0; n < 3; n++) {
              const content = `message ${n} from ${u.id}`
              if (n === 1) {
                const stream = await client.chat.completions.create({ model: "a1", stream: true, messages: [{ role: "user", content }] })
                let text = ""
                for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ""
                replies.push(text)
              } else {
                const r = await client.chat.completions.create({ model: "a1", messages: [{ role: "user", content }] })
                replies.push(r.choices[0]?.message.content ?? "")
              }
            }
            return { id: u.id, replies }
          }), { concurrency: 50 })
        for (const r of results) {
          assert.deepStrictEqual(r.replies, [0, 1, 2].map((n) => `echo: message ${n} from ${r.id}`))
        }
        // Each session holds exactly its own six messages, in order.
        const store = yield* MemoryStore
        const sessions = yield* store.listConversations({})
        assert.strictEqual(sessions.length, 50)
        for (const s of sessions) {
          const history = yield* store.messagesBySeq(s.id, 1, 100)
          const owner = results.find((r) => s.sessionKey.includes(`:${r.id}:`))
          assert.isDefined(owner, s.sessionKey)
          assert.deepStrictEqual(
            history.map((m) => messageText(m.message)),
            [0, 1, 2].flatMap((n) => [`message ${n} from ${owner?.id}`, `echo: message ${n} from ${owner?.id}`])
          )
        }
      }).pipe(Effect.provide(httpStack(home)))
    })), 120_000)
})
