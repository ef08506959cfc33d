/**
 * An MCP `Transport` (the SDK's interface) over a process started in the agent's sandbox
 * (`SandboxSession.startProcess`): stdio servers never run on the host. The framing is the MCP stdio
 * transport's — one JSON-RPC message per line, UTF-8, on stdin and stdout; stderr is the server's
 * log, kept (the last few KiB) to explain a server that exits.
 *
 * The process lives in the scope this is created in; when it ends, `exited` completes with its code
 * and the transport reports `onclose`, so the SDK client fails whatever call was pending.
 */
import { Deferred, Effect, Exit, Fiber, type Scope, Stream } from "effect"
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { SandboxFailure, SandboxStartError } from "../../domain/sandbox/errors.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"

/** A line longer than this is not a message the client can use: the server is broken. */
const MAX_LINE_BYTES = 10 * 1024 * 1024
const STDERR_TAIL = 4_096

export interface SandboxTransport extends Transport {
  /** Completes with the process's exit code once it has ended. */
  readonly exited: Deferred.Deferred<number>
  /** The exit code once the process has ended. */
  readonly exitCode: () => number | undefined
  /** The last bytes the server wrote to stderr. */
  readonly stderrTail: () => string
}

export const startSandboxTransport = (
  session: SandboxSession,
  command: ReadonlyArray<string>
): Effect.Effect<SandboxTransport, SandboxFailure | SandboxStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const proc = yield* session.startProcess(command)
    const exited = yield* Deferred.make<number>()
    let stderr = ""
    let exitCode: number | undefined
    let closed = false
    const decoder = new TextDecoder()
    let pending = ""

    const transport: SandboxTransport = {
      exited,
      exitCode: () => exitCode,
      stderrTail: () => stderr,
      start: () => Promise.resolve(),
      send: (message: JSONRPCMessage) =>
        closed
          ? Promise.reject(new Error("the server's process has ended"))
          : Effect.runPromise(proc.write(`${JSON.stringify(message)}\n`)),
      close: () => {
        if (closed) return Promise.resolve()
        closed = true
        return Effect.runPromise(proc.kill).then(() => transport.onclose?.())
      }
    }

    const deliver = (line: string) => {
      const text = line.replace(/\r$/, "")
      if (text.trim() === "") return
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        transport.onerror?.(new Error(`not JSON on stdout: ${text.slice(0, 200)}`))
        return
      }
      const message = JSONRPCMessageSchema.safeParse(parsed)
      if (message.success) transport.onmessage?.(message.data)
      else transport.onerror?.(new Error(`not a JSON-RPC message on stdout: ${text.slice(0, 200)}`))
    }

    const reader = yield* proc.stdout.pipe(
      Stream.runForEach((chunk) =>
        Effect.sync(() => {
          pending += decoder.decode(chunk, { stream: true })
          let nl = pending.indexOf("\n")
          while (nl !== -1) {
            deliver(pending.slice(0, nl))
            pending = pending.slice(nl + 1)
            nl = pending.indexOf("\n")
          }
          if (pending.length > MAX_LINE_BYTES) {
            pending = ""
            transport.onerror?.(new Error(`a message longer than ${MAX_LINE_BYTES} bytes`))
          }
        })
      ),
      Effect.ignore,
      Effect.forkScoped
    )
    yield* proc.stderr.pipe(
      Stream.runForEach((chunk) => Effect.sync(() => (stderr = (stderr + new TextDecoder().decode(chunk)).slice(-STDERR_TAIL)))),
      Effect.ignore,
      Effect.forkScoped
    )
    // The end of the process: every message it wrote is delivered first, then the client hears of it.
    yield* proc.exitCode.pipe(
      Effect.exit,
      Effect.flatMap((exit) =>
        Effect.gen(function*() {
          // (bounded: an engine that keeps the output stream open after the exit must not hang us)
          yield* Fiber.await(reader).pipe(Effect.timeout("1 second"), Effect.ignore)
          exitCode = Exit.isSuccess(exit) ? exit.value : -1
          yield* Deferred.succeed(exited, exitCode)
          if (!closed) {
            closed = true
            transport.onclose?.()
          }
        })
      ),
      Effect.forkScoped
    )
    return transport
  })
