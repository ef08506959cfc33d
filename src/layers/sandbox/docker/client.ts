/**
 * Talking to the Docker engine (dockerode): reachability, images (present, pulled with progress,
 * or imported from a root filesystem), whether a network policy can be enforced, and the checks
 * `anna doctor` reports. Every call has a deadline, so a dead daemon is an error, never a hang.
 */
import type Docker from "dockerode"
import { Duration, Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { chmodSync, closeSync, copyFileSync, createReadStream, existsSync, mkdirSync, openSync, readSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { dirname, join } from "node:path"
import type { Readable } from "node:stream"
import { DockerUnavailable, ImageMissing, PolicyUnenforceable, SandboxFailure } from "../../../domain/sandbox/errors.ts"
import { DEFAULT_IMAGE, type NetworkPolicy, SANDBOX_LABEL } from "../../../domain/sandbox/types.ts"
import { createHash } from "node:crypto"
import { AGENT_LABEL, INSTALLATION_LABEL, OWNER_LABEL } from "./policy.ts"

/**
 * A client with a deadline on every API call (the daemon's own socket, or DOCKER_HOST). dockerode
 * is imported on first use, so commands that never reach Docker never load it.
 */
export const makeDocker = (timeoutMs = 30_000): Effect.Effect<Docker> =>
  Effect.promise(() => import("dockerode")).pipe(Effect.map((m) => new m.default({ timeout: timeoutMs })))

export const errorDetail = (e: unknown): string => {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code
    const status = (e as { statusCode?: unknown }).statusCode
    return [typeof status === "number" ? `HTTP ${status}` : undefined, typeof code === "string" ? code : undefined, e.message.split("\n")[0]]
      .filter((x) => x !== undefined && x !== "")
      .join(": ")
  }
  return String(e)
}

const statusOf = (e: unknown): number | undefined => {
  const s = (e as { statusCode?: unknown } | null)?.statusCode
  return typeof s === "number" ? s : undefined
}

/** Runs a dockerode call with a deadline; failures become `onError`. */
export const call = <A, E>(
  what: () => Promise<A>,
  onError: (e: unknown) => E,
  deadline: Duration.Input = Duration.seconds(30)
): Effect.Effect<A, E> =>
  Effect.tryPromise({ try: what, catch: onError }).pipe(
    Effect.timeoutOrElse({ duration: deadline, orElse: () => Effect.fail(onError(new Error("no answer from the Docker daemon in time"))) })
  )

export interface EngineInfo {
  readonly version: string
  readonly apiVersion: string
  readonly os: string
}

export const ping = (docker: Docker) =>
  call(() => docker.ping(), (e) => new DockerUnavailable({ detail: errorDetail(e) }), Duration.seconds(5)).pipe(
    Effect.andThen(call(() => docker.version(), (e) => new DockerUnavailable({ detail: errorDetail(e) }), Duration.seconds(5))),
    Effect.map((v): EngineInfo => ({ version: v.Version, apiVersion: v.ApiVersion, os: `${v.Os}/${v.Arch}` }))
  )

export const imagePresent = (docker: Docker, image: string) =>
  call(() => docker.getImage(image).inspect(), (e) => e).pipe(
    Effect.as(true),
    Effect.catch((e) =>
      statusOf(e) === 404
        ? Effect.succeed(false)
        : Effect.fail(new DockerUnavailable({ detail: errorDetail(e) }))
    )
  )

/** Pulls `image`, logging progress; any failure (no registry, unknown image) is ImageMissing. */
export const pullImage = (docker: Docker, image: string) =>
  Effect.callback<void, ImageMissing>((resume) => {
    docker.pull(image, {}, (err: unknown, stream: NodeJS.ReadableStream | undefined) => {
      if (err !== null && err !== undefined || stream === undefined) {
        return resume(Effect.fail(new ImageMissing({ image, detail: `pull failed: ${errorDetail(err)}` })))
      }
      let last = 0
      docker.modem.followProgress(
        stream,
        (done: unknown) =>
          resume(done === null || done === undefined ? Effect.void : Effect.fail(new ImageMissing({ image, detail: `pull failed: ${errorDetail(done)}` }))),
        (event: { status?: string; progress?: string; id?: string }) => {
          const now = Date.now()
          if (now - last > 1000) {
            last = now
            process.stderr.write(`pulling ${image}: ${event.id ?? ""} ${event.status ?? ""} ${event.progress ?? ""}\n`)
          }
        }
      )
    })
  }).pipe(Effect.timeoutOrElse({ duration: Duration.minutes(10), orElse: () => Effect.fail(new ImageMissing({ image, detail: "pull timed out" })) }))

/** The image, present or pulled; ImageMissing when neither works. */
export const ensureImage = (docker: Docker, image: string) =>
  imagePresent(docker, image).pipe(
    Effect.flatMap((present) =>
      present
        ? Effect.void
        : pullImage(docker, image).pipe(
          Effect.tapError((e) => Effect.logDebug(e.message)),
          Effect.mapError((e) => new ImageMissing({ image, detail: `not found locally; ${e.detail}` }))
        )
    )
  )

/** `disabled` needs nothing; `allow_all` needs the engine's bridge network. */
export const checkEnforceable = (
  docker: Docker,
  policy: NetworkPolicy
): Effect.Effect<void, PolicyUnenforceable | DockerUnavailable> =>
  policy === "disabled"
    ? Effect.void
    : call(() => docker.getNetwork("bridge").inspect(), (e) => e).pipe(
      Effect.asVoid,
      Effect.catch((e): Effect.Effect<never, PolicyUnenforceable | DockerUnavailable> =>
        statusOf(e) === 404
          ? Effect.fail(new PolicyUnenforceable({ policy, detail: "the engine has no bridge network (is dockerd running with --bridge=none?)" }))
          : Effect.fail(new DockerUnavailable({ detail: errorDetail(e) }))
      )
    )

/**
 * Imports a root filesystem (a folder, or a .tar file) as an image, as `docker import` does. The
 * folder is streamed through the system's `tar`.
 */
export const importRootfs = (docker: Docker, rootfs: string, tag: string) =>
  Effect.gen(function*() {
    const st = yield* Effect.try({
      try: () => statSync(rootfs),
      catch: () => new SandboxFailure({ operation: "import image", detail: `no such file or folder: ${rootfs}` })
    })
    const tarStream: Readable = st.isDirectory()
      ? spawn("tar", ["-C", rootfs, "-c", "."], { stdio: ["ignore", "pipe", "inherit"] }).stdout
      : createReadStream(rootfs)
    const [repo, version] = tag.includes(":") ? [tag.slice(0, tag.lastIndexOf(":")), tag.slice(tag.lastIndexOf(":") + 1)] : [tag, "latest"]
    yield* Effect.callback<void, SandboxFailure>((resume) => {
      docker.importImage(tarStream, { repo, tag: version }, (err: unknown, stream: NodeJS.ReadableStream | undefined) => {
        if (err !== null && err !== undefined || stream === undefined) {
          return resume(Effect.fail(new SandboxFailure({ operation: "import image", detail: errorDetail(err) })))
        }
        docker.modem.followProgress(stream, (done: unknown) =>
          resume(done === null || done === undefined ? Effect.void : Effect.fail(new SandboxFailure({ operation: "import image", detail: errorDetail(done) }))))
      })
    })
  })

export interface DoctorCheck {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
  /** What to do about it, when not ok. */
  readonly fix?: string | undefined
}

/** What `anna doctor` reports about the sandbox for one image and network policy. */
export const diagnose = (docker: Docker, image: string, network: string) =>
  Effect.gen(function*() {
    const checks: Array<DoctorCheck> = []
    const engine = yield* Effect.result(ping(docker))
    if (engine._tag === "Failure") {
      checks.push({ name: "docker", ok: false, detail: engine.failure.detail, fix: "start the Docker daemon (sudo systemctl start docker, or dockerd) and make sure this user can reach it" })
      return checks
    }
    checks.push({ name: "docker", ok: true, detail: `engine ${engine.success.version} (API ${engine.success.apiVersion}, ${engine.success.os})` })
    const present = yield* Effect.result(imagePresent(docker, image))
    checks.push(
      present._tag === "Success" && present.success
        ? { name: "image", ok: true, detail: `${image} is present` }
        : {
          name: "image",
          ok: false,
          detail: present._tag === "Failure" ? present.failure.detail : `${image} is missing`,
          fix: `anna sandbox build-image${image === DEFAULT_IMAGE ? "" : ` --tag ${image}`} (from the static busybox on PATH: apt-get install busybox-static; or --rootfs <folder-or-tar>, README: "Sandbox image"), or docker pull ${image} where a registry is reachable`
        }
    )
    if (network !== "disabled" && network !== "allow_all") {
      checks.push({ name: "network policy", ok: false, detail: `"${network}" is not a policy`, fix: "anna agent set <id> --network disabled|allow_all" })
    } else {
      const enforceable = yield* Effect.result(checkEnforceable(docker, network))
      checks.push(
        enforceable._tag === "Success"
          ? { name: "network policy", ok: true, detail: `${network} can be enforced` }
          : { name: "network policy", ok: false, detail: enforceable.failure.message, fix: "use --network disabled, or give dockerd a bridge network" }
      )
    }
    if (typeof process.getuid === "function" && process.getuid() === 0) {
      checks.push({ name: "user", ok: true, detail: "anna runs as root: sandboxed commands run as uid 1000, workspaces are handed to that user, and each can be a filesystem of its own (a hard disk bound)" })
    }
    return checks
  })

/** Whether `pid` runs on this host (EPERM: it does, as another user). */
const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as { code?: string }).code === "EPERM"
  }
}

