/**
 * The `edit` tool: replaces an exact piece of text. The text must occur exactly once unless
 * `replace_all` is set, so an edit never lands somewhere the model did not mean; the rest of the
 * file stays byte-identical (valid UTF-8 round-trips exactly, a BOM included) and the new file is
 * written atomically.
 */
import { Effect, Schema } from "effect"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import { atomicWrite, decodeInput, loadFile } from "./files.ts"
import { formatCount, lineNumbersAt } from "../../domain/text.ts"

export const TOOL_NAME = "edit"

export const Input = Schema.Struct({
  path: Schema.String.annotate({ description: "The file, relative to the working directory or absolute under /workspace." }),
  old_text: Schema.String.annotate({ description: "The exact text to replace (whitespace and line breaks included); it must occur once." }),
  new_text: Schema.String.annotate({ description: "The text to put in its place." }),
  replace_all: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "Replace every occurrence of old_text instead of requiring exactly one (default false)." })
  )
})

export const inputSchema = inputSchemaOf(Input)

/** Start offsets of the non-overlapping occurrences of `needle`, left to right. */
export const occurrences = (text: string, needle: string): Array<number> => {
  const found: Array<number> = []
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) found.push(i)
  return found
}

const lineList = (lines: ReadonlyArray<number>) =>
  lines.length <= 20 ? lines.join(", ") : `${lines.slice(0, 20).join(", ")}, …`

/** Why old_text was not found, when there is a likely reason the model can fix. */
const notFoundHint = (text: string, oldText: string): string => {
  if (text.includes("\r\n") && oldText.includes("\n") && !oldText.includes("\r\n") && text.includes(oldText.replaceAll("\n", "\r\n"))) {
    return " (the file has Windows line endings: use \\r\\n in old_text)"
  }
  const squash = (s: string) => s.replace(/\s+/g, " ").trim()
  if (squash(oldText) !== "" && squash(text).includes(squash(oldText))) return " (it occurs with different whitespace or indentation; copy it exactly from read)"
  return "; read the file again and copy the text exactly"
}

export const make = (session: SandboxSession): Tool => {
  const decode = decodeInput(TOOL_NAME, Input)
  const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })

  const execute = Effect.fn("EditTool.execute")(function*(raw: unknown, _context: ToolCallContext) {
    const input = yield* decode(raw)
    const { path, old_text: oldText, new_text: newText } = input
    if (oldText === "") return yield* fail("old_text is empty; give the exact text to replace (use write to create a file)")
    if (oldText === newText) return yield* fail("old_text and new_text are the same; nothing would change")
    const missing = `no such file: ${path} (use write to create it)`
    const loaded = yield* loadFile(session, TOOL_NAME, path, missing)
    if (loaded._tag === "Binary") return yield* fail(`${path} is a binary file (${formatCount(loaded.bytes)} bytes); edit only changes UTF-8 text`)
    const text = loaded.text
    const found = occurrences(text, oldText)
    if (found.length === 0) return yield* fail(`old_text was not found in ${path}${notFoundHint(text, oldText)}`)
    if (found.length > 1 && input.replace_all !== true) {
      return yield* fail(
        `old_text occurs ${found.length} times in ${path} (lines ${lineList(lineNumbersAt(text, found))}); include more surrounding text to make it unique, or set replace_all to true`
      )
    }
    // Slices, not String.replace: "$&" and friends in new_text must stay literal.
    let next = ""
    let from = 0
    for (const at of found) {
      next += text.slice(from, at) + newText
      from = at + oldText.length
    }
    next += text.slice(from)
    yield* atomicWrite(session, TOOL_NAME, path, next)
    const lines = lineNumbersAt(text, found)
    return found.length === 1
      ? `edited ${path}: replaced 1 occurrence at line ${lines.join("")}`
      : `edited ${path}: replaced ${found.length} occurrences (lines ${lineList(lines)})`
  })

  return {
    definition: {
      name: TOOL_NAME,
      description:
        "Replace exact text in a file. old_text must match the file exactly (copy it from read, without line numbers) and occur once, unless replace_all is true. The rest of the file is left untouched.",
      inputSchema
    },
    execute
  }
}
