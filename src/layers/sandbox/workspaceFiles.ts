/**
 * The file side of a sandbox session, shared by every Sandbox implementation: the working
 * directory, confined reads and atomic writes (confinedFs.ts), and the workspace's disk quota.
 *
 * With its own filesystem (workspaceDisk.ts) the quota is that filesystem's size: the kernel holds
 * it for files, folders, links and inodes alike, and usage is one `statfs`. Without (the soft quota),
 * usage is measured on the host (allocated blocks of files, folders and links, links not followed)
 * before a write and after every command. Either way a `write` that would pass it is refused; a
 * command that took the workspace over it (only possible with the soft quota, or after the quota
 * was lowered) is reported, and from then on commands run with no room to grow files (`ulimit -f 0`:
 * they can still read and delete) until the workspace is back under the quota. The container also
 * caps any single file at the quota (RLIMIT_FSIZE).
 */
import { Clock, Duration, Effect, Ref } from "effect"
import { PathOutsideWorkspace, WorkspaceFileError } from "../../domain/sandbox/errors.ts"
import { WORKSPACE_MOUNT } from "../../domain/sandbox/types.ts"
import type { SandboxSession, WorkspaceEntry } from "../../services/Sandbox.ts"
import { ConfinedError, containerPath, diskUsage, isDirectory, readPath, writePath } from "./confinedFs.ts"
import { type Attached, usage } from "./workspaceDisk.ts"

/** Entries counted at most when measuring a workspace (beyond: the measure is a lower bound). */
export const USAGE_MAX_ENTRIES = 200_000

/** The soft quota's watch over a running command measures at most this often. */
export const WATCH_MIN_PAUSE_MS = 1000

const MIB = 1024 * 1024

type ReadLimits = Parameters<SandboxSession["readFile"]>[1]

const FS_REASONS: Readonly<Record<string, string>> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  EROFS: "read-only file system",
  ENAMETOOLONG: "the name is too long",
  EMFILE: "too many open files",
  EBUSY: "the file is busy",
  ENOTEMPTY: "a non-empty directory is in the way",
  EISDIR: "is a directory",
  ENOTDIR: "a part of the path is a file, not a directory",
  EXDEV: "crosses a mount point"
}

const KINDS: Readonly<Record<ConfinedError["code"], WorkspaceFileError["kind"]>> = {
  OUTSIDE: "outside",
  ENOENT: "missing",
  ENOTDIR: "other",
  EISDIR: "directory",
  NOTREG: "not_regular",
  TOOBIG: "too_big",
  ELOOP: "other",
  NAME: "other"
}

const fileError = (path: string) => (e: unknown): WorkspaceFileError => {
  if (e instanceof ConfinedError) return new WorkspaceFileError({ path, kind: KINDS[e.code], reason: e.message })
  const code = typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined
  const reason = code !== undefined ? FS_REASONS[code] : undefined
  return new WorkspaceFileError({ path, kind: code === "EISDIR" ? "directory" : "other", reason: `${path}: ${reason ?? (e instanceof Error ? e.message : String(e))}` })
}

export interface WorkspaceFiles {
  readonly workingDir: SandboxSession["workingDir"]
  readonly setWorkingDir: SandboxSession["setWorkingDir"]
  readonly readFile: SandboxSession["readFile"]
  readonly writeFile: SandboxSession["writeFile"]
  /** Measures the workspace after a command: a note for the model when it is over its quota. */
  readonly afterCommand: Effect.Effect<string | undefined>
  /** Whether commands must run without room to grow files. */
  readonly overQuota: Effect.Effect<boolean>
  /**
   * Completes (with a note) when a command running now takes the workspace past the soft quota, so
   * that it is stopped then, not only measured after; never, on a filesystem of its own (the kernel holds it).
   */
  readonly passesQuota: Effect.Effect<string>
}

/**
 * `root` is the workspace's real host path (trusted); `owner` the uid/gid files created by anna
 * get when it runs as root; `quotaMb` the disk quota; `disk` how it is held (soft when not given).
 */
