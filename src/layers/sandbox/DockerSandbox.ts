/**
 * Sandbox on Docker (dockerode). A session is one hardened container (docker/policy.ts), created
 * when the runner session's first command needs it — within the caps on live containers per user
 * and in all — and removed when the session's scope closes (normally, on failure or on
 * interruption) or when `close` is called (its agent's sandbox settings changed). Before anything runs, the container is inspected and compared with its policy; a
 * mismatch removes it. Containers are labelled with their owner (host and PID) and their installation
 * (ANNA_HOME on its host, when AppConfig is provided), so the ones left by a crashed anna are found
 * and removed when the next one of the same installation starts — never another installation's. Every failure to start is a typed
 * error and nothing runs: there is no fallback to the host.
 */
import type Docker from "dockerode"
import { Clock, Duration, Effect, Exit, Layer, Option, Ref, Scope, Semaphore } from "effect"
import { randomUUID } from "node:crypto"
import { promises as fs } from "node:fs"
import { hostname } from "node:os"
import {
  ImageMissing,
  InvalidNetworkPolicy,
  PolicyViolation,
  SandboxClosed,
  SandboxFailure,
  type SandboxStartError
} from "../../domain/sandbox/errors.ts"
import {
  DEFAULT_CAPS,
  DEFAULT_EXEC_TIMEOUT_MS,
  type DiskBound,
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  NETWORK_POLICIES,
  type NetworkPolicy,
  SANDBOX_LABEL,
  type SandboxCaps,
  type SandboxSpec,
  WORKSPACE_MOUNT
} from "../../domain/sandbox/types.ts"
import { Sandbox, type SandboxSession, type StartOptions } from "../../services/Sandbox.ts"
import * as Admission from "./admission.ts"
import { AppConfig } from "../../services/AppConfig.ts"
import { call, checkEnforceable, ensureImage, errorDetail, imagePresent, installationOf, makeDocker, ping, sandboxContainers } from "./docker/client.ts"
import { runCommand, startProcess } from "./docker/exec.ts"
import * as WorkspaceDisk from "./workspaceDisk.ts"
import * as WorkspaceFiles from "./workspaceFiles.ts"
import { type ContainerPlan, createOptions, FALLBACK_UID, sandboxUser, verifyContainer } from "./docker/policy.ts"

type ProcessOptions = Parameters<SandboxSession["startProcess"]>[1]

/** Host and PID of this process: the owner label of its containers. */
export const owner = (): string => `${hostname()}:${process.pid}`

/** Removes containers this installation's anna processes on this host left behind (their owner PID is gone). */
export const removeOrphans = (docker: Docker, installation?: string) =>
  Effect.gen(function*() {
    const containers = yield* sandboxContainers(docker, undefined, installation).pipe(
      Effect.mapError((e) => new SandboxFailure({ operation: "list containers", detail: e.detail }))
    )
    let removed = 0
    for (const c of containers) {
      if (c.status !== "orphan") continue
      yield* call(() => docker.getContainer(c.id).remove({ force: true }), (e) => e, Duration.seconds(30)).pipe(Effect.ignore)
      removed++
    }
    if (removed > 0) yield* Effect.logInfo(`sandbox: removed ${removed} container(s) left by a previous run`)
    return removed
  })

/**
 * The workspace folder, created 0700 if missing (when anna is root, its top is handed to the
 * sandbox's user), with its disk bound: its own filesystem mounted there when it can be (see
 * workspaceDisk.ts), else the soft quota.
 */
const prepareWorkspace = (dir: string, diskMb: number, setting: DiskBound, inUse: (workspace: string) => Promise<string | undefined>) =>
  Effect.tryPromise({
    try: async () => {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 })
      const real = await fs.realpath(dir)
      const st = await fs.lstat(real)
      if (!st.isDirectory()) throw new Error(`${real} is not a folder`)
      const root = process.getuid?.() === 0
      const sandboxOwner = root ? { uid: FALLBACK_UID, gid: FALLBACK_UID } : { uid: st.uid, gid: st.gid }
      const disk = await WorkspaceDisk.attach(real, { bytes: diskMb * 1024 * 1024, owner: sandboxOwner, setting, inUse: () => inUse(real) })
      // Only the top: what is inside was made by the sandbox (its user already) or by the file tools,
      // which give new files the owner of this folder. Nothing is walked.
      const top = await fs.lstat(real)
      if (root && top.uid === 0) await fs.chown(real, FALLBACK_UID, FALLBACK_UID)
      const owner = await fs.stat(real)
      return { real, owner: { uid: owner.uid, gid: owner.gid }, disk }
    },
    catch: (e) => new SandboxFailure({ operation: "prepare workspace", detail: errorDetail(e) })
  })

