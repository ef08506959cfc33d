/**
 * What a skill is (pure): a folder with a SKILL.md whose YAML front matter names it (`name`:
 * lowercase letters, digits and `-`, at most 64 characters — it becomes the installed folder's name,
 * so nothing else is accepted) and says what it is for (`description`, at most 1,024 characters);
 * the body is the instructions, loaded only when the agent uses the skill. Other files (scripts,
 * references) may sit next to it, within the limits below.
 *
 * A source (a folder, a git checkout, a tarball) is read into a `SourceTree` of regular files with
 * checked relative paths first; `packagesIn` then finds the skills in it: one at its root, or else
 * every folder (at most MAX_DEPTH deep, not inside another skill) that holds a SKILL.md.
 */
import { Effect, Result, Schema } from "effect"
import { parse } from "yaml"
import { SkillInvalid, SkillUnsafe } from "./errors.ts"

export const SKILL_FILE = "SKILL.md"
export const MAX_NAME_CHARS = 64
export const MAX_DESCRIPTION_CHARS = 1_024
export const MAX_SKILL_MD_BYTES = 256 * 1024
export const MAX_SKILL_FILES = 1_000
export const MAX_SKILL_BYTES = 20 * 1024 * 1024
/** A whole source (which may hold several skills) is read up to these limits. */
export const MAX_SOURCE_FILES = 5_000
export const MAX_SOURCE_BYTES = 64 * 1024 * 1024
/** How deep below a source's root a skill folder is looked for (e.g. `skills/pdf/SKILL.md` is depth 2). */
export const MAX_DEPTH = 3

const NAME = /^[a-z0-9][a-z0-9-]*$/

/** Why `name` is not a skill name, or undefined when it is one. */
export const nameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "the name is empty"
  if (name.length > MAX_NAME_CHARS) return `the name is longer than ${MAX_NAME_CHARS} characters`
  if (!NAME.test(name)) return `"${name}" is not a skill name (lowercase letters, digits and -, starting with a letter or digit)`
  return undefined
}

export interface SkillMeta {
  readonly name: string
  readonly description: string
}

export interface ParsedSkill extends SkillMeta {
  /** The instructions after the front matter. */
  readonly body: string
}

const FrontMatter = Schema.Struct({ name: Schema.String, description: Schema.String })
const decodeFrontMatter = Schema.decodeUnknownResult(FrontMatter)

const FENCE = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n?---[ \t]*(?:\r?\n|$)/

/** Parses a SKILL.md (`where` names it in errors). */
export const parseSkillMd = (text: string, where: string): Result.Result<ParsedSkill, SkillInvalid> => {
  const invalid = (reason: string) => Result.fail(new SkillInvalid({ where, reason }))
  if (Buffer.byteLength(text, "utf8") > MAX_SKILL_MD_BYTES) return invalid(`${SKILL_FILE} is larger than ${MAX_SKILL_MD_BYTES / 1024} KiB`)
  const fence = FENCE.exec(text)
  if (fence === null) return invalid(`${SKILL_FILE} does not start with YAML front matter between --- lines`)
  let data: unknown
  try {
    data = parse(fence[1] ?? "", { maxAliasCount: 10 })
  } catch (e) {
    return invalid(`the front matter is not valid YAML: ${(e instanceof Error ? e.message : String(e)).split("\n")[0]}`)
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return invalid("the front matter must be a mapping with name and description")
  const record = data as Record<string, unknown>
  if (record["name"] === undefined) return invalid("the front matter has no name")
  if (record["description"] === undefined) return invalid("the front matter has no description")
  const decoded = decodeFrontMatter(data)
  if (Result.isFailure(decoded)) return invalid("name and description must be strings")
  const name = decoded.success.name.trim()
  const description = decoded.success.description.trim().replace(/\s+/g, " ")
  const bad = nameProblem(name)
  if (bad !== undefined) return invalid(bad)
  if (description === "") return invalid("the description is empty")
  if (description.length > MAX_DESCRIPTION_CHARS) return invalid(`the description is longer than ${MAX_DESCRIPTION_CHARS} characters`)
  return Result.succeed({ name, description, body: text.slice(fence[0].length).trim() })
}

/** A regular file of a source, at a checked relative path (`a/b.txt`, no `.`/`..`, no leading `/`). */
export interface SourceFile {
  readonly path: string
  readonly bytes: Uint8Array
  /** Whether it may be executed (scripts keep their x bit). */
  readonly executable: boolean
}

/**
 * A source entry's path made relative and checked: refused when absolute, when any part is `..`,
 * or when it holds a NUL or a backslash. `./a//b/` becomes `a/b`; the root itself becomes "".
 */
export const entryPath = (raw: string): Result.Result<string, SkillUnsafe> => {
  const unsafe = (reason: string) => Result.fail(new SkillUnsafe({ entry: raw, reason }))
  if (raw.includes("\0")) return unsafe("the path holds a NUL character")
  if (raw.includes("\\")) return unsafe("the path holds a backslash")
  if (raw.startsWith("/") || /^[A-Za-z]:/.test(raw)) return unsafe("absolute path")
  const parts = raw.split("/").filter((p) => p !== "" && p !== ".")
  if (parts.includes("..")) return unsafe("the path leads out of the folder (..)")
  return Result.succeed(parts.join("/"))
}

/** A skill found in a source: its front matter, body, and files relative to its folder. */
export interface SkillPackage extends ParsedSkill {
  /** Its folder in the source ("" for the root). */
  readonly folder: string
  readonly files: ReadonlyArray<SourceFile>
  readonly bytes: number
}

const dirOf = (path: string): string => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "")
const depthOf = (folder: string): number => (folder === "" ? 0 : folder.split("/").length)
const inside = (folder: string, path: string): boolean => folder === "" || path.startsWith(`${folder}/`)
const decoder = new TextDecoder("utf-8", { fatal: true })

