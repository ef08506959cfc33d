/**
 * Connecting anna's MCP client (the official SDK's `Client`) to one server:
 * - stdio: the command runs INSIDE the agent's sandbox (sandboxTransport.ts), never on the host;
 * - http: Streamable HTTP, falling back to the older SSE transport when the server answers the
 *   Streamable POST with a 4xx (a server that only speaks SSE); sse: SSE only.
 *
 * Remote servers are the one explicit exception to the sandbox boundary (the gateway itself opens
 * the connection): every connection and reconnection is logged as `runtime.exception_path` with
 * `exception_id=EX-009`, the server, the agent and the URL's host — never the headers (secrets) —
 * at the audit level (info in the gateway, debug in a CLI command: AuditLogLevel).
 *
 * The connection lives in the scope it is made in: closing it kills the stdio process or closes
 * the HTTP session.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Duration, Effect, Option, type Scope } from "effect"
import { McpFailure } from "../../domain/mcp/errors.ts"
import type { McpServer } from "../../domain/mcp/server.ts"
import type { SandboxStartError } from "../../domain/sandbox/errors.ts"
import { AuditLogLevel } from "../../services/AuditLogLevel.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import { startSandboxTransport } from "./sandboxTransport.ts"

export const CLIENT_INFO = { name: "anna", version: "0.1.0" } as const

export interface McpConnection {
  readonly server: McpServer
  readonly client: Client
  /** The transport actually used (`http` may have fallen back to `sse`). */
  readonly transport: "stdio" | "http" | "sse"
  /** Whether the connection still stands (the process runs, the session is open). */
  readonly alive: () => boolean
  /** Why it ended, once it has: "exited (code N)" and the end of its stderr for a stdio server. */
  readonly ended: Effect.Effect<Option.Option<string>>
}

export const errorText = (e: unknown): string => {
  if (e instanceof Error) {
    const cause: unknown = (e as { cause?: unknown }).cause
    const more = cause instanceof Error && !e.message.includes(cause.message) ? `: ${cause.message}` : ""
    return `${e.message}${more}`.split("\n")[0] ?? e.message
  }
  return String(e)
}

/** What a dead process last said worth reading: its last error line (Node prints a stack after it), else its last line. */
const lastWords = (stderr: string): string => {
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l.length > 1 && !l.startsWith("at ") && !/^Node\.js v/.test(l))
  const error = lines.findLast((l) => /\b[A-Z]\w*Error\b|^error\b/i.test(l))
  return (error ?? lines.at(-1) ?? "").slice(0, 300)
}

const fail = (server: McpServer, reason: string) => new McpFailure({ server: server.name, reason })

/** `client.connect` (the MCP initialize handshake) with a deadline; the transport is closed on failure. */
const handshake = (transport: Transport, timeout: Duration.Duration) =>
  Effect.gen(function*() {
    const client = new Client(CLIENT_INFO, { capabilities: {} })
    yield* Effect.tryPromise({
      try: (signal) => client.connect(transport, { signal, timeout: Duration.toMillis(timeout) + 1_000 }),
      catch: (e) => e
    }).pipe(
      Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(new Error(`no answer within ${Duration.format(timeout)}`)) }),
      Effect.tapError(() => Effect.promise(() => transport.close().catch(() => undefined)))
    )
    return client
  })

const remoteHeaders = (server: McpServer) => ({ requestInit: { headers: { ...server.headers } } })

/**
 * EX-009: the gateway (not the sandbox) opens a connection to a remote MCP server. Logged at the
 * audit level: info in the gateway, debug in a CLI command (see AuditLogLevel).
 */
const logException = (server: McpServer, url: URL, transport: string) =>
  Effect.flatMap(AuditLogLevel, (level) =>
    Effect.logWithLevel(level)("runtime.exception_path").pipe(
      Effect.annotateLogs({ exception_id: "EX-009", mcp_server: server.name, agent: server.agentId, host: url.host, transport })
    ))

const connectRemote = (server: McpServer, url: string, timeout: Duration.Duration) =>
  Effect.gen(function*() {
    const target = new URL(url)
    const sse = () =>
      logException(server, target, "sse").pipe(
        Effect.andThen(handshake(new SSEClientTransport(target, remoteHeaders(server)), timeout)),
        Effect.map((client) => ({ client, transport: "sse" as const }))
      )
    if (server.transport === "sse") return yield* sse()
    yield* logException(server, target, "http")
    return yield* handshake(new StreamableHTTPClientTransport(target, remoteHeaders(server)), timeout).pipe(
      Effect.map((client) => ({ client, transport: "http" as const })),
      Effect.catchIf(
        (e) => e instanceof StreamableHTTPError && e.code !== undefined && e.code >= 400 && e.code < 500,
        (streamable) => sse().pipe(Effect.mapError((e) => new Error(`${errorText(streamable)}; over SSE: ${errorText(e)}`)))
      )
    )
  }).pipe(Effect.mapError((e) => fail(server, `cannot connect to ${url}: ${errorText(e)}`)))

/**
 * Connects to `server`; `sandbox` is asked only for a stdio server (and starts the session's
 * container when none runs yet).
 */
export const connect = (
  server: McpServer,
  sandbox: Effect.Effect<SandboxSession, SandboxStartError>,
  timeout: Duration.Duration
): Effect.Effect<McpConnection, McpFailure, Scope.Scope> =>
  Effect.gen(function*() {
    let alive = true
    if (server.transport !== "stdio") {
      const { client, transport } = yield* connectRemote(server, server.url ?? "", timeout)
      client.onclose = () => (alive = false)
      yield* Effect.addFinalizer(() => Effect.promise(() => client.close().catch(() => undefined)))
      return { server, client, transport, alive: () => alive, ended: Effect.sync(() => (alive ? Option.none() : Option.some("closed the connection"))) }
    }
    const command = server.command ?? []
    const session = yield* sandbox.pipe(Effect.mapError((e) => fail(server, `the sandbox cannot start: ${e.message}`)))
    const transport = yield* startSandboxTransport(session, command).pipe(
      Effect.mapError((e) => fail(server, `cannot start \`${command.join(" ")}\` in the sandbox: ${e.message}`))
    )
    const describeEnd = Effect.sync(() =>
      Option.map(Option.fromUndefinedOr(transport.exitCode()), (c) => {
        const tail = lastWords(transport.stderrTail())
        return `exited (code ${c})${tail === "" ? "" : `: ${tail}`}`
      }))
    const client = yield* handshake(transport, timeout).pipe(
      Effect.catch((e) =>
        Effect.flatMap(describeEnd, (end) => Effect.fail(fail(server, Option.getOrElse(end, () => `no MCP handshake: ${errorText(e)}`))))
      )
    )
    client.onclose = () => (alive = false)
    yield* Effect.addFinalizer(() => Effect.promise(() => client.close().catch(() => undefined)))
    return { server, client, transport: "stdio" as const, alive: () => alive, ended: describeEnd }
  })
