/**
 * The `read` tool: a text file as numbered lines (optionally a range of them), cut at a character
 * budget on a line boundary with a note saying where to continue; a binary file as its size only; a
 * directory as a listing. Reading goes through the session's confined `readFile`, like every file
 * tool: nothing outside the workspace is opened, FIFOs and devices are refused without blocking.
 */
import { Effect, Schema } from "effect"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import type { SandboxSession, WorkspaceEntry } from "../../services/Sandbox.ts"
import { decodeInput, loadPath, MAX_ENTRIES } from "./files.ts"
import { formatCount, safeEnd } from "../../domain/text.ts"

export const TOOL_NAME = "read"
/** Characters of numbered lines returned per call. */
export const READ_BUDGET = 30_000
export { MAX_ENTRIES }

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

export const Input = Schema.Struct({
  path: Schema.String.annotate({ description: "File or directory, relative to the working directory or absolute under /workspace." }),
  offset: Schema.optionalKey(PositiveInt.annotate({ description: "First line to show (1-based; default 1)." })),
  limit: Schema.optionalKey(PositiveInt.annotate({ description: "Most lines to show (default: as many as fit)." }))
})

export const inputSchema = inputSchemaOf(Input)

/** Numbered lines `offset`… of `text`, within `budget` characters, with a note when more remain. */
export const renderLines = (
  text: string,
  options: { readonly offset: number; readonly limit: number | undefined; readonly budget: number; readonly path: string }
): Effect.Effect<string, ToolError> => {
  if (text === "") return Effect.succeed("(empty file)")
  const lines = text.split("\n")
  // A final newline ends the last line; it does not start another one.
  if (lines.at(-1) === "") lines.pop()
  const total = lines.length
  const { offset, budget } = options
  if (offset > total) {
    return Effect.fail(new ToolError({ tool: TOOL_NAME, reason: `offset ${offset} is past the end of ${options.path}, which has ${formatCount(total)} lines` }))
  }
  const last = Math.min(total, options.limit === undefined ? total : offset + options.limit - 1)
  const width = Math.max(6, String(last).length)
  const out: Array<string> = []
  let used = 0
  let shown = offset - 1
  let cutNote = ""
  for (let n = offset; n <= last; n++) {
    const content = (lines[n - 1] ?? "").replace(/\r$/, "")
    const line = `${String(n).padStart(width)}\t${content}`
    if (used + line.length + 1 > budget) {
      if (out.length === 0) {
        // A single line longer than the whole budget: show its start rather than nothing.
        const kept = line.slice(0, safeEnd(line, Math.max(0, budget - 1)))
        out.push(kept)
        shown = n
        cutNote = `[line ${n} was cut: ${formatCount(line.length - kept.length)} more characters not shown; use bash (e.g. cut -c) to see the rest]`
      }
      break
    }
    out.push(line)
    used += line.length + 1
    shown = n
  }
  const notes: Array<string> = []
  if (cutNote !== "") notes.push(cutNote)
  if (shown < total) notes.push(`[showing lines ${offset}–${shown} of ${formatCount(total)}; continue with offset=${shown + 1}]`)
  return Effect.succeed([...out, ...notes].join("\n"))
}

const listDirectory = (path: string, listing: Extract<WorkspaceEntry, { readonly _tag: "Directory" }>): string => {
  const total = listing.entries.length + listing.more
  if (total === 0) return `${path} is an empty directory`
  const shown = listing.entries.map((e) => (e.kind === "dir" ? `${e.name}/` : e.kind === "link" ? `${e.name} -> ${e.target ?? "?"}` : e.name))
  const more = listing.more > 0 ? [`[… ${formatCount(listing.more)} more entries; use bash (ls, find) to see them]`] : []
  return [`${path} is a directory with ${formatCount(total)} entries:`, ...shown, ...more].join("\n")
}

export const make = (session: SandboxSession): Tool => {
  const decode = decodeInput(TOOL_NAME, Input)

  const execute = Effect.fn("ReadTool.execute")(function*(raw: unknown, _context: ToolCallContext) {
    const input = yield* decode(raw)
    const loaded = yield* loadPath(session, TOOL_NAME, input.path)
    if (loaded._tag === "Directory") return listDirectory(input.path, loaded)
    if (loaded._tag === "Binary") return `binary file, ${formatCount(loaded.bytes)} bytes (${input.path}); not shown`
    return yield* renderLines(loaded.text, { offset: input.offset ?? 1, limit: input.limit, budget: READ_BUDGET, path: input.path })
  })

  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Read a text file from your workspace as numbered lines (line numbers are not part of the file).",
        `Use offset and limit for a range; output stops near ${formatCount(READ_BUDGET)} characters with a note saying where to continue.`,
        "Binary files are reported by size; a directory is listed."
      ].join(" "),
      inputSchema
    },
    execute
  }
}
