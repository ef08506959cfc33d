/**
 * The Docker sandbox's kill against a real engine: a timed-out, aborted or closed command loses
 * everything it started, however it hid (background, its own session, double fork, a cleared
 * environment, a process that re-forks itself and exits, generation after generation), while the
 * other commands and processes running in the same container are left alone.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Effect, Fiber, Option, type Scope, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { DEFAULT_LIMITS, type SandboxSpec } from "../../../src/domain/sandbox/types.ts"
import * as DockerSandbox from "../../../src/layers/sandbox/DockerSandbox.ts"
import type { Sandbox, SandboxSession } from "../../../src/services/Sandbox.ts"
import { dockerReady, TEST_IMAGE } from "../../support/docker.ts"
import { LIST, runs, waitForProcess } from "../../support/sandboxProcesses.ts"
import { removeTemp } from "../../support/cleanup.ts"

const dirs: Array<string> = []
afterAll(async () => {
  for (const d of dirs) await removeTemp(d)
})
const spec = (): SandboxSpec => {
  const workspace = mkdtempSync(join(tmpdir(), "anna-ws-"))
  dirs.push(workspace)
  return { agentId: "t", userId: "", workspace, image: TEST_IMAGE, network: "disabled", limits: DEFAULT_LIMITS }
}
const docker = new Docker()
const withSandbox = <A, E>(f: (sandbox: Sandbox["Service"]) => Effect.Effect<A, E, Scope.Scope>): Effect.Effect<A, unknown> =>
  Effect.gen(function*() {
    const sandbox = yield* DockerSandbox.make(docker)
    return yield* Effect.scoped(f(sandbox))
  })

/**
 * What is left in the container once what is being killed is gone: polls (at most 5 s) until the
 * listing is empty — a SIGKILLed process takes a moment to disappear — and returns the last one.
 * Each look stops everything first (and resumes it after): a process that re-forks itself and exits
 * would otherwise slip between the listing of /proc and the reading of its entries. Only for when
 * nothing else of the test runs in the container (a kill at the same time would stop it, and be stopped).
 */
const leftovers = (s: SandboxSession) =>
  Effect.gen(function*() {
    const r = yield* s.exec(
      `i=0; while :; do kill -STOP -1; out=$(${LIST}); kill -CONT -1; if [ -z "$out" ] || [ $i -ge 50 ]; then break; fi; i=$((i + 1)); sleep 0.1; done; printf %s "$out"`
    )
    assert.strictEqual(r.exitCode, 0, `the container cannot run a command: ${r.stdout}${r.stderr}`)
    return r.stdout
  })

