/**
 * A workspace's hard disk bound: its own ext4 filesystem in an image file of exactly the quota's
 * size, loop-mounted (`nosuid,nodev`) at the workspace folder. Files, folders, symlinks, hard links
 * and inodes all come out of that one filesystem, so a workspace never takes more of the host's
 * disk than its quota, whatever runs in the container and however fast: the kernel answers ENOSPC
 * (or EDQUOT-like ENOSPC for inodes) at the quota, not a check after the fact. The image is sparse:
 * it takes on the host only what is used (mounted with `discard`, deleting gives space back).
 *
 * The image lives next to the workspace folder as `.<folder>.ext4`: workspace folders are user ids
 * or `shared`, which start with a letter or digit, so none can take that name; it is outside every
 * mount, so no sandbox can reach it.
 *
 * Needs root (or CAP_SYS_ADMIN), `mkfs.ext4` and `mount` (e2fsprogs, util-linux) — anna's gateway as
 * a system service. Without them the bound is the quota check of workspaceFiles.ts, which is soft
 * (see ./README.md); `sandbox.disk_bound` chooses (auto | filesystem | quota).
 *
 * Mounts outlive the process, like any mount: another anna process on the same home (the CLI next
 * to the gateway) uses the same mount, and nothing is unmounted behind its back. `detach` unmounts
 * (a removed user's workspace, `anna sandbox unmount`); after a reboot the next session mounts again.
 * An existing folder is moved into a new image once (`mkfs.ext4 -d`, which copies links as links and
 * FIFOs as FIFOs without following or opening them); the image appears under its final name only when
 * complete, so a crash leaves either the old folder or the new image, never half of one.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { constants, promises as fs } from "node:fs"
import { basename, dirname, join } from "node:path"
import type { DiskBound } from "../../domain/sandbox/types.ts"


/** How a prepared workspace is bounded. */
export type Attached =
  | {
    readonly kind: "filesystem"
    readonly image: string
    readonly device: string
    /** The filesystem's size: the quota, or more (an existing folder that did not fit), or less (a raised quota it could not grow to yet). */
    readonly bytes: number
    /** Why it is not the quota's size, when it could not be grown. */
    readonly problem?: string | undefined
  }
  | { readonly kind: "quota"; readonly why: string }

/** A failure to prepare or release a workspace's disk; `detail` is for the operator. */
export class DiskError extends Error {}

/** Tries at most this many doublings of the image when an existing folder does not fit its quota. */
const MIGRATION_GROWTHS = 6
const COMMAND_TIMEOUT_MS = 120_000

/** `.<folder>.ext4` next to the workspace folder. */
export const imageOf = (workspace: string): string => join(dirname(workspace), `.${basename(workspace)}.ext4`)

const errno = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined

const SBIN = ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"]

const which = async (name: string): Promise<string | undefined> => {
  const dirs = [...(process.env.PATH ?? "").split(":").filter((d) => d.startsWith("/")), ...SBIN]
  for (const d of dirs) {
    const p = join(d, name)
    try {
      await fs.access(p, constants.X_OK)
      return p
    } catch {
      // next
    }
  }
  return undefined
}

/** Runs a program (no shell); exit codes in `ok` count as success (e2fsck says 1 for "errors corrected"). */
const run = (file: string, args: ReadonlyArray<string>, ok: ReadonlyArray<number> = [0]): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(file, [...args], { timeout: COMMAND_TIMEOUT_MS, env: { ...process.env, LC_ALL: "C" } }, (error, stdout, stderr) => {
      if (error === null || (typeof error.code === "number" && ok.includes(error.code))) return resolve(stdout)
      const said = `${stderr}\n${stdout}`.trim().split("\n").filter((l) => l.trim() !== "").slice(-4).join("; ")
      reject(new DiskError(`${basename(file)} ${args.join(" ")}: ${said || error.message}`))
    })
  })

interface Tools {
  readonly mkfs: string
  readonly mount: string
  readonly umount: string
  readonly resize2fs: string | undefined
  readonly e2fsck: string | undefined
}

/** CAP_SYS_ADMIN in the effective set (root has it unless a container or systemd took it away). */
const hasSysAdmin = async (): Promise<boolean> => {
  try {
    const status = await fs.readFile("/proc/self/status", "utf8")
    const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1]
    return hex !== undefined && (BigInt(`0x${hex}`) & (1n << 21n)) !== 0n
  } catch {
    return false
  }
}

