/**
 * Running commands in a sandbox container. Docker has no "kill this exec" call, so each command runs
 * under a small wrapper that first tells its PID and start time on stdout (the gateway keeps them,
 * where the command cannot change them) and carries a marker of its own in its environment. A
 * timeout or an interruption kills, from a second exec, everything the command started wherever it
 * went (see KILL). Output is kept up to a byte cap per stream; what goes beyond is counted, not
 * kept, so a runaway command cannot exhaust memory.
 */
import type Docker from "dockerode"
import { Clock, Deferred, Duration, Effect, Option, type Scope, Semaphore, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { PassThrough, Writable } from "node:stream"
import { SandboxFailure } from "../../../domain/sandbox/errors.ts"
import type { ExecResult } from "../../../domain/sandbox/types.ts"
import type { SandboxProcess } from "../../../services/Sandbox.ts"
import { call, errorDetail } from "./client.ts"

/** The environment variable that marks every process of one command (inherited unless cleared). */
const MARKER = "ANNA_EXEC"

/** Where a kill leaves word for a wrapper that has not started yet, so it never runs its command. */
const tombstone = (id: string) => `/tmp/.anna-${id}.killed`

/**
 * `sh -c WRAPPER id command`: prints `anna-exec PID START` (START: field 22 of /proc/PID/stat, clock
 * ticks since boot — every process the command starts has a start at or after it), gives up if a
 * kill came first, then becomes the command (same PID, session and start time).
 */
const WRAPPER = `t() { [ $# -ge 20 ] && st=\${20}; }; st=-
read -r s < /proc/$$/stat && t \${s##*) }
echo "anna-exec $$ $st"
[ -e "${tombstone("$0")}" ] && { rm -f "${tombstone("$0")}"; exit 137; }
exec /bin/sh -c "$1"`

/**
 * Reads `cat /proc/[0-9]*\/stat` while every process but PID 1 is stopped, and prints `KILL pids…`
 * (the command's processes), `CONT pids…` (the others, to resume) and `OK`. The command's
 * processes: those carrying its marker; those in its session or in the session of one of these;
 * and, for those that cleared their environment and left its session and tree, every orphan
 * (parent 0 or 1) started at or after the command, unless it is in PID 1's session or belongs to
 * another command (that one's marker or session — running, or ended meanwhile: the gateway knows
 * where those started — or a descendant of these); finally all their descendants. Never PID 1,
 * never this kill's own session. Fields are read after the last ")", since a process names itself.
 */
const KILL_AWK = `{ p = $1; s = $0; sub(/^.*\\) /, "", s); split(s, f, " "); ppid[p] = f[2]; sid[p] = f[4]; st[p] = f[20] }
END {
  ks = sid[self]
  n = split(mine, a, /[^0-9]+/); for (i = 1; i <= n; i++) if (a[i] != "") mk[a[i]] = 1
  n = split(theirs, a, /[^0-9]+/); for (i = 1; i <= n; i++) if (a[i] != "") tk[a[i]] = 1
  for (p in mk) if ((p in sid) && sid[p] > 1) osid[sid[p]] = 1
  if (root != "-") osid[root] = 1
  # No start from the wrapper yet: the oldest process carrying the marker is the best bound there is.
  if (start == "-") for (p in mk) if ((p in st) && (start == "-" || st[p] + 0 < start + 0)) start = st[p]
  for (p in tk) if (p in sid) psid[sid[p]] = 1
  # The other commands' sessions, unless the number now leads another session (a reused PID).
  n = split(sessions, a, /[,:]/); for (i = 1; i < n; i += 2) if (!(a[i] in st) || st[a[i]] == a[i + 1]) psid[a[i]] = 1
  for (p in sid) if ((p in tk) || (sid[p] in psid)) spare[p] = 1
  do { more = 0
    for (p in sid) if (!(p in spare) && (ppid[p] in spare)) { spare[p] = 1; more = 1 }
  } while (more)
  for (p in sid) {
    if (p == 1 || sid[p] == ks) continue
    if ((p in mk) || (sid[p] in osid)) hit[p] = 1
    else if (start != "-" && st[p] + 0 >= start + 0 && (ppid[p] == 0 || ppid[p] == 1) && sid[p] != 1 && !(p in spare)) hit[p] = 1
  }
  do { more = 0
    for (p in sid) if (!(p in hit) && (ppid[p] in hit) && sid[p] != ks) { hit[p] = 1; more = 1 }
  } while (more)
  k = ""; c = ""
  for (p in sid) if (p in hit) k = k " " p; else if (p != 1 && sid[p] != ks) c = c " " p
  if (k != "") print "KILL" k
  if (c != "") print "CONT" c
  # Only a complete listing (this kill's own process in it) may count as one.
  if (ks != "") print "OK"
}`

/** The kill's last word: without it, the kill did not run to its end. */
const KILLED = "anna-kill: done"

/**
 * `sh -c KILL id pid start sessions other-ids…` (pid and start "-" when unknown). First it stops
 * every process of the container but PID 1 and itself in one call (kill -1), so nothing can fork,
 * exit and reappear, or interfere while it looks; then it leaves the tombstone, picks the command's
 * processes (KILL_AWK), kills them and resumes the rest. Spared: the processes of the container's
 * other running commands (other-ids: their markers) and the sessions of the other commands, running
 * or ended meanwhile (sessions: "pid:start,…" of their wrappers). Kills of one container never
 * overlap (see `gate`): two would stop each other. It ends with KILLED only when all of this ran.
 */
const KILL = `kill -STOP -1 2>/dev/null
id=$0 root=$1 start=$2 sessions=$3; shift 3
: > "${tombstone("$id")}" 2>/dev/null
others=; for o do others="$others -e ${MARKER}=$o"; done
mine=$(grep -ls "${MARKER}=$id" /proc/[0-9]*/environ)
theirs=; [ -n "$others" ] && theirs=$(grep -ls $others /proc/[0-9]*/environ)
out=$(cat /proc/[0-9]*/stat 2>/dev/null |
  awk -v self=$$ -v root="$root" -v start="$start" -v mine="$mine" -v theirs="$theirs" -v sessions="$sessions" '${KILL_AWK.replaceAll("'", "'\\''")}')
# No awk, no cat, no listing: resume everything and say nothing (the gateway then restarts the container).
case "$out" in *OK) ;; *) kill -CONT -1; exit 1 ;; esac
printf '%s\\n' "$out" | while read -r sig pids; do case $sig in KILL | CONT) kill -$sig $pids 2>/dev/null ;; esac; done
# Whatever the wrapper was doing, it is dead or past its look at the tombstone now.
if [ -n "$mine" ] || [ "$root" != - ]; then rm -f "${tombstone("$id")}"; fi
echo ${KILLED}`

const failure = (operation: string) => (e: unknown) => new SandboxFailure({ operation, detail: errorDetail(e) })

/** Where the wrapper of one command started, as it said in its first line. */
export interface ExecStart {
  readonly pid: number
  /** /proc/PID/stat start time, clock ticks since the container's kernel booted; undefined if unreadable. */
  readonly ticks: number | undefined
}

const HEADER = /^anna-exec (\d+) (\d+|-)$/
const HEADER_MAX = 64

/**
 * A writable that hands the wrapper's first line to `onHeader` and the rest of stdout to `downstream`
 * as it comes. Anything that does not look like the header is passed on untouched.
 */
const stripHeader = (downstream: Writable, onHeader: (start: ExecStart) => void): Writable => {
  let pending: Buffer | undefined = Buffer.alloc(0)
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      if (pending === undefined) {
        downstream.write(chunk)
        return done()
      }
      const joined: Buffer = Buffer.concat([pending, chunk])
      const nl = joined.indexOf(10)
      if (nl < 0 && joined.length < HEADER_MAX) {
        pending = joined
        return done()
      }
      pending = undefined
      const m = nl < 0 ? null : HEADER.exec(joined.subarray(0, nl).toString("latin1"))
      if (m !== null) onHeader({ pid: Number(m[1]), ticks: m[2] === "-" ? undefined : Number(m[2]) })
      const rest = m === null ? joined : joined.subarray(nl + 1)
      if (rest.length > 0) downstream.write(rest)
      done()
    }
  })
}

