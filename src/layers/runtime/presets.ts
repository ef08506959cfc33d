/**
 * Agent presets for the `agent` tool (seed 001, "Agent Tool"): markdown files with YAML frontmatter
 * in `$ANNA_HOME/workspaces/{agent}/agents/*.md` — inside the sandbox that is `/workspace/agents`,
 * so the agent can write its own presets. One file, one preset:
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
 * giving a name already taken; the others still load. A missing folder means no presets.
 */
import { Effect, Result, Schema } from "effect"
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { parse as parseYaml } from "yaml"

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

const isMissing = (e: unknown) => typeof e === "object" && e !== null && "code" in e && (e.code === "ENOENT" || e.code === "ENOTDIR")

/** The presets in `dir` (`*.md`, by file name); never fails: problems are logged and skipped. */
export const loadPresets = Effect.fn("AgentPresets.load")(function*(dir: string) {
  const files = yield* Effect.tryPromise(() => readdir(dir)).pipe(
    Effect.catch((e) =>
      isMissing(e.cause)
        ? Effect.succeed([])
        : Effect.logWarning(`agent presets: cannot list ${dir}: ${String(e.cause)}`).pipe(Effect.as([]))
    )
  )
  const presets: Array<Preset> = []
  for (const file of files.filter((f) => f.endsWith(".md")).sort()) {
    const path = join(dir, file)
    const text = yield* Effect.tryPromise(() => readFile(path, "utf8")).pipe(Effect.result)
    const parsed = text._tag === "Failure"
      ? Result.fail(`cannot read it: ${String(text.failure.cause)}`)
      : parsePreset(file.slice(0, -3), text.success)
    if (parsed._tag === "Failure") {
      yield* Effect.logWarning(`agent preset ${path} skipped: ${parsed.failure}`)
    } else if (presets.some((p) => p.name === parsed.success.name)) {
      yield* Effect.logWarning(`agent preset ${path} skipped: another file already defines "${parsed.success.name}"`)
    } else {
      presets.push(parsed.success)
    }
  }
  return presets as ReadonlyArray<Preset>
})