let toolsOnce: Promise<Tools | string> | undefined
/** The programs this needs, or why this process cannot mount filesystems (checked once). */
export const mountTools = (): Promise<Tools | string> => {
  toolsOnce ??= (async () => {
    if (process.platform !== "linux") return "workspace filesystems need Linux"
    if (!(await hasSysAdmin())) return "anna does not run as root (no CAP_SYS_ADMIN), so it cannot mount a filesystem per workspace"
    const [mkfs, mount, umount, resize2fs, e2fsck] = await Promise.all(["mkfs.ext4", "mount", "umount", "resize2fs", "e2fsck"].map(which))
    if (mkfs === undefined) return "mkfs.ext4 is not installed (Debian: e2fsprogs)"
    if (mount === undefined || umount === undefined) return "mount/umount are not installed (Debian: mount)"
    try {
      await fs.access("/dev/loop-control")
    } catch {
      return "this system has no loop devices (/dev/loop-control)"
    }
    return { mkfs, mount, umount, resize2fs, e2fsck }
  })()
  return toolsOnce
}

const needTools = async (): Promise<Tools> => {
  const tools = await mountTools()
  if (typeof tools === "string") throw new DiskError(tools)
  return tools
}

/** Undoes /proc/self/mountinfo's octal escapes (space, tab, newline, backslash). */
const unescapeMountinfo = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)))

export interface MountEntry {
  readonly point: string
  /** "major:minor" of the mounted filesystem. */
  readonly device: string
  readonly source: string
  readonly fstype: string
}

export const mounts = async (): Promise<ReadonlyArray<MountEntry>> => {
  const text = await fs.readFile("/proc/self/mountinfo", "utf8")
  const out: Array<MountEntry> = []
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ")
    if (left === undefined || right === undefined) continue
    const f = left.split(" ")
    const r = right.split(" ")
    if (f[2] === undefined || f[4] === undefined || r[0] === undefined || r[1] === undefined) continue
    out.push({ point: unescapeMountinfo(f[4]), device: f[2], source: unescapeMountinfo(r[1]), fstype: r[0] })
  }
  return out
}

/** The topmost mount at `point`, if any. */
const mountAt = async (point: string): Promise<MountEntry | undefined> => (await mounts()).findLast((m) => m.point === point)

/** The file behind a loop device (`/dev/loopN`), if it is one. */
const backingFile = async (source: string): Promise<string | undefined> => {
  const name = /^\/dev\/(loop\d+)$/.exec(source)?.[1]
  if (name === undefined) return undefined
  try {
    return (await fs.readFile(`/sys/block/${name}/loop/backing_file`, "utf8")).trim()
  } catch {
    return undefined
  }
}

/** Whether `point` holds the image `image`: true, false (nothing mounted), or a DiskError when something else is mounted there. */
const mountedImage = async (point: string, image: string): Promise<MountEntry | undefined> => {
  const m = await mountAt(point)
  if (m === undefined) return undefined
  const backing = await backingFile(m.source)
  if (backing !== image) throw new DiskError(`${point} has ${m.source} (${m.fstype}) mounted on it, not its disk image ${image}`)
  return m
}

const exists = async (p: string): Promise<boolean> => {
  try {
    await fs.lstat(p)
    return true
  } catch (e) {
    if (errno(e) === "ENOENT") return false
    throw e
  }
}

/** Everything inside `dir` (not `dir`): links are removed, never followed. */
const empty = async (dir: string): Promise<void> => {
  for (const name of await fs.readdir(dir)) await fs.rm(join(dir, name), { recursive: true, force: true })
}

const mkfsArgs = (owner: { readonly uid: number; readonly gid: number }, from: string | undefined, image: string) => [
  "-q",
  "-F",
  // No blocks kept back for root: the sandbox never runs as root, they would be lost to it.
  "-m",
  "0",
  "-E",
  `root_owner=${owner.uid}:${owner.gid},lazy_itable_init=1,lazy_journal_init=1,nodiscard`,
  ...(from === undefined ? [] : ["-d", from]),
  image
]

