/**
 * Reading an operator's skill source into memory (regular files with checked paths), so that it is
 * validated whole before anything is installed:
 *
 * - a local folder: walked without following any link; a symbolic link anywhere (wherever it points)
 *   and anything that is not a regular file or folder (FIFO, socket, device) refuses the source;
 *   files are opened with O_NOFOLLOW | O_NONBLOCK, so a swapped-in link or FIFO cannot be read either;
 * - a git URL: `git clone --depth 1` (no prompt for credentials, a time limit, `ext::` transports
 *   off) into a temporary folder, then read as a folder (the `.git` folder left out); `#ref` picks a
 *   branch or tag, `#ref:path` (or `#:path`) a folder of the repository;
 * - a tarball: a local `.tar`/`.tar.gz`/`.tgz` file or one downloaded over http(s) with a size and
 *   time limit, streamed (never held whole) into ./tarball.ts, which bounds what it unpacks.
 */
import { Effect, Result } from "effect"
import { execFile } from "node:child_process"
import { constants, promises as fs } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { SkillSourceError, SkillUnsafe } from "../../domain/skills/errors.ts"
import { entryPath, MAX_SOURCE_BYTES, MAX_SOURCE_FILES, type SourceFile } from "../../domain/skills/skill.ts"
import { isTarball, readTarball, TAR_OVERHEAD_BYTES } from "./tarball.ts"

export const GIT_TIMEOUT_MS = 120_000
export const DOWNLOAD_TIMEOUT_MS = 120_000

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? ""

/** Opens a regular file of at most `maxBytes` without following a link or blocking on a FIFO; the handle, or why not. */
const openRegular = async (path: string, maxBytes: number): Promise<{ handle: fs.FileHandle; executable: boolean } | string> => {
  let handle: fs.FileHandle
  try {
    handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ELOOP" ? "symbolic link; links are refused" : message(e)
  }
  let why: string
  try {
    const st = await handle.stat()
    if (st.isFile() && st.size <= maxBytes) return { handle, executable: (st.mode & 0o111) !== 0 }
    why = st.isFile() ? "too large" : "not a regular file"
  } catch (e) {
    why = message(e)
  }
  await handle.close()
  return why
}

/** Reads a regular file without following a link or blocking on a FIFO, at most `maxBytes`. */
const readRegular = async (path: string, maxBytes: number): Promise<{ bytes: Buffer; executable: boolean } | string> => {
  const opened = await openRegular(path, maxBytes)
  if (typeof opened === "string") return opened
  try {
    return { bytes: await opened.handle.readFile(), executable: opened.executable }
  } finally {
    await opened.handle.close()
  }
}

/** The regular files under `root` (skipping `.git`), refusing links and special files. */
export const readFolder = (root: string, source: string) =>
  Effect.gen(function*() {
    const files: Array<SourceFile> = []
    let total = 0
    const top = yield* Effect.tryPromise({ try: () => fs.lstat(root), catch: (e) => new SkillSourceError({ source, reason: message(e) }) })
    if (top.isSymbolicLink()) return yield* new SkillUnsafe({ entry: source, reason: "symbolic link; links are refused" })
    if (!top.isDirectory()) return yield* new SkillSourceError({ source, reason: "not a folder" })
    const walk = (dir: string, rel: string): Effect.Effect<void, SkillUnsafe | SkillSourceError> =>
      Effect.gen(function*() {
        const entries = yield* Effect.tryPromise({
          try: () => fs.readdir(dir, { withFileTypes: true }),
          catch: (e) => new SkillSourceError({ source, reason: message(e) })
        })
        entries.sort((a, b) => a.name.localeCompare(b.name))
        for (const entry of entries) {
          const path = rel === "" ? entry.name : `${rel}/${entry.name}`
          if (entry.name === ".git" && entry.isDirectory()) continue
          if (entry.isSymbolicLink()) {
            const target = yield* Effect.promise(() => fs.readlink(join(dir, entry.name)).catch(() => "?"))
            return yield* new SkillUnsafe({ entry: path, reason: `symbolic link (to ${target}); links are refused` })
          }
          if (entry.isDirectory()) {
            yield* walk(join(dir, entry.name), path)
            continue
          }
          if (!entry.isFile()) return yield* new SkillUnsafe({ entry: path, reason: "not a regular file or folder (FIFO, socket or device)" })
          if (files.length >= MAX_SOURCE_FILES) return yield* new SkillSourceError({ source, reason: `more than ${MAX_SOURCE_FILES} files` })
          const read = yield* Effect.promise(() => readRegular(join(dir, entry.name), MAX_SOURCE_BYTES - total))
          if (typeof read === "string") {
            if (read === "too large") return yield* new SkillSourceError({ source, reason: `more than ${MAX_SOURCE_BYTES / 1024 / 1024} MiB` })
            return yield* new SkillUnsafe({ entry: path, reason: read })
          }
          total += read.bytes.length
          files.push({ path, bytes: read.bytes, executable: read.executable })
        }
      })
    yield* walk(root, "")
    return files as ReadonlyArray<SourceFile>
  })

