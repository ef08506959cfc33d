/**
 * The `write` tool: creates or replaces a whole file, atomically (see `atomicWrite`), creating
 * missing parent folders. The session's confined `writeFile` keeps it inside the workspace and its quota.
 */
import { Effect, Schema } from "effect"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import { atomicWrite, decodeInput } from "./files.ts"
import { formatCount } from "../../domain/text.ts"

export const TOOL_NAME = "write"

export const Input = Schema.Struct({
  path: Schema.String.annotate({ description: "The file, relative to the working directory or absolute under /workspace." }),
  content: Schema.String.annotate({ description: "The complete new content of the file." })
})

export const inputSchema = inputSchemaOf(Input)

export const make = (session: SandboxSession): Tool => {
  const decode = decodeInput(TOOL_NAME, Input)

  const execute = Effect.fn("WriteTool.execute")(function*(raw: unknown, _context: ToolCallContext) {
    const input = yield* decode(raw)
    if (input.path.endsWith("/")) {
      return yield* new ToolError({ tool: TOOL_NAME, reason: `${input.path} names a directory; give the path of a file` })
    }
    const written = yield* atomicWrite(session, TOOL_NAME, input.path, input.content)
    const was = written.replaced === undefined ? "new file" : `replaced the previous ${formatCount(written.replaced)} bytes`
    return `wrote ${formatCount(written.bytes)} bytes to ${input.path} (${was})`
  })

  return {
    definition: {
      name: TOOL_NAME,
      description:
        "Create a file or replace its whole content (missing folders are created). The write is atomic: the file is never left half-written. To change part of a file, use edit.",
      inputSchema
    },
    execute
  }
}