/** A new image of `bytes` (the folder's contents copied in when `from` is given), published at `image` only when complete. */
const createImage = async (tools: Tools, image: string, bytes: number, owner: { readonly uid: number; readonly gid: number }, from: string | undefined) => {
  const temp = `${image}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
  let size = bytes
  try {
    for (let attempt = 0;; attempt++) {
      const h = await fs.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600)
      try {
        await h.truncate(size)
      } finally {
        await h.close()
      }
      try {
        await run(tools.mkfs, mkfsArgs(owner, from, temp))
        break
      } catch (e) {
        // The folder holds more than the quota (it was filled before this bound existed): its files
        // are kept, in an image as large as they need; the quota check then says it is over.
        if (from === undefined || attempt >= MIGRATION_GROWTHS || !/allocate|space|inodes/i.test(String(e))) throw e
        size *= 2
      }
    }
    // link() fails if another process published the image meanwhile: theirs is used.
    try {
      await fs.link(temp, image)
    } catch (e) {
      if (errno(e) !== "EEXIST") throw e
    }
  } finally {
    await fs.rm(temp, { force: true })
  }
}

const mountImage = async (tools: Tools, image: string, point: string) => {
  await run(tools.mount, ["-t", "ext4", "-o", "loop,nosuid,nodev,noatime,discard,errors=remount-ro", image, point])
  const m = await mountedImage(point, image)
  if (m === undefined) throw new DiskError(`${image} was mounted on ${point} but is not there`)
  return m
}

/** Loop devices backed by `image` now (one may live on in a container's mounts after the host's is gone). */
const loopsOf = async (image: string): Promise<ReadonlyArray<string>> => {
  const names = await fs.readdir("/sys/block").catch(() => [] as Array<string>)
  const found: Array<string> = []
  for (const name of names.filter((n) => /^loop\d+$/.test(n))) {
    if ((await backingFile(`/dev/${name}`)) === image) found.push(`/dev/${name}`)
  }
  return found
}

/**
 * Grows the image (and its filesystem) to `bytes` — online through its loop device when that is
 * attached (the kernel needs CAP_SYS_RESOURCE for that), else offline — and returns its size and,
 * when it could not, why. Shrinking is never done (see README: a lowered quota).
 */
const grow = async (tools: Tools, image: string, bytes: number): Promise<{ readonly bytes: number; readonly problem?: string }> => {
  const st = await fs.stat(image)
  if (st.size >= bytes) return { bytes: st.size }
  if (tools.resize2fs === undefined) return { bytes: st.size, problem: "resize2fs is not installed (Debian: e2fsprogs)" }
  const resize2fs = tools.resize2fs
  const loop = (await loopsOf(image))[0]
  const losetup = await which("losetup")
  if (loop !== undefined && losetup === undefined) return { bytes: st.size, problem: "losetup is not installed (Debian: mount)" }
  try {
    await fs.truncate(image, bytes)
    if (loop !== undefined && losetup !== undefined) {
      // In use (mounted here or in a container): the loop device learns the new size, then ext4 grows online.
      await run(losetup, ["--set-capacity", loop])
      await run(resize2fs, [loop])
    } else {
      if (tools.e2fsck !== undefined) await run(tools.e2fsck, ["-f", "-p", image], [0, 1])
      await run(resize2fs, [image])
    }
    return { bytes }
  } catch (e) {
    // Back to the filesystem's own size, so that the file's size keeps saying what the filesystem holds.
    await fs.truncate(image, st.size).catch(() => undefined)
    if (loop !== undefined && losetup !== undefined) await run(losetup, ["--set-capacity", loop]).catch(() => undefined)
    const why = e instanceof Error ? e.message : String(e)
    return { bytes: st.size, problem: loop === undefined ? why : `${why} (growing a mounted filesystem needs CAP_SYS_RESOURCE; it grows the next time it is mounted)` }
  }
}

export interface AttachOptions {
  readonly bytes: number
  readonly owner: { readonly uid: number; readonly gid: number }
  readonly setting: DiskBound
  /**
   * What runs on the folder now (a container of any anna process), if anything: an existing folder is
   * moved into its image only when nothing does — `mkfs.ext4 -d` reads it by path, so sandboxed code
   * running meanwhile could swap a file it is about to read for a link out of the workspace.
   */
  readonly inUse?: (() => Promise<string | undefined>) | undefined
}

/** Per workspace in this process: one preparation at a time. */
const inFlight = new Map<string, Promise<Attached>>()

/**
 * Makes `workspace` (created 0700 if missing; a real path) ready for a session: its image mounted
 * there (created, or the folder moved into one, and grown to the quota), or — when the setting
 * allows and this process cannot mount — the plain folder with why. An image that exists is always
 * mounted (its files live there): when it cannot be, this fails and nothing runs.
 */
export const attach = (
  workspace: string,
  options: AttachOptions
): Promise<Attached> => {
  const running = inFlight.get(workspace)
  if (running !== undefined) return running.then(() => attach(workspace, options))
  const work = attachNow(workspace, options).finally(() => inFlight.delete(workspace))
  inFlight.set(workspace, work)
  return work
}

const attachNow = async (
  workspace: string,
  options: AttachOptions
): Promise<Attached> => {
  const image = imageOf(workspace)
  const mounted = await mountedImage(workspace, image)
  const tools = await mountTools()
  if (mounted !== undefined) {
    const grown = typeof tools === "string" ? { bytes: (await fs.stat(image)).size, problem: tools } : await grow(tools, image, options.bytes)
    return { kind: "filesystem", image, device: mounted.device, ...grown }
  }
  if (!(await exists(image))) {
    if (options.setting === "quota") return { kind: "quota", why: "sandbox.disk_bound is quota" }
    if (typeof tools === "string") {
      if (options.setting === "filesystem") throw new DiskError(`sandbox.disk_bound is filesystem, but ${tools}`)
      return { kind: "quota", why: tools }
    }
    const from = (await fs.readdir(workspace)).length > 0 ? workspace : undefined
    const user = from === undefined ? undefined : await options.inUse?.()
    if (user !== undefined) {
      throw new DiskError(`${workspace} is used by ${user}: its files move into a filesystem of their own only while nothing runs on them; stop that, then try again`)
    }
    await createImage(tools, image, options.bytes, options.owner, from)
  }
  const ready = await needTools()
  // What the folder holds under an image is a copy already in it (or left by a crash after the copy).
  await empty(workspace)
  const grown = await grow(ready, image, options.bytes)
  const m = await mountImage(ready, image, workspace)
  // A new filesystem's lost+found would show in every `ls /workspace`; e2fsck makes it again if ever needed.
  await fs.rmdir(join(workspace, "lost+found")).catch(() => undefined)
  return { kind: "filesystem", image, device: m.device, ...grown }
}

/** Unmounts the workspace's image if it is mounted there (a lazy unmount when something holds it). */
export const detach = async (workspace: string): Promise<boolean> => {
  const image = imageOf(workspace)
  let detached = false
  for (;;) {
    const m = await mountAt(workspace)
    if (m === undefined || (await backingFile(m.source)) !== image) return detached
    const tools = await needTools()
    await run(tools.umount, [workspace]).catch(() => run(tools.umount, ["-l", workspace]))
    detached = true
  }
}

/** Unmounts every workspace image mounted at or below `dir`; returns the workspaces. */
export const detachUnder = async (dir: string): Promise<ReadonlyArray<string>> => {
  const real = await fs.realpath(dir).catch(() => dir)
  const points = (await mounts()).map((m) => m.point).filter((p) => p === real || p.startsWith(`${real}/`))
  const done: Array<string> = []
  // Deepest first, so nothing is unmounted from under another.
  for (const point of [...new Set(points)].sort((a, b) => b.length - a.length)) {
    if (await detach(point)) done.push(point)
  }
  return done
}

/** Unmounts and deletes the workspace's image and folder (a removed user's). */
export const remove = async (workspace: string): Promise<void> => {
  await detach(workspace)
  await fs.rm(imageOf(workspace), { force: true })
  await fs.rm(workspace, { recursive: true, force: true })
}

/** Bytes used and free on the workspace's own filesystem (statfs: one call, whatever it holds). */
export const usage = async (workspace: string): Promise<{ readonly used: number; readonly free: number; readonly files: number }> => {
  const s = await fs.statfs(workspace)
  return { used: (s.blocks - s.bfree) * s.bsize, free: s.bavail * s.bsize, files: s.files - s.ffree }
}


export interface DiskInfo {
  readonly workspace: string
  readonly image: string
  /** The image's size: the filesystem's, its hard bound. */
  readonly bytes: number
  /** What it takes of the host's disk now (the image is sparse). */
  readonly allocated: number
  readonly mounted: boolean
  /** Bytes used inside it, when mounted. */
  readonly used: number | undefined
}

/** The workspace filesystems under `workspaces` (`$ANNA_HOME/workspaces`): each agent's shared one and its users'. */
export const list = async (workspaces: string): Promise<ReadonlyArray<DiskInfo>> => {
  const images: Array<string> = []
  const names = async (dir: string) => fs.readdir(dir).catch(() => [] as Array<string>)
  for (const agent of await names(workspaces)) {
    for (const dir of [join(workspaces, agent), join(workspaces, agent, "users")]) {
      for (const n of await names(dir)) if (/^\..+\.ext4$/.test(n)) images.push(join(dir, n))
    }
  }
  const all = await mounts()
  const out: Array<DiskInfo> = []
  for (const image of images.sort()) {
    const workspace = join(dirname(image), basename(image).slice(1, -".ext4".length))
    const st = await fs.stat(image)
    const m = all.findLast((e) => e.point === workspace)
    const mounted = m !== undefined && (await backingFile(m.source)) === image
    out.push({ workspace, image, bytes: st.size, allocated: st.blocks * 512, mounted, used: mounted ? (await usage(workspace)).used : undefined })
  }
  return out
}
