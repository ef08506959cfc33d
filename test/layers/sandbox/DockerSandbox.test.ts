/**
 * The Docker sandbox against a real engine: lifecycle and cleanup, the enforced policy, fail-closed
 * starts, path confinement, commands (timeouts, huge output, stdin), processes, several sessions at
 * once, and a daemon that goes away mid-session.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Deferred, Effect, Exit, Fiber, type Scope, Stream } from "effect"
import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { createServer, connect, type Server, type Socket } from "node:net"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { DEFAULT_LIMITS, type SandboxSpec } from "../../../src/domain/sandbox/types.ts"
import * as DockerSandbox from "../../../src/layers/sandbox/DockerSandbox.ts"
import { OWNER_LABEL } from "../../../src/layers/sandbox/docker/policy.ts"
import type { Sandbox, SandboxSession } from "../../../src/services/Sandbox.ts"
import { dockerReady, sandboxContainers, TEST_IMAGE } from "../../support/docker.ts"
import { waitForProcess } from "../../support/sandboxProcesses.ts"
import { removeTemp } from "../../support/cleanup.ts"

const dirs: Array<string> = []
afterAll(async () => {
  for (const d of dirs) await removeTemp(d)
})
const spec = (overrides: Partial<SandboxSpec> = {}): SandboxSpec => {
  const workspace = mkdtempSync(join(tmpdir(), "anna-ws-"))
  dirs.push(workspace)
  return { agentId: "t", userId: "", workspace, image: TEST_IMAGE, network: "disabled", limits: DEFAULT_LIMITS, ...overrides }
}
/** The session's container id, once a command has started it. */
const idOf = (s: SandboxSession) =>
  Effect.flatMap(s.containerId, (id) => (id === undefined ? Effect.die(new Error("no container yet")) : Effect.succeed(id)))
const docker = new Docker()
const withSandbox = <A, E>(f: (sandbox: Sandbox["Service"]) => Effect.Effect<A, E, Scope.Scope>): Effect.Effect<A, unknown> =>
  Effect.gen(function*() {
    const sandbox = yield* DockerSandbox.make(docker)
    return yield* Effect.scoped(f(sandbox))
  })
const interfaces = (out: string) => out.split("\n").map((l) => l.split(":")[0]?.trim() ?? "").filter((l) => l !== "" && !l.startsWith("Inter") && !l.startsWith("face")).sort()

