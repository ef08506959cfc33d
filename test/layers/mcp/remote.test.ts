/**
 * The `mcp` tool against server-everything on 127.0.0.1 (a real server from npm, on the host):
 * Streamable HTTP and SSE (asked for, or fallen back to when the Streamable POST gets a 4xx); every
 * connection and reconnection is logged as the EX-009 exception path, with the host and never the
 * headers; a server that goes away fails the call clearly and the next call reconnects. No sandbox
 * is ever asked for.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, References, type Scope } from "effect"
import type { McpServer } from "../../../src/domain/mcp/server.ts"
import { DEFAULT_LIMITS, makeSessionClients } from "../../../src/layers/mcp/sessionClients.ts"
import { mcpTool } from "../../../src/layers/tools/mcp.ts"
import { McpServer as SdkServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { everythingHttp, startEverythingHttp } from "../../support/mcpServers.ts"

const SECRET = "Bearer top-secret-token"
const ctx = { sessionKey: "s", userId: "u", agentId: "t" }
const remote = (name: string, url: string, transport: "http" | "sse" = "http"): McpServer => ({
  agentId: "t", name, transport, command: undefined, url, headers: { Authorization: SECRET }, createdAt: 0, updatedAt: 0
})
const noSandbox = Effect.die(new Error("a remote server asked for the sandbox"))

interface Line {
  readonly message: string
  readonly annotations: Readonly<Record<string, unknown>>
}

/** Runs `self` with every log line kept (message and annotations). */
const capturing = <A, E>(lines: Array<Line>, self: Effect.Effect<A, E, Scope.Scope>) =>
  self.pipe(
    Effect.provide(Logger.layer([Logger.make((o) => {
      const message = Array.isArray(o.message) ? o.message.map(String).join(" ") : String(o.message)
      lines.push({ message, annotations: { ...o.fiber.getRef(References.CurrentLogAnnotations) } })
    })])),
    Effect.provideService(References.MinimumLogLevel, "Debug")
  )

const toolFor = (servers: ReadonlyArray<McpServer>) =>
  Effect.gen(function*() {
    const clients = yield* makeSessionClients(servers, noSandbox, DEFAULT_LIMITS)
    const tool = mcpTool(clients, DEFAULT_LIMITS)
    return (input: Record<string, unknown>) => tool.execute(input, ctx)
  })

/**
 * A stateless Streamable HTTP server (the SDK's own) on 127.0.0.1 that wants `Authorization:
 * Bearer top-secret-token` (401 otherwise) and whose `whoami` tool tells which one it got.
 */
const guardedServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly url: string; readonly close: () => void }>((done) => {
      const http = createServer((req, res) => {
        if (req.headers.authorization !== SECRET) {
          res.writeHead(401).end("unauthorized")
          return
        }
        const server = new SdkServer({ name: "guarded", version: "1" })
        server.registerTool("whoami", { description: "Which Authorization header came" }, (extra) => ({
          content: [{ type: "text", text: `you sent ${extra.requestInfo?.headers.authorization === SECRET ? "the right token" : "something else"}` }]
        }))
        const transport = new StreamableHTTPServerTransport({})
        res.on("close", () => void transport.close())
        void server.connect(transport).then(() => transport.handleRequest(req, res))
      })
      http.listen(0, "127.0.0.1", () => done({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, close: () => http.close() }))
    })
  ),
  (s) => Effect.sync(s.close)
)

const exceptionLines = (lines: ReadonlyArray<Line>) => lines.filter((l) => l.message === "runtime.exception_path")

