/**
 * The skills installed in one host folder (`$ANNA_HOME/skills` or an agent's `skills/`): listing
 * them (each SKILL.md read without blocking, only when it is a regular file within the size limit,
 * its `name` matching its folder; anything else is skipped with a warning) and writing a validated
 * skill in: into a temporary folder next to the target, then renamed into place.
 */
import { Effect, Result } from "effect"
import { randomBytes } from "node:crypto"
import { constants, promises as fs } from "node:fs"
import { join } from "node:path"
import { SkillWriteError } from "../../domain/skills/errors.ts"
import { MAX_SKILL_MD_BYTES, nameProblem, type ParsedSkill, parseSkillMd, SKILL_FILE, type SkillPackage } from "../../domain/skills/skill.ts"

/** A SKILL.md as text, or undefined when missing, not a regular file or too large. */
export const readSkillMd = async (folder: string): Promise<string | undefined> => {
  let handle: fs.FileHandle
  try {
    handle = await fs.open(join(folder, SKILL_FILE), constants.O_RDONLY | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const st = await handle.stat()
    if (!st.isFile() || st.size > MAX_SKILL_MD_BYTES) return undefined
    return (await handle.readFile()).toString("utf8")
  } catch {
    return undefined
  } finally {
    await handle.close()
  }
}

export interface FolderSkill extends ParsedSkill {
  readonly path: string
}

/** The valid skills in `root`, sorted by name (a missing folder has none). */
export const skillsIn = (root: string) =>
  Effect.gen(function*() {
    const names = yield* Effect.promise(() => fs.readdir(root).catch(() => [] as Array<string>))
    const out: Array<FolderSkill> = []
    for (const name of names.sort()) {
      if (name.startsWith(".")) continue
      const path = join(root, name)
      const text = yield* Effect.promise(() => readSkillMd(path))
      if (text === undefined) continue
      const parsed = parseSkillMd(text, path)
      if (Result.isFailure(parsed)) {
        yield* Effect.logWarning(`skills: ${parsed.failure.message}; skipped`)
        continue
      }
      if (parsed.success.name !== name) {
        yield* Effect.logWarning(`skills: ${path}: its name is ${parsed.success.name}, not its folder's; skipped`)
        continue
      }
      out.push({ ...parsed.success, path })
    }
    return out as ReadonlyArray<FolderSkill>
  })

export const exists = (path: string) => Effect.promise(() => fs.lstat(path).then(() => true, () => false))

/** The skill's files (relative paths) besides SKILL.md, at most `max`, without following links. */
export const otherFiles = (folder: string, max = 200) =>
  Effect.promise(async () => {
    const out: Array<string> = []
    const walk = async (dir: string, rel: string): Promise<void> => {
      const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => [])
      for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (out.length >= max) return
        const path = rel === "" ? e.name : `${rel}/${e.name}`
        if (e.isDirectory()) await walk(join(dir, e.name), path)
        else if (path !== SKILL_FILE) out.push(path)
      }
    }
    await walk(folder, "")
    return out as ReadonlyArray<string>
  })

/**
 * Writes `pkg` as `root/<name>/`: every file into a temporary folder next to it, then one rename
 * (an existing skill is swapped out and removed only when `replace`). A failure leaves nothing behind.
 */
export const writeSkill = (root: string, pkg: SkillPackage, replace: boolean) =>
  Effect.tryPromise({
    try: async () => {
      const bad = nameProblem(pkg.name)
      if (bad !== undefined) throw new Error(bad)
      const target = join(root, pkg.name)
      const tag = randomBytes(6).toString("hex")
      const temp = join(root, `.install-${pkg.name}-${tag}`)
      const old = join(root, `.old-${pkg.name}-${tag}`)
      await fs.mkdir(root, { recursive: true, mode: 0o755 })
      try {
        await fs.mkdir(temp, { mode: 0o755 })
        for (const file of pkg.files) {
          const path = join(temp, ...file.path.split("/"))
          await fs.mkdir(join(path, ".."), { recursive: true, mode: 0o755 })
          await fs.writeFile(path, file.bytes, { flag: "wx", mode: file.executable ? 0o755 : 0o644 })
        }
        const had = await fs.lstat(target).then(() => true, () => false)
        if (had && !replace) throw new Error(`${target} already exists`)
        if (had) await fs.rename(target, old)
        await fs.rename(temp, target)
        if (had) await fs.rm(old, { recursive: true, force: true })
        return target
      } finally {
        await fs.rm(temp, { recursive: true, force: true })
      }
    },
    catch: (e) => new SkillWriteError({ name: pkg.name, reason: (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "" })
  })
