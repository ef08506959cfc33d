/**
 * Skills ranked by Thompson sampling (issue 15) through the tools a session gets from the skills
 * source: `search_skills` and the `skills` tool's `search` rank by a draw from each skill's
 * Beta(successes + 1, failures + 1) under a seeded `Random` (the same seed, the same order; a 50/2
 * skill first in at least 90 % of seeds, a new one still first sometimes); outcomes are read per
 * agent, the operator's under user '' and a user's own under their id; `use` tells Learning which
 * skill the burst used; the source offers each tool by its name and `create_skill` only with a workspace.
 * The sandbox is the local one (production confined file access, no Docker).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Random, Result } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DockerUnavailable } from "../../../src/domain/sandbox/errors.ts"
import { MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILL_MD_BYTES, parseSkillMd } from "../../../src/domain/skills/skill.ts"
import type { Tool } from "../../../src/domain/tool.ts"
import * as SqliteSkillStats from "../../../src/layers/learning/SqliteSkillStats.ts"
import * as FsSkills from "../../../src/layers/skills/FsSkills.ts"
import { skillsSource } from "../../../src/layers/tools/skills.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { Learning } from "../../../src/services/Learning.ts"
import type { SandboxSession } from "../../../src/services/Sandbox.ts"
import { SkillStats } from "../../../src/services/SkillStats.ts"
import type { ToolSession } from "../../../src/services/ToolCatalog.ts"
import { sqliteTemp } from "../../support/db.ts"
import * as LocalSandbox from "../../support/localSandbox.ts"
import { skillMd } from "../skills/tarballs.ts"

interface Used {
  readonly sessionKey: string
  readonly name: string
  readonly scope: string
}

/** A Learning that only records `skillUsed` (the loop itself is not under test here). */
const fakeLearning = (used: Array<Used>) =>
  Learning.of({
    beforeTurn: () => Effect.succeed(""),
    skillUsed: (chat, name, scope) => Effect.sync(() => void used.push({ sessionKey: chat.sessionKey, name, scope })),
    endBurst: () => Effect.void,
    reflect: () => Effect.die(new Error("not in this test")),
    feedback: () => Effect.die(new Error("not in this test")),
    idle: Effect.void
  })

const setup = Effect.gen(function*() {
  const home = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-skill-rank-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )
  const skills = yield* FsSkills.make.pipe(Effect.provide(AppConfig.at(home)))
  const stats = yield* SkillStats
  const used: Array<Used> = []
  const operator = (name: string, description: string, body?: string) => {
    mkdirSync(join(home, "skills", name), { recursive: true })
    writeFileSync(join(home, "skills", name, "SKILL.md"), skillMd(name, description, body))
  }
  const outcomes = (key: { agentId: string; userId: string; name: string }, successes: number, failures: number) =>
    Effect.gen(function*() {
      for (let i = 0; i < successes; i++) yield* stats.record(key, "success")
      for (let i = 0; i < failures; i++) yield* stats.record(key, "failure")
    })
  const sessionOf = (userId: string, ws: SandboxSession | undefined, enabled: (name: string) => boolean = () => true): ToolSession => ({
    agentId: "a",
    userId,
    sessionKey: `a:cli:${userId}:dm`,
    enabled,
    sandbox: ws === undefined ? Effect.fail(new DockerUnavailable({ detail: "none in this test" })) : Effect.succeed(ws)
  })
  const source = skillsSource(skills, true, { stats, learning: fakeLearning(used) })
  /** The session's tools by name, with helpers that run one and return its text or its refusal. */
  const toolsOf = (session: ToolSession) =>
    Effect.gen(function*() {
      const tools = yield* source.tools(session)
      const get = (name: string): Tool => {
        const tool = tools.find((t) => t.definition.name === name)
        if (tool === undefined) throw new Error(`no tool ${name}`)
        return tool
      }
      const ctx = { sessionKey: session.sessionKey, userId: session.userId, agentId: session.agentId }
      return {
        names: tools.map((t) => t.definition.name),
        ok: (name: string, input: unknown) => get(name).execute(input, ctx),
        refused: (name: string, input: unknown) => get(name).execute(input, ctx).pipe(Effect.flip, Effect.map((e) => e.reason))
      }
    })
  return { home, skills, stats, used, operator, outcomes, sessionOf, toolsOf }
})

const stores = SqliteSkillStats.layer.pipe(Layer.provideMerge(sqliteTemp))

