/**
 * An MCP server advertising 2,000 tools (issue 23, item 8: one put 819 KB into the model's
 * context), through the whole runtime: a real server built with the MCP SDK on 127.0.0.1, real
 * SQLite, the fake LLM. What the model receives for `list_tools`, for a `describe` of a tool that
 * does not exist, and for a `list_tools` narrowed by `query` is each a bounded text that says what
 * was left out and how to find the rest.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServer as SdkServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Effect, Layer, Stream } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { DEFAULT_LIMITS } from "../../../src/layers/mcp/sessionClients.ts"
import * as SqliteMcpServers from "../../../src/layers/mcp/SqliteMcpServers.ts"
import { LIST_TOOLS_MAX } from "../../../src/layers/tools/mcp.ts"
import { McpServers } from "../../../src/services/McpServers.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { configureAgent, runtimeStack, tempHome } from "../../support/runtimeStack.ts"

const TOOLS = 2_000
const name = (i: number) => `tool_${String(i).padStart(4, "0")}`

/** A stateless Streamable HTTP MCP server (the SDK's own) with TOOLS tools, each with a long description. */
const bigServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly url: string; readonly close: () => void }>((done) => {
      const http = createServer((req, res) => {
        const server = new SdkServer({ name: "big", version: "1" })
        for (let i = 1; i <= TOOLS; i++) {
          server.registerTool(name(i), { description: `Does thing number ${i}. ${"A long description of what it does. ".repeat(10)}` }, () => ({
            content: [{ type: "text", text: `ran ${i}` }]
          }))
        }
        const transport = new StreamableHTTPServerTransport({})
        res.on("close", () => void transport.close())
        void server.connect(transport).then(() => transport.handleRequest(req, res))
      })
      http.listen(0, "127.0.0.1", () => done({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, close: () => http.close() }))
    })
  ),
  (s) => Effect.sync(s.close)
)

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

interface Body {
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
}
const messagesOf = (r: RecordedRequest | undefined) => ((r?.body ?? {}) as Body).messages ?? []
const toolResults = (r: RecordedRequest | undefined) =>
  messagesOf(r).filter((m) => m.role === "tool").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))

/** The model's calls, one per round, then a final answer. */
const CALLS: ReadonlyArray<Record<string, unknown>> = [
  { action: "list_tools", server: "big" },
  { action: "describe", server: "big", tool: "no_such_tool" },
  { action: "list_tools", server: "big", query: "thing number 1999." }
]

describe("mcp tool: a server with 2,000 tools", () => {
  it.live("list_tools, describe's 'no tool' error and a narrowed list reach the model bounded", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      const server = yield* bigServer
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["mcp"] })
        yield* (yield* McpServers).add("a1", "big", { transport: "http", url: server.url, headers: {} })
        let round = 0
        fake.respondWith(() => {
          const done = round++
          const input = CALLS[done]
          return input === undefined
            ? { kind: "reply", parts: [{ type: "text", text: "done" }] }
            : { kind: "reply", parts: [{ type: "tool_call", id: `call_${done}`, name: "mcp", input }] }
        })
        const runtime = yield* Runtime
        const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "erin" })
        yield* Stream.runDrain(runtime.send(chat, "what can the big server do?"))
        assert.strictEqual(fake.requests.length, CALLS.length + 1)
        // The result of each call is the newest tool message of the model call after it.
        const [list, missing, narrowed] = CALLS.map((_, i) => toolResults(fake.requests[i + 1]).at(-1))
        assert.isDefined(list)
        assert.isDefined(missing)
        assert.isDefined(narrowed)
        if (list === undefined || missing === undefined || narrowed === undefined) return

        // The list: the first LIST_TOOLS_MAX by name, then how many more and how to search.
        assert.isAtMost(list.length, DEFAULT_LIMITS.maxResultChars)
        assert.include(list, `- ${name(1)}: `)
        assert.include(list, `- ${name(LIST_TOOLS_MAX)}: `)
        assert.notInclude(list, `- ${name(LIST_TOOLS_MAX + 1)}: `)
        assert.include(list, `and ${(TOOLS - LIST_TOOLS_MAX).toLocaleString("en-US")} more`)
        assert.include(list, "query")

        // A tool that does not exist: the error names a few, not all 2,000.
        assert.isAtMost(missing.length, 4_000)
        assert.include(missing, `has no tool "no_such_tool"`)
        assert.include(missing, `${TOOLS.toLocaleString("en-US")} tools`)

        // Narrowed by query (name or description): only the match.
        assert.include(narrowed, `- ${name(1999)}: `)
        assert.notInclude(narrowed, `- ${name(1998)}: `)
        assert.notInclude(narrowed, "more")
      }).pipe(Effect.provide(Layer.provideMerge(SqliteMcpServers.layer, runtimeStack(home, { sandbox: false }))))
    })))
})
