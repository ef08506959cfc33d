/**
 * The MCP memory tools in-process (the stdio server and the CLI are tested in
 * test/programs/mcpServe.test.ts): with an agent, a search still finds that agent's hits when other
 * agents' sessions fill a whole user-wide answer; the tools follow the memory capabilities present
 * (memory/simple: status only); an unknown tool is an error result.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { NewMessage } from "../../../src/domain/message.ts"
import * as MemoryServer from "../../../src/layers/mcp/memoryServer.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { lcmTemp, simpleTemp } from "../../support/db.ts"
import { T0 } from "../../support/memory.ts"

const messages = (texts: ReadonlyArray<string>): Array<NewMessage> =>
  texts.map((content, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content, createdAt: T0 + i * 60_000 }))

describe("MCP memory tools", () => {
  it.effect("with an agent, finds its hits even when other agents' hits fill the user-wide answer", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      // 150 strong matches with agent a2, two weak ones with a1, strong ones for bob
      yield* memory.append(sessionRefFromKey("a2:cli:alice:dm"), messages(Array.from({ length: 150 }, (_, i) => `zebracorn zebracorn ${i}`)))
      const weak = "a long message that mentions the zebracorn once among very many other words about gardens, lunch, weather and trains"
      yield* memory.append(sessionRefFromKey("a1:cli:alice:dm"), messages([`${weak} first`, `${weak} second`]))
      yield* memory.append(sessionRefFromKey("a1:cli:bob:dm"), messages(Array.from({ length: 20 }, () => "zebracorn zebracorn bob")))
      // the premise: a user-wide search's first 100 hits are all a2's
      const wide = yield* (yield* Searcher).search("zebracorn", { scope: { _tag: "User", userId: "alice" }, limit: 100 })
      assert.strictEqual(wide.length, 100)
      assert.isTrue(wide.every((h) => h.sessionKey === "a2:cli:alice:dm"))

      const server = yield* MemoryServer.make({ userId: "alice", agentId: "a1" })
      const r = yield* server.call("search", { query: "zebracorn", limit: 5 })
      assert.isFalse(r.isError, r.text)
      const lines = r.text.split("\n")
      assert.strictEqual(lines.length, 2, r.text)
      assert.isTrue(lines.every((l) => l.includes("mentions the «zebracorn» once")), r.text)

      const everyAgent = yield* MemoryServer.make({ userId: "alice" })
      const all = yield* everyAgent.call("search", { query: "zebracorn", limit: 50 })
      assert.strictEqual(all.text.split("\n").length, 50)
      assert.notInclude(all.text, "bob")

      const status = yield* server.call("status", {})
      assert.strictEqual(status.text.split("\n")[0], "user alice with agent a1: 1 sessions, 2 messages, 0 summaries.")
      const unknown = yield* server.call("profile_update", { content: "x" })
      assert.deepStrictEqual(unknown, { isError: true, text: "unknown tool \"profile_update\"; available: status, search, describe, expand" })
    }).pipe(Effect.provide(lcmTemp)), 60_000)

  it.effect("search leaves the memory tool's own calls and results out unless include_memory_calls is true", () =>
    Effect.gen(function*() {
      yield* (yield* MemoryProvider).append(sessionRefFromKey("a1:cli:alice:dm"), [
        { role: "user", content: "The zebracorn lives in the north barn.", createdAt: T0 },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "m1", name: "memory", input: { action: "search", query: "zebracorn barn" } }],
          createdAt: T0 + 1
        },
        { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "m1", content: "msg_1 The «zebracorn» lives in the north «barn»." }], createdAt: T0 + 2 },
        { role: "assistant", content: "In the north barn.", createdAt: T0 + 3 }
      ])
      const server = yield* MemoryServer.make({ userId: "alice" })
      const search = server.tools.find((t) => t.name === "search")
      assert.include(Object.keys(search?.inputSchema.properties ?? {}), "include_memory_calls")
      const r = yield* server.call("search", { query: "zebracorn barn" })
      assert.deepStrictEqual(r.text.split("\n").map((l) => l.split(" ")[0]), ["msg_1", "msg_4"], r.text)
      const all = yield* server.call("search", { query: "zebracorn barn", include_memory_calls: true })
      assert.include(all.text, "[tool call memory]")
      assert.strictEqual(all.text.split("\n").length, 4, all.text)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("with memory/simple, offers status only", () =>
    Effect.gen(function*() {
      yield* (yield* MemoryProvider).append(sessionRefFromKey("a1:cli:alice:dm"), messages(["hello", "hi"]))
      const server = yield* MemoryServer.make({ userId: "alice" })
      assert.deepStrictEqual(server.tools.map((t) => t.name), ["status"])
      assert.deepStrictEqual(server.tools[0]?.inputSchema.properties, {})
      const status = yield* server.call("status", {})
      assert.include(status.text, "user alice: 1 sessions, 2 messages")
      assert.isTrue((yield* server.call("search", { query: "hello" })).isError)
    }).pipe(Effect.provide(simpleTemp)))
})