/**
 * An installation of anna: its ANNA_HOME on its host (the same path on two hosts sharing an engine is
 * two installations). Its containers carry this in INSTALLATION_LABEL, so that `anna doctor` and the
 * orphan cleanup at start concern this installation's containers only, on an engine several share.
 */
export const installationOf = (home: string): string => createHash("sha256").update(`${hostname()}\0${home}`).digest("hex").slice(0, 16)

/**
 * A sandbox container on the engine and who answers for it. `other` — made by another installation
 * (its installation label differs), none of this one's business. Otherwise (this installation's, or
 * made before containers carried the label), read from its owner label ("host:pid"): `live` — its
 * anna process still runs here and removes it when the session ends; `orphan` — that process is gone
 * (killed, crashed), so nothing will remove it until this installation's anna starts again;
 * `foreign` — made on another host (or unlabelled), which this host's anna never touches.
 */
export interface SandboxContainer {
  readonly id: string
  readonly agent: string | undefined
  /** Docker's state: running, exited, created, … */
  readonly state: string
  readonly owner: string | undefined
  readonly status: "live" | "orphan" | "foreign" | "other"
}

/**
 * Every container carrying the sandbox label, running or not, with who answers for it, as
 * `installation` (this one's label value) sees them. Without one (a composition without AppConfig)
 * every labelled container is another installation's, and unlabelled ones are judged by their owner.
 */
