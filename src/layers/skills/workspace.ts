/**
 * A chat user's own skills, in their sandbox workspace at /workspace/skills/<name>/. Everything is
 * read and written through the sandbox session's confined `readFile`/`writeFile` — never with `fs` on
 * the host path, where the user may have planted links or FIFOs: a link anywhere in a source folder,
 * a FIFO or device, or a path leading out of the workspace refuses the install.
 *
 * Files are written as UTF-8 text (the confined writer takes text), so a chat install refuses binary
 * files; executable bits are not kept (run scripts with their interpreter, e.g. `sh run.sh`).
 *
 * An operator's skill lives on the host, outside every sandbox; `use` copies its text files into the
 * user's workspace (/workspace/.anna-skills/<name>/) so the agent can read and run them there.
 */
import { Effect, Result } from "effect"
import { SkillInvalid, SkillNotFound, SkillSourceError, SkillUnsafe, SkillWriteError } from "../../domain/skills/errors.ts"
import {
  MAX_SKILL_MD_BYTES,
  MAX_SOURCE_BYTES,
  MAX_SOURCE_FILES,
  nameProblem,
  type ParsedSkill,
  parseSkillMd,
  SKILL_FILE,
  type SkillPackage,
  type SourceFile
} from "../../domain/skills/skill.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import { readFolder } from "./sources.ts"
import { isTarball, readTarball } from "./tarball.ts"

export const USER_ROOT = "/workspace/skills"
/** A chat install reads at most this much (a source may hold several skills): a folder's files, a tarball and what it unpacks to. */
export const MAX_CHAT_SOURCE_BYTES = 20 * 1024 * 1024
const MAX_LISTED = 200

export interface UserSkill extends ParsedSkill {
  readonly path: string
}

const source = (path: string) => (e: { readonly message: string }) => new SkillSourceError({ source: path, reason: e.message })

/** The user's valid skills (a link, or a folder whose SKILL.md is missing or invalid, is left out). */
export const userSkills = (session: Pick<SandboxSession, "readFile">) =>
  Effect.gen(function*() {
    const root = yield* session.readFile(USER_ROOT, { maxBytes: 0, maxEntries: MAX_LISTED }).pipe(Effect.result)
    if (Result.isFailure(root) || root.success._tag !== "Directory") return [] as ReadonlyArray<UserSkill>
    const out: Array<UserSkill> = []
    for (const entry of root.success.entries) {
      if (entry.kind !== "dir" || nameProblem(entry.name) !== undefined) continue
      const path = `${USER_ROOT}/${entry.name}`
      const md = yield* session.readFile(`${path}/${SKILL_FILE}`, { maxBytes: MAX_SKILL_MD_BYTES, maxEntries: 1 }).pipe(Effect.result)
      if (Result.isFailure(md) || md.success._tag !== "File") continue
      const parsed = parseSkillMd(new TextDecoder().decode(md.success.bytes), path)
      if (Result.isFailure(parsed) || parsed.success.name !== entry.name) continue
      out.push({ ...parsed.success, path })
    }
    return out as ReadonlyArray<UserSkill>
  })

/** The files (relative paths) of a user's skill folder besides SKILL.md, without following links. */
export const userFiles = (session: SandboxSession, folder: string) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const walk = (dir: string, rel: string): Effect.Effect<void> =>
      Effect.gen(function*() {
        const listing = yield* session.readFile(dir, { maxBytes: 0, maxEntries: MAX_LISTED }).pipe(Effect.result)
        if (Result.isFailure(listing) || listing.success._tag !== "Directory") return
        for (const e of listing.success.entries) {
          if (out.length >= MAX_LISTED) return
          const path = rel === "" ? e.name : `${rel}/${e.name}`
          if (e.kind === "dir") yield* walk(`${dir}/${e.name}`, path)
          else if (path !== SKILL_FILE) out.push(e.kind === "file" ? path : `${path} (${e.kind})`)
        }
      })
    yield* walk(folder, "")
    return out as ReadonlyArray<string>
  })

