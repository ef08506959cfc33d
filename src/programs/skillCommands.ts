/**
 * `anna skill install|list|remove`: the operator's skills, global (`$ANNA_HOME/skills/`) or one
 * agent's (`--agent A`: `$ANNA_HOME/workspaces/A/skills/`, shadowing a global skill of the same name).
 *
 * `anna skill rank|feedback` (issue 15): the skills ranked as the agent's search ranks them (by a
 * Thompson draw, or by the Beta's mean or upper confidence bound for debugging), and an outcome
 * recorded by hand. `anna skill search` (issue 24) runs the agents' `search_skills` itself: the same
 * candidates (with `--user`, that user's own skills read from their workspace) and the same draw. Outcomes are counted per agent: the operator's skills under user '', a chat
 * user's own skills (`--user U`) under that user.
 */
import { Console, Effect, Layer, Option, Random, Result } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { InvalidConfig } from "../domain/config/errors.ts"
import { alphaOf, betaOf, mean } from "../domain/learning/thompson.ts"
import { workspaceOf } from "../domain/sandbox/spec.ts"
import { SkillNotFound } from "../domain/skills/errors.ts"
import { MAX_SKILL_MD_BYTES, nameProblem, parseSkillMd, SKILL_FILE } from "../domain/skills/skill.ts"
import * as SkillRankingLayer from "../layers/learning/SkillRanking.ts"
import * as SqliteSkillStats from "../layers/learning/SqliteSkillStats.ts"
import * as WorkspaceFiles from "../layers/sandbox/workspaceFiles.ts"
import * as FsSkills from "../layers/skills/FsSkills.ts"
import { USER_ROOT } from "../layers/skills/workspace.ts"
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, searchLine, searchSkills } from "../layers/tools/skillTools.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { type InstalledSkill, Skills } from "../services/Skills.ts"
import { SkillRanking } from "../services/SkillRanking.ts"
import { SkillStats } from "../services/SkillStats.ts"
import { Stores } from "./layers.ts"
import { printJson, table, usageError } from "./output.ts"

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

const rankAgent = Flag.String("agent").pipe(
  Flag.withDescription("The agent whose skills to rank, as it sees them, with its outcomes (default: the global skills, every agent's outcomes together)"),
  Flag.optional
)
const feedbackAgent = Flag.String("agent").pipe(Flag.withDescription("The agent the outcome is for (default: the default agent)"), Flag.optional)
const user = Flag.String("user").pipe(Flag.withDescription("A chat user: their own skills (rank: those with recorded outcomes)"), Flag.optional)
const by = Flag.Literals("by", ["sample", "mean", "ucb"]).pipe(
  Flag.withDescription("sample: one Thompson draw from each skill's Beta (what the agent's search does); mean: the Beta's mean; ucb: its upper confidence bound"),
  Flag.withDefault("sample")
)
const seed = Flag.Int("seed").pipe(Flag.withDescription("Seed for --by sample: the same seed gives the same draws"), Flag.optional)
const query = Argument.String("query").pipe(Argument.withDescription("Words that must appear in a skill's name or description"), Argument.optional)
const outcome = Argument.Literals("outcome", ["success", "failure"])

const counted = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

const userFlag = (flag: Option.Option<string>, sub: string) =>
  Option.isSome(flag) && flag.value.trim() === "" ? usageError(["anna", "skill", sub], "--user needs a user id") : Effect.succeed(Option.getOrUndefined(flag))

const rank = Command.make("rank", { query, by, agent: rankAgent, user, seed, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const userId = yield* userFlag(f.user, "rank")
    const { ranked, candidates } = yield* (yield* SkillRanking).rank({
      agentId,
      userId,
      query: Option.getOrUndefined(f.query),
      by: f.by,
      seed: Option.getOrUndefined(f.seed)
    })
    const rows = ranked.map((r) => ({ rank: r.rank, name: r.name, scope: r.scope, successes: r.successes, failures: r.failures, alpha: r.alpha, beta: r.beta, score: r.score }))
    if (f.json) return yield* printJson(rows)
    if (rows.length === 0) return yield* Console.log(candidates === 0 ? "No skills installed (see: anna skill install --help)." : "No skill matches.")
    yield* Console.log(table(
      ["RANK", "NAME", "SCOPE", "SUCCESSES", "FAILURES", "α", "β", "SCORE"],
      rows.map((r) => [String(r.rank), r.name, r.scope, String(r.successes), String(r.failures), String(r.alpha), String(r.beta), r.score.toFixed(4)])
    ))
  })).pipe(Command.withDescription("Rank the skills an agent sees (or the global ones) as its search does: --by sample|mean|ucb"))

