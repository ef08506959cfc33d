/**
 * Sandbox on Docker (dockerode). A session is one hardened container (docker/policy.ts), created
 * for the scope of a runner session and removed when that scope closes — normally, on failure or on
 * interruption. Before anything runs, the container is inspected and compared with its policy; a
 * mismatch removes it. Containers are labelled with their owner (host and PID), so the ones left by
 * a crashed anna are found and removed when the next one starts. Every failure to start is a typed
 * error and nothing runs: there is no fallback to the host.
 */
import type Docker from "dockerode"
import { Duration, Effect, Layer, Ref } from "effect"
import { lchownSync, lstatSync, mkdirSync, readdirSync, realpathSync } from "node:fs"
import { join } from "node:path"
import { hostname } from "node:os"
import { InvalidNetworkPolicy, PathOutsideWorkspace, PolicyViolation, SandboxFailure } from "../domain/sandbox/errors.ts"
import {
  DEFAULT_EXEC_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  NETWORK_POLICIES,
  type NetworkPolicy,
  SANDBOX_LABEL,
  type SandboxSpec,
  WORKSPACE_MOUNT
} from "../domain/sandbox/types.ts"
import { Sandbox, type SandboxSession } from "../services/Sandbox.ts"
import { call, checkEnforceable, ensureImage, errorDetail, makeDocker, ping } from "./docker/client.ts"
import { runCommand, startProcess } from "./docker/exec.ts"
import { containerPath, resolveInWorkspace } from "./docker/paths.ts"
import { type ContainerPlan, createOptions, FALLBACK_UID, OWNER_LABEL, sandboxUser, verifyContainer } from "./docker/policy.ts"

/**
 * When anna runs as root the sandbox runs as uid 1000: the workspace and what root made in it are
 * handed to that user (at most 100,000 entries; symlinks are not followed), so the agent can use
 * its files from inside the container.
 */
const handOver = (dir: string, uid: number) => {
  let budget = 100_000
  const walk = (p: string) => {
    if (budget-- <= 0) return
    const st = lstatSync(p)
    if (st.uid === 0) lchownSync(p, uid, uid)
    if (st.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e))
  }
  walk(dir)
}

/** Host and PID of this process: the owner label of its containers. */
export const owner = (): string => `${hostname()}:${process.pid}`

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as { code?: string }).code === "EPERM"
  }
}

/** Removes containers this host's anna processes left behind (their owner PID is gone). */
export const removeOrphans = (docker: Docker) =>
  Effect.gen(function*() {
    const containers = yield* call(
      () => docker.listContainers({ all: true, filters: { label: [SANDBOX_LABEL] } }),
      (e) => new SandboxFailure({ operation: "list containers", detail: errorDetail(e) }),
      Duration.seconds(10)
    )
    const me = hostname()
    let removed = 0
    for (const c of containers) {
      const [host, pid] = (c.Labels[OWNER_LABEL] ?? "").split(":")
      if (host !== me || pid === undefined || alive(Number(pid))) continue
      yield* call(() => docker.getContainer(c.Id).remove({ force: true }), (e) => e, Duration.seconds(30)).pipe(Effect.ignore)
      removed++
    }
    if (removed > 0) yield* Effect.logInfo(`sandbox: removed ${removed} container(s) left by a previous run`)
    return removed
  })

export const make = (docker: Docker = makeDocker()) =>
  Effect.gen(function*() {
    // Best effort at start: a daemon that is down now fails the first session, not anna's start.
    yield* removeOrphans(docker).pipe(Effect.catch((e) => Effect.logDebug(`sandbox: no orphan cleanup (${e.detail})`)))
    const me = owner()

    const start = Effect.fn("Sandbox.start")(function*(spec: SandboxSpec) {
      if (!NETWORK_POLICIES.includes(spec.network as NetworkPolicy)) {
        return yield* new InvalidNetworkPolicy({ policy: spec.network })
      }
      const network = spec.network as NetworkPolicy
      yield* ping(docker)
      yield* ensureImage(docker, spec.image)
      yield* checkEnforceable(docker, network)
      const workspace = yield* Effect.try({
        try: () => {
          mkdirSync(spec.workspace, { recursive: true })
          const real = realpathSync(spec.workspace)
          if (process.getuid?.() === 0) handOver(real, FALLBACK_UID)
          return real
        },
        catch: (e) => new SandboxFailure({ operation: "prepare workspace", detail: errorDetail(e) })
      })
      const plan: ContainerPlan = {
        image: spec.image,
        network,
        limits: spec.limits,
        workspace,
        user: sandboxUser(),
        owner: me,
        agentId: spec.agentId
      }
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

      const cwd = yield* Ref.make(WORKSPACE_MOUNT)
      const resolvePath = (path: string) => Effect.flatMap(Ref.get(cwd), (dir) => resolveInWorkspace(workspace, dir, path))
      const session: SandboxSession = {
        containerId: container.id,
        spec,
        workingDir: Ref.get(cwd),
        setWorkingDir: (path) =>
          Effect.gen(function*() {
            const dir = yield* Ref.get(cwd)
            yield* resolveInWorkspace(workspace, dir, path)
            const next = containerPath(dir, path)
            if (next === undefined) return yield* new PathOutsideWorkspace({ path })
            yield* Ref.set(cwd, next)
            return next
          }),
        exec: (command, options = {}) =>
          Effect.gen(function*() {
            const dir = options.cwd ?? (yield* Ref.get(cwd))
            return yield* runCommand(docker, container, command, {
              user: plan.user,
              cwd: dir,
              env: options.env ?? {},
              stdin: options.stdin,
              timeoutMs: options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
              maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES
            })
          }),
        resolvePath,
        startProcess: (command, options = {}) =>
          Effect.gen(function*() {
            const dir = options.cwd ?? (yield* Ref.get(cwd))
            return yield* startProcess(docker, container, command, { user: plan.user, cwd: dir, env: options.env ?? {} })
          })
      }
      return session
    })

    return Sandbox.of({ start })
  })

/** The Sandbox on the local Docker engine (or DOCKER_HOST). */
export const layer = Layer.effect(Sandbox, Effect.suspend(() => make()))
