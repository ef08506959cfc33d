/**
 * A ToolRegistry over a list of tools: definitions in the given order and dispatch by name. Two
 * tools with one name are a wiring bug, so building such a registry dies rather than letting one
 * silently shadow the other. Which tools go in is the ToolCatalog's business (and, per turn, the
 * runtime's, which adds the `agent` tool).
 */
import { Effect, Option } from "effect"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { ToolRegistry } from "../../services/ToolRegistry.ts"

/** A registry over exactly these tools, in this order. */
export const fromTools = (tools: ReadonlyArray<Tool>): Effect.Effect<ToolRegistry["Service"]> =>
  Effect.gen(function*() {
    const byName = new Map<string, Tool>()
    for (const tool of tools) {
      if (byName.has(tool.definition.name)) return yield* Effect.die(new Error(`two tools are named "${tool.definition.name}"`))
      byName.set(tool.definition.name, tool)
    }
    const names = Array.from(byName.keys())

    const execute = Effect.fn("ToolRegistry.execute")(function*(name: string, input: unknown, context: ToolCallContext) {
      yield* Effect.annotateCurrentSpan("tool", name)
      const tool = byName.get(name)
      if (tool === undefined) {
        return yield* new ToolError({
          tool: name,
          reason: `unknown tool; available tools: ${names.length === 0 ? "none" : names.join(", ")}`
        })
      }
      return yield* tool.execute(input, context)
    })

    return ToolRegistry.of({
      definitions: tools.map((t) => t.definition),
      get: (name) => Option.fromUndefinedOr(byName.get(name)),
      execute
    })
  })