export const sandboxContainers = (docker: Docker, alive: (pid: number) => boolean = processAlive, installation?: string) =>
  call(
    () => docker.listContainers({ all: true, filters: { label: [SANDBOX_LABEL] } }),
    (e) => new DockerUnavailable({ detail: errorDetail(e) }),
    Duration.seconds(10)
  ).pipe(Effect.map((list) => {
    const me = hostname()
    return list.map((c): SandboxContainer => {
      const owner = c.Labels[OWNER_LABEL]
      const made = c.Labels[INSTALLATION_LABEL]
      // removeOrphans (DockerSandbox.ts) removes exactly the "orphan" ones at start.
      const [host, pid] = (owner ?? "").split(":")
      // A container labelled with an installation is that installation's alone.
      const status = made !== undefined && made !== installation
        ? "other"
        : host !== me || pid === undefined || !/^\d+$/.test(pid)
        ? "foreign"
        : alive(Number(pid))
        ? "live"
        : "orphan"
      return { id: c.Id, agent: c.Labels[AGENT_LABEL], state: c.State, owner, status }
    })
  }))

/**
 * What `anna doctor` says about the sandbox containers on the engine: one line for each of this
 * installation's (or that there are none), and how many other installations have, in one line.
 */
export const containerChecks = (all: ReadonlyArray<SandboxContainer>): Array<DoctorCheck> => {
  const containers = all.filter((c) => c.status !== "other")
  const others = all.length - containers.length
  const othersText = `${others} sandbox container${others === 1 ? "" : "s"} of other anna installations on this engine (not this one's: not listed, never removed by it)`
  const othersLine: Array<DoctorCheck> = others === 0 ? [] : [{ name: "containers", ok: true, detail: othersText }]
  if (containers.length === 0) {
    return [{ name: "containers", ok: true, detail: others === 0 ? "no sandbox container on the engine" : `none of this installation's; ${othersText}` }]
  }
  return [...containers.map((c): DoctorCheck => {
    const id = c.id.slice(0, 12)
    const what = `${c.state}${c.agent === undefined ? "" : `, agent ${c.agent}`}`
    const pid = c.owner?.split(":")[1] ?? "?"
    const detail = c.status === "live"
      ? `${what}: belongs to the running anna process ${pid}, which removes it when its session ends or it stops`
      : c.status === "orphan"
      ? `${what}: orphan, its anna process ${pid} is gone (killed or crashed); removed at the next start of anna on this host, or now with docker rm -f ${id}`
      : `${what}: made by ${c.owner === undefined ? "an unknown owner" : `anna on ${c.owner.split(":")[0] ?? "?"}`}, which this host never removes; docker rm -f ${id} if it is not in use`
    // Leftovers are reported, not failed: they go away by themselves (or by hand) and do not stop anna from working.
    return { name: `container ${id}`, ok: true, detail }
  }), ...othersLine]
}

