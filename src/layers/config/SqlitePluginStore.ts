/**
 * PluginStore on the `plugins` and `agent_plugins` tables; every change is one IMMEDIATE transaction.
 * Rows are decoded with Schema (a configuration that is not a JSON object is a StorageError, not a crash).
 */
import { Clock, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AgentNotFound } from "../../domain/config/errors.ts"
import { PluginNotFound, PluginRuleViolation } from "../../domain/plugins/errors.ts"
import { type AgentPlugin, type ConfigEdit, type Plugin, type PluginChange, PluginStore } from "../../services/PluginStore.ts"
import * as Sqlite from "../sql/Sqlite.ts"
import { storageError } from "../sql/errors.ts"

const ConfigJson = Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown))

const PluginRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  enabled: Schema.Number,
  config: ConfigJson
})
const AgentRow = Schema.Struct({
  plugin_id: Schema.String,
  enabled: Schema.NullOr(Schema.Number),
  config: ConfigJson
})
const decodePlugins = Schema.decodeUnknownEffect(Schema.Array(PluginRow))
const decodeAgentRows = Schema.decodeUnknownEffect(Schema.Array(AgentRow))
const encodeConfig = (config: Readonly<Record<string, unknown>>) => JSON.stringify(config)

export const DEFAULT_MEMORY = "memory/lcm"

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const immediate = Sqlite.immediate(sql)
  const all = sql`SELECT id, kind, enabled, config FROM plugins ORDER BY kind, id`.pipe(
    Effect.flatMap(decodePlugins),
    Effect.map((rows): ReadonlyArray<Plugin> => rows.map((r) => ({ id: r.id, kind: r.kind, enabled: r.enabled === 1, config: r.config })))
  )
  const agentRows = (agentId: string) =>
    sql`SELECT plugin_id, enabled, config FROM agent_plugins WHERE agent_id = ${agentId}`.pipe(Effect.flatMap(decodeAgentRows))
  const find = (plugins: ReadonlyArray<Plugin>, id: string) => {
    const p = plugins.find((x) => x.id === id)
    return p === undefined ? Effect.fail(new PluginNotFound({ id, known: plugins.map((x) => x.id) })) : Effect.succeed(p)
  }
  const requireAgent = (agentId: string) =>
    Effect.flatMap(sql<{ readonly id: string }>`SELECT id FROM agents WHERE id = ${agentId}`, (rows) =>
      rows.length === 0 ? Effect.fail(new AgentNotFound({ id: agentId })) : Effect.void)
  const set = (id: string, enabled: boolean) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`UPDATE plugins SET enabled = ${enabled ? 1 : 0}, updated_at = ${now} WHERE id = ${id}`)

  /** Every plugin as the agent sees it (no check that the agent exists). */
  const viewFor = (agentId: string) =>
    Effect.gen(function*() {
      const plugins = yield* all
      const own = yield* agentRows(agentId)
      return plugins.map((p): AgentPlugin => {
        const row = own.find((r) => r.plugin_id === p.id)
        const agentSwitch = p.kind === "memory" || row === undefined ? null : row.enabled
        const agentConfig = row?.config ?? {}
        return {
          id: p.id,
          kind: p.kind,
          enabled: agentSwitch === null ? p.enabled : agentSwitch === 1,
          source: agentSwitch === null ? "global" : "agent",
          config: { ...p.config, ...agentConfig },
          agentConfig
        }
      })
    })

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
  }, Effect.catchTags({ SqlError: (e) => Effect.fail(storageError("enable plugin")(e)), SchemaError: (e) => Effect.fail(storageError("enable plugin")(e)) }))

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
  }, Effect.catchTags({ SqlError: (e) => Effect.fail(storageError("disable plugin")(e)), SchemaError: (e) => Effect.fail(storageError("disable plugin")(e)) }))

  const listFor = Effect.fn("PluginStore.listFor")(function*(agentId: string) {
    yield* requireAgent(agentId)
    return yield* viewFor(agentId)
  }, Effect.catchTags({ SqlError: (e) => Effect.fail(storageError("list plugins")(e)), SchemaError: (e) => Effect.fail(storageError("list plugins")(e)) }))

  const setFor = Effect.fn("PluginStore.setFor")(function*(pluginId: string, agentId: string, enabled: boolean | undefined) {
    return yield* immediate(Effect.gen(function*() {
      yield* requireAgent(agentId)
      const p = yield* find(yield* all, pluginId)
      if (p.kind === "memory") {
        return yield* new PluginRuleViolation({
          reason: `${pluginId} is a memory plugin: memory plugins are switched for every agent at once (anna plugin enable ${pluginId}, without --agent)`
        })
      }
      const before = (yield* viewFor(agentId)).find((x) => x.id === pluginId)
      const now = yield* Clock.currentTimeMillis
      const value = enabled === undefined ? null : enabled ? 1 : 0
      yield* sql`INSERT INTO agent_plugins (agent_id, plugin_id, enabled, config, updated_at) VALUES (${agentId}, ${pluginId}, ${value}, '{}', ${now})
        ON CONFLICT (agent_id, plugin_id) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`
      const after = (yield* viewFor(agentId)).find((x) => x.id === pluginId)
      const was = before?.enabled === true
      const is = after?.enabled === true
      return { enabled: !was && is ? [pluginId] : [], disabled: was && !is ? [pluginId] : [] } as PluginChange
    }))
  }, Effect.catchTags({ SqlError: (e) => Effect.fail(storageError("switch plugin for agent")(e)), SchemaError: (e) => Effect.fail(storageError("switch plugin for agent")(e)) }))

  const edited = (config: Readonly<Record<string, unknown>>, edit: ConfigEdit) => {
    const out: Record<string, unknown> = { ...config, ...edit.set }
    for (const key of edit.unset) delete out[key]
    return out
  }

  const configure = Effect.fn("PluginStore.configure")(function*(pluginId: string, agentId: string | undefined, edit: ConfigEdit) {
    return yield* immediate(Effect.gen(function*() {
      const p = yield* find(yield* all, pluginId)
      const now = yield* Clock.currentTimeMillis
      if (agentId === undefined) {
        const config = edited(p.config, edit)
        yield* sql`UPDATE plugins SET config = ${encodeConfig(config)}, updated_at = ${now} WHERE id = ${pluginId}`
        return config as Readonly<Record<string, unknown>>
      }
      yield* requireAgent(agentId)
      const row = (yield* agentRows(agentId)).find((r) => r.plugin_id === pluginId)
      const config = edited(row?.config ?? {}, edit)
      yield* sql`INSERT INTO agent_plugins (agent_id, plugin_id, enabled, config, updated_at) VALUES (${agentId}, ${pluginId}, NULL, ${encodeConfig(config)}, ${now})
        ON CONFLICT (agent_id, plugin_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`
      return config as Readonly<Record<string, unknown>>
    }))
  }, Effect.catchTags({ SqlError: (e) => Effect.fail(storageError("configure plugin")(e)), SchemaError: (e) => Effect.fail(storageError("configure plugin")(e)) }))

  const enabledMemory = all.pipe(
    Effect.map((ps) => ps.find((p) => p.kind === "memory" && p.enabled)?.id ?? DEFAULT_MEMORY),
    Effect.mapError(storageError("read plugins"))
  )

  const effective = (pluginId: string, agentId: string) =>
    Effect.map(viewFor(agentId), (view) => view.find((p) => p.id === pluginId))
  const enabledFor = Effect.fn("PluginStore.enabledFor")(function*(pluginId: string, agentId: string) {
    return (yield* effective(pluginId, agentId))?.enabled === true
  }, Effect.mapError(storageError("read plugins")))
  const configFor = Effect.fn("PluginStore.configFor")(function*(pluginId: string, agentId: string) {
    return (yield* effective(pluginId, agentId))?.config ?? {}
  }, Effect.mapError(storageError("read plugins")))

  return PluginStore.of({
    list: all.pipe(Effect.mapError(storageError("list plugins"))),
    enable,
    disable,
    listFor,
    setFor,
    configure,
    enabledFor,
    configFor,
    enabledMemory
  })
})

export const layer = Layer.effect(PluginStore, make)
