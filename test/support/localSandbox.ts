/**
 * A `SandboxSession` without Docker, over a fresh temporary workspace folder, for unit tests of what
 * sits above the Sandbox contract (the workspace tools, the registry). It keeps the contract's
 * semantics: the working directory, `readFile` and `writeFile` are the production code
 * (src/layers/sandbox/workspaceFiles.ts, confined walks from the workspace's folder handle); `exec` runs `/bin/sh -c` with
 * the first `maxOutputBytes` of each stream kept and the rest counted, and a timeout or an
 * interruption kills the whole process group (the command and its children).
 *
 * The one visible difference: commands run on the host in the workspace folder, so /workspace
 * itself does not exist for them. Shared cases use relative paths. Timeouts use the Effect clock,
 * as the Docker sandbox does, so tests that run commands use `it.live`.
 */
import { Deferred, Duration, Effect, Layer, Option, Ref, type Scope, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { posix } from "node:path"
import { constants, tmpdir } from "node:os"
import { join } from "node:path"
import { SandboxFailure, type SandboxStartError } from "../../src/domain/sandbox/errors.ts"
import {
  DEFAULT_EXEC_TIMEOUT_MS,
  DEFAULT_LIMITS,
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecResult,
  type SandboxSpec,
  WORKSPACE_MOUNT
} from "../../src/domain/sandbox/types.ts"
import { containerPath } from "../../src/layers/sandbox/confinedFs.ts"
import * as WorkspaceFiles from "../../src/layers/sandbox/workspaceFiles.ts"
import { Sandbox, type SandboxProcess, type SandboxSession } from "../../src/services/Sandbox.ts"

/** Keeps the first `max` bytes written and counts the rest, like the Docker sandbox's collector. */
const collector = (max: number) => {
  const chunks: Array<Buffer> = []
  let kept = 0
  let dropped = 0
  return {
    push: (chunk: Buffer) => {
      const room = Math.max(0, max - kept)
      const part = chunk.subarray(0, room)
      if (part.length > 0) chunks.push(part)
      kept += part.length
      dropped += chunk.length - part.length
    },
    text: () => Buffer.concat(chunks).toString("utf8"),
    dropped: () => dropped
  }
}

/** SIGKILL to the child's process group: the command and everything it started (unless it left the group). */
const killGroup = (child: ChildProcess) =>
  Effect.sync(() => {
    if (child.pid === undefined) return
    try {
      process.kill(-child.pid, "SIGKILL")
    } catch {
      // Already gone.
    }
  })

const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number =>
  code ?? (signal === null ? -1 : 128 + (constants.signals[signal] ?? 0))

const failure = (operation: string) => (e: unknown) => new SandboxFailure({ operation, detail: e instanceof Error ? e.message : String(e) })

/** Starts `argv` in its own process group; `closed` completes with the exit code once all its output is read. */
const launch = (argv: ReadonlyArray<string>, cwd: string, env: Readonly<Record<string, string>>, stdin: boolean) =>
  Effect.gen(function*() {
    const closed = yield* Deferred.make<number, SandboxFailure>()
    const [file = "/bin/sh", ...args] = argv
    const child = spawn(file, args, {
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, ...env },
      detached: true,
      stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"]
    })
    const finish = (effect: Effect.Effect<number, SandboxFailure>) => Effect.runSync(Deferred.completeWith(closed, effect))
    child.on("error", (e) => finish(Effect.fail(failure("exec")(e))))
    child.on("close", (code, signal) => finish(Effect.succeed(exitCodeOf(code, signal))))
    return { child, closed: Deferred.await(closed) }
  })

export interface LocalSandboxOptions {
  /** Use this folder as the workspace (kept); default: a fresh temporary folder, removed with the scope. */
  readonly workspace?: string
  /** Disk quota of the workspace, MiB (default 1024). */
  readonly quotaMb?: number
}

