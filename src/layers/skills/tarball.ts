/**
 * A tarball (`.tar`, `.tar.gz`, `.tgz`) read into memory with the `tar` package's parser — never
 * extracted onto a disk — so every entry is checked before anything is written: only regular files
 * and folders with relative paths inside the archive are accepted; an absolute path, `..`, a
 * symbolic or hard link, a device file, a FIFO or any other entry type refuses the whole archive.
 */
import { Effect, Result } from "effect"
import { Parser, type ReadEntry } from "tar"
import { SkillSourceError, SkillUnsafe } from "../../domain/skills/errors.ts"
import { entryPath, MAX_SOURCE_BYTES, MAX_SOURCE_FILES, type SourceFile } from "../../domain/skills/skill.ts"

const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"])

const refusal = (entry: ReadEntry): string | undefined => {
  switch (entry.type) {
    case "SymbolicLink":
      return `symbolic link (to ${entry.linkpath ?? "?"}); links are refused`
    case "Link":
      return `hard link (to ${entry.linkpath ?? "?"}); links are refused`
    case "CharacterDevice":
    case "BlockDevice":
      return "device file"
    case "FIFO":
      return "FIFO (named pipe)"
    default:
      return FILE_TYPES.has(entry.type) || entry.type === "Directory" ? undefined : `unsupported entry type ${entry.type}`
  }
}

/** The regular files of a tarball (gzip is detected), or why it is refused. */
export const readTarball = (bytes: Uint8Array, source: string) =>
  Effect.callback<ReadonlyArray<SourceFile>, SkillUnsafe | SkillSourceError>((resume) => {
    const files: Array<SourceFile> = []
    const seen = new Set<string>()
    let total = 0
    let settled = false
    const finish = (result: Effect.Effect<ReadonlyArray<SourceFile>, SkillUnsafe | SkillSourceError>) => {
      if (settled) return
      settled = true
      resume(result)
    }
    const parser = new Parser({
      strict: true,
      onReadEntry: (entry) => {
        if (settled) return entry.resume()
        const bad = refusal(entry)
        if (bad !== undefined) return finish(Effect.fail(new SkillUnsafe({ entry: entry.path, reason: bad })))
        const path = entryPath(entry.path)
        if (Result.isFailure(path)) return finish(Effect.fail(path.failure))
        if (entry.type === "Directory" || path.success === "") return entry.resume()
        if (seen.has(path.success)) return finish(Effect.fail(new SkillUnsafe({ entry: entry.path, reason: "appears twice in the archive" })))
        seen.add(path.success)
        total += entry.size
        if (seen.size > MAX_SOURCE_FILES) return finish(Effect.fail(new SkillSourceError({ source, reason: `more than ${MAX_SOURCE_FILES} files` })))
        if (total > MAX_SOURCE_BYTES) return finish(Effect.fail(new SkillSourceError({ source, reason: `more than ${MAX_SOURCE_BYTES / 1024 / 1024} MiB unpacked` })))
        const chunks: Array<Buffer> = []
        entry.on("data", (c: Buffer) => chunks.push(c))
        entry.on("end", () => files.push({ path: path.success, bytes: Buffer.concat(chunks), executable: ((entry.mode ?? 0) & 0o111) !== 0 }))
      }
    })
    parser.on("error", (e: Error) => finish(Effect.fail(new SkillSourceError({ source, reason: `not a readable tarball: ${e.message}` }))))
    parser.on("end", () => finish(Effect.succeed(files)))
    try {
      parser.end(Buffer.from(bytes))
    } catch (e) {
      finish(Effect.fail(new SkillSourceError({ source, reason: `not a readable tarball: ${e instanceof Error ? e.message : String(e)}` })))
    }
  })

export const isTarball = (source: string): boolean => /\.(tar|tar\.gz|tgz)$/i.test(source.replace(/[?#].*$/, ""))