/**
 * A minimal root filesystem around a statically linked busybox: /bin with busybox and a link per
 * applet (sh, ls, cat, awk, …), /etc/passwd and /etc/group, /tmp and /workspace. Enough for the
 * tools; for more, build a rootfs with debootstrap and use `--rootfs`.
 */
export const busyboxRootfs = (busybox: string, dir: string) =>
  Effect.try({
    try: () => {
      const applets = execFileSync(busybox, ["--list"], { encoding: "utf8" }).split("\n").filter((a) => /^[\w.[-]+$/.test(a))
      for (const d of ["bin", "etc", "tmp", "workspace", "root", "proc", "sys", "dev"]) mkdirSync(join(dir, d), { recursive: true })
      chmodSync(join(dir, "tmp"), 0o1777)
      copyFileSync(busybox, join(dir, "bin", "busybox"))
      chmodSync(join(dir, "bin", "busybox"), 0o755)
      for (const a of applets) if (a !== "busybox") symlinkSync("busybox", join(dir, "bin", a))
      writeFileSync(join(dir, "etc", "passwd"), "root:x:0:0:root:/root:/bin/sh\nanna:x:1000:1000:anna:/workspace:/bin/sh\n")
      writeFileSync(join(dir, "etc", "group"), "root:x:0:\nanna:x:1000:\n")
      return applets.length
    },
    catch: (e) => new SandboxFailure({ operation: "build rootfs", detail: `${busybox}: ${errorDetail(e)}` })
  })

/**
 * Adds a dynamically linked Node binary to a rootfs at /usr/local/bin/node, with the shared
 * libraries and the loader `ldd` lists, each at its own path (so stdio MCP servers can run inside
 * the sandbox). Returns how many libraries were copied.
 */
export const nodeIntoRootfs = (node: string, dir: string) =>
  Effect.try({
    try: () => {
      const libs = execFileSync("ldd", [node], { encoding: "utf8" })
        .split("\n")
        .flatMap((line) => {
          const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)
          return m?.[1] === undefined ? [] : [m[1]]
        })
      for (const lib of libs) {
        mkdirSync(join(dir, dirname(lib)), { recursive: true })
        copyFileSync(lib, join(dir, lib))
        chmodSync(join(dir, lib), 0o755)
      }
      mkdirSync(join(dir, "usr", "local", "bin"), { recursive: true })
      copyFileSync(node, join(dir, "usr", "local", "bin", "node"))
      chmodSync(join(dir, "usr", "local", "bin", "node"), 0o755)
      return libs.length
    },
    catch: (e) => new SandboxFailure({ operation: "build rootfs", detail: `${node}: ${errorDetail(e)}` })
  })