/**
 * Whether the container sees the workspace's own filesystem at /workspace (the engine shares this
 * process's mounts): read from the container's mountinfo with shell builtins only. A systemd unit
 * with private mounts would otherwise give the container the empty folder under the mount — files
 * split in two and no bound.
 */
const WORKSPACE_DEVICE = `while read -r _ _ dev _ point _; do [ "$point" = ${WORKSPACE_MOUNT} ] && d=$dev; done < /proc/self/mountinfo; echo "$d"`

/** How long a `check` answer is reused. */
const CHECK_TTL_MS = 10_000

/** Images anna builds itself (`anna sandbox build-image`, default tag anna-sandbox:latest): no registry has them. */
const isLocalImage = (image: string): boolean => image.split("/").at(-1)?.startsWith("anna-sandbox:") === true || image === "anna-sandbox"

export interface Options {
  /** This installation's label value (`installationOf(home)`); without it containers carry none. */
  readonly installation?: string | undefined
  /** What counts its containers against the caps; default: `SandboxAdmission` when set, else an in-memory count of its own. */
  readonly admission?: Admission.Admission | undefined
}

export const make = (client?: Docker, options: Options = {}) =>
  Effect.gen(function*() {
    const docker = client ?? (yield* makeDocker())
    const installation = options.installation
    // Best effort at start: a daemon that is down now fails the first session, not anna's start.
    yield* removeOrphans(docker, installation).pipe(Effect.catch((e) => Effect.logDebug(`sandbox: no orphan cleanup (${e.detail})`)))
    const me = owner()
    const admission = options.admission ?? (yield* Admission.SandboxAdmission) ?? Admission.make()
    /** A running sandbox container (of any anna) that has `workspace` mounted, if any. */
    const mountedIn = (workspace: string): Promise<string | undefined> =>
      docker.listContainers({ filters: { label: [SANDBOX_LABEL] } }).then((cs) => {
        const c = cs.find((x) => (x.Mounts ?? []).some((m) => m.Source === workspace))
        return c === undefined ? undefined : `sandbox container ${c.Id.slice(0, 12)}`
      })

    /** Creates, starts and verifies the container in `scope`; counted against the caps (as `slot`) until it is removed. */
    const createContainer = (spec: SandboxSpec, network: NetworkPolicy, workspace: string, disk: WorkspaceDisk.Attached, slot: Admission.Slot, caps: SandboxCaps, scope: Scope.Scope) =>
      Effect.gen(function*() {
        yield* ping(docker)
        yield* ensureImage(docker, spec.image)
        yield* checkEnforceable(docker, network)
        const plan: ContainerPlan = {
          image: spec.image,
          network,
          limits: spec.limits,
          workspace,
          user: sandboxUser(),
          owner: me,
          agentId: spec.agentId,
          installation
        }
        yield* Effect.acquireRelease(admission.admit(slot, caps), () => admission.release(slot))
        const container = yield* Effect.acquireRelease(
          call(() => docker.createContainer(createOptions(plan)), (e) => new SandboxFailure({ operation: "create container", detail: errorDetail(e) })),
          (c) =>
            call(() => c.remove({ force: true }), (e) => e, Duration.seconds(30)).pipe(
              Effect.catch((e) => Effect.logWarning(`sandbox: could not remove container ${c.id.slice(0, 12)}: ${errorDetail(e)}`))
            )
        )
        yield* call(() => container.start(), (e) => new SandboxFailure({ operation: "start container", detail: errorDetail(e) }))
        const info = yield* call(() => container.inspect(), (e) => new SandboxFailure({ operation: "inspect container", detail: errorDetail(e) }))
        const problems = verifyContainer(info, plan)
        if (problems.length > 0) return yield* new PolicyViolation({ problems })
        if (info.State.Running !== true) {
          return yield* new SandboxFailure({ operation: "start container", detail: `the container is ${info.State.Status} (does the image have /bin/sh?)` })
        }
        if (disk.kind === "filesystem") {
          const seen = yield* runCommand(docker, container, WORKSPACE_DEVICE, {
            user: plan.user,
            cwd: "/",
            env: {},
            stdin: undefined,
            timeoutMs: 30_000,
            maxOutputBytes: 4096
          })
          if (seen.stdout.trim() !== disk.device) {
            return yield* new PolicyViolation({
              problems: [
                `the container sees device ${seen.stdout.trim() || "?"} at ${WORKSPACE_MOUNT}, not the workspace's own filesystem (${disk.device}): does anna run in a mount namespace of its own (systemd PrivateMounts=, ProtectSystem=)? Run it in the engine's, or set sandbox.disk_bound to quota`
              ]
            })
          }
        }
        return { container, user: plan.user }
      }).pipe(Scope.provide(scope))

    const start = Effect.fn("Sandbox.start")(function*(spec: SandboxSpec, options: StartOptions = {}) {
      if (!NETWORK_POLICIES.includes(spec.network as NetworkPolicy)) {
        return yield* new InvalidNetworkPolicy({ policy: spec.network })
      }
      const network = spec.network as NetworkPolicy
      const capsNow = options.caps ?? Effect.succeed(DEFAULT_CAPS)
      const { real: workspace, owner: workspaceOwner, disk } = yield* prepareWorkspace(spec.workspace, spec.limits.diskMb, options.diskBound ?? "auto", mountedIn)
      if (disk.kind === "filesystem" && disk.problem !== undefined) {
        yield* Effect.logWarning(`sandbox: the filesystem of ${workspace} stays at ${disk.bytes} bytes, not the quota's ${spec.limits.diskMb} MiB: ${disk.problem}`)
      }
      const again = { bytes: spec.limits.diskMb * 1024 * 1024, owner: workspaceOwner, setting: options.diskBound ?? "auto" } as const
      const files = yield* WorkspaceFiles.make(workspace, {
        quotaMb: spec.limits.diskMb,
        owner: workspaceOwner,
        disk,
        ready: disk.kind === "filesystem" ? () => WorkspaceDisk.attach(workspace, again).then(() => undefined) : undefined
      })
      const sessionScope = yield* Effect.scope

      // The container: none until a command needs it; one at a time is created; `close` removes it
      // for good, an eviction (a lowered cap) until the next command.
      type Running = { readonly container: Docker.Container; readonly user: string; readonly scope: Scope.Closeable; readonly slot: Admission.Slot }
      const state = yield* Ref.make<{ readonly _tag: "Idle" } | { readonly _tag: "Running"; readonly running: Running } | { readonly _tag: "Closed"; readonly reason: string }>({ _tag: "Idle" })
      const starting = yield* Semaphore.make(1)
      const evict: Effect.Effect<boolean> = starting.withPermits(1)(Effect.gen(function*() {
        const now = yield* Ref.get(state)
        if (now._tag !== "Running" || now.running.slot.busy > 0) return false
        yield* Ref.set(state, { _tag: "Idle" })
        yield* Scope.close(now.running.scope, Exit.void)
        return true
      }))
      /** The running container (started if needed), marked busy until `done`. */
      const acquire: Effect.Effect<Running, SandboxStartError> = starting.withPermits(1)(Effect.gen(function*() {
        const now = yield* Ref.get(state)
        if (now._tag === "Closed") return yield* new SandboxClosed({ reason: now.reason })
        let running: Running
        if (now._tag === "Running") running = now.running
        else {
          const scope = yield* Scope.fork(sessionScope)
          const slot: Admission.Slot = { id: randomUUID(), workspace, userId: spec.userId, lastUsed: 0, busy: 0, evict }
          const made = yield* createContainer(spec, network, workspace, disk, slot, yield* capsNow, scope).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
          running = { ...made, scope, slot }
          yield* Ref.set(state, { _tag: "Running", running })
        }
        running.slot.busy++
        running.slot.lastUsed = yield* Clock.currentTimeMillis
        return running
      }))
      const done = (running: Running) => Effect.sync(() => void running.slot.busy--)
      /** Runs `use` in the container, within the caps as they are now (see admission.ts). */
      const withinCaps = (running: Running) =>
        Effect.gen(function*() {
          const refused = yield* Effect.flip(admission.enforce(running.slot, yield* capsNow)).pipe(Effect.option)
          if (Option.isNone(refused)) return
          // Not busy for a moment, so that its own container can go (still busy if another command runs in it).
          running.slot.busy--
          yield* evict
          running.slot.busy++
          return yield* refused.value
        })
      const inContainer = <A, E, R>(use: (running: Running) => Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(acquire, (running) => Effect.andThen(withinCaps(running), use(running)), done)
      const close = Effect.fn("SandboxSession.close")(function*(reason: string) {
        const was = yield* Ref.getAndSet(state, { _tag: "Closed", reason })
        if (was._tag === "Running") yield* Scope.close(was.running.scope, Exit.void)
      })

      const session: SandboxSession = {
        spec,
        containerId: Effect.map(Ref.get(state), (s) => (s._tag === "Running" ? s.running.container.id : undefined)),
        workingDir: files.workingDir,
        setWorkingDir: files.setWorkingDir,
        readFile: files.readFile,
        writeFile: files.writeFile,
        exec: Effect.fn("SandboxSession.exec")(function*(command: string, options: ExecOptions = {}) {
          const dir = options.cwd ?? (yield* files.workingDir)
          // Over quota: the command may read and delete, but not grow any file.
          const guarded = (yield* files.overQuota) ? `ulimit -f 0 2>/dev/null\n${command}` : command
          const result = yield* inContainer(({ container: c, user }) =>
            Effect.gen(function*() {
              const started = yield* Clock.currentTimeMillis
              // The soft quota stops a command that passes it while it runs (losing the command's interrupted runCommand kills it).
              const stopped = Effect.map(files.passesQuota, (note) => ({
                exitCode: 137,
                stdout: "",
                stderr: note,
                stdoutDropped: 0,
                stderrDropped: 0,
                timedOut: false,
                durationMs: 0
              }))
              const ran = yield* Effect.raceFirst(
                runCommand(docker, c, guarded, {
                  user,
                  cwd: dir,
                  env: options.env ?? {},
                  stdin: options.stdin,
                  timeoutMs: options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
                  maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES
                }),
                stopped
              )
              return ran.durationMs === 0 && ran.exitCode === 137 ? { ...ran, durationMs: (yield* Clock.currentTimeMillis) - started } : ran
            })
          )
          const note = yield* files.afterCommand
          // The span (its own duration is the exec time) says how the command ended, never what it was or said.
          yield* Effect.annotateCurrentSpan({
            "process.exit.code": result.exitCode,
            "anna.sandbox.timed_out": result.timedOut,
            "anna.sandbox.duration_ms": result.durationMs
          })
          return note === undefined ? result : { ...result, stderr: result.stderr === "" ? note : `${result.stderr}\n${note}` }
        }),
        startProcess: Effect.fn("SandboxSession.startProcess")(function*(command: ReadonlyArray<string>, options: ProcessOptions = {}) {
          const dir = options.cwd ?? (yield* files.workingDir)
          // Busy for the process's life (its scope is the caller's): a lowered cap never removes a container a process runs in.
          const running = yield* Effect.acquireRelease(acquire, done)
          yield* withinCaps(running)
          return yield* startProcess(docker, running.container, command, { user: running.user, cwd: dir, env: options.env ?? {} })
        }),
        close
      }
      return session
    })

    // Whether containers can start now, per (image, network), remembered for CHECK_TTL_MS so that many
    // sessions starting at once ask the engine once.
    const checked = new Map<string, { readonly at: number; readonly exit: Exit.Exit<void, SandboxStartError> }>()
    const check = Effect.fn("Sandbox.check")(function*(spec: SandboxSpec) {
      const key = `${spec.image}\u0000${spec.network}`
      const now = yield* Clock.currentTimeMillis
      const known = checked.get(key)
      if (known !== undefined && now - known.at < CHECK_TTL_MS) return yield* known.exit
      const exit = yield* Effect.exit(Effect.gen(function*() {
        if (!NETWORK_POLICIES.includes(spec.network as NetworkPolicy)) return yield* new InvalidNetworkPolicy({ policy: spec.network })
        yield* ping(docker)
        // An image of the locally built family cannot be pulled: missing is missing. Any other name may
        // come from a registry when the first command needs it.
        if (isLocalImage(spec.image) && !(yield* imagePresent(docker, spec.image))) {
          return yield* new ImageMissing({ image: spec.image, detail: "not built on this machine" })
        }
        yield* checkEnforceable(docker, spec.network as NetworkPolicy)
      }))
      checked.set(key, { at: now, exit })
      return yield* exit
    })

    const prepare = Effect.fn("Sandbox.prepare")(function*(spec: SandboxSpec, options: StartOptions = {}) {
      return (yield* prepareWorkspace(spec.workspace, spec.limits.diskMb, options.diskBound ?? "auto", mountedIn)).real
    })

    return Sandbox.of({ start, check, prepare, live: admission.live })
  })

/**
 * The Sandbox on the local Docker engine (or DOCKER_HOST), for the installation at the home of the
 * AppConfig in context (every composition of anna has one). Built without it, its containers carry
 * no installation label: it judges unlabelled containers by their owner label alone and leaves
 * labelled ones to their installation.
 */
export const layer = Layer.effect(
  Sandbox,
  Effect.gen(function*() {
    const app = yield* Effect.serviceOption(AppConfig)
    return yield* make(undefined, { installation: Option.getOrUndefined(Option.map(app, (a) => installationOf(a.home))) })
  })
)