describe("mcp tool: remote servers on 127.0.0.1 (server-everything)", () => {
  it.live("Streamable HTTP: tools work; the connection is logged as EX-009 with the host, never the headers", () => {
    const lines: Array<Line> = []
    return capturing(lines, Effect.gen(function*() {
      const server = yield* everythingHttp()
      const call = yield* toolFor([remote("web", server.url)])
      assert.include(yield* call({ action: "list_tools", server: "web" }), "- echo: Echoes back the input string")
      assert.strictEqual(yield* call({ action: "call", server: "web", tool: "echo", arguments: { message: "over http" } }), "Echo: over http")
      assert.include(yield* call({ action: "call", server: "web", tool: "get-tiny-image" }), "[image: image/png,")
      const logged = exceptionLines(lines)
      assert.strictEqual(logged.length, 1, "one connection, one line")
      assert.deepInclude(logged[0]?.annotations, { exception_id: "EX-009", mcp_server: "web", agent: "t", host: `127.0.0.1:${server.port}`, transport: "http" })
      assert.isFalse(lines.some((l) => JSON.stringify(l).includes("top-secret")), "no header value is ever logged")
    }))
  })

  it.live("a server that goes away fails the call clearly; the next call reconnects (logged again)", () => {
    const lines: Array<Line> = []
    return capturing(lines, Effect.gen(function*() {
      const first = yield* Effect.promise(() => startEverythingHttp())
      const call = yield* toolFor([remote("web", first.url)])
      assert.strictEqual(yield* call({ action: "call", server: "web", tool: "echo", arguments: { message: "1" } }), "Echo: 1")
      yield* Effect.promise(first.stop)
      const lost = yield* Effect.flip(call({ action: "call", server: "web", tool: "echo", arguments: { message: "2" } }))
      assert.match(lost.reason, /^MCP server web: (connection lost during the call of echo .*; the next call reconnects|cannot connect to .*)$/)
      const again = yield* everythingHttp("streamableHttp", first.port)
      assert.strictEqual(again.url, first.url)
      assert.strictEqual(yield* call({ action: "call", server: "web", tool: "echo", arguments: { message: "3" } }), "Echo: 3")
      assert.isAtLeast(exceptionLines(lines).length, 2)
      assert.isTrue(exceptionLines(lines).every((l) => l.annotations.exception_id === "EX-009"))
    }))
  })

  it.live("SSE: asked for with --transport sse, and fallen back to when the Streamable POST gets a 4xx", () => {
    const lines: Array<Line> = []
    return capturing(lines, Effect.gen(function*() {
      const server = yield* everythingHttp("sse")
      const call = yield* toolFor([remote("asked", server.url, "sse"), remote("fallback", server.url, "http")])
      assert.strictEqual(yield* call({ action: "call", server: "asked", tool: "echo", arguments: { message: "sse" } }), "Echo: sse")
      assert.strictEqual(yield* call({ action: "call", server: "fallback", tool: "echo", arguments: { message: "fell back" } }), "Echo: fell back")
      const transports = exceptionLines(lines).map((l) => `${String(l.annotations.mcp_server)}:${String(l.annotations.transport)}`)
      assert.deepStrictEqual(transports, ["asked:sse", "fallback:http", "fallback:sse"])
    }))
  })

  it.live("the stored headers are sent; without them the server's refusal is reported", () =>
    Effect.gen(function*() {
      const server = yield* guardedServer
      const call = yield* toolFor([remote("guarded", server.url), { ...remote("bare", server.url), headers: {} }])
      assert.strictEqual(yield* call({ action: "call", server: "guarded", tool: "whoami" }), "you sent the right token")
      const refused = yield* Effect.flip(call({ action: "list_tools", server: "bare" }))
      assert.include(refused.reason, "MCP server bare: cannot connect to")
      assert.include(refused.reason, "401")
    }))

  it.live("a server that does not answer is reported, not hung on", () =>
    Effect.gen(function*() {
      const call = yield* toolFor([remote("dead", "http://127.0.0.1:9/mcp")])
      const e = yield* Effect.flip(call({ action: "list_tools", server: "dead" }))
      assert.include(e.reason, "MCP server dead: cannot connect to http://127.0.0.1:9/mcp")
      assert.include(yield* call({ action: "list_servers" }), "- dead (http): failed: cannot connect")
    }))
})

