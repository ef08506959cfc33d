/**
 * The `skills` tool (issue 14): the skills this session can use — the operator's (the agent's own,
 * then the global ones it does not shadow; services/Skills.ts) and the chat user's own, in their
 * sandbox workspace at /workspace/skills/<name>/ (../skills/workspace.ts).
 *
 * - `list` / `search` (words, case-insensitive, over name and description) show them;
 * - `use` returns a skill's SKILL.md body and its other files — the body is loaded only then; an
 *   operator skill's files are copied into the workspace (/workspace/.anna-skills/<name>/) first,
 *   since the operator's folders are never mounted into a sandbox;
 * - `install` (a folder or `.tar(.gz)`/`.tgz` in the workspace) and `remove` act only on the user's
 *   own skills: a chat user is never trusted, so nothing they do changes what other users see, the
 *   operator's skills cannot be removed or replaced from a chat (an operator skill's name is refused),
 *   and their files are reached only through the sandbox's confined reads and writes.
 *
 * The system prompt lists the operator's skills only (cached, no read per turn); the user's own are
 * found with `list`/`search`, which read their workspace through the sandbox.
 *
 * Issue 15: `search` ranks by a Thompson draw from each skill's outcomes (./skillTools.ts, which also
 * holds the `search_skills` and `create_skill` tools offered from this source), and `use` tells the
 * Learning loop (when the deployment has one) that the burst used the skill, so the burst's outcome
 * reaches the skill's counts.
 */
import { Effect, Layer, Option, Result, Schema } from "effect"
import { matches, packagesIn, SKILL_FILE, searchWords } from "../../domain/skills/skill.ts"
import { type Tool, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import { Learning } from "../../services/Learning.ts"
import { Sandbox } from "../../services/Sandbox.ts"
import { Skills } from "../../services/Skills.ts"
import { SkillStats } from "../../services/SkillStats.ts"
import type { ToolSession, ToolSource } from "../../services/ToolCatalog.ts"
import * as FsSkills from "../skills/FsSkills.ts"
import { copyOperatorSkill, readWorkspaceSource, removeUserSkill, userFiles, userSkills, writeUserSkill } from "../skills/workspace.ts"
import { armText, CREATE_TOOL, createSkillTool, listSkills, type Listed, SEARCH_TOOL, type SkillDeps, searchSkillsTool, thompsonRank, withArms, workspace } from "./skillTools.ts"
import * as ToolCatalogLayer from "./ToolCatalog.ts"

export const TOOL_NAME = "skills"

const Input = Schema.Struct({
  action: Schema.Literals(["list", "search", "use", "install", "remove"]).annotate({ description: "What to do." }),
  query: Schema.optionalKey(Schema.String.annotate({ description: "search: words to look for in skills' names and descriptions." })),
  name: Schema.optionalKey(Schema.String.annotate({ description: "use/remove: the skill's name." })),
  path: Schema.optionalKey(Schema.String.annotate({
    description: "install: a folder or a .tar/.tar.gz/.tgz file in your workspace holding a skill (a SKILL.md) or several in subfolders."
  })),
  force: Schema.optionalKey(Schema.Boolean.annotate({ description: "install: replace your own skill of the same name." }))
})
const decode = Schema.decodeUnknownEffect(Input)

const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })
const failWith = (e: { readonly message: string }) => fail(e.message)

