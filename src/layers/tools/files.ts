/**
 * What the workspace tools share: decoding a tool's input, confining a path through the session's
 * `resolvePath`, reading a file as UTF-8 text (or recognising it as binary), and the atomic write.
 *
 * The host touches only paths `resolvePath` returned. Between that check and the file operation a
 * command in the container could swap a folder for a symlink; Node has no openat/O_BENEATH to close
 * that race completely, so the window is kept small instead: final components are opened with
 * O_NOFOLLOW, and a write re-checks the real folder it is about to write in just before it does.
 */
import { Effect, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { constants, promises as fs } from "node:fs"
import { basename, dirname, join, sep } from "node:path"
import { WORKSPACE_MOUNT } from "../../domain/sandbox/types.ts"
import { ToolError } from "../../domain/tool.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"

/** Files larger than this are not loaded whole; bash (head, sed -n, grep) can look at parts of them. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024

/** Decodes a tool's raw input; every problem (not only the first) goes back to the model. */
export const decodeInput = <S extends Schema.Constraint & { readonly DecodingServices: never }>(tool: string, schema: S) => {
  const decode = Schema.decodeUnknownEffect(schema)
  return (raw: unknown): Effect.Effect<S["Type"], ToolError> =>
    decode(raw, { errors: "all", onExcessProperty: "error" }).pipe(
      Effect.mapError((e) => new ToolError({ tool, reason: `invalid input: ${e.message}` }))
    )
}

const FS_REASONS: Readonly<Record<string, string>> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EISDIR: "is a directory",
  ENOTDIR: "a part of the path is a file, not a directory",
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  EROFS: "read-only file system",
  ELOOP: "a symlink is in the way (it may have been changed while the tool ran)",
  ENAMETOOLONG: "the name is too long",
  EMFILE: "too many open files",
  EBUSY: "the file is busy"
}

const errorCode = (e: unknown): string | undefined => {
  if (typeof e !== "object" || e === null || !("code" in e)) return undefined
  return typeof e.code === "string" ? e.code : undefined
}

export const isMissing = (e: unknown): boolean => errorCode(e) === "ENOENT"

/** A filesystem failure as the model should read it: the path it gave, then what went wrong. */
export const fsError = (tool: string, path: string) => (e: unknown): ToolError => {
  if (e instanceof ToolError) return e
  const code = errorCode(e)
  const reason = code !== undefined ? FS_REASONS[code] : undefined
  return new ToolError({ tool, reason: `${path}: ${reason ?? (e instanceof Error ? e.message : String(e))}` })
}

/** A filesystem call whose failure becomes a ToolError about `path`. */
export const attempt = <A>(tool: string, path: string, run: () => Promise<A>): Effect.Effect<A, ToolError> =>
  Effect.tryPromise({ try: run, catch: fsError(tool, path) })

/** The host path of `path`, or a ToolError when it leaves the workspace. */
export const resolve = (session: SandboxSession, tool: string, path: string): Effect.Effect<string, ToolError> =>
  path.trim() === ""
    ? Effect.fail(new ToolError({ tool, reason: "path is empty" }))
    : session.resolvePath(path).pipe(Effect.mapError((e) => new ToolError({ tool, reason: e.message })))

const within = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep)

const outside = (tool: string, path: string) =>
  new ToolError({ tool, reason: `path ${path} is outside the workspace; only files under /workspace can be used` })

/**
 * The real path of an existing `host` (from `resolve`), checked again against the workspace. The
 * file tools then open exactly this path with O_NOFOLLOW, so they do not depend on `resolvePath`
 * returning a path with symlinks already resolved, and a link swapped in meanwhile is caught.
 */
export const existing = (session: SandboxSession, tool: string, path: string, host: string, missing = `no such file: ${path}`) =>
  Effect.gen(function*() {
    const root = yield* resolve(session, tool, WORKSPACE_MOUNT)
    const real = yield* Effect.tryPromise({
      try: () => fs.realpath(host),
      catch: (e) => (isMissing(e) ? new ToolError({ tool, reason: missing }) : fsError(tool, path)(e))
    })
    if (!within(root, real)) return yield* outside(tool, path)
    return real
  })

/** UTF-8 without a NUL byte is text; anything else is treated as binary and never shown or edited. */
export const decodeText = (bytes: Uint8Array): string | undefined => {
  if (bytes.includes(0)) return undefined
  try {
    // ignoreBOM keeps a leading BOM in the text, so an edit writes it back unchanged.
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return undefined
  }
}

export type Loaded =
  | { readonly _tag: "Text"; readonly text: string; readonly bytes: number }
  | { readonly _tag: "Binary"; readonly bytes: number }

