/**
 * The memory tool does not find its own searches (issue 24): a model that has searched its memory for
 * the same words several times before gets, at its next search, the message that answers the
 * question first — not its earlier `[tool call memory] {"action":"search",…}` messages and their
 * results, which hold every word of the query. `include_memory_calls: true` searches them too.
 * Through the runtime, a scripted model on the fake LLM server, and a real database.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { TurnEvent } from "../../src/domain/runtime/types.ts"
import { MemoryStore } from "../../src/services/MemoryStore.ts"
import { Runtime } from "../../src/services/Runtime.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { configureAgent, runtimeStack, tempHome } from "../support/runtimeStack.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

type ChatMessage = { readonly role: string; readonly content?: unknown }
const messagesOf = (r: RecordedRequest): ReadonlyArray<ChatMessage> => (r.body as { messages?: Array<ChatMessage> }).messages ?? []
const textOf = (m: ChatMessage | undefined): string => (typeof m?.content === "string" ? m.content : JSON.stringify(m?.content ?? ""))

const QUERY = "staging deploy key rotation"

/** What the model searched for in the last turn, and the tool's answer. */
const searchesOf = (events: ReadonlyArray<TurnEvent>) =>
  events.flatMap((e) => (e.type === "tool_end" && e.name === "memory" ? [e.output] : []))

describe("memory tool: its own earlier calls", () => {
  it.live("after several searches for the same words, the next one finds the answer first, not the earlier searches", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["memory"] })
        // Asked about the Friday chore, the model searches its memory (with its own words, not the
        // user's); shown its earlier lookups, it searches with include_memory_calls.
        fake.respondWith((req) => {
          const messages = messagesOf(req)
          const last = messages[messages.length - 1]
          if (last?.role === "tool") return { kind: "reply", parts: [{ type: "text", text: "Found it." }] }
          const asked = textOf(last)
          const id = `call_${messages.length}`
          if (asked.includes("Friday chore")) {
            return { kind: "reply", parts: [{ type: "tool_call", id, name: "memory", input: { action: "search", query: QUERY } }] }
          }
          if (asked.includes("earlier lookups")) {
            return {
              kind: "reply",
              parts: [{ type: "tool_call", id, name: "memory", input: { action: "search", query: QUERY, include_memory_calls: true } }]
            }
          }
          return { kind: "reply", parts: [{ type: "text", text: "Noted." }] }
        })
        const runtime = yield* Runtime
        const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "dana", userName: "Dana" })
        const turn = (text: string) => Stream.runCollect(runtime.send(chat, text))
        yield* turn("Please remember: the staging deploy key rotation happens every Friday, Priya does it.")
        yield* turn("Let's talk about the garden: tomatoes need water.")
        const searches: Array<ReadonlyArray<string>> = []
        for (let i = 0; i < 4; i++) searches.push(searchesOf(yield* turn(`Remind me of that Friday chore (${i + 1}).`)))

        const store = yield* MemoryStore
        const c = yield* store.getConversation(chat.sessionKey)
        const [fact] = yield* store.messagesBySeq(c.id, 1, 1)
        const factId = `msg_${fact?.id ?? 0}`
        for (const [i, outputs] of searches.entries()) {
          assert.strictEqual(outputs.length, 1, `turn ${i + 1}: one search`)
          const lines = (outputs[0] ?? "").split("\n")
          assert.isTrue(lines[0]?.startsWith(`${factId} [message,`), `search ${i + 1}: the first hit is the fact, got\n${outputs[0]}`)
          assert.notInclude(outputs[0] ?? "", "[tool call memory]", `search ${i + 1} found an earlier search`)
          assert.notInclude(outputs[0] ?? "", "[tool result]", `search ${i + 1} found an earlier search's result`)
        }

        // Asked for, the earlier calls and results are found as well.
        const included = searchesOf(yield* turn("Show me your earlier lookups."))
        assert.strictEqual(included.length, 1)
        assert.include(included[0] ?? "", "[tool call memory]")
        assert.include(included[0] ?? "", factId)
      }).pipe(Effect.provide(runtimeStack(home)))
    })), 120_000)
})
