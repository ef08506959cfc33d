/**
 * Running commands in a sandbox container. Docker has no "kill this exec" call, so each command runs
 * under a small wrapper that records its PID in /tmp; a timeout or an interruption kills that PID,
 * its session and all its descendants (found through /proc) from a second exec. Output is kept up to a byte cap
 * per stream; what goes beyond is counted, not kept, so a runaway command cannot exhaust memory.
 */
import type Docker from "dockerode"
import { Deferred, Duration, Effect, Option, type Scope, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { PassThrough, Writable } from "node:stream"
import { SandboxFailure } from "../../domain/sandbox/errors.ts"
import type { ExecResult } from "../../domain/sandbox/types.ts"
import type { SandboxProcess } from "../../services/Sandbox.ts"
import { call, errorDetail } from "./client.ts"

/** `sh -c WRAPPER pidfile command`: the PID goes to the pidfile; the command runs as a child. */
const WRAPPER = `echo $$ > "$0"; /bin/sh -c "$1"; rc=$?; rm -f "$0"; exit $rc`

/**
 * `sh -c KILL_TREE pidfile`: stops, then kills, the recorded process, every process of its session
 * (each docker exec is a session leader, so this catches double-forked daemons reparented to PID 1)
 * and every descendant (which catches those that started a session of their own).
 */
const KILL_TREE = `root=$(cat "$0" 2>/dev/null) || exit 0
tree() { echo "$1"; for c in $(awk -v p="$1" '$4==p{print $1}' /proc/[0-9]*/stat 2>/dev/null); do tree "$c"; done; }
pids="$(tree "$root") $(awk -v s="$root" '$6==s{print $1}' /proc/[0-9]*/stat 2>/dev/null)"
kill -STOP $pids 2>/dev/null
kill -KILL $pids 2>/dev/null
rm -f "$0"
exit 0`

const failure = (operation: string) => (e: unknown) => new SandboxFailure({ operation, detail: errorDetail(e) })

/** Bytes to drop from the end of `b` so it does not stop inside a UTF-8 character. */
const incompleteTail = (b: Buffer): number => {
  for (let back = 1; back <= Math.min(3, b.length); back++) {
    const byte = b[b.length - back] ?? 0
    if ((byte & 0xc0) === 0x80) continue // continuation byte: look further back for the lead
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return need > back ? back : 0
  }
  return 0
}

/** Bytes to skip at the start of `b` so it starts on a UTF-8 character. */
const incompleteHead = (b: Buffer): number => {
  let i = 0
  while (i < Math.min(3, b.length) && ((b[i] ?? 0) & 0xc0) === 0x80) i++
  return i
}

/**
 * A writable that keeps the first and the last `max / 2` bytes and counts the rest, so a runaway
 * command cannot exhaust memory and the end of its output (where errors usually are) survives.
 * `text()` marks the gap and never splits a character.
 */
const collector = (max: number) => {
  const headMax = Math.ceil(max / 2)
  const tailMax = max - headMax
  const head: Array<Buffer> = []
  let headLen = 0
  let tail: Buffer = Buffer.alloc(0)
  let total = 0
  const writable = new Writable({
    write(chunk: Buffer, _enc, done) {
      total += chunk.length
      let rest = chunk
      if (headLen < headMax) {
        const part = rest.subarray(0, headMax - headLen)
        head.push(part)
        headLen += part.length
        rest = rest.subarray(part.length)
      }
      if (rest.length > 0 && tailMax > 0) {
        const joined = tail.length + rest.length <= tailMax ? Buffer.concat([tail, rest]) : Buffer.concat([tail, rest]).subarray(-tailMax)
        tail = Buffer.from(joined)
      }
      done()
    }
  })
  const dropped = () => Math.max(0, total - headLen - tail.length)
  const text = () => {
    const h = Buffer.concat(head)
    if (dropped() === 0) return Buffer.concat([h, tail]).toString("utf8")
    const hs = h.subarray(0, h.length - incompleteTail(h)).toString("utf8")
    const ts = tail.subarray(incompleteHead(tail)).toString("utf8")
    return `${hs}\n[… ${dropped().toLocaleString("en-US")} bytes dropped by the sandbox …]\n${ts}`
  }
  return { writable, text, dropped }
}

/**
 * Completes when the hijacked stream ends or closes (fails if it errors). Listening starts at once,
 * so an end that happens while nobody is waiting (e.g. during a kill) is not missed.
 */
const streamEnd = (stream: NodeJS.ReadWriteStream) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void, SandboxFailure>()
    const finish = (effect: Effect.Effect<void, SandboxFailure>) => Effect.runSync(Deferred.completeWith(done, effect))
    stream.on("end", () => finish(Effect.void))
    stream.on("close", () => finish(Effect.void))
    stream.on("error", (e: unknown) => finish(Effect.fail(failure("exec")(e))))
    return Deferred.await(done)
  })

const destroy = (stream: NodeJS.ReadWriteStream) => Effect.sync(() => (stream as unknown as { destroy?: () => void }).destroy?.())