export const skillsTool = (skills: Skills["Service"], session: ToolSession, deps: SkillDeps = {}): Tool => {
  const sandbox = workspace(session, TOOL_NAME)
  const everything = listSkills(skills, session, sandbox)
  const show = (list: ReadonlyArray<Listed>, none: string) =>
    list.length === 0 ? none : list.map((s) => `- ${s.name} (${s.scope}): ${s.description}`).join("\n")
  /** Best first (a Thompson draw each), with each skill's outcomes. */
  const search = (query: string) =>
    Effect.gen(function*() {
      const found = (yield* everything).filter((s) => matches(s, searchWords(query)))
      if (found.length === 0) return "No skill matches."
      const ranked = yield* thompsonRank(yield* withArms(deps.stats, session, found))
      return ranked.map(({ item }) => `- ${item.name} (${item.scope}; ${armText(item.arm)}): ${item.description}`).join("\n")
    })
  const used = (name: string, scope: "operator" | "user") =>
    deps.learning === undefined ? Effect.void : deps.learning.skillUsed({ sessionKey: session.sessionKey, agentId: session.agentId, userId: session.userId }, name, scope)

  const use = (name: string) =>
    Effect.gen(function*() {
      const operator = yield* skills.read(name, session.agentId).pipe(Effect.result)
      if (Result.isSuccess(operator)) {
        const { body, files, skill } = operator.success
        yield* used(skill.name, "operator")
        if (files.length === 0) return body
        // The operator's files are outside the sandbox: a copy goes into the workspace, where the agent works.
        const ws = yield* sandbox.pipe(Effect.result)
        if (Result.isFailure(ws)) return `${body}\n\nThis skill's files (${files.join(", ")}) cannot be used here: ${ws.failure.reason}.`
        const copy = yield* copyOperatorSkill(ws.success, skill.name, skill.path).pipe(Effect.mapError(failWith))
        return [
          body,
          "",
          `This skill's folder is ${copy.folder}/ (paths in the instructions are relative to it): ${copy.copied.filter((f) => f !== SKILL_FILE).join(", ")}.`,
          ...(copy.skipped.length === 0 ? [] : [`Not copied (binary): ${copy.skipped.join(", ")}.`])
        ].join("\n")
      }
      const ws = yield* sandbox
      const mine = (yield* userSkills(ws)).find((s) => s.name === name)
      if (mine === undefined) return yield* fail(`no skill named ${name}; call skills with action "list" to see them`)
      yield* used(mine.name, "user")
      const files = yield* userFiles(ws, mine.path)
      return [mine.body, files.length === 0 ? "" : `\nFiles of this skill, in ${mine.path}/: ${files.join(", ")}`].join("\n").trim()
    })

  const install = (path: string, force: boolean) =>
    Effect.gen(function*() {
      const ws = yield* sandbox
      const files = yield* readWorkspaceSource(ws, path).pipe(Effect.mapError(failWith))
      const packages = yield* packagesIn(files, path).pipe(Effect.mapError(failWith))
      const operator = yield* skills.list(session.agentId)
      const mine = yield* userSkills(ws)
      for (const p of packages) {
        if (operator.some((o) => o.name === p.name)) return yield* fail(`${p.name} is the name of a skill the operator installed; choose another name`)
        if (!force && mine.some((m) => m.name === p.name)) return yield* fail(`you already have a skill named ${p.name}; set force to replace it`)
      }
      const done: Array<string> = []
      for (const p of packages) {
        if (mine.some((m) => m.name === p.name)) yield* removeUserSkill(ws, p.name).pipe(Effect.mapError(failWith))
        done.push(`${p.name} → ${yield* writeUserSkill(ws, p).pipe(Effect.mapError(failWith))}`)
      }
      return `Installed ${done.length === 1 ? "skill" : `${done.length} skills`}: ${done.join(", ")}.`
    })

  const remove = (name: string) =>
    Effect.gen(function*() {
      if ((yield* skills.list(session.agentId)).some((o) => o.name === name)) {
        return yield* fail(`${name} was installed by the operator and cannot be removed from a chat`)
      }
      yield* removeUserSkill(yield* sandbox, name).pipe(Effect.mapError(failWith))
      return `Removed your skill ${name}.`
    })

  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Skills are instructions for particular tasks (a SKILL.md, maybe with scripts and references).",
        "list: the skills you can use; search: those matching words; use: read a skill's instructions (do this before following one);",
        "install: add your own skill from a folder or .tar/.tar.gz in your workspace (to /workspace/skills/<name>/); remove: delete one of your own."
      ].join(" "),
      inputSchema: inputSchemaOf(Input)
    },
    execute: (raw) =>
      Effect.gen(function*() {
        const input = yield* decode(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
        const need = (value: string | undefined, field: string) =>
          value === undefined || value.trim() === "" ? Effect.fail(fail(`${input.action} needs ${field}`)) : Effect.succeed(value.trim())
        switch (input.action) {
          case "list":
            return show(yield* everything, "No skills are installed.")
          case "search":
            return yield* search(yield* need(input.query, "query"))
          case "use":
            return yield* use(yield* need(input.name, "name"))
          case "install":
            return yield* install(yield* need(input.path, "path"), input.force === true)
          case "remove":
            return yield* remove(yield* need(input.name, "name"))
        }
      })
  }
}

/**
 * Offered when the agent allows it (each tool by its name) and there is something to offer: a
 * workspace (the user's own skills) or operator skills. Without either (no sandbox, nothing
 * installed) the model is not shown a tool that can only say "no skills"; `create_skill` needs the
 * workspace. A deployment without a Sandbox layer has no workspaces: the sandbox is not even asked
 * for then (asking would tell every user "tools are off").
 */
export const skillsSource = (skills: Skills["Service"], hasSandbox = true, deps: SkillDeps = {}): ToolSource => ({
  id: TOOL_NAME,
  tools: (session) =>
    Effect.gen(function*() {
      const wanted = [TOOL_NAME, SEARCH_TOOL, CREATE_TOOL].filter((n) => session.enabled(n))
      if (wanted.length === 0) return []
      const workspace = hasSandbox ? Result.isSuccess(yield* session.sandbox.pipe(Effect.result)) : false
      const useful = workspace || (yield* skills.list(session.agentId)).length > 0
      if (!useful) return []
      const tools: Array<Tool> = []
      if (wanted.includes(TOOL_NAME)) tools.push(skillsTool(skills, session, deps))
      if (wanted.includes(SEARCH_TOOL)) tools.push(searchSkillsTool(skills, session, deps))
      if (wanted.includes(CREATE_TOOL) && workspace) tools.push(createSkillTool(skills, session))
      return tools as ReadonlyArray<Tool>
    })
})

/**
 * Registers the tools and provides the Skills service (also read by the runtime for the system
 * prompt). SkillStats and Learning are used when the layers below provide them: without SkillStats
 * every skill ranks as new (0/0); without Learning, `use` records nothing.
 */
export const layer = ToolCatalogLayer.register(Effect.gen(function*() {
  const stats = yield* Effect.serviceOption(SkillStats)
  const learning = yield* Effect.serviceOption(Learning)
  return skillsSource(yield* Skills, Option.isSome(yield* Effect.serviceOption(Sandbox)), {
    stats: Option.getOrUndefined(stats),
    learning: Option.getOrUndefined(learning)
  })
})).pipe(
  Layer.provideMerge(FsSkills.layerIfConfigured)
)