const search = Command.make("search", {
  query: Argument.String("query").pipe(Argument.withDescription("Words that must all appear in a skill's name or description")),
  agent: feedbackAgent,
  user: Flag.String("user").pipe(Flag.withDescription("A chat user: their own skills too, read from their workspace of the agent"), Flag.optional),
  limit: Flag.Int("limit").pipe(
    Flag.withDescription(`At most this many skills (default ${DEFAULT_SEARCH_LIMIT}, at most ${MAX_SEARCH_LIMIT})`),
    Flag.filter((n) => n >= 1 && n <= MAX_SEARCH_LIMIT, (n) => `--limit must be from 1 to ${MAX_SEARCH_LIMIT}, got ${n}`),
    Flag.optional
  ),
  seed,
  json
}, (f) =>
  Effect.gen(function*() {
    const agents = yield* AgentStore
    const chosen = Option.isSome(f.agent) ? Option.some(yield* agents.get(f.agent.value)) : yield* agents.defaultAgent
    if (Option.isNone(chosen)) return yield* new InvalidConfig({ reason: "there is no agent to search the skills of; name one with --agent" })
    const a = chosen.value
    const userId = yield* userFlag(f.user, "search")
    // The user's workspace through the confined reader, as the tool reads it through the sandbox; none without --user.
    const workspace = userId === undefined
      ? Effect.fail("no user")
      : WorkspaceFiles.make(workspaceOf((yield* AppConfig).workspaces, a.id, a.sandboxWorkspace, userId), { quotaMb: a.sandboxDiskMb })
    const stats = yield* SkillStats
    const run = searchSkills(yield* Skills, { agentId: a.id, userId: userId ?? "" }, workspace, { stats }, f.query, Option.getOrUndefined(f.limit))
    const ranked = Option.isSome(f.seed) ? yield* run.pipe(Random.withSeed(f.seed.value)) : yield* run
    if (f.json) {
      return yield* printJson(ranked.map(({ item }, i) => ({
        rank: i + 1,
        name: item.name,
        scope: item.scope,
        description: item.description,
        successes: item.arm.successes,
        failures: item.arm.failures,
        mean: mean(item.arm)
      })))
    }
    yield* Console.log(ranked.length === 0 ? "No skill matches." : ranked.map(({ item }, i) => searchLine(item, i + 1)).join("\n"))
  })).pipe(Command.withDescription("Search the skills an agent sees as its search_skills tool does: matching ones, best first by a Thompson draw over their outcomes"))

/** Whether `name` is a skill in the user's workspace: read through the confined reader (the user's files are never trusted). */
const inWorkspace = (root: string, quotaMb: number, name: string) =>
  Effect.gen(function*() {
    if (nameProblem(name) !== undefined) return false
    const files = yield* WorkspaceFiles.make(root, { quotaMb })
    const md = yield* files.readFile(`${USER_ROOT}/${name}/${SKILL_FILE}`, { maxBytes: MAX_SKILL_MD_BYTES, maxEntries: 1 }).pipe(Effect.option)
    if (Option.isNone(md) || md.value._tag !== "File") return false
    const parsed = parseSkillMd(new TextDecoder().decode(md.value.bytes), name)
    return Result.isSuccess(parsed) && parsed.success.name === name
  })

const feedback = Command.make("feedback", { name, outcome, agent: feedbackAgent, user, json }, (f) =>
  Effect.gen(function*() {
    const agents = yield* AgentStore
    const chosen = Option.isSome(f.agent) ? Option.some(yield* agents.get(f.agent.value)) : yield* agents.defaultAgent
    if (Option.isNone(chosen)) return yield* new InvalidConfig({ reason: "there is no agent to record it for; name one with --agent" })
    const a = chosen.value
    const userId = yield* userFlag(f.user, "feedback")
    const stats = yield* SkillStats
    const operator = (yield* (yield* Skills).list(a.id)).find((s) => s.name === f.name)
    if (userId === undefined && operator === undefined) return yield* new SkillNotFound({ name: f.name, scope: `among the skills agent ${a.id} sees` })
    if (userId !== undefined) {
      if (operator !== undefined) {
        return yield* new InvalidConfig({ reason: `${f.name} is the operator's skill: its outcomes count for every user of agent ${a.id}; leave out --user` })
      }
      const known = (yield* stats.arms(a.id, userId, [f.name])).has(f.name) ||
        (yield* inWorkspace(workspaceOf((yield* AppConfig).workspaces, a.id, a.sandboxWorkspace, userId), a.sandboxDiskMb, f.name))
      if (!known) return yield* new SkillNotFound({ name: f.name, scope: `user ${userId} of agent ${a.id}` })
    }
    const arm = yield* stats.record({ agentId: a.id, userId: userId ?? "", name: f.name }, f.outcome)
    const out = { name: f.name, agent: a.id, user: userId ?? null, outcome: f.outcome, successes: arm.successes, failures: arm.failures, alpha: alphaOf(arm), beta: betaOf(arm), mean: mean(arm) }
    if (f.json) return yield* printJson(out)
    yield* Console.log(`recorded ${f.outcome} for ${f.name} (agent ${a.id}${userId === undefined ? "" : `, user ${userId}`}): ${counted(arm.successes, "success", "successes")}, ${counted(arm.failures, "failure", "failures")}, mean ${mean(arm).toFixed(2)}`)
  })).pipe(Command.withDescription("Record a skill's outcome by hand (an operator skill of the agent, default: the default agent; --user for a user's own)"))

export const skillCommand = Command.make("skill").pipe(
  Command.withDescription("Skills: install, list, remove, search, rank, feedback"),
  Command.withSubcommands([install, list, remove, search, rank, feedback]),
  Command.provide(SkillRankingLayer.layer.pipe(Layer.provideMerge(Layer.merge(FsSkills.layer, SqliteSkillStats.layer)), Layer.provideMerge(Stores)))
)
