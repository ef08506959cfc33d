/**
 * One playbook file on disk (issue 15): reading it safely and cheaply, and replacing it atomically.
 *
 * Reads accept only a regular file (no link, FIFO or device: opened O_NOFOLLOW | O_NONBLOCK so a
 * FIFO cannot block the gateway), at most MAX_PLAYBOOK_BYTES, and are cached by (dev, ino, size,
 * mtime) so a turn costs one `lstat` per file; a file with a mistake stays cached as its error.
 *
 * Writes are read-modify-write under a per-file Semaphore(1): the file is read again first (an
 * invalid file fails the write and is never overwritten), the new text goes to a temp file in the
 * same folder (unique name, mode 0600, O_EXCL), is fsynced and renamed over the target, so a reader
 * (or a crash) sees the old file or the new one, never a mix. Another process (the CLI next to the
 * gateway) may write between our read and our rename: the target's identity is checked just before
 * the rename, and the update is redone on the file as it is now when it changed.
 */
import { Effect, Result, Semaphore } from "effect"
import { randomBytes } from "node:crypto"
import { constants, promises as fs, type Stats } from "node:fs"
import { basename, dirname, join } from "node:path"
import { PlaybookInvalid, type PlaybookError, PlaybookWriteFailed } from "../../domain/learning/errors.ts"
import type { PlaybookRule } from "../../domain/learning/rule.ts"
import { parsePlaybook, stringifyPlaybook } from "../../domain/learning/yaml.ts"

/** The largest playbook file read (or written): far above what hundreds of rules take. */
export const MAX_PLAYBOOK_BYTES = 1024 * 1024
/** How often an update is redone when another process replaced the file meanwhile. */
const MAX_ATTEMPTS = 5

/**
 * Steps of a write a test can make fail, as a crash would at that point (a thrown error). Only
 * tests pass these.
 */
export interface WriteHooks {
  /** After the temp file is written and fsynced, before it is closed. */
  readonly afterTempWrite?: (temp: string) => Promise<void>
  /** Just before the rename over the target. */
  readonly beforeRename?: (temp: string, target: string) => Promise<void>
}

