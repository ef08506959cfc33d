/** What the agent loop needs of a tool: a definition for the model and a way to run it. */
import { Effect, Option, Schema } from "effect"
import { formatCount, safeEnd } from "./text.ts"

export interface ToolDefinition {
  readonly name: string
  readonly description: string
  /**
   * JSON Schema (draft 2020-12 subset understood by the Anthropic and OpenAI APIs). Built-in tools
   * derive it from the Schema that decodes their input: `inputSchemaOf` in toolSchema.ts.
   */
  readonly inputSchema: Readonly<Record<string, unknown>>
}

/** Who is calling: tools act for this session's user and agent, and never beyond them. */
export interface ToolCallContext {
  readonly sessionKey: string
  readonly userId: string
  readonly agentId: string
}

/** A tool call the model got wrong or that failed; the message goes back to the model as the result. */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  tool: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.tool}: ${this.reason}`
  }
}

export interface Tool {
  readonly definition: ToolDefinition
  readonly execute: (input: unknown, context: ToolCallContext) => Effect.Effect<string, ToolError>
}

/**
 * The tools one session may call: their definitions (sent to the model, in order) and dispatch by
 * name, with the "unknown tool" answer listing the tools that exist. Which tools go in is the
 * ToolCatalog's business (and, per turn, the runtime's, which adds the `agent` tool).
 */
export interface ToolRegistry {
  readonly definitions: ReadonlyArray<ToolDefinition>
  readonly get: (name: string) => Option.Option<Tool>
  /** Runs a tool; an unknown name fails with a ToolError listing the tools that exist. */
  readonly execute: (name: string, input: unknown, context: ToolCallContext) => Effect.Effect<string, ToolError>
}

/** A registry over exactly these tools, in this order; two tools with one name are a wiring bug (dies). */
export const toolRegistry = (tools: ReadonlyArray<Tool>): Effect.Effect<ToolRegistry> =>
  Effect.gen(function*() {
    const byName = new Map<string, Tool>()
    for (const tool of tools) {
      if (byName.has(tool.definition.name)) return yield* Effect.die(new Error(`two tools are named "${tool.definition.name}"`))
      byName.set(tool.definition.name, tool)
    }
    const names = Array.from(byName.keys())

    const execute = Effect.fn("ToolRegistry.execute")(function*(name: string, input: unknown, context: ToolCallContext) {
      const tool = byName.get(name)
      // The model writes the name: a span holds it only when it is one of the tools.
      yield* Effect.annotateCurrentSpan("tool", tool === undefined ? "unknown" : name)
      if (tool === undefined) {
        return yield* new ToolError({
          tool: name,
          reason: `unknown tool; available tools: ${names.length === 0 ? "none" : names.join(", ")}`
        })
      }
      return yield* tool.execute(input, context)
    })

    const registry: ToolRegistry = {
      definitions: tools.map((t) => t.definition),
      get: (name) => Option.fromUndefinedOr(byName.get(name)),
      execute
    }
    return registry
  })

/**
 * The most characters of one tool result (or error) the model receives, whatever the tool: the agent
 * loop cuts every result here (`capToolResult`), so no tool — a plugin's, an MCP server's — can flood
 * the context. Tools keep budgets of their own below it (bash and read 30,000, webfetch's max_chars
 * at most this, MCP results 64 KiB by default); this is the ceiling, equal to webfetch's largest.
 */
export const MAX_TOOL_RESULT_CHARS = 200_000

/**
 * `text` if it fits MAX_TOOL_RESULT_CHARS; else its head (never half a character) and a note that
 * says how much was left out, so the model knows to ask for less rather than trust a partial answer.
 */
export const capToolResult = (text: string, max: number = MAX_TOOL_RESULT_CHARS): string => {
  if (text.length <= max) return text
  const head = text.slice(0, safeEnd(text, max))
  return `${head}\n[… cut by anna: this tool result had ${formatCount(text.length)} characters; only the first ${formatCount(head.length)} are shown — ask for less (a narrower query, a range) …]`
}