const GIT_URL = /^(https?:\/\/|ssh:\/\/|git:\/\/|file:\/\/|git@[^:]+:)/

/** Whether `source` names a git repository (a URL that is not a tarball's, `git@host:…`, or `….git`). */
export const isGitSource = (source: string): boolean => {
  const url = source.replace(/#.*$/, "")
  if (isTarball(url)) return false
  return GIT_URL.test(url) || url.endsWith(".git")
}

const run = (args: ReadonlyArray<string>, timeoutMs: number) =>
  new Promise<string | undefined>((done) => {
    execFile("git", args, {
      timeout: timeoutMs,
      killSignal: "SIGKILL",
      env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "echo", SSH_ASKPASS: "echo", GCM_INTERACTIVE: "never" }
    }, (error, _stdout, stderr) => {
      if (error === null) return done(undefined)
      const why = error.killed ? `timed out after ${timeoutMs / 1000} s` : (stderr.trim().split("\n").pop() ?? error.message)
      done(why)
    })
  })

/** A shallow clone of `source` (optional `#ref`) in a temporary folder, read as a folder and removed. */
export const readGit = (source: string) =>
  Effect.acquireUseRelease(
    Effect.promise(() => fs.mkdtemp(join(tmpdir(), "anna-skill-git-"))),
    (dir) =>
      Effect.gen(function*() {
        const hash = source.lastIndexOf("#")
        const url = hash === -1 ? source : source.slice(0, hash)
        const fragment = hash === -1 ? "" : source.slice(hash + 1)
        const colon = fragment.indexOf(":")
        const ref = colon === -1 ? fragment : fragment.slice(0, colon)
        const sub = entryPath(colon === -1 ? "" : fragment.slice(colon + 1))
        if (Result.isFailure(sub)) return yield* sub.failure
        if (url.startsWith("-") || ref.startsWith("-")) return yield* new SkillSourceError({ source, reason: "not a git URL" })
        const checkout = join(dir, "checkout")
        const failed = yield* Effect.promise(() =>
          run(["-c", "protocol.ext.allow=never", "clone", "--depth", "1", "--quiet", ...(ref === "" ? [] : ["--branch", ref]), "--", url, checkout], GIT_TIMEOUT_MS)
        )
        if (failed !== undefined) return yield* new SkillSourceError({ source, reason: `git clone failed: ${failed}` })
        return yield* readFolder(sub.success === "" ? checkout : join(checkout, ...sub.success.split("/")), source)
      }),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

/** An archive is read as it arrives, up to the most a tarball of MAX_SOURCE_BYTES of files may take. */
const MAX_ARCHIVE_BYTES = MAX_SOURCE_BYTES + TAR_OVERHEAD_BYTES

/** A local tarball, opened as readRegular opens a file and streamed (never held whole) into readTarball. */
const readLocalTarball = (path: string, source: string) =>
  Effect.acquireUseRelease(
    Effect.promise(() => openRegular(path, MAX_ARCHIVE_BYTES)),
    (opened) =>
      typeof opened === "string"
        ? Effect.fail(new SkillSourceError({ source, reason: opened }))
        : readTarball(opened.handle.createReadStream({ autoClose: false, highWaterMark: 64 * 1024 }), source),
    (opened) => (typeof opened === "string" ? Effect.void : Effect.promise(() => opened.handle.close()))
  )

/** A download's body, its failure (a timeout, a reset) told as one. */
async function* downloaded(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    yield* body
  } catch (e) {
    throw new Error(`download failed: ${message(e)}`)
  }
}

/** The tarball at an http(s) URL, read as it arrives within the time limit; the request is cancelled once done. */
const downloadTarball = (url: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new AbortController()),
    (controller) =>
      Effect.gen(function*() {
        const response = yield* Effect.tryPromise({
          try: async () => {
            const response = await fetch(url, { signal: AbortSignal.any([controller.signal, AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS)]) })
            if (!response.ok) throw new Error(`HTTP ${response.status}`)
            const declared = Number(response.headers.get("content-length") ?? "0")
            if (declared > MAX_ARCHIVE_BYTES) throw new Error(`larger than ${MAX_ARCHIVE_BYTES / 1024 / 1024} MiB`)
            return response
          },
          catch: (e) => new SkillSourceError({ source: url, reason: `download failed: ${message(e)}` })
        })
        return yield* readTarball(response.body === null ? new Uint8Array() : downloaded(response.body), url)
      }),
    (controller) => Effect.sync(() => controller.abort())
  )

/** Reads any source the operator may install from. */
export const readSource = (source: string): Effect.Effect<ReadonlyArray<SourceFile>, SkillUnsafe | SkillSourceError> => {
  if (/^https?:\/\//.test(source) && isTarball(source)) return downloadTarball(source)
  if (isGitSource(source)) return readGit(source)
  const path = resolve(source)
  if (isTarball(path)) return readLocalTarball(path, source)
  return readFolder(path, source)
}
