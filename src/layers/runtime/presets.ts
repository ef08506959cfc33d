/**
 * Agent presets for the `agent` tool (seed 001, "Agent Tool"): markdown files with YAML frontmatter,
 * from two places: the operator's `$ANNA_HOME/workspaces/{agent}/agents/*.md` (never mounted in a
 * sandbox) and the session's own `/workspace/agents/*.md`, so the agent can write presets for
 * itself. Workspace presets are read through the sandbox's confined `readFile` (regular files
 * only, no way out of the workspace, capped, never blocking) and cannot take an operator preset's
 * name. One file, one preset:
 *
 * ```markdown
 * ---
 * name: reviewer            # default: the file name without .md
 * description: Reviews a diff for bugs
 * model: gpt-4.1-mini       # default: the parent's model
 * tools: [read, bash]       # default: every tool the parent has (except agent)
 * max_turns: 6              # default 10
 * timeout_seconds: 300      # default 120
 * ---
 * You are a careful code reviewer. …   ← the child's system prompt
 * ```
 *
 * A file without frontmatter is a preset with only a system prompt. A file whose frontmatter is
 * not valid YAML or does not fit the schema is skipped with a logged warning, as is a second file
 * giving a name already taken, or one over 64 KiB; the others still load. A missing folder means
 * no presets.
 */
import { Effect, Result, Schema } from "effect"
import { readdir } from "node:fs/promises"
import { join } from "node:path"
import { parse as parseYaml } from "yaml"
import type { SandboxSession } from "../../services/Sandbox.ts"
import { readSmallFile } from "./smallFile.ts"

export interface Preset {
  readonly name: string
  readonly description: string
  readonly model?: string | undefined
  /** Tool whitelist; undefined = every tool the parent has (except agent). */
  readonly tools?: ReadonlyArray<string> | undefined
  readonly maxTurns?: number | undefined
  readonly timeoutSeconds?: number | undefined
  /** The markdown body: the child's system prompt ('' = the parent's system prompt). */
  readonly system: string
}

/** Upper bounds shared with the tool's input: a child may not run for ever. */
export const MAX_CHILD_TURNS = 100
export const MAX_CHILD_TIMEOUT_SECONDS = 3600

const PresetName = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/))
export const ChildTurns = Schema.Number.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: MAX_CHILD_TURNS }))
export const ChildTimeout = Schema.Number.check(Schema.isBetween({ minimum: 1, maximum: MAX_CHILD_TIMEOUT_SECONDS }))

const Frontmatter = Schema.Struct({
  name: Schema.optionalKey(PresetName),
  description: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  tools: Schema.optionalKey(Schema.Array(Schema.String)),
  max_turns: Schema.optionalKey(ChildTurns),
  timeout_seconds: Schema.optionalKey(ChildTimeout)
})

const decodeFrontmatter = Schema.decodeUnknownResult(Frontmatter)

/** `---` line, YAML, `---` line, then the body; a BOM and CRLF line ends are accepted. */
const FRONTMATTER = /^\uFEFF?---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/