/** `sh -c` quoting of one argument. */
const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`

/**
 * A process that starts its successor in a session of its own, with an empty environment, and
 * exits — generation after generation, as fast as it can: there is never one PID to kill.
 */
const HOPPER = `printf '%s\\n' 'env -i setsid /bin/sh /tmp/hop.sh &' > /tmp/hop.sh; (env -i setsid /bin/sh /tmp/hop.sh &)`

const escapes: ReadonlyArray<readonly [string, string]> = [
  ["plain background", "sleep 1001 & sleep 1002 &"],
  ["setsid", "setsid sh -c 'sleep 1003 &'"],
  ["double fork + setsid", "(setsid sh -c 'sleep 1004 &' &)"],
  ["env -i + setsid + double fork", "(env -i setsid sh -c '(sleep 1005 &)' &)"],
  // Short-lived detached children, born all the time: some are always on their way.
  ["env -i + setsid + a loop that keeps forking", `(env -i setsid sh -c ${q("while :; do (setsid sleep 0.3 &); sleep 0.02; done")} &)`],
  ["a process that re-forks itself and exits, in a loop", HOPPER]
]

describe.skipIf(!dockerReady)("DockerSandbox kill (real Docker engine)", () => {
  it.live("a timeout kills everything the command started, however it escaped", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const s = yield* sb.start(spec())
        assert.strictEqual(yield* leftovers(s), "", "a fresh container runs nothing but PID 1")
        const left: Array<readonly [string, string]> = []
        for (const [name, breakout] of escapes) {
          const r = yield* s.exec(`${breakout}\nsleep 1000`, { timeoutMs: 1500 })
          assert.isTrue(r.timedOut, `${name}: exit ${r.exitCode} after ${r.durationMs} ms, ${r.stderr}`)
          left.push([name, yield* leftovers(s)])
          // A clean slate (everything but PID 1 and this shell), so each form is judged on its own.
          yield* s.exec("kill -STOP -1; kill -KILL -1")
        }
        assert.deepStrictEqual(left, escapes.map(([name]) => [name, ""]))
        // The container still works, and its tmpfs keeps no trace of the kills.
        const after = yield* s.exec("echo ok; ls -a /tmp | grep -c '^\\.anna-' || true")
        assert.strictEqual(after.stdout, "ok\n0\n")
      })
    ), 120_000)

  it.live("a fork bomb at the pids limit is killed too (the container is restarted) and the session goes on", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const s = yield* sb.start({ ...spec(), limits: { ...DEFAULT_LIMITS, pids: 48 } })
        yield* s.exec("true")
        const id = yield* s.containerId
        // `exec sleep` keeps the command alive without a fork, so only the timeout ends it.
        const r = yield* s.exec("(env -i setsid sh -c 'while :; do sleep 1030 & done' >/dev/null 2>&1 &)\nexec sleep 1000", { timeoutMs: 1500 })
        assert.isTrue(r.timedOut)
        assert.strictEqual(yield* leftovers(s), "")
        assert.strictEqual((yield* s.exec("echo ok")).stdout, "ok\n")
        assert.strictEqual(yield* s.containerId, id, "the same container")
      })
    ), 120_000)

  it.live("a timeout or an abort spares the other commands and processes of the container", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const s = yield* sb.start(spec())
        // B will time out; before it does, A (a command with its own detached background process,
        // environment kept) and P (a long-lived process) start — after B, so B's kill sees them as
        // younger than B. Only B's processes may die.
        const b = yield* Effect.forkChild(s.exec("(env -i setsid sh -c '(sleep 1013 &)' &)\nsleep 1000", { timeoutMs: 6000 }))
        yield* waitForProcess(s, "sleep 1013")
        const a = yield* Effect.forkChild(s.exec("(setsid sh -c 'sleep 1011 &' &)\nsleep 1010", { timeoutMs: 120_000 }))
        yield* waitForProcess(s, "sleep 1011")
        yield* waitForProcess(s, "sleep 1010")
        const p = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
          const process = yield* s.startProcess(["sleep", "1012"])
          return yield* process.exitCode
        })))
        yield* waitForProcess(s, "sleep 1012")
        assert.isUndefined(b.pollUnsafe(), "B was still running when A and P started")

        const timedOut = yield* Fiber.join(b)
        assert.isTrue(timedOut.timedOut)
        assert.isFalse(yield* runs(s, "sleep 1013"), "B's escaped process is killed")
        for (const other of ["sleep 1010", "sleep 1011", "sleep 1012"]) assert.isTrue(yield* runs(s, other), `${other} survives B's timeout`)
        assert.isUndefined(a.pollUnsafe(), "A is still running")

        // An abort of A kills A's processes (its detached one included) and still spares P.
        yield* Fiber.interrupt(a)
        assert.isFalse(yield* runs(s, "sleep 1010"))
        assert.isFalse(yield* runs(s, "sleep 1011"))
        assert.isTrue(yield* runs(s, "sleep 1012"), "P survives A's abort")
        yield* Fiber.interrupt(p)
        assert.strictEqual(yield* leftovers(s), "")
      })
    ), 120_000)

  it.live("a timeout spares what a command that ended meanwhile left running in its session", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const s = yield* sb.start(spec())
        // A runs long; meanwhile B starts a server in the background and ends (as a model's parallel
        // tool calls do). B's server is younger than A and an orphan, yet it is B's, not A's.
        const a = yield* Effect.forkChild(s.exec("(env -i setsid sh -c '(sleep 1051 &)' &)\nsleep 1050", { timeoutMs: 6000 }))
        yield* waitForProcess(s, "sleep 1051")
        const b = yield* s.exec("sleep 1052 >/dev/null 2>&1 &")
        assert.strictEqual(b.exitCode, 0)
        assert.isUndefined(a.pollUnsafe(), "A was still running when B ended")
        assert.isTrue((yield* Fiber.join(a)).timedOut)
        assert.isFalse(yield* runs(s, "sleep 1050"))
        assert.isFalse(yield* runs(s, "sleep 1051"), "A's escaped process is killed")
        assert.isTrue(yield* runs(s, "sleep 1052"), "B's server survives A's timeout")
      })
    ), 60_000)

  it.live("closing a long-lived process kills what it started, also when that escaped", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const s = yield* sb.start(spec())
        const first = yield* Effect.scoped(Effect.gen(function*() {
          const process = yield* s.startProcess(["sh", "-c", "(env -i setsid sh -c '(sleep 1020 &)' &); echo started; exec sleep 1021"])
          yield* waitForProcess(s, "sleep 1020")
          yield* waitForProcess(s, "sleep 1021")
          return yield* Stream.runHead(process.stdout)
        }))
        // The wrapper's own first line never reaches the process's reader.
        assert.strictEqual(Option.map(first, (b) => Buffer.from(b).toString()).pipe(Option.getOrUndefined), "started\n")
        assert.strictEqual(yield* leftovers(s), "")
      })
    ), 60_000)
})
