/**
 * `anna skill install|list|remove`: the operator's skills, global (`$ANNA_HOME/skills/`) or one
 * agent's (`--agent A`: `$ANNA_HOME/workspaces/A/skills/`, shadowing a global skill of the same name).
 */
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as FsSkills from "../layers/skills/FsSkills.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { type InstalledSkill, Skills } from "../services/Skills.ts"
import { Stores } from "./layers.ts"
import { printJson, table } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const agent = Flag.String("agent").pipe(
  Flag.withDescription("The agent whose own skills these are (default: global skills, seen by every agent)"),
  Flag.optional
)
const force = Flag.Boolean("force").pipe(Flag.withDescription("Replace an installed skill of the same name"), Flag.withDefault(false))
const source = Argument.String("source").pipe(
  Argument.withDescription("A folder, a git URL (https://…, git@…, file://…, ….git; #ref for a branch or tag, #ref:folder or #:folder for a folder in it), or a .tar/.tar.gz/.tgz file or http(s) URL")
)
const name = Argument.String("name").pipe(Argument.withDescription("The skill's name"))

/** The agent named by --agent, which must exist. */
const agentOf = (flag: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(flag)) return undefined
    return (yield* (yield* AgentStore).get(flag.value)).id
  })

const scopeOf = (s: InstalledSkill) => (s.scope === "agent" ? `agent ${s.agentId ?? ""}` : "global")
const row = (s: InstalledSkill) => ({ name: s.name, description: s.description, scope: s.scope, agent: s.agentId ?? null, path: s.path })

const install = Command.make("install", { source, agent, force, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const installed = yield* (yield* Skills).install(f.source, { agentId, force: f.force })
    if (f.json) return yield* printJson(installed.map(row))
    for (const s of installed) yield* Console.log(`installed ${s.name} (${scopeOf(s)}) in ${s.path}`)
  })).pipe(Command.withDescription("Install the skill(s) found in a folder, git repository or tarball"))

const list = Command.make("list", { agent, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const skills = yield* Skills
    const found = agentId === undefined ? yield* skills.all : yield* skills.list(agentId)
    if (f.json) return yield* printJson(found.map(row))
    if (found.length === 0) return yield* Console.log("No skills installed (see: anna skill install --help).")
    yield* Console.log(table(["NAME", "SCOPE", "DESCRIPTION"], found.map((s) => [s.name, scopeOf(s), s.description.length > 80 ? `${s.description.slice(0, 77)}...` : s.description])))
  })).pipe(Command.withDescription("List installed skills: every one, or those an agent sees (--agent)"))

const remove = Command.make("remove", { name, agent, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const removed = yield* (yield* Skills).remove(f.name, agentId)
    yield* f.json ? printJson(row(removed)) : Console.log(`removed ${removed.name} (${scopeOf(removed)})`)
  })).pipe(Command.withDescription("Remove a global skill, or an agent's own (--agent)"))

export const skillCommand = Command.make("skill").pipe(
  Command.withDescription("Skills: install, list, remove"),
  Command.withSubcommands([install, list, remove]),
  Command.provide(FsSkills.layer.pipe(Layer.provideMerge(Stores)))
)