export const make = (options: LocalSandboxOptions = {}): Effect.Effect<SandboxSession, never, Scope.Scope> =>
  Effect.gen(function*() {
    const folder = options.workspace ?? (yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-workspace-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    ))
    const root = realpathSync(folder)
    const quotaMb = options.quotaMb ?? DEFAULT_LIMITS.diskMb
    const spec: SandboxSpec = {
      agentId: "test",
      userId: "",
      workspace: root,
      image: "local",
      network: "disabled",
      limits: { ...DEFAULT_LIMITS, diskMb: quotaMb }
    }
    const files = yield* WorkspaceFiles.make(root, { quotaMb })
    const closedWhy = yield* Ref.make<string | undefined>(undefined)

    /** The host folder for a container working directory (lexically: commands here run on the host anyway). */
    const hostDir = (dir: string, operation: string) => {
      const inside = containerPath(WORKSPACE_MOUNT, dir)
      return inside === undefined
        ? Effect.fail(new SandboxFailure({ operation, detail: `working directory ${dir} is outside the workspace` }))
        : Effect.succeed(join(root, posix.relative(WORKSPACE_MOUNT, inside)))
    }

    const exec: SandboxSession["exec"] = (command, execOptions = {}) =>
      Effect.gen(function*() {
        const started = Date.now()
        const why = yield* Ref.get(closedWhy)
        if (why !== undefined) return yield* new SandboxFailure({ operation: "exec", detail: `closed: ${why}` })
        const dir = yield* hostDir(execOptions.cwd ?? (yield* files.workingDir), "exec")
        const { child, closed } = yield* launch(["/bin/sh", "-c", command], dir, execOptions.env ?? {}, execOptions.stdin !== undefined)
        const max = execOptions.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES
        const out = collector(max)
        const err = collector(max)
        child.stdout?.on("data", out.push)
        child.stderr?.on("data", err.push)
        if (execOptions.stdin !== undefined) child.stdin?.end(execOptions.stdin)
        const finished = yield* closed.pipe(
          Effect.timeoutOption(Duration.millis(execOptions.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS)),
          Effect.onInterrupt(() => killGroup(child))
        )
        let exitCode: number
        if (Option.isSome(finished)) {
          exitCode = finished.value
        } else {
          yield* killGroup(child)
          // A process that left the group could hold the pipes open; give up on them after a while.
          const after = yield* closed.pipe(Effect.timeoutOption(Duration.seconds(5)), Effect.orElseSucceed(() => Option.none<number>()))
          if (Option.isNone(after)) {
            child.stdout?.destroy()
            child.stderr?.destroy()
          }
          exitCode = Option.getOrElse(after, () => 137)
        }
        const result: ExecResult = {
          exitCode,
          stdout: out.text(),
          stderr: err.text(),
          stdoutDropped: out.dropped(),
          stderrDropped: err.dropped(),
          timedOut: Option.isNone(finished),
          durationMs: Date.now() - started
        }
        return result
      })

    const startProcess: SandboxSession["startProcess"] = (command, processOptions = {}) =>
      Effect.gen(function*() {
        const dir = yield* hostDir(processOptions.cwd ?? (yield* files.workingDir), "start process")
        const { child, closed } = yield* launch(command, dir, processOptions.env ?? {}, true)
        yield* Effect.addFinalizer(() => killGroup(child))
        const bytes = (stream: NodeJS.ReadableStream | null) =>
          stream === null
            ? Stream.empty
            : Stream.fromAsyncIterable(stream as AsyncIterable<Buffer>, failure("process output")).pipe(Stream.map((b) => new Uint8Array(b)))
        const handle: SandboxProcess = {
          stdout: bytes(child.stdout),
          stderr: bytes(child.stderr),
          write: (data) =>
            Effect.callback<void, SandboxFailure>((resume) => {
              const stdin = child.stdin
              if (stdin === null) return resume(Effect.fail(new SandboxFailure({ operation: "write", detail: "stdin is closed" })))
              stdin.write(data, (e) => resume(e === null || e === undefined ? Effect.void : Effect.fail(failure("write")(e))))
            }),
          end: Effect.sync(() => {
            child.stdin?.end()
          }),
          exitCode: closed,
          kill: killGroup(child)
        }
        return handle
      })

    const session: SandboxSession = {
      spec,
      containerId: Effect.succeed(`local-${randomUUID()}`),
      workingDir: files.workingDir,
      setWorkingDir: files.setWorkingDir,
      readFile: files.readFile,
      writeFile: files.writeFile,
      exec,
      startProcess,
      close: (reason) => Ref.set(closedWhy, reason)
    }
    return session
  })

/**
 * A `Sandbox` whose sessions are local sandboxes (each on a fresh temporary workspace unless
 * `options.workspace` is given); `started` counts the sessions started.
 */
export const sandboxLayer = (
  options: LocalSandboxOptions = {},
  started: { count: number; unavailable?: SandboxStartError | undefined } = { count: 0 }
): Layer.Layer<Sandbox> =>
  Layer.succeed(Sandbox, Sandbox.of({
    start: () => Effect.suspend(() => {
      started.count++
      return make(options)
    }),
    check: () => (started.unavailable === undefined ? Effect.void : Effect.fail(started.unavailable)),
    prepare: (spec) => Effect.succeed(spec.workspace),
    live: Effect.succeed(0)
  }))

/** The workspace's host folder (where fixtures go). */
export const hostRoot = (session: SandboxSession): Effect.Effect<string> => Effect.succeed(session.spec.workspace)