/** Kills what runs under `pidfile`; never fails (the container may already be gone). */
export const killTree = (container: Docker.Container, user: string, pidfile: string) =>
  Effect.gen(function*() {
    const exec = yield* call(() => container.exec({ Cmd: ["/bin/sh", "-c", KILL_TREE, pidfile], User: user, AttachStdout: true, AttachStderr: true }), failure("kill"))
    const stream = yield* call(() => exec.start({ hijack: true, stdin: false }), failure("kill"))
    const ended = yield* streamEnd(stream)
    stream.resume()
    yield* ended.pipe(Effect.timeoutOption(Duration.seconds(10)))
  }).pipe(Effect.ignore)

export interface RunOptions {
  readonly user: string
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly stdin: string | undefined
  readonly timeoutMs: number
  readonly maxOutputBytes: number
}

export const runCommand = (
  docker: Docker,
  container: Docker.Container,
  command: string,
  options: RunOptions
): Effect.Effect<ExecResult, SandboxFailure> =>
  Effect.gen(function*() {
    const started = Date.now()
    const pidfile = `/tmp/.anna-${randomUUID()}.pid`
    const exec = yield* call(
      () =>
        container.exec({
          Cmd: ["/bin/sh", "-c", WRAPPER, pidfile, command],
          User: options.user,
          WorkingDir: options.cwd,
          Env: Object.entries(options.env).map(([k, v]) => `${k}=${v}`),
          AttachStdin: options.stdin !== undefined,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false
        }),
      failure("exec")
    )
    const stream = yield* call(() => exec.start({ hijack: true, stdin: options.stdin !== undefined }), failure("exec"))
    const ended = yield* streamEnd(stream)
    const out = collector(options.maxOutputBytes)
    const err = collector(options.maxOutputBytes)
    docker.modem.demuxStream(stream, out.writable, err.writable)
    if (options.stdin !== undefined) {
      stream.write(options.stdin)
      stream.end()
    }
    const finished = yield* ended.pipe(
      Effect.timeoutOption(Duration.millis(options.timeoutMs)),
      Effect.onInterrupt(() => killTree(container, options.user, pidfile).pipe(Effect.andThen(destroy(stream))))
    )
    const timedOut = Option.isNone(finished)
    if (timedOut) {
      yield* killTree(container, options.user, pidfile)
      const closed = yield* ended.pipe(Effect.timeoutOption(Duration.seconds(5)), Effect.orElseSucceed(() => Option.none()))
      if (Option.isNone(closed)) yield* destroy(stream)
    }
    const info = yield* call(() => exec.inspect(), failure("exec"), Duration.seconds(10))
    const result: ExecResult = {
      exitCode: info.ExitCode ?? (timedOut ? 137 : -1),
      stdout: out.text(),
      stderr: err.text(),
      stdoutDropped: out.dropped(),
      stderrDropped: err.dropped(),
      timedOut,
      durationMs: Date.now() - started
    }
    return result
  })

/** A long-lived process; killed (with its descendants) when `scope` closes. */
export const startProcess = (
  docker: Docker,
  container: Docker.Container,
  command: ReadonlyArray<string>,
  options: { readonly user: string; readonly cwd: string; readonly env: Readonly<Record<string, string>> }
): Effect.Effect<SandboxProcess, SandboxFailure, Scope.Scope> =>
  Effect.gen(function*() {
    const pidfile = `/tmp/.anna-${randomUUID()}.pid`
    const quoted = command.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ")
    const exec = yield* call(
      () =>
        container.exec({
          Cmd: ["/bin/sh", "-c", WRAPPER, pidfile, `exec ${quoted}`],
          User: options.user,
          WorkingDir: options.cwd,
          Env: Object.entries(options.env).map(([k, v]) => `${k}=${v}`),
          AttachStdin: true,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false
        }),
      failure("start process")
    )
    const stream = yield* call(() => exec.start({ hijack: true, stdin: true }), failure("start process"))
    const ended = yield* streamEnd(stream)
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    docker.modem.demuxStream(stream, stdout, stderr)
    const exit = yield* Deferred.make<number, SandboxFailure>()
    const kill = killTree(container, options.user, pidfile).pipe(Effect.andThen(destroy(stream)))
    yield* Effect.forkScoped(
      ended.pipe(
        Effect.andThen(Effect.sync(() => {
          stdout.end()
          stderr.end()
        })),
        Effect.andThen(call(() => exec.inspect(), failure("process"), Duration.seconds(10))),
        Effect.flatMap((info) => Deferred.succeed(exit, info.ExitCode ?? -1)),
        Effect.catch((e) => Deferred.fail(exit, e))
      )
    )
    yield* Effect.addFinalizer(() => kill)
    const toBytes = (s: PassThrough) =>
      Stream.fromAsyncIterable(s as AsyncIterable<Buffer>, failure("process output")).pipe(Stream.map((b) => new Uint8Array(b)))
    const process: SandboxProcess = {
      stdout: toBytes(stdout),
      stderr: toBytes(stderr),
      write: (data) =>
        Effect.callback<void, SandboxFailure>((resume) => {
          stream.write(data, (e?: Error | null) => resume(e === null || e === undefined ? Effect.void : Effect.fail(failure("write")(e))))
        }),
      end: Effect.sync(() => {
        stream.end()
      }),
      exitCode: Deferred.await(exit),
      kill
    }
    return process
  })
