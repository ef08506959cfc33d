/**
 * One session's MCP clients: a server is connected on first use (a stdio one started in the
 * session's sandbox), then reused; each connection lives in a scope of its own under the runner's,
 * so it ends with the runner — or earlier, when it breaks. A call that outlives its deadline fails
 * (the SDK sends the server a cancellation); a server that dies or drops the connection mid-call
 * fails the call with what happened ("exited (code N) during the call"), and the next call
 * reconnects (restarts the process).
 */
import { McpError } from "@modelcontextprotocol/sdk/types.js"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Duration, Effect, Exit, Option, Schema, Scope, Semaphore } from "effect"
import { McpFailure } from "../../domain/mcp/errors.ts"
import type { McpServer } from "../../domain/mcp/server.ts"
import type { SandboxStartError } from "../../domain/sandbox/errors.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import { connect, errorText, type McpConnection } from "./connect.ts"

export interface McpLimits {
  /** Starting and initialising a server. */
  readonly connectTimeout: Duration.Duration
  /** One request (a tool call, a listing). */
  readonly callTimeout: Duration.Duration
  /** Text of one tool result given to the model; the rest is cut, and the model told. */
  readonly maxResultChars: number
}

export const DEFAULT_LIMITS: McpLimits = {
  connectTimeout: Duration.seconds(30),
  callTimeout: Duration.seconds(60),
  maxResultChars: 64 * 1024
}

/**
 * The limits an agent's `mcp` plugin configuration may change (`anna plugin config mcp
 * callTimeoutSeconds=120 [--agent A]`); what it leaves out keeps the default.
 */
const LimitsConfig = Schema.Struct({
  connectTimeoutSeconds: Schema.optionalKey(Schema.Number.check(Schema.isBetween({ minimum: 1, maximum: 600 }))),
  callTimeoutSeconds: Schema.optionalKey(Schema.Number.check(Schema.isBetween({ minimum: 1, maximum: 3600 }))),
  maxResultChars: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1_000, maximum: 1_000_000 })))
})
const decodeLimits = Schema.decodeUnknownEffect(LimitsConfig)

/** `base` with the plugin configuration's limits over it; a bad value is reported and ignored. */
export const limitsFrom = (base: McpLimits, config: Readonly<Record<string, unknown>>): Effect.Effect<McpLimits> =>
  decodeLimits(config, { onExcessProperty: "ignore" }).pipe(
    Effect.map((c) => ({
      connectTimeout: c.connectTimeoutSeconds === undefined ? base.connectTimeout : Duration.seconds(c.connectTimeoutSeconds),
      callTimeout: c.callTimeoutSeconds === undefined ? base.callTimeout : Duration.seconds(c.callTimeoutSeconds),
      maxResultChars: c.maxResultChars ?? base.maxResultChars
    })),
    Effect.catch((e) =>
      Effect.as(Effect.logWarning("the mcp plugin's limits are not usable; the defaults apply").pipe(Effect.annotateLogs({ error: e.message })), base)
    )
  )

/** JSON-RPC "connection closed": the transport ended, not the server's answer. */
const CONNECTION_CLOSED = -32000

export type ServerState = "not started" | "connected" | { readonly failed: string }

export interface SessionClients {
  readonly servers: ReadonlyArray<McpServer>
  readonly state: (name: string) => Effect.Effect<ServerState>
  /** Runs one request against a server (connecting first when needed), within the call deadline. */
  readonly run: <A>(name: string, what: string, f: (client: Client, signal: AbortSignal) => Promise<A>) => Effect.Effect<A, McpFailure>
}

export const makeSessionClients = (
  servers: ReadonlyArray<McpServer>,
  sandbox: Effect.Effect<SandboxSession, SandboxStartError>,
  limits: McpLimits
): Effect.Effect<SessionClients, never, Scope.Scope> =>
  Effect.gen(function*() {
    const parent = yield* Effect.scope
    const live = new Map<string, { readonly conn: McpConnection; readonly scope: Scope.Closeable }>()
    const failures = new Map<string, string>()
    // One connect at a time per server (concurrent calls share it); servers connect independently.
    const locks = new Map(servers.map((s) => [s.name, Semaphore.makeUnsafe(1)] as const))

    /** Ends `conn` (if it is still the server's current connection: a concurrent call may have replaced it). */
    const drop = (name: string, conn: McpConnection) =>
      Effect.suspend(() => {
        const entry = live.get(name)
        if (entry?.conn !== conn) return Effect.void
        live.delete(name)
        return Scope.close(entry.scope, Exit.void)
      })

    const known = (name: string) => {
      const server = servers.find((s) => s.name === name)
      return server === undefined
        ? Effect.fail(new McpFailure({ server: name, reason: `no such server; servers: ${servers.map((s) => s.name).join(", ") || "none"}` }))
        : Effect.succeed(server)
    }

    const get = (name: string) =>
      Effect.flatMap(known(name), (server) => {
        const lock = locks.get(name)
        return lock === undefined ? Effect.die(new Error(`no lock for MCP server ${name}`)) : lock.withPermits(1)(connected(server))
      })

    const connected = (server: McpServer) =>
      Effect.gen(function*() {
        const name = server.name
        const entry = live.get(name)
        if (entry?.conn.alive() === true) return entry.conn
        if (entry !== undefined) yield* drop(name, entry.conn)
        const scope = yield* Scope.fork(parent, "sequential")
        const conn = yield* connect(server, sandbox, limits.connectTimeout).pipe(
          Scope.provide(scope),
          Effect.tapError((e) => Effect.andThen(Scope.close(scope, Exit.void), Effect.sync(() => failures.set(name, e.reason))))
        )
        failures.delete(name)
        live.set(name, { conn, scope })
        return conn
      })

    const run = <A>(name: string, what: string, f: (client: Client, signal: AbortSignal) => Promise<A>) =>
      Effect.gen(function*() {
        const conn = yield* get(name)
        const seconds = Duration.toSeconds(limits.callTimeout)
        const outcome = yield* Effect.tryPromise({ try: (signal) => f(conn.client, signal), catch: (e) => e }).pipe(
          Effect.timeoutOrElse({ duration: limits.callTimeout, orElse: () => Effect.fail("timeout" as const) }),
          Effect.result
        )
        if (outcome._tag === "Success") return outcome.success
        const e = outcome.failure
        const reason = (text: string) => new McpFailure({ server: name, reason: text })
        if (e === "timeout") return yield* reason(`${what} got no answer within ${seconds} s (cancelled)`)
        if (!conn.alive()) {
          const end = Option.getOrElse(yield* conn.ended, () => "closed the connection")
          yield* drop(name, conn)
          return yield* reason(`${end} during ${what}; the next call restarts it`)
        }
        if (e instanceof McpError && e.code !== CONNECTION_CLOSED) return yield* reason(`${what} failed: ${errorText(e)}`)
        yield* drop(name, conn)
        return yield* reason(`connection lost during ${what} (${errorText(e)}); the next call reconnects`)
      })

    const state = (name: string) =>
      Effect.sync((): ServerState => {
        const entry = live.get(name)
        if (entry?.conn.alive() === true) return "connected"
        const failed = failures.get(name)
        return failed === undefined ? "not started" : { failed }
      })

    return { servers, state, run }
  })