/**
 * The commands, processes and kills running now in one container (their ids), and where the
 * commands' wrappers started, of those running and of those that ended meanwhile: a kill spares
 * what belongs to the others. Only this gateway runs commands in its containers, so this is all of
 * them. `gate`: a command takes one permit to start, a kill takes them all — so kills never
 * overlap, and no command starts during a kill (it would look like an escaped process of the one
 * being killed).
 */
interface Running {
  readonly ids: Set<string>
  readonly gate: Semaphore.Semaphore
  readonly started: Map<string, ExecStart>
  /**
   * Commands that ended while others ran (newest last, at most ENDED_MAX): what they left in their
   * sessions was not started by those others. Dropped when nothing runs: then no later kill can take
   * it for its own (it is older than any command to come).
   */
  readonly ended: Array<ExecStart>
}

const ALL_PERMITS = 1 << 20
const ENDED_MAX = 256
const running = new Map<string, Running>()

const enter = (container: string, id: string) =>
  Effect.sync((): Running => {
    const r = running.get(container) ?? { ids: new Set<string>(), gate: Semaphore.makeUnsafe(ALL_PERMITS), started: new Map(), ended: [] }
    running.set(container, r)
    r.ids.add(id)
    return r
  })

const leave = (container: string, id: string, r: Running) =>
  Effect.sync(() => {
    const started = r.started.get(id)
    r.ids.delete(id)
    r.started.delete(id)
    if (started !== undefined && r.ids.size > 0) {
      r.ended.push(started)
      if (r.ended.length > ENDED_MAX) r.ended.shift()
    }
    // Everyone who uses the gate is in `ids` meanwhile, so nobody holds this one any more.
    if (r.ids.size === 0 && running.get(container) === r) running.delete(container)
  })