type Identity = string
const identity = (s: Stats): Identity => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`

interface Cached {
  readonly identity: Identity
  readonly rules: Result.Result<ReadonlyArray<PlaybookRule>, PlaybookInvalid>
}

const codeOf = (e: unknown): string | undefined =>
  e !== null && typeof e === "object" && "code" in e && typeof e.code === "string" ? e.code : undefined
const reasonOf = (e: unknown): string => codeOf(e) ?? (e instanceof Error ? e.message : String(e))

/** What an update does with the rules it read: new rules to write (or none: nothing is written) and its answer. */
export interface Change<A> {
  readonly rules: ReadonlyArray<PlaybookRule> | undefined
  readonly result: A
}

export interface PlaybookFiles {
  /** The rules of the file (none when it does not exist). */
  readonly read: (path: string) => Effect.Effect<ReadonlyArray<PlaybookRule>, PlaybookError>
  /** Read-modify-write of the file under its lock. */
  readonly update: <A, E>(
    path: string,
    change: (rules: ReadonlyArray<PlaybookRule>) => Effect.Effect<Change<A>, E>
  ) => Effect.Effect<A, E | PlaybookError>
}

export const makeFiles = (hooks: WriteHooks = {}): PlaybookFiles => {
  const cache = new Map<string, Cached>()
  const locks = new Map<string, Semaphore.Semaphore>()
  const lockOf = (path: string) => {
    let lock = locks.get(path)
    if (lock === undefined) {
      lock = Semaphore.makeUnsafe(1)
      locks.set(path, lock)
    }
    return lock
  }

  /** The file's identity, undefined when it does not exist; anything but a regular file is refused. */
  const statOf = async (path: string): Promise<Stats | undefined> => {
    try {
      const s = await fs.lstat(path)
      if (!s.isFile()) throw new PlaybookInvalid({ path, line: 0, reason: "not a regular file (a link, folder, FIFO or device is not read)" })
      return s
    } catch (e) {
      if (codeOf(e) === "ENOENT") return undefined
      throw e
    }
  }

  const load = async (path: string): Promise<{ readonly identity: Identity | undefined; readonly rules: Cached["rules"] }> => {
    const before = await statOf(path)
    if (before === undefined) {
      cache.delete(path)
      return { identity: undefined, rules: Result.succeed([]) }
    }
    const hit = cache.get(path)
    if (hit !== undefined && hit.identity === identity(before)) return hit
    const handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    try {
      const s = await handle.stat()
      if (!s.isFile()) throw new PlaybookInvalid({ path, line: 0, reason: "not a regular file" })
      if (s.size > MAX_PLAYBOOK_BYTES) throw new PlaybookInvalid({ path, line: 0, reason: `larger than ${MAX_PLAYBOOK_BYTES} bytes` })
      const buffer = Buffer.alloc(MAX_PLAYBOOK_BYTES + 1)
      let length = 0
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
        if (bytesRead === 0) break
        length += bytesRead
        if (length > MAX_PLAYBOOK_BYTES) throw new PlaybookInvalid({ path, line: 0, reason: `larger than ${MAX_PLAYBOOK_BYTES} bytes` })
      }
      const entry: Cached = { identity: identity(s), rules: parsePlaybook(buffer.subarray(0, length).toString("utf8"), path) }
      cache.set(path, entry)
      return entry
    } finally {
      await handle.close()
    }
  }

  const asError = (path: string) => (e: unknown): PlaybookError =>
    e instanceof PlaybookInvalid ? e : new PlaybookInvalid({ path, line: 0, reason: `cannot read it: ${reasonOf(e)}` })

  const readWithIdentity = (path: string) =>
    Effect.tryPromise({ try: () => load(path), catch: asError(path) }).pipe(
      Effect.flatMap((loaded) =>
        Result.isSuccess(loaded.rules) ? Effect.succeed({ identity: loaded.identity, rules: loaded.rules.success }) : Effect.fail(loaded.rules.failure)
      )
    )

  const read = Effect.fn("PlaybookFiles.read")(function*(path: string) {
    return (yield* readWithIdentity(path)).rules
  })

  /**
   * Writes `text` over `path` through a temp file and returns the new file's identity (a rename keeps
   * the temp file's inode, size and time); false (nothing changed) when the target is no longer the
   * file `expected` names (undefined: no file).
   */
  const replace = async (path: string, text: string, expected: Identity | undefined): Promise<Identity | false> => {
    const dir = dirname(path)
    await fs.mkdir(dir, { recursive: true, mode: 0o700 })
    const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`)
    const handle = await fs.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
    let renamed = false
    let written: Identity
    try {
      try {
        await handle.writeFile(text, "utf8")
        await handle.sync()
        written = identity(await handle.stat())
        await hooks.afterTempWrite?.(temp)
      } finally {
        await handle.close()
      }
      const now = await statOf(path)
      if ((now === undefined ? undefined : identity(now)) !== expected) return false
      await hooks.beforeRename?.(temp, path)
      await fs.rename(temp, path)
      renamed = true
      // The rename itself is durable once the folder is flushed (best effort: not every file system allows it).
      await fs.open(dir, constants.O_RDONLY).then((d) => d.sync().finally(() => d.close())).catch(() => undefined)
      return written
    } finally {
      if (!renamed) await fs.unlink(temp).catch(() => undefined)
    }
  }

  const update = <A, E>(path: string, change: (rules: ReadonlyArray<PlaybookRule>) => Effect.Effect<Change<A>, E>) =>
    lockOf(path).withPermits(1)(
      Effect.gen(function*() {
        for (let attempt = 1; ; attempt++) {
          const current = yield* readWithIdentity(path)
          const next = yield* change(current.rules)
          if (next.rules === undefined) return next.result
          const text = stringifyPlaybook(next.rules)
          if (Buffer.byteLength(text) > MAX_PLAYBOOK_BYTES) {
            return yield* new PlaybookWriteFailed({ path, reason: `the playbook would be larger than ${MAX_PLAYBOOK_BYTES} bytes` })
          }
          const done = yield* Effect.tryPromise({
            try: () => replace(path, text, current.identity),
            catch: (e) => new PlaybookWriteFailed({ path, reason: reasonOf(e) })
          })
          if (done !== false) {
            // What was just written is known: the next read finds it cached, not parsed again (a YAML
            // parse of a few hundred rules takes tens of milliseconds; the round trip is exact).
            cache.set(path, { identity: done, rules: Result.succeed(next.rules) })
            return next.result
          }
          if (attempt >= MAX_ATTEMPTS) {
            return yield* new PlaybookWriteFailed({ path, reason: "another process kept changing the file; try again" })
          }
        }
      }).pipe(Effect.withSpan("PlaybookFiles.update"))
    )

  return { read, update }
}