/** A folder of the workspace read whole through the confined reader; links and special files refuse it. */
const readWorkspaceFolder = (session: SandboxSession, root: string) =>
  Effect.gen(function*() {
    const files: Array<SourceFile> = []
    let total = 0
    const walk = (dir: string, rel: string): Effect.Effect<void, SkillUnsafe | SkillSourceError> =>
      Effect.gen(function*() {
        const listing = yield* session.readFile(dir, { maxBytes: 0, maxEntries: MAX_SOURCE_FILES }).pipe(Effect.mapError(source(dir)))
        if (listing._tag !== "Directory") return yield* new SkillSourceError({ source: dir, reason: "not a folder" })
        if (listing.more > 0) return yield* new SkillSourceError({ source: root, reason: `more than ${MAX_SOURCE_FILES} entries in ${dir}` })
        for (const e of listing.entries) {
          const path = rel === "" ? e.name : `${rel}/${e.name}`
          if (e.kind === "link") return yield* new SkillUnsafe({ entry: path, reason: `symbolic link (to ${e.target ?? "?"}); links are refused` })
          if (e.kind === "other") return yield* new SkillUnsafe({ entry: path, reason: "not a regular file or folder (FIFO, socket or device)" })
          if (e.kind === "dir") {
            yield* walk(`${dir}/${e.name}`, path)
            continue
          }
          if (files.length >= MAX_SOURCE_FILES) return yield* new SkillSourceError({ source: root, reason: `more than ${MAX_SOURCE_FILES} files` })
          const file = yield* session.readFile(`${dir}/${e.name}`, { maxBytes: Math.max(0, MAX_CHAT_SOURCE_BYTES - total), maxEntries: 1 }).pipe(
            Effect.mapError((err) => err.kind === "not_regular" ? new SkillUnsafe({ entry: path, reason: err.reason }) : source(root)(err))
          )
          if (file._tag !== "File") return yield* new SkillUnsafe({ entry: path, reason: "changed while it was read" })
          total += file.bytes.length
          files.push({ path, bytes: file.bytes, executable: false })
        }
      })
    yield* walk(root, "")
    return files as ReadonlyArray<SourceFile>
  })

/** A source inside the workspace: a folder, or a `.tar`/`.tar.gz`/`.tgz` file. */
export const readWorkspaceSource = (session: SandboxSession, path: string) =>
  Effect.gen(function*() {
    const clean = path.replace(/\/+$/, "")
    if (isTarball(clean)) {
      const file = yield* session.readFile(clean, { maxBytes: Math.min(MAX_CHAT_SOURCE_BYTES, MAX_SOURCE_BYTES), maxEntries: 1 }).pipe(Effect.mapError(source(path)))
      if (file._tag !== "File") return yield* new SkillSourceError({ source: path, reason: "a folder, not a tarball" })
      // Unpacked, it may hold no more than a folder installed from a chat.
      return yield* readTarball(file.bytes, path, MAX_CHAT_SOURCE_BYTES)
    }
    return yield* readWorkspaceFolder(session, clean === "" ? "/workspace" : clean)
  })

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** Writes a validated skill to /workspace/skills/<name>/ (text files only). */
export const writeUserSkill = (session: SandboxSession, pkg: SkillPackage) =>
  Effect.gen(function*() {
    const texts: Array<{ readonly path: string; readonly text: string }> = []
    for (const f of pkg.files) {
      try {
        texts.push({ path: f.path, text: utf8.decode(f.bytes) })
      } catch {
        return yield* new SkillInvalid({ where: `${pkg.name}/${f.path}`, reason: "binary files cannot be installed from a chat (text files only)" })
      }
    }
    const folder = `${USER_ROOT}/${pkg.name}`
    for (const t of texts) {
      yield* session.writeFile(`${folder}/${t.path}`, t.text).pipe(Effect.mapError((e) => new SkillWriteError({ name: pkg.name, reason: e.message })))
    }
    return folder
  })

/** Removes /workspace/skills/<name> inside the user's container (the name is checked first). */
export const removeUserSkill = (session: SandboxSession, name: string) =>
  Effect.gen(function*() {
    if (nameProblem(name) !== undefined || !(yield* userSkills(session)).some((s) => s.name === name)) {
      return yield* new SkillNotFound({ name, scope: "your skills" })
    }
    const result = yield* session.exec(`rm -rf -- '${USER_ROOT}/${name}'`, { timeoutMs: 30_000 }).pipe(
      Effect.mapError((e) => new SkillWriteError({ name, reason: e.message }))
    )
    if (result.exitCode !== 0) return yield* new SkillWriteError({ name, reason: `rm exited with ${result.exitCode}` })
  })

/** Where `use` puts a copy of an operator skill's files, so the sandboxed agent can read and run them. */
export const OPERATOR_COPY_ROOT = "/workspace/.anna-skills"

/**
 * Copies an operator skill's text files (read on the host without following links) into the user's
 * workspace at OPERATOR_COPY_ROOT/<name>/, replacing what an earlier `use` left there; binary files
 * are skipped (the confined writer takes text). Returns the folder and the files copied and skipped.
 */
export const copyOperatorSkill = (session: SandboxSession, name: string, hostFolder: string) =>
  Effect.gen(function*() {
    if (nameProblem(name) !== undefined) return yield* new SkillNotFound({ name, scope: "operator" })
    const files = yield* readFolder(hostFolder, name)
    const folder = `${OPERATOR_COPY_ROOT}/${name}`
    const copied: Array<string> = []
    const skipped: Array<string> = []
    for (const f of files) {
      let text: string
      try {
        text = utf8.decode(f.bytes)
      } catch {
        skipped.push(f.path)
        continue
      }
      yield* session.writeFile(`${folder}/${f.path}`, text).pipe(Effect.mapError((e) => new SkillWriteError({ name, reason: e.message })))
      copied.push(f.path)
    }
    return { folder, copied, skipped }
  })
