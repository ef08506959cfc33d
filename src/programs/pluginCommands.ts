/** `anna plugin list|enable|disable`: switch memory/lcm ⇄ memory/simple (exactly one enabled). */
import { Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type PluginChange, PluginStore } from "../services/PluginStore.ts"
import { Stores } from "./layers.ts"
import { printJson, table } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const id = Argument.String("id").pipe(Argument.withDescription("Plugin id, e.g. memory/simple"))

const describeChange = (c: PluginChange) =>
  [
    ...c.enabled.map((x) => `enabled ${x}`),
    ...c.disabled.map((x) => `disabled ${x}`)
  ].join("; ") || "no change"

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const plugins = yield* (yield* PluginStore).list
    if (f.json) return yield* printJson(plugins)
    yield* Console.log(table(
      ["PLUGIN", "KIND", "STATE"],
      plugins.map((p) => [p.id, p.kind, p.enabled ? "enabled" : "disabled"])
    ))
  })).pipe(Command.withDescription("List plugins and whether each is enabled"))

const enable = Command.make("enable", { id, json }, (f) =>
  Effect.gen(function*() {
    const change = yield* (yield* PluginStore).enable(f.id)
    yield* f.json ? printJson(change) : Console.log(describeChange(change))
  })).pipe(
    Command.withDescription("Enable a plugin (enabling a memory plugin disables the other)")
  )

const disable = Command.make("disable", { id, json }, (f) =>
  Effect.gen(function*() {
    const change = yield* (yield* PluginStore).disable(f.id)
    yield* f.json ? printJson(change) : Console.log(describeChange(change))
  })).pipe(
    Command.withDescription("Disable a plugin (disabling the memory plugin in use switches to the other one)")
  )

export const pluginCommand = Command.make("plugin").pipe(
  Command.withDescription("Plugins: list, enable, disable"),
  Command.withSubcommands([list, enable, disable]),
  Command.provide(Stores)
)