/** Runs `/bin/sh -c 'echo ok'` in a throwaway container of `image` (no network): does it work here? */
export const smokeTest = (docker: Docker, image: string) =>
  Effect.gen(function*() {
    const fail = (detail: string) => new SandboxFailure({ operation: "test image", detail })
    const c = yield* call(
      () => docker.createContainer({ Image: image, Cmd: ["/bin/sh", "-c", "echo ok"], Entrypoint: [], HostConfig: { NetworkMode: "none", AutoRemove: false } }),
      (e) => fail(errorDetail(e))
    )
    const result = yield* Effect.gen(function*() {
      yield* call(() => c.start(), (e) => fail(`${errorDetail(e)} (does the image have /bin/sh? is busybox statically linked? try the busybox-static package)`))
      const waited = yield* call(() => c.wait(), (e) => fail(errorDetail(e)), Duration.seconds(30))
      return (waited as { StatusCode?: number }).StatusCode ?? -1
    }).pipe(Effect.ensuring(call(() => c.remove({ force: true }), (e) => e).pipe(Effect.ignore)))
    if (result !== 0) return yield* fail(`/bin/sh exited with ${result} (is busybox statically linked? try the busybox-static package)`)
  })

/**
 * Whether `path` is a statically linked ELF executable: no program header asks for an interpreter
 * (PT_INTERP), so it runs in an image with no libc. Reads the ELF header and program headers only.
 */
export const isStaticElf = (path: string): boolean => {
  let fd: number | undefined
  try {
    fd = openSync(path, "r")
    const head = Buffer.alloc(64)
    if (readSync(fd, head, 0, 64, 0) < 52 || head.readUInt32BE(0) !== 0x7f454c46) return false
    const is64 = head[4] === 2
    const little = head[5] === 1
    const u16 = (b: Buffer, o: number) => (little ? b.readUInt16LE(o) : b.readUInt16BE(o))
    const u32 = (b: Buffer, o: number) => (little ? b.readUInt32LE(o) : b.readUInt32BE(o))
    const phoff = is64 ? Number(little ? head.readBigUInt64LE(32) : head.readBigUInt64BE(32)) : u32(head, 28)
    const phentsize = u16(head, is64 ? 54 : 42)
    const phnum = u16(head, is64 ? 56 : 44)
    if (phnum === 0 || phentsize < 4 || phnum > 256) return false
    const table = Buffer.alloc(phentsize * phnum)
    if (readSync(fd, table, 0, table.length, phoff) < table.length) return false
    for (let i = 0; i < phnum; i++) if (u32(table, i * phentsize) === 3) return false
    return true
  } catch {
    return false
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The statically linked busybox binaries found on `searchPath` (a PATH value), in its order, and why others were passed over. */
export const findStaticBusybox = (searchPath: string): { readonly found: string | undefined; readonly passed: ReadonlyArray<string> } => {
  const passed: Array<string> = []
  for (const dir of searchPath.split(":").filter((d) => d !== "")) {
    const candidate = join(dir, "busybox")
    if (!existsSync(candidate)) continue
    if (isStaticElf(candidate)) return { found: candidate, passed }
    passed.push(`${candidate} (not statically linked)`)
  }
  return { found: undefined, passed }
}