/** The skills in a source (checked against the rules and limits); `source` names it in errors. */
export const packagesIn = (files: ReadonlyArray<SourceFile>, source: string) =>
  Effect.gen(function*() {
    const folders = files
      .filter((f) => f.path.split("/").pop() === SKILL_FILE)
      .map((f) => dirOf(f.path))
      .filter((d) => depthOf(d) <= MAX_DEPTH)
      .sort((a, b) => depthOf(a) - depthOf(b) || a.localeCompare(b))
    const roots: Array<string> = []
    for (const folder of folders) if (!roots.some((r) => inside(r, `${folder}/`))) roots.push(folder)
    if (roots.length === 0) return yield* new SkillInvalid({ where: source, reason: `no ${SKILL_FILE} found (at the root or in a folder at most ${MAX_DEPTH} levels down)` })
    const out: Array<SkillPackage> = []
    for (const folder of roots) {
      const where = folder === "" ? source : `${source}: ${folder}`
      const own = files.filter((f) => inside(folder, f.path)).map((f) => ({ ...f, path: folder === "" ? f.path : f.path.slice(folder.length + 1) }))
      const bytes = own.reduce((n, f) => n + f.bytes.length, 0)
      if (own.length > MAX_SKILL_FILES) return yield* new SkillInvalid({ where, reason: `more than ${MAX_SKILL_FILES} files` })
      if (bytes > MAX_SKILL_BYTES) return yield* new SkillInvalid({ where, reason: `larger than ${MAX_SKILL_BYTES / 1024 / 1024} MiB` })
      const md = own.find((f) => f.path === SKILL_FILE)
      if (md === undefined) return yield* Effect.die(new Error("a skill root without SKILL.md"))
      let text: string
      try {
        text = decoder.decode(md.bytes)
      } catch {
        return yield* new SkillInvalid({ where, reason: `${SKILL_FILE} is not UTF-8 text` })
      }
      const parsed = parseSkillMd(text, where)
      if (Result.isFailure(parsed)) return yield* parsed.failure
      if (out.some((p) => p.name === parsed.success.name)) {
        return yield* new SkillInvalid({ where, reason: `two skills in this source are named ${parsed.success.name}` })
      }
      out.push({ ...parsed.success, folder, files: own, bytes })
    }
    return out as ReadonlyArray<SkillPackage>
  })

/** The words of a search, lowercased. */
export const searchWords = (query: string): ReadonlyArray<string> => query.toLowerCase().split(/\s+/).filter((w) => w !== "")

/** Whether a skill matches every word of a search, in its name or description (case-insensitive). */
export const matches = (skill: SkillMeta, words: ReadonlyArray<string>): boolean => {
  const text = `${skill.name} ${skill.description}`.toLowerCase()
  return words.every((w) => text.includes(w))
}