export const make = (
  root: string,
  options: {
    readonly quotaMb: number
    readonly owner?: { readonly uid: number; readonly gid: number } | undefined
    readonly disk?: Attached | undefined
    /**
     * Makes sure the workspace is what it was prepared as before the host looks into it (its own
     * filesystem mounted again if someone unmounted it meanwhile); a failure refuses the operation.
     */
    readonly ready?: (() => Promise<void>) | undefined
  }
) =>
  Effect.gen(function*() {
    const cwd = yield* Ref.make(WORKSPACE_MOUNT)
    const quota = options.quotaMb * MIB
    // Bytes in use as last measured (undefined until first needed), and whether that was over the quota.
    const used = yield* Ref.make<number | undefined>(undefined)
    const over = yield* Ref.make(false)

    const ownFilesystem = options.disk?.kind === "filesystem"
    const bytesInUse = ownFilesystem
      ? () => usage(root).then((u) => u.used)
      : () => diskUsage(root, USAGE_MAX_ENTRIES).then((u) => u.bytes)
    const ready = options.ready ?? (() => Promise.resolve())
    const measure = Effect.promise(() => ready().then(bytesInUse).catch(() => 0)).pipe(
      Effect.tap((bytes) => Ref.set(used, bytes)),
      Effect.tap((bytes) => Ref.set(over, bytes > quota))
    )

    const readFile: SandboxSession["readFile"] = Effect.fn("SandboxSession.readFile")(function*(path: string, limits: ReadLimits) {
      const dir = yield* Ref.get(cwd)
      return yield* Effect.tryPromise({
        try: async (): Promise<WorkspaceEntry> => {
          await ready()
          return await readPath(root, dir, path, { maxBytes: limits.maxBytes, maxEntries: limits.maxEntries })
        },
        catch: fileError(path)
      })
    })

    const writeFile: SandboxSession["writeFile"] = Effect.fn("SandboxSession.writeFile")(function*(path: string, data: string) {
      const dir = yield* Ref.get(cwd)
      // Its own filesystem is measured afresh (one statfs): commands change it between writes.
      const now = ownFilesystem ? yield* measure : (yield* Ref.get(used)) ?? (yield* measure)
      const size = Buffer.byteLength(data, "utf8")
      if (now + size > quota) {
        return yield* new WorkspaceFileError({
          path,
          kind: "quota",
          reason: `the workspace is at ${(now / MIB).toFixed(1)} MiB of its ${options.quotaMb} MiB quota; writing ${path} (${size.toLocaleString("en-US")} bytes) would pass it. Delete files you no longer need first.`
        })
      }
      const written = yield* Effect.tryPromise({ try: () => ready().then(() => writePath(root, dir, path, data, { owner: options.owner })), catch: fileError(path) })
      yield* Ref.update(used, (u) => (u === undefined ? undefined : u + written.bytes - (written.replaced ?? 0)))
      return written
    })

    const setWorkingDir: SandboxSession["setWorkingDir"] = Effect.fn("SandboxSession.setWorkingDir")(function*(path: string) {
      const dir = yield* Ref.get(cwd)
      const next = containerPath(dir, path)
      if (next === undefined) return yield* new PathOutsideWorkspace({ path })
      const ok = yield* Effect.promise(() => ready().then(() => isDirectory(root, dir, path)).catch(() => false))
      if (!ok) return yield* new PathOutsideWorkspace({ path })
      yield* Ref.set(cwd, next)
      return next
    })

    const afterCommand = measure.pipe(
      Effect.map((bytes) =>
        bytes > quota
          ? `[the workspace is over its disk quota: ${(bytes / MIB).toFixed(1)} MiB of ${options.quotaMb} MiB. Until files are deleted, commands cannot grow any file.]`
          : undefined
      )
    )

    // The soft quota's watch over a running command: measured again and again (at most every
    // second, and never more than a fifth of the time), it completes once the workspace holds more
    // than the quota, or than it held when the command started if that was more already.
    const passesQuota: Effect.Effect<string> = ownFilesystem
      ? Effect.never
      : Effect.gen(function*() {
        const limit = Math.max(quota, (yield* Ref.get(used)) ?? (yield* measure))
        let pause = WATCH_MIN_PAUSE_MS
        for (;;) {
          yield* Effect.sleep(Duration.millis(pause))
          const started = yield* Clock.currentTimeMillis
          const bytes = yield* measure
          if (bytes > limit) {
            return `[the command was stopped: it took the workspace past its disk quota (${(bytes / MIB).toFixed(1)} MiB of ${options.quotaMb} MiB). Delete files you no longer need.]`
          }
          pause = Math.max(WATCH_MIN_PAUSE_MS, 4 * ((yield* Clock.currentTimeMillis) - started))
        }
      })

    const files: WorkspaceFiles = { workingDir: Ref.get(cwd), setWorkingDir, readFile, writeFile, afterCommand, overQuota: Ref.get(over), passesQuota }
    return files
  })