/** A preset from one file's text, or why the file cannot be one. `fileName` is without `.md`. */
export const parsePreset = (fileName: string, text: string): Result.Result<Preset, string> => {
  const match = FRONTMATTER.exec(text)
  const body = (match === null ? text.replace(/^\uFEFF/, "") : text.slice(match[0].length)).trim()
  let raw: unknown = {}
  if (match !== null) {
    try {
      raw = parseYaml(match[1] ?? "") ?? {}
    } catch (e) {
      return Result.fail(`invalid YAML frontmatter: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
    }
  }
  const decoded = decodeFrontmatter(raw)
  if (decoded._tag === "Failure") return Result.fail(`invalid frontmatter: ${decoded.failure.message}`)
  const fm = decoded.success
  const name = fm.name ?? fileName
  if (Schema.decodeUnknownResult(PresetName)(name)._tag === "Failure") {
    return Result.fail(`"${name}" is not a usable preset name (letters, digits, '.', '_', '-'); set "name" in the frontmatter`)
  }
  return Result.succeed({
    name,
    description: fm.description?.trim() ?? "",
    model: fm.model,
    tools: fm.tools,
    maxTurns: fm.max_turns,
    timeoutSeconds: fm.timeout_seconds,
    system: body
  })
}

/** Largest preset file read. */
export const MAX_PRESET_BYTES = 64 * 1024
/** Preset files read at most from one place. */
export const MAX_PRESET_FILES = 100

/** One place presets come from: its `*.md` files as (file name, text, or why it could not be read). */
export interface PresetSource {
  readonly label: string
  readonly files: Effect.Effect<ReadonlyArray<{ readonly file: string; readonly text: Result.Result<string, string> }>>
}

const isMissing = (e: unknown) => typeof e === "object" && e !== null && "code" in e && (e.code === "ENOENT" || e.code === "ENOTDIR")

/** The operator's folder of presets (a trusted host folder; files read without blocking, capped). */
export const folderSource = (dir: string): PresetSource => ({
  label: dir,
  files: Effect.gen(function*() {
    const names = yield* Effect.tryPromise(() => readdir(dir)).pipe(
      Effect.catch((e) =>
        isMissing(e.cause)
          ? Effect.succeed([])
          : Effect.logWarning(`agent presets: cannot list ${dir}: ${String(e.cause)}`).pipe(Effect.as([]))
      )
    )
    const out: Array<{ readonly file: string; readonly text: Result.Result<string, string> }> = []
    for (const file of names.filter((f) => f.endsWith(".md")).sort().slice(0, MAX_PRESET_FILES)) {
      const text = yield* Effect.promise(() => readSmallFile(join(dir, file), MAX_PRESET_BYTES))
      out.push({ file, text: text === undefined ? Result.fail(`not a regular file of at most ${MAX_PRESET_BYTES} bytes`) : Result.succeed(text) })
    }
    return out
  })
})

/** The presets of all `sources`, in order (an earlier source's name wins); never fails: problems are logged and skipped. */
export const loadPresets = Effect.fn("AgentPresets.load")(function*(sources: ReadonlyArray<PresetSource>) {
  const presets: Array<Preset> = []
  for (const source of sources) {
    for (const { file, text } of yield* source.files) {
      const where = `${source.label}/${file}`
      const parsed = text._tag === "Failure" ? Result.fail(`cannot read it: ${text.failure}`) : parsePreset(file.slice(0, -3), text.success)
      if (parsed._tag === "Failure") {
        yield* Effect.logWarning(`agent preset ${where} skipped: ${parsed.failure}`)
      } else if (presets.some((p) => p.name === parsed.success.name)) {
        yield* Effect.logWarning(`agent preset ${where} skipped: another file already defines "${parsed.success.name}"`)
      } else {
        presets.push(parsed.success)
      }
    }
  }
  return presets as ReadonlyArray<Preset>
})

/** The session's `/workspace/agents/*.md`, read through the sandbox's confinement (see the header). */
export const workspaceSource = (session: SandboxSession): PresetSource => ({
  label: "/workspace/agents",
  files: Effect.gen(function*() {
    const listing = yield* session.readFile("/workspace/agents", { maxBytes: 0, maxEntries: MAX_PRESET_FILES * 4 }).pipe(Effect.option)
    if (listing._tag === "None" || listing.value._tag !== "Directory") return []
    const names = listing.value.entries.filter((e) => (e.kind === "file" || e.kind === "link") && e.name.endsWith(".md")).map((e) => e.name)
    const out: Array<{ readonly file: string; readonly text: Result.Result<string, string> }> = []
    for (const file of names.slice(0, MAX_PRESET_FILES)) {
      const read = yield* session.readFile(`/workspace/agents/${file}`, { maxBytes: MAX_PRESET_BYTES, maxEntries: 0 }).pipe(Effect.result)
      out.push({
        file,
        text: read._tag === "Failure"
          ? Result.fail(read.failure.reason)
          : read.success._tag === "File"
          ? Result.succeed(Buffer.from(read.success.bytes).toString("utf8"))
          : Result.fail("a directory")
      })
    }
    return out
  })
})

/** `first` then those of `then` whose names are free (a taken name is skipped with a logged warning). */
export const mergePresets = (first: ReadonlyArray<Preset>, then: ReadonlyArray<Preset>, label: string) =>
  Effect.gen(function*() {
    const out = [...first]
    for (const p of then) {
      if (out.some((q) => q.name === p.name)) {
        yield* Effect.logWarning(`agent preset ${label}: "${p.name}" skipped: another file already defines it`)
      } else {
        out.push(p)
      }
    }
    return out as ReadonlyArray<Preset>
  })