describe.skipIf(!dockerReady)("DockerSandbox (real Docker engine)", () => {
  it.live("creates one container per session and removes it when the scope closes, also on interruption", () =>
    Effect.gen(function*() {
      const before = yield* Effect.promise(sandboxContainers)
      const id = yield* withSandbox((sb) =>
        Effect.gen(function*() {
          const s = yield* sb.start(spec())
          // No container until a command needs one.
          assert.isUndefined(yield* s.containerId)
          const host = yield* s.exec("hostname")
          const id = yield* idOf(s)
          const info = yield* Effect.promise(() => docker.getContainer(id).inspect())
          assert.isTrue(info.State.Running)
          assert.strictEqual(host.stdout.trim(), id.slice(0, 12))
          return id
        })
      )
      const after = yield* Effect.promise(sandboxContainers)
      assert.notInclude(after, id)
      assert.deepStrictEqual(after.sort(), before.sort())

      // Interrupted in the middle of a long command: the container goes too.
      const session = yield* Deferred.make<SandboxSession>()
      let container = ""
      const fiber = yield* Effect.forkChild(withSandbox((sb) =>
        Effect.gen(function*() {
          const s = yield* sb.start(spec())
          yield* s.exec("true")
          container = yield* idOf(s)
          yield* Deferred.succeed(session, s)
          return yield* s.exec("sleep 600")
        })
      ))
      // The command really runs in the container (seen from a second command of the session).
      yield* waitForProcess(yield* Deferred.await(session), "sleep 600")
      assert.isUndefined(fiber.pollUnsafe(), "the command is still running")
      yield* Fiber.interrupt(fiber)
      const gone = yield* Effect.promise(() => docker.getContainer(container).inspect().then(() => false, () => true))
      assert.isTrue(gone)
    }))

  it.live("enforces the policy: no network when disabled, one interface when allow_all, hardened settings", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const off = yield* sb.start(spec({ limits: { memoryMb: 256, cpus: 0.5, pids: 64, tmpMb: 16, diskMb: 8 } }))
        const offIfs = yield* off.exec("cat /proc/net/dev")
        assert.deepStrictEqual(interfaces(offIfs.stdout), ["lo"])
        const offId = yield* idOf(off)
        const info = yield* Effect.promise(() => docker.getContainer(offId).inspect())
        assert.deepStrictEqual(info.HostConfig.CapDrop, ["ALL"])
        assert.isTrue(info.HostConfig.ReadonlyRootfs)
        assert.include(info.HostConfig.SecurityOpt ?? [], "no-new-privileges")
        assert.strictEqual(info.HostConfig.Memory, 256 * 1024 * 1024)
        assert.strictEqual(info.HostConfig.NanoCpus, 0.5e9)
        assert.strictEqual(info.HostConfig.PidsLimit, 64)
        assert.isFalse(info.HostConfig.Privileged)
        assert.strictEqual(info.HostConfig.NetworkMode, "none")
        assert.deepStrictEqual(info.Mounts.filter((m) => m.Type === "bind").map((m) => m.Destination), ["/workspace"])
        assert.notInclude(JSON.stringify(info.Mounts), "docker.sock")
        const uid = (yield* off.exec("id -u")).stdout.trim()
        assert.notStrictEqual(uid, "0", "never root inside the container")
        assert.strictEqual(uid, String(process.getuid?.() === 0 ? 1000 : process.getuid?.()))
        const caps = yield* off.exec("grep CapEff /proc/self/status")
        assert.match(caps.stdout, /CapEff:\s+0+\s*$/)
        const rootWrite = yield* off.exec("touch /etc/evil")
        assert.notStrictEqual(rootWrite.exitCode, 0)
        const tmpWrite = yield* off.exec("echo scratch > /tmp/x && cat /tmp/x")
        assert.strictEqual(tmpWrite.stdout, "scratch\n")
        const forkBomb = yield* off.exec("for i in $(seq 1 200); do sleep 5 & done; wait", { timeoutMs: 10_000 })
        assert.match(forkBomb.stderr, /can't fork|Resource temporarily unavailable|fork/i)

        const on = yield* sb.start(spec({ network: "allow_all" }))
        const onIfs = yield* on.exec("cat /proc/net/dev")
        assert.deepStrictEqual(interfaces(onIfs.stdout), ["eth0", "lo"])
      })
    ))

  it.live("fails closed: invalid policy, missing image and an unreachable daemon start nothing", () =>
    Effect.gen(function*() {
      const before = (yield* Effect.promise(sandboxContainers)).length
      const invalid = yield* withSandbox((sb) => Effect.flip(sb.start(spec({ network: "bridge-me" }))))
      assert.strictEqual(invalid._tag, "InvalidNetworkPolicy")
      // The container starts with the first command: that is where the image and daemon are needed.
      const firstCommand = (sb: Sandbox["Service"], sp: SandboxSpec) => Effect.flip(Effect.flatMap(sb.start(sp), (s) => s.exec("true")))
      const missing = yield* withSandbox((sb) => firstCommand(sb, spec({ image: "anna-no-such-image:never" })))
      assert.strictEqual(missing._tag, "ImageMissing")
      assert.include(missing.message, "anna sandbox build-image")
      const dead = yield* DockerSandbox.make(new Docker({ socketPath: "/nonexistent/docker.sock", timeout: 2000 })).pipe(
        Effect.flatMap((sb) => Effect.scoped(firstCommand(sb, spec())))
      )
      assert.strictEqual(dead._tag, "DockerUnavailable")
      assert.include(dead.message, "nothing runs on the host")
      assert.strictEqual((yield* Effect.promise(sandboxContainers)).length, before)
    }))

  it.live("confines file access to the workspace: .., absolute paths and symlinks that lead out are refused", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const sp = spec()
        const s = yield* sb.start(sp)
        const text = (path: string) =>
          Effect.map(s.readFile(path, { maxBytes: 1 << 20, maxEntries: 100 }), (e) => (e._tag === "File" ? Buffer.from(e.bytes).toString("utf8") : "<dir>"))
        const refused = (path: string) => Effect.map(Effect.flip(s.readFile(path, { maxBytes: 1 << 20, maxEntries: 100 })), (e) => e.kind)
        yield* s.writeFile("notes/today.md", "hello")
        assert.strictEqual(readFileSync(join(sp.workspace, "notes", "today.md"), "utf8"), "hello")
        assert.strictEqual(yield* text("/workspace/notes/../notes/today.md"), "hello")
        for (const bad of ["../etc/passwd", "/etc/passwd", "/workspace/../etc", "a/../../x", "/", "/workspacex/file"]) {
          assert.strictEqual(yield* refused(bad), "outside", bad)
          assert.strictEqual((yield* Effect.flip(s.writeFile(bad, "x"))).kind, "outside", bad)
        }
        // Links made inside the container, as an agent could.
        yield* s.exec("ln -s /etc /workspace/etc-link && ln -s /nowhere/file /workspace/dangling && mkdir -p /workspace/d && ln -s d /workspace/d-link && echo x > /workspace/d/x.txt")
        assert.strictEqual(yield* refused("etc-link/passwd"), "outside")
        assert.strictEqual(yield* refused("dangling"), "outside")
        assert.strictEqual(yield* text("d-link/x.txt"), "x\n")
        // An absolute link as the container sees it, into the workspace: followed, not refused.
        yield* s.exec("ln -s /workspace/d /workspace/abs-link && ln -s ../../etc /workspace/d/up")
        yield* s.writeFile("abs-link/y.txt", "y")
        assert.strictEqual(readFileSync(join(sp.workspace, "d", "y.txt"), "utf8"), "y")
        assert.strictEqual(yield* refused("d/up/passwd"), "outside")
        // A host-side link to outside is refused the same way (host absolute paths mean nothing here).
        symlinkSync("/etc", join(sp.workspace, "host-link"))
        assert.strictEqual(yield* refused("host-link/hostname"), "outside")
        assert.strictEqual((yield* Effect.flip(s.writeFile("host-link/evil", "x"))).kind, "outside")
        assert.isFalse(existsSync("/etc/evil"))
        // A FIFO is refused at once instead of blocking.
        yield* s.exec("mkfifo /workspace/pipe")
        assert.strictEqual(yield* refused("pipe"), "not_regular")
        // The working directory moves only inside the workspace.
        assert.strictEqual(yield* s.setWorkingDir("d"), "/workspace/d")
        assert.strictEqual((yield* s.exec("pwd")).stdout, "/workspace/d\n")
        assert.strictEqual((yield* Effect.flip(s.setWorkingDir("../../tmp")))._tag, "PathOutsideWorkspace")
      })
    ))

  it.live("runs commands: exit codes, stderr apart, stdin, env, cwd; files land in the host workspace", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const sp = spec()
        const s = yield* sb.start(sp)
        const r = yield* s.exec("echo out; echo err >&2; exit 42")
        assert.deepStrictEqual([r.exitCode, r.stdout, r.stderr, r.timedOut], [42, "out\n", "err\n", false])
        assert.strictEqual((yield* s.exec("tr a-z A-Z", { stdin: "shout\n" })).stdout, "SHOUT\n")
        assert.strictEqual((yield* s.exec("echo $GREETING", { env: { GREETING: "hej" } })).stdout, "hej\n")
        assert.strictEqual((yield* s.exec("mkdir -p sub && cd sub && pwd && echo made > f.txt")).stdout, "/workspace/sub\n")
        assert.strictEqual(readFileSync(join(sp.workspace, "sub", "f.txt"), "utf8"), "made\n")
        writeFileSync(join(sp.workspace, "from-host.txt"), "hello from the host")
        assert.strictEqual((yield* s.exec("cat from-host.txt", { cwd: "/workspace" })).stdout, "hello from the host")
      })
    ))

  it.live("a timeout kills the command and everything it started; huge output is capped and counted", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const s = yield* sb.start(spec())
        const started = Date.now()
        const r = yield* s.exec("sleep 300 & (sleep 301 &) ; sleep 302", { timeoutMs: 1000 })
        assert.isTrue(r.timedOut)
        assert.isBelow(Date.now() - started, 15_000)
        const ps = yield* s.exec("ps -o comm,args | grep 'sleep 30[012]' | grep -v grep || true")
        assert.strictEqual(ps.stdout.trim(), "")
        const big = yield* s.exec("head -c 5000000 /dev/zero | tr '\\0' y; echo done >&2", { maxOutputBytes: 64 * 1024 })
        // The first and the last 32 KiB are kept, the gap is marked and counted.
        assert.strictEqual(big.stdoutDropped, 5_000_000 - 64 * 1024)
        assert.isTrue(big.stdout.startsWith("y".repeat(32 * 1024) + "\n[… 4,934,464 bytes dropped by the sandbox …]\n"))
        assert.isTrue(big.stdout.endsWith("\n" + "y".repeat(32 * 1024)))
        const utf8 = yield* s.exec("i=0; while [ $i -lt 20000 ]; do printf '日本'; i=$((i+1)); done", { maxOutputBytes: 1001 })
        assert.notInclude(utf8.stdout, "\ufffd")
        assert.strictEqual(big.stderr, "done\n")
      })
    ))

  it.live("starts long-lived processes with stdio, killed when their scope closes", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const s = yield* sb.start(spec())
        const echoed = yield* Effect.scoped(Effect.gen(function*() {
          const p = yield* s.startProcess(["cat"])
          yield* p.write("line one\n")
          yield* p.end
          const out = yield* Stream.runCollect(p.stdout)
          const code = yield* p.exitCode
          return [Buffer.concat(out.map((b) => Buffer.from(b))).toString(), code] as const
        }))
        assert.deepStrictEqual(echoed, ["line one\n", 0])
        yield* Effect.scoped(Effect.gen(function*() {
          yield* s.startProcess(["sleep", "555"])
          const ps = yield* s.exec("ps -o args | grep 'sleep 555' | grep -v grep")
          assert.include(ps.stdout, "sleep 555")
        }))
        const after = yield* s.exec("ps -o args | grep 'sleep 555' | grep -v grep || true")
        assert.strictEqual(after.stdout.trim(), "")
      })
    ))

  it.live("runs several sessions at once, each in its own container", () =>
    withSandbox((sb) =>
      Effect.gen(function*() {
        const sessions = yield* Effect.all([1, 2, 3].map(() => sb.start(spec())), { concurrency: 3 })
        const names = yield* Effect.all(sessions.map((s) => s.exec("sleep 1; hostname")), { concurrency: 3 })
        assert.strictEqual(new Set(names.map((n) => n.stdout.trim())).size, 3)
        const ids = yield* Effect.all(sessions.map(idOf))
        assert.deepStrictEqual(names.map((n) => n.stdout.trim()), ids.map((id) => id.slice(0, 12)))
      })
    ))

  it.live("removes containers orphaned by a dead anna process at start", () =>
    Effect.gen(function*() {
      const orphan = yield* Effect.promise(() =>
        docker.createContainer({
          Image: TEST_IMAGE,
          Cmd: ["/bin/sh", "-c", "sleep 600"],
          // A PID far above any live one on this host: its process is gone.
          Labels: { "dev.anna.sandbox": "1", [OWNER_LABEL]: `${hostname()}:999999` },
          HostConfig: { NetworkMode: "none" }
        })
      )
      const removed = yield* DockerSandbox.removeOrphans(docker)
      assert.isAtLeast(removed, 1)
      const gone = yield* Effect.promise(() => orphan.inspect().then(() => false, () => true))
      assert.isTrue(gone)
    }))

  it.live("a daemon that goes away mid-session gives a typed error, not a hang", () =>
    Effect.gen(function*() {
      // A socket proxy in front of the real daemon, cut while a command runs: to the client this is
      // exactly a daemon that died (the real one keeps serving the other tests).
      const dir = mkdtempSync(join(tmpdir(), "anna-proxy-"))
      dirs.push(dir)
      const socketPath = join(dir, "docker.sock")
      const conns = new Set<Socket>()
      const server: Server = createServer((client) => {
        const upstream = connect("/var/run/docker.sock")
        conns.add(client).add(upstream)
        client.pipe(upstream).pipe(client)
        client.on("error", () => upstream.destroy())
        upstream.on("error", () => client.destroy())
      })
      yield* Effect.promise(() => new Promise<void>((done) => server.listen(socketPath, () => done())))
      const proxied = new Docker({ socketPath, timeout: 5000 })
      let container = ""
      const exit = yield* Effect.exit(
        DockerSandbox.make(proxied).pipe(
          Effect.flatMap((sb) =>
            Effect.scoped(Effect.gen(function*() {
              const s = yield* sb.start(spec())
              yield* s.exec("true")
              container = yield* idOf(s)
              const running = yield* Effect.forkChild(s.exec("sleep 60"))
              // The command really runs in the container before the daemon goes away.
              yield* waitForProcess(s, "sleep 60")
              assert.isUndefined(running.pollUnsafe(), "the command is still running")
              server.close()
              for (const c of conns) c.destroy()
              const r = yield* Fiber.join(running)
              return r
            }))
          ),
          Effect.timeout(30_000)
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      const reason = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
      assert.strictEqual(reason?._tag === "Fail" ? (reason.error as { _tag: string })._tag : "none", "SandboxFailure")
      // The real daemon is fine: clean up what the cut connection could not.
      yield* Effect.promise(() => docker.getContainer(container).remove({ force: true }).catch(() => undefined))
      assert.isFalse(existsSync(socketPath) && server.listening)
    }))
})
