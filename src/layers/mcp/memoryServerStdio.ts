/**
 * Serves a MemoryServer (./memoryServer.ts) over MCP's stdio transport with the official SDK, until
 * the client closes stdin (or the program is interrupted).
 *
 * The SDK's low-level `Server` is used rather than `McpServer.registerTool`: the latter wants zod
 * schemas, which anna does not depend on, while our tools already have JSON schemas derived from
 * their Effect Schemas (the same ones the model sees).
 *
 * stdout is the protocol: the SDK writes only JSON-RPC lines there, and anna's logs go to stderr (the
 * CLI's `Logger.LogToStderr`, which the tool calls keep: they run with this fiber's services).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import type { MemoryServer } from "./memoryServer.ts"

export interface ServerInfo {
  readonly name: string
  readonly version: string
}

const instructionsFor = (memory: MemoryServer): string =>
  [
    `anna's lossless memory of user ${memory.scope.userId}'s conversations${
      memory.scope.agentId === undefined ? "" : ` with agent ${memory.scope.agentId}`
    } (read-only).`,
    "Older parts of a conversation are compacted into summaries (sum_N): search finds messages and summaries,",
    "describe and expand open a summary down to the messages it was made from."
  ].join(" ")

/** Runs the MCP server on this process's stdin/stdout; completes when stdin ends. */
export const serveStdio = (memory: MemoryServer, info: ServerInfo) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const run = Effect.runPromiseWith(context)
    /** Calls being answered: a client that writes its requests and closes stdin (a pipe) still gets every answer. */
    const inFlight = new Set<Promise<unknown>>()
    const settled = (): Promise<void> =>
      // A turn of the event loop first: the SDK starts a handler, and sends its answer, a little later.
      new Promise<void>((done) => setImmediate(done)).then(() => (inFlight.size === 0 ? undefined : Promise.allSettled([...inFlight]).then(settled)))
    const server = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const s = new Server({ name: info.name, version: info.version }, {
          capabilities: { tools: {} },
          instructions: instructionsFor(memory)
        })
        s.setRequestHandler(ListToolsRequestSchema, () => ({
          tools: memory.tools.map((t) => ({
            name: t.name,
            description: t.description,
            inputSchema: { ...t.inputSchema, required: [...t.inputSchema.required] },
            annotations: { readOnlyHint: true, openWorldHint: false }
          }))
        }))
        s.setRequestHandler(CallToolRequestSchema, (request) => {
          const answer = run(memory.call(request.params.name, request.params.arguments ?? {})).then((r) => ({
            content: [{ type: "text" as const, text: r.text }],
            isError: r.isError
          }))
          inFlight.add(answer)
          return answer.finally(() => inFlight.delete(answer))
        })
        return s
      }),
      (s) => Effect.promise(() => s.close())
    )
    yield* Effect.logDebug(`mcp serve: memory of ${memory.scope.userId} on stdio (${memory.tools.map((t) => t.name).join(", ")})`)
    yield* Effect.callback<void>((resume) => {
      const transport = new StdioServerTransport()
      const done = () => void settled().then(() => resume(Effect.void))
      process.stdin.once("end", done)
      process.stdin.once("close", done)
      transport.onclose = done
      server.connect(transport).catch((e: unknown) => resume(Effect.die(e)))
      return Effect.sync(() => {
        process.stdin.off("end", done)
        process.stdin.off("close", done)
      })
    })
  }).pipe(Effect.scoped)