describe("skills ranked by Thompson sampling", () => {
  it.effect("search_skills: a 50/2 skill first under a seed, the same order for the same seed, counts and mean shown", () =>
    Effect.gen(function*() {
      const { operator, outcomes, sessionOf, toolsOf } = yield* setup
      operator("deploy-fast", "Deploy quickly")
      operator("deploy-new", "Deploy the new way")
      operator("deploy-bad", "Deploy the old way")
      operator("cook", "Cook dinner")
      yield* outcomes({ agentId: "a", userId: "", name: "deploy-fast" }, 50, 2)
      yield* outcomes({ agentId: "a", userId: "", name: "deploy-bad" }, 2, 50)
      // Another agent's outcomes are not this agent's.
      yield* outcomes({ agentId: "other", userId: "", name: "deploy-bad" }, 90, 0)
      const ann = yield* toolsOf(sessionOf("ann", yield* LocalSandbox.make()))

      const first = yield* ann.ok("search_skills", { query: "deploy" }).pipe(Random.withSeed(7))
      assert.strictEqual(yield* ann.ok("search_skills", { query: "deploy" }).pipe(Random.withSeed(7)), first)
      const lines = first.split("\n")
      assert.strictEqual(lines.length, 3)
      assert.strictEqual(lines[0], "1. deploy-fast (global): Deploy quickly [successes 50, failures 2, mean 0.94]")
      assert.include(first, "deploy-new (global): Deploy the new way [successes 0, failures 0, mean 0.50]")
      assert.include(first, "deploy-bad (global): Deploy the old way [successes 2, failures 50, mean 0.06]")
      assert.strictEqual(yield* ann.ok("search_skills", { query: "deploy", limit: 1 }).pipe(Random.withSeed(7)), lines[0])
      assert.strictEqual(yield* ann.ok("search_skills", { query: "nothing-like-this" }), "No skill matches.")
      assert.include(yield* ann.refused("search_skills", { query: "x", limit: 0 }), "invalid input")

      // Over many seeds: the proven skill nearly always first, the new one (Beta(1,1)) first now and then, the failing one never.
      const firsts = new Map<string, number>()
      for (let seed = 0; seed < 200; seed++) {
        const top = (yield* ann.ok("search_skills", { query: "deploy", limit: 1 }).pipe(Random.withSeed(seed))).split(" ")[1] ?? ""
        firsts.set(top, (firsts.get(top) ?? 0) + 1)
      }
      assert.isAtLeast(firsts.get("deploy-fast") ?? 0, 180)
      assert.isAbove(firsts.get("deploy-new") ?? 0, 0)
      assert.strictEqual(firsts.get("deploy-bad"), undefined)
    }).pipe(Effect.provide(stores)))

  it.effect("the skills tool's search ranks too; the user's own skills count under their id; use reaches Learning with its scope", () =>
    Effect.gen(function*() {
      const { operator, outcomes, sessionOf, toolsOf, used } = yield* setup
      operator("report-weekly", "Write the weekly report", "Operator report steps.")
      const ws = yield* LocalSandbox.make()
      const root = yield* LocalSandbox.hostRoot(ws)
      mkdirSync(join(root, "skills", "report-mine"), { recursive: true })
      writeFileSync(join(root, "skills", "report-mine", "SKILL.md"), skillMd("report-mine", "My report checklist", "Check twice."))
      yield* outcomes({ agentId: "a", userId: "ann", name: "report-mine" }, 30, 0)
      // The same name's outcomes under the operator's key are not the user's.
      yield* outcomes({ agentId: "a", userId: "", name: "report-mine" }, 0, 30)
      yield* outcomes({ agentId: "a", userId: "", name: "report-weekly" }, 0, 5)
      const ann = yield* toolsOf(sessionOf("ann", ws))

      const out = yield* ann.ok("skills", { action: "search", query: "REPORT" }).pipe(Random.withSeed(1))
      assert.deepStrictEqual(out.split("\n"), [
        "- report-mine (yours; successes 30, failures 0): My report checklist",
        "- report-weekly (global; successes 0, failures 5): Write the weekly report"
      ])
      // `list` stays alphabetical, without counts.
      assert.strictEqual(yield* ann.ok("skills", { action: "list" }), "- report-mine (yours): My report checklist\n- report-weekly (global): Write the weekly report")

      assert.include(yield* ann.ok("skills", { action: "use", name: "report-weekly" }), "Operator report steps.")
      assert.include(yield* ann.ok("skills", { action: "use", name: "report-mine" }), "Check twice.")
      assert.include(yield* ann.refused("skills", { action: "use", name: "ghost" }), "no skill named ghost")
      assert.deepStrictEqual(used, [
        { sessionKey: "a:cli:ann:dm", name: "report-weekly", scope: "operator" },
        { sessionKey: "a:cli:ann:dm", name: "report-mine", scope: "user" }
      ])
    }).pipe(Effect.provide(stores)))

  it.effect("the source offers each tool by its name; create_skill only with a workspace; nothing without skills or workspace", () =>
    Effect.gen(function*() {
      const { operator, sessionOf, toolsOf } = yield* setup
      const ws = yield* LocalSandbox.make()
      assert.deepStrictEqual((yield* toolsOf(sessionOf("ann", ws))).names, ["skills", "search_skills", "create_skill"])
      assert.deepStrictEqual((yield* toolsOf(sessionOf("ann", ws, (n) => n !== "skills"))).names, ["search_skills", "create_skill"])
      assert.deepStrictEqual((yield* toolsOf(sessionOf("ann", ws, (n) => n === "create_skill"))).names, ["create_skill"])
      assert.deepStrictEqual((yield* toolsOf(sessionOf("ann", undefined))).names, [])
      operator("deploy", "Deploy")
      assert.deepStrictEqual((yield* toolsOf(sessionOf("ann", undefined))).names, ["skills", "search_skills"])
      const noWs = yield* toolsOf(sessionOf("ann", undefined))
      assert.include(yield* noWs.ok("search_skills", { query: "" }), "1. deploy (global): Deploy [successes 0, failures 0, mean 0.50]")
    }).pipe(Effect.provide(stores)))

  it.effect("create_skill writes SKILL.md into the user's own workspace only; it starts at 0/0 and can be found and used", () =>
    Effect.gen(function*() {
      const { home, operator, sessionOf, toolsOf } = yield* setup
      operator("deploy", "Deploy", "Operator steps.")
      const annWs = yield* LocalSandbox.make()
      const annRoot = yield* LocalSandbox.hostRoot(annWs)
      const ann = yield* toolsOf(sessionOf("ann", annWs))
      const description = "Release notes: gather #changes, then 'write' them"
      assert.strictEqual(
        yield* ann.ok("create_skill", { name: "release-notes", description, body: "1. Read the log.\n2. Write notes." }),
        "Created skill release-notes in /workspace/skills/release-notes/SKILL.md."
      )
      const text = readFileSync(join(annRoot, "skills", "release-notes", "SKILL.md"), "utf8")
      const parsed = parseSkillMd(text, "test")
      assert.isTrue(Result.isSuccess(parsed))
      if (Result.isSuccess(parsed)) assert.deepStrictEqual(parsed.success, { name: "release-notes", description, body: "1. Read the log.\n2. Write notes." })
      assert.strictEqual(
        yield* ann.ok("search_skills", { query: "release" }),
        `1. release-notes (yours): ${description} [successes 0, failures 0, mean 0.50]`
      )
      assert.include(yield* ann.ok("skills", { action: "use", name: "release-notes" }), "2. Write notes.")

      assert.include(yield* ann.refused("create_skill", { name: "release-notes", description: "Again", body: "x" }), "already have a skill named release-notes; set replace")
      assert.strictEqual(
        yield* ann.ok("create_skill", { name: "release-notes", description: "Again", body: "New body.", replace: true }),
        "Replaced skill release-notes in /workspace/skills/release-notes/SKILL.md."
      )
      assert.include(readFileSync(join(annRoot, "skills", "release-notes", "SKILL.md"), "utf8"), "New body.")

      // Nothing reached the operator's folders or another user's workspace.
      assert.deepStrictEqual(readdirSync(join(home, "skills")), ["deploy"])
      assert.isFalse(existsSync(join(home, "workspaces")))
      const bob = yield* toolsOf(sessionOf("bob", yield* LocalSandbox.make()))
      assert.strictEqual(yield* bob.ok("search_skills", { query: "release" }), "No skill matches.")
    }).pipe(Effect.provide(stores)))

  it.effect("create_skill refuses hostile input: traversal in the name, an operator's name, huge bodies, front matter tricks", () =>
    Effect.gen(function*() {
      const { home, operator, sessionOf, toolsOf } = yield* setup
      operator("deploy", "Deploy", "Operator steps.")
      const ws = yield* LocalSandbox.make()
      const root = yield* LocalSandbox.hostRoot(ws)
      const ann = yield* toolsOf(sessionOf("ann", ws))
      const create = (input: Record<string, unknown>) => ann.refused("create_skill", { name: "ok-name", description: "A skill", body: "Steps.", ...input })

      for (const name of ["../../skills/deploy", "../evil", "a/b", "/etc/passwd", "Deploy", ".hidden", "", "x".repeat(MAX_NAME_CHARS + 1)]) {
        assert.match(yield* create({ name }), /not a skill name|name is empty|longer than 64/, name)
      }
      assert.include(yield* create({ name: "deploy" }), "deploy is the name of a skill the operator installed")
      assert.include(yield* create({ name: "deploy", replace: true }), "the operator installed")
      assert.include(yield* create({ body: "x".repeat(MAX_SKILL_MD_BYTES + 1) }), "the body is larger than 256 KiB")
      // A body just under the limit still makes a SKILL.md over it once the front matter is added.
      assert.include(yield* create({ body: "x".repeat(MAX_SKILL_MD_BYTES - 10) }), "larger than 256 KiB")
      assert.include(yield* create({ body: "  " }), "the body is empty")
      assert.include(yield* create({ description: "d".repeat(MAX_DESCRIPTION_CHARS + 1) }), `longer than ${MAX_DESCRIPTION_CHARS} characters`)
      assert.include(yield* create({ description: "   " }), "the description is empty")
      // A description that would close the front matter early (and smuggle text into it) is refused.
      assert.include(yield* create({ description: "innocent ---" }), "cannot be written as front matter")
      assert.include(yield* create({ name: 5 }), "invalid input")

      assert.isFalse(existsSync(join(root, "skills")))
      assert.strictEqual(readFileSync(join(home, "skills", "deploy", "SKILL.md"), "utf8"), skillMd("deploy", "Deploy", "Operator steps."))
    }).pipe(Effect.provide(stores)))
})
