/**
 * Skills ranked by a bandit (issue 15) and the two tools that go with the `skills` tool
 * (./skills.ts): `search_skills` (matching skills best first, by a Thompson draw from each one's
 * Beta(successes + 1, failures + 1)) and `create_skill` (a new skill in the chat user's own workspace).
 *
 * Outcomes are counted per agent: the operator's skills under user '' (every user's bursts count for
 * them), a user's own under that user. The draws come from Effect's `Random` service, so a test that
 * runs the tool under `Random.withSeed` gets the same ranking every time.
 *
 * `create_skill` writes only to /workspace/skills/<name>/SKILL.md, through the sandbox's confined
 * writer (../skills/workspace.ts): a chat user is never trusted, so what they write reaches their own
 * sessions and nobody else's prompt, and an operator skill's name is refused (it would be shadowed
 * anyway, and must not look like the operator's).
 */
import { Effect, Random, Result, Schema } from "effect"
import { stringify } from "yaml"
import { type Arm, mean, rank } from "../../domain/learning/thompson.ts"
import { MAX_DESCRIPTION_CHARS, MAX_SKILL_MD_BYTES, matches, nameProblem, packagesIn, SKILL_FILE, searchWords } from "../../domain/skills/skill.ts"
import { type Tool, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import type { Learning } from "../../services/Learning.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import type { OperatorScope, Skills } from "../../services/Skills.ts"
import type { SkillStats } from "../../services/SkillStats.ts"
import type { ToolSession } from "../../services/ToolCatalog.ts"
import { removeUserSkill, userSkills, writeUserSkill } from "../skills/workspace.ts"

export const SEARCH_TOOL = "search_skills"
export const CREATE_TOOL = "create_skill"
export const DEFAULT_SEARCH_LIMIT = 10
export const MAX_SEARCH_LIMIT = 50

/** What the skill tools use when the deployment has it (both optional: no stats → every skill 0/0). */
export interface SkillDeps {
  readonly stats?: SkillStats["Service"] | undefined
  readonly learning?: Learning["Service"] | undefined
}

export interface Listed {
  readonly name: string
  readonly description: string
  /** The operator's (global, the agent's own) or the user's own ("yours"). */
  readonly scope: OperatorScope | "yours"
}

export interface WithArm extends Listed {
  readonly arm: Arm
}

const failIn = (tool: string) => (reason: string) => new ToolError({ tool, reason })

/** The session's workspace, or the tool error that says why there is none. */
export const workspace = (session: ToolSession, tool: string): Effect.Effect<SandboxSession, ToolError> =>
  session.sandbox.pipe(Effect.mapError((e) => failIn(tool)(`your workspace is not available (${e.message})`)))

/** Whose skills a search is for: the agent's (operator skills and their counts) and the user's own. */
export type SearchFor = Pick<ToolSession, "agentId" | "userId">

/** Operator skills first; the user's own only where no operator skill has the name; by name. */
export const listSkills = <E>(skills: Skills["Service"], session: SearchFor, ws: Effect.Effect<Pick<SandboxSession, "readFile">, E>) =>
  Effect.gen(function*() {
    const operator: Array<Listed> = (yield* skills.list(session.agentId)).map((s) => ({ name: s.name, description: s.description, scope: s.scope }))
    const sandbox = yield* ws.pipe(Effect.result)
    const mine = Result.isSuccess(sandbox) ? yield* userSkills(sandbox.success) : []
    const own: Array<Listed> = mine.filter((u) => !operator.some((o) => o.name === u.name)).map((u) => ({ name: u.name, description: u.description, scope: "yours" }))
    return [...operator, ...own].sort((a, b) => a.name.localeCompare(b.name)) as ReadonlyArray<Listed>
  })

const ZERO: Arm = { successes: 0, failures: 0 }

/**
 * Each skill with its outcomes (0/0 when none is recorded). A database that cannot be read leaves
 * every skill at 0/0 (logged): the search still answers, only without the history.
 */
export const withArms = (stats: SkillStats["Service"] | undefined, session: SearchFor, list: ReadonlyArray<Listed>) =>
  Effect.gen(function*() {
    if (stats === undefined || list.length === 0) return list.map((s) => ({ ...s, arm: ZERO })) as ReadonlyArray<WithArm>
    const names = (own: boolean) => list.filter((s) => (s.scope === "yours") === own).map((s) => s.name)
    const [operator, mine] = yield* Effect.all([stats.arms(session.agentId, "", names(false)), stats.arms(session.agentId, session.userId, names(true))]).pipe(
      Effect.catch((e) => Effect.as(Effect.logWarning(`skills are ranked without their outcomes: ${e.message}`), [new Map<string, Arm>(), new Map<string, Arm>()] as const))
    )
    return list.map((s) => ({ ...s, arm: (s.scope === "yours" ? mine : operator).get(s.name) ?? ZERO })) as ReadonlyArray<WithArm>
  })

/** Best first by one Thompson draw each, from the current `Random` service. */
export const thompsonRank = <A extends { readonly arm: Arm }>(items: ReadonlyArray<A>) =>
  Effect.gen(function*() {
    const random = yield* Random.Random
    return rank(items, (i) => i.arm, "sample", () => random.nextDoubleUnsafe())
  })

export const armText = (a: Arm): string => `successes ${a.successes}, failures ${a.failures}`

/**
 * The search `search_skills` runs (and `anna skill search`): the skills `session` sees whose name and
 * description hold every word of `query`, best first by one Thompson draw each, at most `limit`.
 * `ws` reaches the user's workspace (their own skills); when it fails, only the operator's count.
 */
export const searchSkills = <E>(
  skills: Skills["Service"],
  session: SearchFor,
  ws: Effect.Effect<Pick<SandboxSession, "readFile">, E>,
  deps: SkillDeps,
  query: string,
  limit = DEFAULT_SEARCH_LIMIT
) =>
  Effect.gen(function*() {
    const words = searchWords(query)
    const found = (yield* listSkills(skills, session, ws)).filter((s) => matches(s, words))
    return (yield* thompsonRank(yield* withArms(deps.stats, session, found))).slice(0, limit)
  })

/** One line of a search's answer, as the tool gives it. */
export const searchLine = (item: WithArm, position: number): string =>
  `${position}. ${item.name} (${item.scope}): ${item.description} [${armText(item.arm)}, mean ${mean(item.arm).toFixed(2)}]`

const SearchInput = Schema.Struct({
  query: Schema.String.annotate({ description: "Words to look for in skills' names and descriptions (all must appear; empty: every skill)." }),
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_SEARCH_LIMIT })).annotate({
    description: `How many skills to return at most (default ${DEFAULT_SEARCH_LIMIT}).`
  }))
})
const decodeSearch = Schema.decodeUnknownEffect(SearchInput)

