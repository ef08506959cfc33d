/**
 * Workspace files opened from the host without ever leaving the workspace, under any interleaving
 * with what sandboxed code does at the same time.
 *
 * Threat: everything inside a workspace is written by sandboxed code, which we assume hostile (the
 * model does what a chat user asks). It can create symlinks, FIFOs, sockets and hard links, and
 * swap folders and links while a tool runs (`renameat2(RENAME_EXCHANGE)` in a loop). A check of a
 * path followed by an open of the same path ("resolve, then open") is therefore never safe: any
 * folder on the way may be a symlink to `/` by the time the open happens.
 *
 * Design: every path is walked one component at a time from a directory handle, never by name
 * from the host's root. Node has no `openat`, so the handle's directory is reached through
 * `/proc/self/fd/N/<name>`: the kernel resolves the magic link to the very directory the handle
 * holds (wherever it has been moved since) and looks `<name>` up inside it, like `openat(N, name)`.
 * Each component is opened with O_NOFOLLOW (and O_DIRECTORY on the way), so a symlink is never
 * followed by the kernel; it is read (`readlink`) and resolved here the way the container resolves
 * it: a relative target continues from the link's folder, an absolute target under /workspace
 * restarts from the workspace's own handle, `..` pops a handle (never above the root), and any
 * other target is refused. Final files are opened O_NONBLOCK (a FIFO cannot block the gateway) and
 * used only when `fstat` says they are regular files, within a size cap. Writes create a temp file
 * O_EXCL|O_NOFOLLOW in the held directory and `rename` it over the name in the same directory —
 * a symlink swapped in meanwhile is replaced, never followed. Hard links cannot reach outside: the
 * container sees only the workspace mount, and links across mounts fail (EXDEV).
 *
 * Trusted: the host path of the workspace root and its parents (created by anna, not visible to
 * the sandbox), the kernel's /proc. Untrusted: every name, link and file type under the root.
 * Linux only (/proc/self/fd): on any other system every operation fails closed.
 */
import { randomUUID } from "node:crypto"
import { constants, promises as fs } from "node:fs"
import type { FileHandle } from "node:fs/promises"
import { posix } from "node:path"
import { WORKSPACE_MOUNT } from "../../domain/sandbox/types.ts"

/** Symlinks followed at most in one path, as the kernel does (ELOOP). */
const MAX_LINKS = 40

/** Why a confined operation was refused: the path leads out of the workspace, or is not usable. */
export class ConfinedError extends Error {
  readonly code: "OUTSIDE" | "ENOENT" | "ENOTDIR" | "EISDIR" | "NOTREG" | "TOOBIG" | "ELOOP" | "NAME"
  constructor(code: ConfinedError["code"], message: string) {
    super(message)
    this.code = code
  }
}

const errno = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined

const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`

const parts = (p: string): Array<string> => p.split("/").filter((s) => s !== "" && s !== ".")

const under = (root: string, p: string): boolean => p === root || p.startsWith(root + "/")

/** The container path of `path` seen from `cwd` (both container paths), if it stays under /workspace. */
export const containerPath = (cwd: string, path: string): string | undefined => {
  const resolved = posix.resolve(cwd, path)
  return under(WORKSPACE_MOUNT, resolved) ? resolved : undefined
}

/** Opens the workspace root itself (a trusted host path) as the first handle of a walk. */
const openRoot = async (root: string): Promise<FileHandle> =>
  fs.open(root, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)

/** Directory handles from the root down to the current folder; closing it closes them all. */
class Walk {
  private readonly stack: Array<FileHandle>
  private links = 0
  constructor(root: FileHandle) {
    this.stack = [root]
  }
  get top(): FileHandle {
    const top = this.stack[this.stack.length - 1]
    if (top === undefined) throw new ConfinedError("OUTSIDE", "empty walk")
    return top
  }
  get root(): FileHandle {
    return this.stack[0] as FileHandle
  }
  push(h: FileHandle) {
    this.stack.push(h)
  }
  /** `..`: false when it would leave the root. */
  async up(): Promise<boolean> {
    if (this.stack.length <= 1) return false
    await this.stack.pop()?.close()
    return true
  }
  async toRoot() {
    while (this.stack.length > 1) await this.stack.pop()?.close()
  }
  /** A symlink met at `name` in the current folder: the components that replace it. */
  async link(name: string, path: string): Promise<Array<string>> {
    if (++this.links > MAX_LINKS) throw new ConfinedError("ELOOP", `${path}: too many levels of symbolic links`)
    const target = await fs.readlink(at(this.top, name))
    if (target.startsWith("/")) {
      const normal = posix.normalize(target)
      if (!under(WORKSPACE_MOUNT, normal)) throw outside(path)
      await this.toRoot()
      return parts(posix.relative(WORKSPACE_MOUNT, normal))
    }
    return parts(target)
  }
  async close() {
    for (const h of this.stack.splice(0)) await h.close().catch(() => undefined)
  }
}

const outside = (path: string) => new ConfinedError("OUTSIDE", `path ${path} is outside the workspace; only files under /workspace can be used`)

/** Is `e` the kernel refusing to follow a symlink we opened with O_NOFOLLOW? */
const isLinkRefusal = (e: unknown) => {
  const code = errno(e)
  return code === "ELOOP" || code === "EMLINK"
}

const isLink = async (dir: FileHandle, name: string): Promise<boolean> =>
  fs.lstat(at(dir, name)).then((s) => s.isSymbolicLink(), () => false)

export interface Options {
  /** Create missing folders on the way (owned by `owner` when set). */
  readonly createDirs?: boolean | undefined
  readonly owner?: { readonly uid: number; readonly gid: number } | undefined
}

/**
 * Walks to the folder holding the final component of `path` (a container path relative to `cwd`),
 * following symlinks on the way the container would, and calls `use` with that folder's handle and
 * the final name ('' when the path is the workspace root itself). The final component is not
 * touched: `use` decides how to open it (and calls `again` with a link's target components if it
 * finds a symlink there, to continue the walk).
 */
const walkTo = async <A>(
  root: string,
  cwd: string,
  path: string,
  options: Options,
  use: (dir: FileHandle, name: string, walk: Walk) => Promise<{ readonly done: A } | { readonly follow: Array<string> }>
): Promise<A> => {
  if (path.includes("\u0000")) throw new ConfinedError("NAME", `${path}: a path cannot contain a NUL character`)
  const inContainer = containerPath(cwd, path)
  if (inContainer === undefined) throw outside(path)
  let pending = parts(posix.relative(WORKSPACE_MOUNT, inContainer))
  const walk = new Walk(await openRoot(root))
  // Folders made on the way; bounded, so code that removes them as fast as they appear cannot keep us looping.
  let made = 0
  try {
    for (;;) {
      // Resolve `..` and intermediate folders until one component is left.
      while (pending.length > 1 || pending[0] === "..") {
        const part = pending.shift() ?? ""
        if (part === "..") {
          if (!(await walk.up())) throw outside(path)
          continue
        }
        let handle: FileHandle
        try {
          handle = await fs.open(at(walk.top, part), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
        } catch (e) {
          const code = errno(e)
          if (isLinkRefusal(e) || (code === "ENOTDIR" && (await isLink(walk.top, part)))) {
            pending = [...(await walk.link(part, path)), ...pending]
            continue
          }
          if (code === "ENOENT" && options.createDirs === true && made++ < 64) {
            await fs.mkdir(at(walk.top, part), 0o777).catch((m: unknown) => (errno(m) === "EEXIST" ? undefined : Promise.reject(m)))
            // Opened again below with O_NOFOLLOW: whatever is there now (even a swapped-in link) is handled as usual.
            pending.unshift(part)
            const dirHandle = await fs.open(at(walk.top, part), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(() => undefined)
            if (dirHandle !== undefined) {
              pending.shift()
              if (options.owner !== undefined && process.getuid?.() === 0) await dirHandle.chown(options.owner.uid, options.owner.gid).catch(() => undefined)
              walk.push(dirHandle)
            }
            continue
          }
          if (code === "ENOENT") throw new ConfinedError("ENOENT", `no such file or directory: ${path}`)
          if (code === "ENOTDIR") throw new ConfinedError("ENOTDIR", `${path}: a part of the path is a file, not a directory`)
          throw e
        }
        walk.push(handle)
      }
      const name = pending[0] ?? ""
      const step = await use(walk.top, name, walk)
      if ("done" in step) return step.done
      pending = step.follow
    }
  } finally {
    await walk.close()
  }
}

export type Entry = { readonly name: string; readonly kind: "dir" | "file" | "link" | "other"; readonly target?: string | undefined }

export type Opened =
  | { readonly _tag: "File"; readonly bytes: Buffer }
  | { readonly _tag: "Directory"; readonly entries: ReadonlyArray<Entry>; readonly more: number }

const listing = async (dir: FileHandle, maxEntries: number): Promise<Opened & { readonly _tag: "Directory" }> => {
  const base = `/proc/self/fd/${dir.fd}`
  const dirents = await fs.readdir(base, { withFileTypes: true })
  dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const out: Array<Entry> = []
  for (const d of dirents.slice(0, maxEntries)) {
    if (d.isSymbolicLink()) {
      out.push({ name: d.name, kind: "link", target: await fs.readlink(`${base}/${d.name}`).catch(() => "?") })
    } else out.push({ name: d.name, kind: d.isDirectory() ? "dir" : d.isFile() ? "file" : "other" })
  }
  return { _tag: "Directory", entries: out, more: Math.max(0, dirents.length - maxEntries) }
}

/**
 * Reads `path`: a regular file's bytes (at most `maxBytes`, else TOOBIG with its size in the
 * message), or a folder's entries (at most `maxEntries`; one extra unnamed entry marks "more").
 * FIFOs, sockets and devices are refused without blocking.
 */
export const readPath = (
  root: string,
  cwd: string,
  path: string,
  limits: { readonly maxBytes: number; readonly maxEntries?: number | undefined }
): Promise<Opened> =>
  walkTo<Opened>(root, cwd, path, {}, async (dir, name, walk) => {
    if (name === "") return { done: await listing(dir, limits.maxEntries ?? Infinity) }
    let handle: FileHandle
    try {
      handle = await fs.open(at(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    } catch (e) {
      if (isLinkRefusal(e)) return { follow: await walk.link(name, path) }
      if (errno(e) === "ENOENT") throw new ConfinedError("ENOENT", `no such file: ${path}`)
      if (errno(e) === "ENXIO") throw new ConfinedError("NOTREG", `${path} is not a regular file`)
      throw e
    }
    try {
      const stat = await handle.stat()
      if (stat.isDirectory()) {
        return { done: await listing(handle, limits.maxEntries ?? Infinity) }
      }
      if (!stat.isFile()) throw new ConfinedError("NOTREG", `${path} is not a regular file`)
      if (stat.size > limits.maxBytes) throw new ConfinedError("TOOBIG", `${path} is ${stat.size.toLocaleString("en-US")} bytes`)
      // Read at most maxBytes + 1 whatever the size said: the file may grow meanwhile.
      const buffer = Buffer.alloc(Math.min(limits.maxBytes + 1, Math.max(stat.size, 0) + 65_536))
      let length = 0
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null)
        if (bytesRead === 0) break
        length += bytesRead
        if (length > limits.maxBytes) throw new ConfinedError("TOOBIG", `${path} is more than ${limits.maxBytes.toLocaleString("en-US")} bytes`)
        if (length === buffer.length) break
      }
      return { done: { _tag: "File", bytes: buffer.subarray(0, length) } }
    } finally {
      await handle.close()
    }
  })

/** Is `path` an existing folder of the workspace (symlinks followed inside it)? */
export const isDirectory = (root: string, cwd: string, path: string): Promise<boolean> =>
  walkTo<boolean>(root, cwd, path, {}, async (dir, name, walk) => {
    if (name === "") return { done: true }
    try {
      const h = await fs.open(at(dir, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
      await h.close()
      return { done: true }
    } catch (e) {
      if (isLinkRefusal(e) || (errno(e) === "ENOTDIR" && (await isLink(dir, name)))) return { follow: await walk.link(name, path) }
      if (errno(e) === "ENOENT" || errno(e) === "ENOTDIR") return { done: false }
      throw e
    }
  })

export interface Written {
  readonly bytes: number
  /** Size of the file it replaced, if there was one. */
  readonly replaced: number | undefined
}

/**
 * Writes `data` to `path` atomically: a temp file next to the target (O_EXCL|O_NOFOLLOW, in the held
 * folder), flushed, then renamed over the name. A symlink at the target is followed like the shell
 * would, but only within the workspace; an existing regular file keeps its mode (and owner when
 * anna is root); a folder, FIFO or socket at the target is refused.
 */
export const writePath = (root: string, cwd: string, path: string, data: Uint8Array | string, options: Options = {}): Promise<Written> =>
  walkTo<Written>(root, cwd, path, { createDirs: true, owner: options.owner }, async (dir, name, walk) => {
    if (name === "") throw new ConfinedError("EISDIR", `${path} is a directory`)
    let previous: { readonly mode: number; readonly size: number; readonly uid: number; readonly gid: number } | undefined
    try {
      const h = await fs.open(at(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
      try {
        const st = await h.stat()
        if (st.isDirectory()) throw new ConfinedError("EISDIR", `${path} is a directory`)
        if (!st.isFile()) throw new ConfinedError("NOTREG", `${path} is not a regular file`)
        previous = { mode: st.mode & 0o7777, size: st.size, uid: st.uid, gid: st.gid }
      } finally {
        await h.close()
      }
    } catch (e) {
      if (isLinkRefusal(e)) return { follow: await walk.link(name, path) }
      if (errno(e) === "ENXIO") throw new ConfinedError("NOTREG", `${path} is not a regular file`)
      if (errno(e) !== "ENOENT") throw e
    }
    const temp = `.${name.slice(0, 100)}.${randomUUID().slice(0, 8)}.anna-tmp`
    const handle = await fs.open(at(dir, temp), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o666)
    try {
      try {
        await handle.writeFile(data)
        if (previous !== undefined) await handle.chmod(previous.mode)
        const keep = previous ?? options.owner
        if (keep !== undefined && process.getuid?.() === 0) await handle.chown(keep.uid, keep.gid)
        await handle.sync()
      } finally {
        await handle.close()
      }
      // rename replaces the directory entry itself: whatever was swapped in at `name` is replaced, never followed.
      await fs.rename(at(dir, temp), at(dir, name))
    } catch (e) {
      await fs.rm(at(dir, temp), { force: true }).catch(() => undefined)
      throw e
    }
    return { done: { bytes: typeof data === "string" ? Buffer.byteLength(data, "utf8") : data.byteLength, replaced: previous?.size } }
  })

/** Folders deeper than this are not walked by `diskUsage` (each level holds one open handle). */
export const USAGE_MAX_DEPTH = 256

/**
 * Bytes the workspace takes on disk (allocated blocks of files, folders and links), walked depth
 * first through held folder handles (never following a symlink), at most `maxEntries` entries and
 * USAGE_MAX_DEPTH levels: `complete` is false when it stopped there. At most one handle per level
 * is open, so a folder of a million subfolders costs no more descriptors than a chain of two.
 */
export const diskUsage = async (root: string, maxEntries: number): Promise<{ readonly bytes: number; readonly complete: boolean }> => {
  let bytes = 0
  let seen = 0
  let complete = true
  const walk = async (dir: FileHandle, depth: number): Promise<void> => {
    bytes += (await dir.stat()).blocks * 512
    const names = await fs.readdir(`/proc/self/fd/${dir.fd}`).catch(() => [] as Array<string>)
    for (const name of names) {
      if (++seen > maxEntries) {
        complete = false
        return
      }
      const st = await fs.lstat(at(dir, name)).catch(() => undefined)
      if (st === undefined) continue
      if (!st.isDirectory()) {
        bytes += st.blocks * 512
        continue
      }
      if (depth >= USAGE_MAX_DEPTH) {
        bytes += st.blocks * 512
        complete = false
        continue
      }
      const h = await fs.open(at(dir, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(() => undefined)
      if (h === undefined) continue
      try {
        await walk(h, depth + 1)
      } finally {
        await h.close()
      }
      if (seen > maxEntries) return
    }
  }
  const root0 = await openRoot(root)
  try {
    await walk(root0, 0)
  } finally {
    await root0.close()
  }
  return { bytes, complete }
}