/** Reads a regular file (already resolved) as text, refusing huge files with a way forward. */
export const loadFile = (tool: string, path: string, host: string, missing = `no such file: ${path}`): Effect.Effect<Loaded, ToolError> =>
  Effect.tryPromise({
    try: async () => {
      // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
      const handle = await fs.open(host, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
      try {
        const stat = await handle.stat()
        if (stat.isDirectory()) throw new ToolError({ tool, reason: `${path} is a directory` })
        if (!stat.isFile()) throw new ToolError({ tool, reason: `${path} is not a regular file` })
        if (stat.size > MAX_FILE_BYTES) {
          throw new ToolError({
            tool,
            reason: `${path} is ${stat.size.toLocaleString("en-US")} bytes, more than the ${
              MAX_FILE_BYTES / 1024 / 1024
            } MiB this tool loads; use bash to work on parts of it (e.g. sed -n '100,200p', grep -n, head, tail)`
          })
        }
        const bytes = await handle.readFile()
        const text = decodeText(bytes)
        const loaded: Loaded = text === undefined ? { _tag: "Binary", bytes: bytes.length } : { _tag: "Text", text, bytes: bytes.length }
        return loaded
      } finally {
        await handle.close()
      }
    },
    catch: (e) => (isMissing(e) ? new ToolError({ tool, reason: missing }) : fsError(tool, path)(e))
  })

/** The real path of `dir` or of its nearest ancestor that exists. */
const nearestExisting = async (dir: string): Promise<string> => {
  for (let current = dir;; current = dirname(current)) {
    try {
      return await fs.realpath(current)
    } catch (e) {
      if (!isMissing(e) || dirname(current) === current) throw e
    }
  }
}

export interface Written {
  readonly bytes: number
  /** Size of the file it replaced, if there was one. */
  readonly replaced: number | undefined
}

/**
 * Writes `data` to `path` atomically: a temp file in the same folder (same filesystem, so the rename
 * is atomic), flushed, then renamed over the target. Readers see the old file or the new one, never
 * a mix; a failure leaves the old file as it was and no temp file behind. Missing parent folders are
 * created. An existing file keeps its permissions.
 */
export const atomicWrite = (session: SandboxSession, tool: string, path: string, host: string, data: string) =>
  Effect.gen(function*() {
    const root = yield* resolve(session, tool, WORKSPACE_MOUNT)
    return yield* attempt(tool, path, async () => {
      // Check where the folders really are before creating any, then again once they exist (see the header comment).
      const ancestor = await nearestExisting(dirname(host))
      if (!within(root, ancestor)) throw outside(tool, path)
      // Files anna writes belong to whoever owns the workspace (the sandbox's user when anna is root).
      const owner = process.getuid?.() === 0 ? await fs.stat(root) : undefined
      const made = await fs.mkdir(dirname(host), { recursive: true })
      if (owner !== undefined && made !== undefined) {
        for (let d = dirname(host); d.length >= made.length; d = dirname(d)) await fs.lchown(d, owner.uid, owner.gid)
      }
      const dir = await fs.realpath(dirname(host))
      if (!within(root, dir)) throw outside(tool, path)
      let target = join(dir, basename(host))
      let previous = await fs.lstat(target).catch((e: unknown) => (isMissing(e) ? undefined : Promise.reject(e)))
      if (previous?.isSymbolicLink() === true) {
        // Write through a link to its target, like the shell would, but only to a target inside.
        const real = await fs.realpath(target).catch(() => undefined)
        if (real === undefined || !within(root, real)) throw outside(tool, path)
        target = real
        previous = await fs.lstat(target)
      }
      if (previous?.isDirectory() === true) throw new ToolError({ tool, reason: `${path} is a directory` })
      // Next to the final target, so the rename stays on one filesystem and is atomic.
      const temp = join(dirname(target), `.${basename(target).slice(0, 100)}.${randomUUID().slice(0, 8)}.anna-tmp`)
      const handle = await fs.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o666)
      try {
        try {
          await handle.writeFile(data, "utf8")
          if (previous?.isFile() === true) await handle.chmod(previous.mode & 0o7777)
          const keep = previous?.isFile() === true ? previous : owner
          if (keep !== undefined && process.getuid?.() === 0) await handle.chown(keep.uid, keep.gid)
          await handle.sync()
        } finally {
          await handle.close()
        }
        // rename replaces the directory entry itself: a symlink at the target is replaced, never followed.
        await fs.rename(temp, target)
      } catch (e) {
        await fs.rm(temp, { force: true })
        throw e
      }
      const written: Written = {
        bytes: Buffer.byteLength(data, "utf8"),
        replaced: previous?.isFile() === true ? previous.size : undefined
      }
      return written
    })
  })
