/** PluginStore on the `plugins` table; every change is one IMMEDIATE transaction. */
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PluginNotFound, PluginRuleViolation } from "../../domain/plugins/errors.ts"
import { type Plugin, type PluginChange, PluginStore } from "../../services/PluginStore.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import { storageError } from "../sql/errors.ts"

interface Row {
  readonly id: string
  readonly kind: string
  readonly enabled: number
  readonly config: string
}

const toPlugin = (r: Row): Plugin => ({
  id: r.id,
  kind: r.kind,
  enabled: r.enabled === 1,
  config: JSON.parse(r.config) as Record<string, unknown>
})

export const DEFAULT_MEMORY = "memory/lcm"

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const immediate = Sqlite.immediate(sql)
  const all = sql<Row>`SELECT id, kind, enabled, config FROM plugins ORDER BY kind, id`.pipe(Effect.map((rows) => rows.map(toPlugin)))
  const find = (plugins: ReadonlyArray<Plugin>, id: string) => {
    const p = plugins.find((x) => x.id === id)
    return p === undefined ? Effect.fail(new PluginNotFound({ id, known: plugins.map((x) => x.id) })) : Effect.succeed(p)
  }
  const set = (id: string, enabled: boolean) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`UPDATE plugins SET enabled = ${enabled ? 1 : 0}, updated_at = ${now} WHERE id = ${id}`)

  const enable = Effect.fn("PluginStore.enable")(function*(id: string) {
    return yield* immediate(Effect.gen(function*() {
      const plugins = yield* all
      const p = yield* find(plugins, id)
      const change = { enabled: p.enabled ? [] : [id], disabled: [] as Array<string> }
      yield* set(id, true)
      if (p.kind === "memory") {
        for (const other of plugins) {
          if (other.kind === "memory" && other.id !== id && other.enabled) {
            yield* set(other.id, false)
            change.disabled.push(other.id)
          }
        }
      }
      return change as PluginChange
    }))
  }, Effect.catchTag("SqlError", (e) => Effect.fail(storageError("enable plugin")(e))))

  const disable = Effect.fn("PluginStore.disable")(function*(id: string) {
    return yield* immediate(Effect.gen(function*() {
      const plugins = yield* all
      const p = yield* find(plugins, id)
      if (!p.enabled) return { enabled: [], disabled: [] } as PluginChange
      yield* set(id, false)
      if (p.kind !== "memory") return { enabled: [], disabled: [id] } as PluginChange
      const others = plugins.filter((x) => x.kind === "memory" && x.id !== id)
      const [only] = others
      if (only === undefined || others.length > 1) {
        return yield* new PluginRuleViolation({
          reason: `exactly one memory plugin must be enabled: enable another (${
            others.map((o) => o.id).join(", ") || "none installed"
          }) instead of disabling ${id}`
        })
      }
      yield* set(only.id, true)
      return { enabled: [only.id], disabled: [id] } as PluginChange
    }))
  }, Effect.catchTag("SqlError", (e) => Effect.fail(storageError("disable plugin")(e))))

  const enabledMemory = all.pipe(
    Effect.map((ps) => ps.find((p) => p.kind === "memory" && p.enabled)?.id ?? DEFAULT_MEMORY),
    Effect.mapError(storageError("read plugins"))
  )

  // Interim (the plugin-tools work replaces it): the agent's row when present, else the global state.
  const agentRow = (pluginId: string, agentId: string) =>
    sql<{ readonly enabled: number | null; readonly config: string }>`SELECT enabled, config FROM agent_plugins WHERE plugin_id = ${pluginId} AND agent_id = ${agentId}`
  const enabledFor = Effect.fn("PluginStore.enabledFor")(function*(pluginId: string, agentId: string) {
    const [own] = yield* agentRow(pluginId, agentId)
    if (own !== undefined && own.enabled !== null) return own.enabled === 1
    return (yield* all).some((p) => p.id === pluginId && p.enabled)
  }, Effect.mapError(storageError("read plugins")))
  const configFor = Effect.fn("PluginStore.configFor")(function*(pluginId: string, agentId: string) {
    const [own] = yield* agentRow(pluginId, agentId)
    const global = (yield* all).find((p) => p.id === pluginId)?.config ?? {}
    return { ...global, ...(own === undefined ? {} : (JSON.parse(own.config) as Record<string, unknown>)) }
  }, Effect.mapError(storageError("read plugins")))

  return PluginStore.of({
    enabledFor,
    configFor,
    list: all.pipe(Effect.mapError(storageError("list plugins"))),
    enable,
    disable,
    enabledMemory
  })
})

export const layer = Layer.effect(PluginStore, make)
