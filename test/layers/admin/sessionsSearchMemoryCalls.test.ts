/**
 * The admin API's search (GET /api/sessions/search, which the web console's search page calls) leaves
 * the memory tool's own calls and results out, like the memory tool and `anna memory search`
 * (issue 24); `includeMemoryCalls=true` searches them too. Through the typed client against a real
 * server, the runtime on SQLite and LCM memory, the model scripted on the fake LLM server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { Runtime } from "../../../src/services/Runtime.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { account, clientFor, withAdmin } from "./sessionsSetup.ts"

const llm = fakeLlmSuite()

describe("admin API: search and the memory tool's own calls", () => {
  it.live("leaves them out by default, includeMemoryCalls searches them too", () =>
    withAdmin(() => Effect.gen(function*() {
      yield* configureAgent(llm.fake, "a1", { tools: ["memory"] })
      const token = yield* account("alice", "user")
      const runtime = yield* Runtime
      const chat = yield* runtime.resolve({ platform: "telegram", externalUserId: "alice", userId: "alice", chatId: "dm", agentId: "a1" })
      llm.fake.script(
        { kind: "reply", parts: [{ type: "text", text: "Noted: the staging database listens on port 6543." }] },
        { kind: "reply", parts: [{ type: "tool_call", id: "m1", name: "memory", input: { action: "search", query: "staging database port" } }] },
        { kind: "reply", parts: [{ type: "text", text: "It is 6543." }] }
      )
      yield* Stream.runDrain(runtime.send(chat, "Remember where the staging database listens: port 6543."))
      yield* Stream.runDrain(runtime.send(chat, "Which one was it again?"))

      const alice = yield* clientFor(token)
      const { hits } = yield* alice.sessions.search({ query: { q: "staging database port", limit: 20, ownText: true } })
      assert.deepStrictEqual(hits.map((h) => h.seq).sort(), [1, 2], JSON.stringify(hits))
      for (const h of hits) assert.notInclude(h.snippet, "memory")
      // with the turns around them (the default), the follow-up question is found too, never the memory call
      const around = yield* alice.sessions.search({ query: { q: "staging database port", limit: 20 } })
      assert.deepStrictEqual(around.hits.map((h) => h.seq), [1, 2, 3], JSON.stringify(around.hits))
      assert.deepStrictEqual(around.hits[2]?.matched, [])
      const all = yield* alice.sessions.search({ query: { q: "staging database port", limit: 20, includeMemoryCalls: true, ownText: true } })
      assert.deepStrictEqual(all.hits.map((h) => h.seq).sort(), [1, 2, 4, 5], JSON.stringify(all.hits))
    })))
})