/** `f` runs with `id` counted as running in `container`. */
const whileRunning = <A, E, R>(container: string, id: string, f: (r: Running) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(enter(container, id), f, (r) => leave(container, id, r))

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

const EMPTY = Buffer.alloc(0)

/**
 * Keeps the first `ceil(max / 2)` bytes written and the last `floor(max / 2)`, and counts the rest,
 * so a runaway command cannot exhaust memory and the end of its output (where errors usually are)
 * survives. The tail is a ring of fixed size written in place, allocated once the head is full:
 * each byte is copied at most once on the way in, however much is written. `text()` marks the gap
 * and never splits a character.
 */
export const outputCapture = (max: number) => {
  const headMax = Math.ceil(max / 2)
  const tailMax = max - headMax
  const headParts: Array<Buffer> = []
  let headLen = 0
  let ring: Buffer | undefined
  /** Where the next tail byte goes; while the ring is not full, also how much it holds. */
  let end = 0
  let filled = 0
  let total = 0
  const write = (chunk: Uint8Array): void => {
    total += chunk.length
    let rest = chunk
    if (headLen < headMax) {
      const part = rest.subarray(0, headMax - headLen)
      headParts.push(Buffer.from(part)) // a copy, so the (larger) chunk is not kept alive
      headLen += part.length
      rest = rest.subarray(part.length)
    }
    if (rest.length === 0 || tailMax === 0) return
    ring ??= Buffer.allocUnsafe(tailMax)
    if (rest.length >= tailMax) {
      ring.set(rest.subarray(rest.length - tailMax))
      end = 0
      filled = tailMax
      return
    }
    const first = Math.min(rest.length, tailMax - end)
    ring.set(rest.subarray(0, first), end)
    if (first < rest.length) ring.set(rest.subarray(first), 0)
    end = (end + rest.length) % tailMax
    filled = Math.min(tailMax, filled + rest.length)
  }
  const head = (): Buffer => Buffer.concat(headParts)
  /** The last bytes written after the head, oldest first. */
  const tail = (): Buffer =>
    ring === undefined ? EMPTY : filled < tailMax ? ring.subarray(0, filled) : Buffer.concat([ring.subarray(end), ring.subarray(0, end)])
  const dropped = () => total - headLen - filled
  const text = () => {
    const h = head()
    const t = tail()
    if (dropped() === 0) return Buffer.concat([h, t]).toString("utf8")
    const hs = h.subarray(0, h.length - incompleteTail(h)).toString("utf8")
    const ts = t.subarray(incompleteHead(t)).toString("utf8")
    return `${hs}\n[… ${dropped().toLocaleString("en-US")} bytes dropped by the sandbox …]\n${ts}`
  }
  return { write, head, tail, dropped, text, total: () => total }
}

/** An `outputCapture` behind a writable, for the demultiplexed exec stream. */
export const collector = (max: number) => {
  const capture = outputCapture(max)
  const writable = new Writable({
    write(chunk: Buffer, _enc, done) {
      capture.write(chunk)
      done()
    }
  })
  return { writable, text: capture.text, dropped: capture.dropped }
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

/** The command's environment: the caller's, with the marker of this command (which the caller cannot set). */
const environment = (env: Readonly<Record<string, string>>, id: string): Array<string> => [
  ...Object.entries(env).filter(([k]) => k !== MARKER).map(([k, v]) => `${k}=${v}`),
  `${MARKER}=${id}`
]

/**
 * The last resort, when the kill could not run in the container (its process table is full — a fork
 * bomb at the pids limit —, or something stopped or killed the kill): a restart ends every process
 * in it at once (the kernel takes a PID namespace down with its PID 1). The container keeps its id,
 * settings and workspace; /tmp is emptied, and the other commands running in it end too.
 */
const restart = (container: Docker.Container) =>
  Effect.gen(function*() {
    const info = yield* call(() => container.inspect(), failure("kill"), Duration.seconds(10))
    if (info.State.Running !== true) return
    yield* Effect.logWarning(`sandbox: a command of container ${container.id.slice(0, 12)} could not be killed from inside; restarting the container`)
    yield* call(() => container.restart({ t: 0 }), failure("kill"), Duration.seconds(60))
  })

/**
 * Kills the command `id` and everything it started (see KILL), sparing the container's other
 * running commands, or restarts the container when that cannot be done from inside; never fails
 * (the container may already be gone). `start` is what its wrapper said, if it said it yet.
 */
export const killCommand = (container: Docker.Container, user: string, id: string, start: ExecStart | undefined) => {
  const self = randomUUID()
  return whileRunning(container.id, self, (r) =>
    r.gate.withPermits(ALL_PERMITS)(Effect.gen(function*() {
      const others = [...r.ids].filter((o) => o !== id && o !== self)
      const sessions = [...r.ended, ...[...r.started].filter(([o]) => o !== id).map(([, s]) => s)]
        .flatMap((s) => (s.ticks === undefined ? [] : [`${s.pid}:${s.ticks}`]))
        .join(",")
      const args = [id, start === undefined ? "-" : String(start.pid), start?.ticks === undefined ? "-" : String(start.ticks), sessions, ...others]
      const exec = yield* call(
        () => container.exec({ Cmd: ["/bin/sh", "-c", KILL, ...args], User: user, Env: environment({}, self), AttachStdout: true, AttachStderr: true }),
        failure("kill")
      )
      const ran = yield* Effect.gen(function*() {
        const stream = yield* call(() => exec.start({ hijack: true, stdin: false }), failure("kill"))
        const ended = yield* streamEnd(stream)
        const seen: Array<Buffer> = []
        stream.on("data", (b: Buffer) => seen.push(b))
        const done = yield* ended.pipe(Effect.timeoutOption(Duration.seconds(10)))
        if (Option.isNone(done)) return yield* Effect.as(destroy(stream), false)
        const info = yield* call(() => exec.inspect(), failure("kill"), Duration.seconds(10))
        return Buffer.concat(seen).includes(KILLED) && (info.ExitCode ?? 0) === 0
      }).pipe(Effect.orElseSucceed(() => false))
      if (!ran) yield* restart(container)
    }))).pipe(Effect.ignore)
}

/** Starts `exec` (with the container's gate open) and demultiplexes its output, the wrapper's line apart. */
const attach = (
  docker: Docker,
  exec: Docker.Exec,
  gate: Semaphore.Semaphore,
  stdin: boolean,
  stdout: Writable,
  stderr: Writable,
  onStart: (start: ExecStart) => void,
  operation: string
) =>
  Effect.gen(function*() {
    const stream = yield* gate.withPermits(1)(call(() => exec.start({ hijack: true, stdin }), failure(operation)))
    const ended = yield* streamEnd(stream)
    docker.modem.demuxStream(stream, stripHeader(stdout, onStart), stderr)
    return { stream, ended }
  })

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
): Effect.Effect<ExecResult, SandboxFailure> => {
  const id = randomUUID()
  return whileRunning(container.id, id, (r) =>
    Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      const exec = yield* call(
        () =>
          container.exec({
            Cmd: ["/bin/sh", "-c", WRAPPER, id, command],
            User: options.user,
            WorkingDir: options.cwd,
            Env: environment(options.env, id),
            AttachStdin: options.stdin !== undefined,
            AttachStdout: true,
            AttachStderr: true,
            Tty: false
          }),
        failure("exec")
      )
      const out = collector(options.maxOutputBytes)
      const err = collector(options.maxOutputBytes)
      let wrapper: ExecStart | undefined
      const onStart = (s: ExecStart) => {
        wrapper = s
        r.started.set(id, s)
      }
      let stream: NodeJS.ReadWriteStream | undefined
      const kill = Effect.suspend(() => killCommand(container, options.user, id, wrapper))
      // From here on an interruption kills whatever started, even while the start is on its way.
      return yield* Effect.gen(function*() {
        const attached = yield* attach(docker, exec, r.gate, options.stdin !== undefined, out.writable, err.writable, onStart, "exec")
        stream = attached.stream
        if (options.stdin !== undefined) {
          attached.stream.write(options.stdin)
          attached.stream.end()
        }
        const finished = yield* attached.ended.pipe(Effect.timeoutOption(Duration.millis(options.timeoutMs)))
        const timedOut = Option.isNone(finished)
        if (timedOut) {
          yield* kill
          const closed = yield* attached.ended.pipe(Effect.timeoutOption(Duration.seconds(5)), Effect.orElseSucceed(() => Option.none()))
          if (Option.isNone(closed)) yield* destroy(attached.stream)
        }
        const info = yield* call(() => exec.inspect(), failure("exec"), Duration.seconds(10))
        const result: ExecResult = {
          exitCode: info.ExitCode ?? (timedOut ? 137 : -1),
          stdout: out.text(),
          stderr: err.text(),
          stdoutDropped: out.dropped(),
          stderrDropped: err.dropped(),
          timedOut,
          durationMs: (yield* Clock.currentTimeMillis) - started
        }
        return result
      }).pipe(Effect.onInterrupt(() => kill.pipe(Effect.andThen(stream === undefined ? Effect.void : destroy(stream)))))
    }))
}