export const searchSkillsTool = (skills: Skills["Service"], session: ToolSession, deps: SkillDeps = {}): Tool => {
  const fail = failIn(SEARCH_TOOL)
  return {
    definition: {
      name: SEARCH_TOOL,
      description: [
        "Find skills (instructions for particular tasks) by words in their names and descriptions, best first.",
        "The order comes from how well each skill has worked before (successes and failures), with some room for new skills;",
        "read one with the skills tool (action use) before following it."
      ].join(" "),
      inputSchema: inputSchemaOf(SearchInput)
    },
    execute: (raw) =>
      Effect.gen(function*() {
        const input = yield* decodeSearch(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
        const ranked = yield* searchSkills(skills, session, workspace(session, SEARCH_TOOL), deps, input.query, input.limit)
        if (ranked.length === 0) return "No skill matches."
        return ranked.map(({ item }, i) => searchLine(item, i + 1)).join("\n")
      })
  }
}

const CreateInput = Schema.Struct({
  name: Schema.String.annotate({ description: "The skill's name: lowercase letters, digits and -, at most 64 characters." }),
  description: Schema.String.annotate({ description: `What the skill is for and when to use it (one line, at most ${MAX_DESCRIPTION_CHARS} characters).` }),
  body: Schema.String.annotate({ description: "The instructions (Markdown), read when the skill is used." }),
  replace: Schema.optionalKey(Schema.Boolean.annotate({ description: "Replace your own skill of the same name." }))
})
const decodeCreate = Schema.decodeUnknownEffect(CreateInput)

/** The SKILL.md text: YAML front matter (written by the YAML library, so any description is quoted right), then the body. */
export const skillMdText = (name: string, description: string, body: string): string =>
  `---\n${stringify({ name, description }, { lineWidth: 0 })}---\n\n${body.trim()}\n`

export const createSkillTool = (skills: Skills["Service"], session: ToolSession): Tool => {
  const fail = failIn(CREATE_TOOL)
  const failWith = (e: { readonly message: string }) => fail(e.message)
  return {
    definition: {
      name: CREATE_TOOL,
      description: [
        "Save instructions that worked as a new skill of your own (in /workspace/skills/<name>/SKILL.md), to find with search_skills and read with skills (action use) later.",
        "Only you (this user) see it."
      ].join(" "),
      inputSchema: inputSchemaOf(CreateInput)
    },
    execute: (raw) =>
      Effect.gen(function*() {
        const input = yield* decodeCreate(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
        const name = input.name.trim()
        const description = input.description.trim().replace(/\s+/g, " ")
        const bad = nameProblem(name)
        if (bad !== undefined) return yield* fail(bad)
        if (description === "") return yield* fail("the description is empty")
        if (description.length > MAX_DESCRIPTION_CHARS) return yield* fail(`the description is longer than ${MAX_DESCRIPTION_CHARS} characters`)
        if (input.body.trim() === "") return yield* fail("the body is empty")
        // Checked before any text is built from it; the whole file is checked again below.
        if (Buffer.byteLength(input.body, "utf8") > MAX_SKILL_MD_BYTES) return yield* fail(`the body is larger than ${MAX_SKILL_MD_BYTES / 1024} KiB`)
        if ((yield* skills.list(session.agentId)).some((o) => o.name === name)) {
          return yield* fail(`${name} is the name of a skill the operator installed; choose another name`)
        }
        const text = skillMdText(name, description, input.body)
        // The same validation as any install: limits, front matter, name.
        const [pkg] = yield* packagesIn([{ path: SKILL_FILE, bytes: new TextEncoder().encode(text), executable: false }], name).pipe(Effect.mapError(failWith))
        if (pkg === undefined || pkg.name !== name || pkg.description !== description) {
          return yield* fail("the description cannot be written as front matter; rephrase it")
        }
        const ws = yield* workspace(session, CREATE_TOOL)
        const exists = (yield* userSkills(ws)).some((m) => m.name === name)
        if (exists && input.replace !== true) return yield* fail(`you already have a skill named ${name}; set replace to true to replace it`)
        if (exists) yield* removeUserSkill(ws, name).pipe(Effect.mapError(failWith))
        const folder = yield* writeUserSkill(ws, pkg).pipe(Effect.mapError(failWith))
        return `${exists ? "Replaced" : "Created"} skill ${name} in ${folder}/${SKILL_FILE}.`
      })
  }
}
