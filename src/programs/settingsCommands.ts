/**
 * `anna settings list|get|set|unset`: gateway-wide settings (src/domain/config/settings.ts). A
 * running gateway reads them on every turn, so a change applies to the next turn.
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command } from "effect/cli"
import { SETTINGS, settingSpec, settingValue, unknownSetting } from "../domain/config/settings.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { printJson, table, usageError } from "./output.ts"
import { Stores } from "./layers.ts"
import { json } from "./userCommands.ts"

const key = Argument.String("key").pipe(Argument.withDescription("Setting name, e.g. sandbox.max_per_user"))
const value = Argument.String("value").pipe(Argument.withDescription("New value"))

/** The setting `k` names; any other name is a usage error of the command (`sub`: get, set, unset). */
const known = (k: string, sub: string) => {
  const spec = settingSpec(k)
  return spec === undefined ? usageError(["anna", "settings", sub], unknownSetting(k)) : Effect.succeed(spec)
}

const current = Effect.gen(function*() {
  const config = yield* ConfigStore
  const rows: Array<{ key: string; value: string; default: string; set: boolean; description: string }> = []
  for (const s of SETTINGS) {
    const stored = Option.getOrUndefined(yield* config.getSetting(s.key))
    rows.push({ key: s.key, value: settingValue(s.key, stored), default: s.defaultValue, set: stored !== undefined, description: s.description })
  }
  return rows
})

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const rows = yield* current
    if (f.json) return yield* printJson(rows)
    yield* Console.log(table(["SETTING", "VALUE", "DEFAULT", "WHAT"], rows.map((r) => [r.key, r.set ? r.value : `${r.value} (default)`, r.default, r.description])))
  })).pipe(Command.withDescription("List the settings, their values and defaults"))

const get = Command.make("get", { key, json }, (f) =>
  Effect.gen(function*() {
    yield* known(f.key, "get")
    const row = (yield* current).find((r) => r.key === f.key)
    if (f.json) return yield* printJson(row)
    yield* Console.log(row?.value ?? "")
  })).pipe(Command.withDescription("Print one setting's value"))

const set = Command.make("set", { key, value, json }, (f) =>
  Effect.gen(function*() {
    const spec = yield* known(f.key, "set")
    const problem = spec.problem(f.value)
    if (problem !== undefined) return yield* usageError(["anna", "settings", "set"], `${f.key} ${problem}, got "${f.value}"`)
    yield* (yield* ConfigStore).setSetting(f.key, f.value.trim())
    if (f.json) return yield* printJson({ key: f.key, value: f.value.trim() })
    yield* Console.log(`${f.key} = ${f.value.trim()} (applies from the next turn)`)
  })).pipe(Command.withDescription("Change a setting"))

const unset = Command.make("unset", { key, json }, (f) =>
  Effect.gen(function*() {
    const spec = yield* known(f.key, "unset")
    yield* (yield* ConfigStore).deleteSetting(f.key)
    if (f.json) return yield* printJson({ key: f.key, value: spec.defaultValue })
    yield* Console.log(`${f.key} is back to its default, ${spec.defaultValue}`)
  })).pipe(Command.withDescription("Return a setting to its default"))

export const settingsCommand = Command.make("settings").pipe(
  Command.withDescription("Gateway-wide settings: list, get, set, unset (e.g. sandbox.max_per_user)"),
  Command.withSubcommands([list, get, set, unset]),
  Command.provide(Stores)
)
