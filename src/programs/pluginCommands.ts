/**
 * `anna plugin list|enable|disable|inherit|config`: the memory plugins (memory/lcm ⇄ memory/simple,
 * exactly one enabled, for every agent at once) and the tool plugins (mcp, webfetch), switched and
 * configured for every agent or, with `--agent A`, for one agent (its own setting wins; `inherit`
 * drops its switch).
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { PluginNotFound } from "../domain/plugins/errors.ts"
import { type AgentPlugin, type PluginChange, PluginStore } from "../services/PluginStore.ts"
import { Stores } from "./layers.ts"
import { printJson, table, usageError } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const id = Argument.String("id").pipe(Argument.withDescription("Plugin id, e.g. memory/simple or webfetch"))
const agent = Flag.String("agent").pipe(Flag.withDescription("For this agent only (tool plugins)"), Flag.optional)

const describeChange = (c: PluginChange, forAgent: Option.Option<string>) =>
  ([
    ...c.enabled.map((x) => `enabled ${x}`),
    ...c.disabled.map((x) => `disabled ${x}`)
  ].join("; ") || "no change") + Option.match(forAgent, { onNone: () => "", onSome: (a) => ` for agent ${a}` })

const stateText = (p: AgentPlugin) => `${p.enabled ? "enabled" : "disabled"} (${p.source === "agent" ? "agent's own" : "inherited"})`
const configText = (config: Readonly<Record<string, unknown>>) =>
  Object.keys(config).length === 0 ? "-" : Object.entries(config).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ")

const list = Command.make("list", { agent, json }, (f) =>
  Effect.gen(function*() {
    const store = yield* PluginStore
    if (Option.isSome(f.agent)) {
      const plugins = yield* store.listFor(f.agent.value)
      if (f.json) return yield* printJson(plugins)
      return yield* Console.log(table(
        ["PLUGIN", "KIND", "STATE", "CONFIG"],
        plugins.map((p) => [p.id, p.kind, stateText(p), configText(p.config)])
      ))
    }
    const plugins = yield* store.list
    if (f.json) return yield* printJson(plugins)
    yield* Console.log(table(
      ["PLUGIN", "KIND", "STATE", "CONFIG"],
      plugins.map((p) => [p.id, p.kind, p.enabled ? "enabled" : "disabled", configText(p.config)])
    ))
  })).pipe(Command.withDescription("List plugins and whether each is enabled (with --agent: for that agent, and whether that is its own setting)"))

/** A plugin id that is not one of anna's plugins is a usage error of `anna plugin <sub>` (exit 2). */
const unknownPlugin = (sub: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchIf(self, (e): e is E & PluginNotFound => e instanceof PluginNotFound, (e) => usageError(["anna", "plugin", sub], e.message))

const switchCommand = (name: "enable" | "disable", description: string) =>
  Command.make(name, { id, agent, json }, (f) =>
    Effect.gen(function*() {
      const store = yield* PluginStore
      const change = Option.isSome(f.agent)
        ? yield* store.setFor(f.id, f.agent.value, name === "enable")
        : name === "enable"
        ? yield* store.enable(f.id)
        : yield* store.disable(f.id)
      yield* f.json ? printJson(change) : Console.log(describeChange(change, f.agent))
    }).pipe(unknownPlugin(name))).pipe(Command.withDescription(description))

const enable = switchCommand(
  "enable",
  "Enable a plugin for every agent (enabling a memory plugin disables the other), or with --agent for that agent only"
)
const disable = switchCommand(
  "disable",
  "Disable a plugin for every agent (disabling the memory plugin in use switches to the other one), or with --agent for that agent only"
)

const inherit = Command.make("inherit", { id, agent: Flag.String("agent").pipe(Flag.withDescription("The agent")), json }, (f) =>
  Effect.gen(function*() {
    const change = yield* (yield* PluginStore).setFor(f.id, f.agent, undefined)
    yield* f.json ? printJson(change) : Console.log(describeChange(change, Option.some(f.agent)))
  }).pipe(unknownPlugin("inherit"))).pipe(Command.withDescription("Drop an agent's own switch for a tool plugin: it follows the global state again"))

/** `key=value`: the value as JSON when it parses (true, 5, ["a","b"]), else as a string. */
const parseAssignment = (text: string): readonly [string, unknown] | undefined => {
  const at = text.indexOf("=")
  if (at <= 0) return undefined
  const key = text.slice(0, at).trim()
  const raw = text.slice(at + 1)
  try {
    return [key, JSON.parse(raw) as unknown]
  } catch {
    return [key, raw]
  }
}

const config = Command.make("config", {
  id,
  agent,
  set: Flag.String("set").pipe(Flag.withDescription("key=value (value as JSON when it parses, else text; repeatable)"), Flag.atLeast(0)),
  unset: Flag.String("unset").pipe(Flag.withDescription("A key to remove (repeatable)"), Flag.atLeast(0)),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* PluginStore
    const set: Record<string, unknown> = {}
    for (const text of f.set) {
      const kv = parseAssignment(text)
      if (kv === undefined) return yield* usageError(["anna", "plugin", "config"], `--set takes key=value, not "${text}"`)
      set[kv[0]] = kv[1]
    }
    if (f.set.length > 0 || f.unset.length > 0) {
      const agentId = Option.getOrUndefined(f.agent)
      const changed = yield* store.configure(f.id, agentId, { set, unset: f.unset })
      // An audit line; relaxing webfetch's SSRF guard is worth a warning.
      const relaxes = f.id === "webfetch" && ("allow_private" in set || "allow_hosts" in set)
      yield* (relaxes ? Effect.logWarning : Effect.logInfo)("plugin configuration changed").pipe(
        Effect.annotateLogs({ plugin: f.id, agent: agentId ?? "(all)", set: JSON.stringify(set), unset: f.unset.join(",") })
      )
      if (f.json) return yield* printJson(changed)
      return yield* Console.log(`${f.id}${agentId === undefined ? "" : ` for agent ${agentId}`}: ${configText(changed)}`)
    }
    // no edit: show it
    if (Option.isSome(f.agent)) {
      const all = yield* store.listFor(f.agent.value)
      const p = all.find((x) => x.id === f.id)
      if (p === undefined) return yield* new PluginNotFound({ id: f.id, known: all.map((x) => x.id) })
      if (f.json) return yield* printJson({ config: p.config, agentConfig: p.agentConfig })
      return yield* Console.log(`${f.id} for agent ${f.agent.value}: ${configText(p.config)} (agent's own: ${configText(p.agentConfig)})`)
    }
    const all = yield* store.list
    const p = all.find((x) => x.id === f.id)
    if (p === undefined) return yield* new PluginNotFound({ id: f.id, known: all.map((x) => x.id) })
    yield* f.json ? printJson(p.config) : Console.log(`${f.id}: ${configText(p.config)}`)
  }).pipe(unknownPlugin("config"))).pipe(Command.withDescription("Show or change a plugin's configuration (for every agent, or with --agent that agent's own keys), e.g. --set allow_private=true"))

export const pluginCommand = Command.make("plugin").pipe(
  Command.withDescription("Plugins: list, enable, disable, inherit, config"),
  Command.withSubcommands([list, enable, disable, inherit, config]),
  Command.provide(Stores)
)