/** A long-lived process; killed (with everything it started) when `scope` closes. */
export const startProcess = (
  docker: Docker,
  container: Docker.Container,
  command: ReadonlyArray<string>,
  options: { readonly user: string; readonly cwd: string; readonly env: Readonly<Record<string, string>> }
): Effect.Effect<SandboxProcess, SandboxFailure, Scope.Scope> =>
  Effect.gen(function*() {
    const id = randomUUID()
    // Left after the kill below has run (finalizers run last-in first-out).
    const r = yield* Effect.acquireRelease(enter(container.id, id), (r) => leave(container.id, id, r))
    const quoted = command.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ")
    const exec = yield* call(
      () =>
        container.exec({
          Cmd: ["/bin/sh", "-c", WRAPPER, id, `exec ${quoted}`],
          User: options.user,
          WorkingDir: options.cwd,
          Env: environment(options.env, id),
          AttachStdin: true,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false
        }),
      failure("start process")
    )
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    let wrapper: ExecStart | undefined
    const onStart = (s: ExecStart) => {
      wrapper = s
      r.started.set(id, s)
    }
    let stream: NodeJS.ReadWriteStream | undefined
    const kill = Effect.suspend(() => killCommand(container, options.user, id, wrapper)).pipe(
      Effect.andThen(Effect.suspend(() => (stream === undefined ? Effect.void : destroy(stream))))
    )
    yield* Effect.addFinalizer(() => kill)
    const attached = yield* attach(docker, exec, r.gate, true, stdout, stderr, onStart, "start process")
    stream = attached.stream
    const { ended } = attached
    const exit = yield* Deferred.make<number, SandboxFailure>()
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
    const toBytes = (s: PassThrough) =>
      Stream.fromAsyncIterable(s as AsyncIterable<Buffer>, failure("process output")).pipe(Stream.map((b) => new Uint8Array(b)))
    const process: SandboxProcess = {
      stdout: toBytes(stdout),
      stderr: toBytes(stderr),
      write: (data) =>
        Effect.callback<void, SandboxFailure>((resume) => {
          attached.stream.write(data, (e?: Error | null) => resume(e === null || e === undefined ? Effect.void : Effect.fail(failure("write")(e))))
        }),
      end: Effect.sync(() => {
        attached.stream.end()
      }),
      exitCode: Deferred.await(exit),
      kill
    }
    return process
  })
