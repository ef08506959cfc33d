/**
 * The ToolCatalog: sources kept in registration order; a session's tool set is every source's
 * tools the agent enables. A tool name given twice (by two sources, or twice by one) is a wiring
 * bug, so building such a set dies rather than letting one tool silently shadow another.
 */
import { Effect, Layer } from "effect"
import type { Tool } from "../../domain/tool.ts"
import { ToolCatalog, type ToolSession, type ToolSource } from "../../services/ToolCatalog.ts"

export const make = Effect.sync(() => {
  const registered: Array<ToolSource> = []

  const register = Effect.fn("ToolCatalog.register")(function*(source: ToolSource) {
    if (registered.some((s) => s.id === source.id)) return yield* Effect.die(new Error(`two tool sources are named "${source.id}"`))
    registered.push(source)
  })

  const tools = Effect.fn("ToolCatalog.tools")(function*(session: ToolSession) {
    const out: Array<Tool> = []
    for (const source of registered) {
      for (const tool of yield* source.tools(session)) {
        if (!session.enabled(tool.definition.name)) continue
        if (out.some((t) => t.definition.name === tool.definition.name)) {
          return yield* Effect.die(new Error(`two tools are named "${tool.definition.name}" (source ${source.id})`))
        }
        out.push(tool)
      }
    }
    return out as ReadonlyArray<Tool>
  })

  const version = Effect.fn("ToolCatalog.version")(function*(agentId: string) {
    const parts: Array<string> = []
    for (const source of registered) {
      if (source.version !== undefined) parts.push(`${source.id}=${yield* source.version(agentId)}`)
    }
    return parts.join(";")
  })

  return ToolCatalog.of({ register, sources: Effect.sync(() => registered.map((s) => s.id)), tools, version })
})

/** An empty catalog; sources register into it from their own layers. */
export const layer = Layer.effect(ToolCatalog, make)

/** A layer that registers `source` (built from services `R`) with the catalog. */
export const register = <E, R>(source: Effect.Effect<ToolSource, E, R>): Layer.Layer<never, E, ToolCatalog | R> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const catalog = yield* ToolCatalog
    yield* catalog.register(yield* source)
  }))
