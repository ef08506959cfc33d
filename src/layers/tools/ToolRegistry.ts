/**
 * The ToolRegistry from whichever built-in tool services are present (`Effect.serviceOption`), so a
 * deployment chooses its tools by the layers it provides, plus extra tools made elsewhere (the
 * memory tool, plugin tools): `layerWith(MemoryTool.make)`. Two tools with one name are a wiring
 * bug, so building such a registry dies rather than letting one silently shadow the other.
 */
import { Effect, Layer, Option } from "effect"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { ToolRegistry } from "../../services/ToolRegistry.ts"
import { BashTool, EditTool, ReadTool, WriteTool } from "../../services/WorkspaceTools.ts"

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

/** The built-in tools that are present, in their fixed order. */
export const builtins: Effect.Effect<ReadonlyArray<Tool>> = Effect.gen(function*() {
  const present = yield* Effect.all([
    Effect.serviceOption(BashTool),
    Effect.serviceOption(ReadTool),
    Effect.serviceOption(WriteTool),
    Effect.serviceOption(EditTool)
  ])
  return present.flatMap((o) => (Option.isSome(o) ? [o.value] : []))
})

/** Built-ins that are present, then `extra` tools in the order given. */
export const make = <E = never, R = never>(...extra: ReadonlyArray<Effect.Effect<Tool, E, R>>): Effect.Effect<ToolRegistry["Service"], E, R> =>
  Effect.gen(function*() {
    const base = yield* builtins
    const added = yield* Effect.all(extra)
    return yield* fromTools([...base, ...added])
  })

export const layer = Layer.effect(ToolRegistry, make())

/** The registry with extra tools, e.g. `layerWith(MemoryTool.make)`. */
export const layerWith = <E = never, R = never>(...extra: ReadonlyArray<Effect.Effect<Tool, E, R>>): Layer.Layer<ToolRegistry, E, R> =>
  Layer.effect(ToolRegistry, make(...extra))
