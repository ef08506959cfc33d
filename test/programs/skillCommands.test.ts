/**
 * `anna skill install|list|remove` through the real CLI (child processes, a fresh ANNA_HOME):
 * --json documents, an agent's skill shadowing the global one, refusals as one line with exit 1.
 * `anna skill rank|feedback` (issue 15): outcomes recorded by hand per agent (and per user for a
 * user's own skill), ranked by mean, UCB and a seeded Thompson draw.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"
import { skillMd, tarball } from "../layers/skills/tarballs.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

interface Row {
  readonly name: string
  readonly description: string
  readonly scope: string
  readonly agent: string | null
  readonly path: string
}

interface Feedback {
  readonly name: string
  readonly agent: string
  readonly user: string | null
  readonly outcome: string
  readonly successes: number
  readonly failures: number
  readonly alpha: number
  readonly beta: number
  readonly mean: number
}

interface RankRow {
  readonly rank: number
  readonly name: string
  readonly scope: string
  readonly successes: number
  readonly failures: number
  readonly alpha: number
  readonly beta: number
  readonly score: number
}

const skillFolder = (root: string, name: string, description: string) => {
  const dir = join(root, "src", `${name}-${description.length}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "SKILL.md"), skillMd(name, description))
  return dir
}

/** A home with agent ops (no model, so no default agent) and three global skills, installed in one go. */
const threeSkills = async () => {
  const h = home()
  assert.strictEqual((await anna(h, "agent", "set", "ops")).code, 0)
  for (const [n, d] of [["deploy", "Deploy the service"], ["deploy-old", "Deploy the old way"], ["cook", "Cook dinner"]] as const) {
    mkdirSync(join(h, "pack", n), { recursive: true })
    writeFileSync(join(h, "pack", n, "SKILL.md"), skillMd(n, d))
  }
  assert.strictEqual((await anna(h, "skill", "install", join(h, "pack"))).code, 0)
  return h
}

const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  const lines = r.stderr.trim().split("\n")
  assert.strictEqual(lines.length, 1, r.stderr)
  assert.match(lines[0] ?? "", /^anna: /)
  assert.include(r.stderr, says)
}

describe("anna skill", () => {
  it("installs globally and per agent, lists with --json (the agent's own shadowing the global one), removes", async () => {
    const h = home()
    assert.strictEqual((await anna(h, "agent", "set", "ops")).code, 0)
    const global = await annaJson<ReadonlyArray<Row>>(h, "skill", "install", skillFolder(h, "deploy", "Deploy the global way"))
    assert.deepStrictEqual(global.map((r) => [r.name, r.scope, r.agent, r.path]), [["deploy", "global", null, join(h, "skills", "deploy")]])
    const own = await annaJson<ReadonlyArray<Row>>(h, "skill", "install", skillFolder(h, "deploy", "Deploy the ops way"), "--agent", "ops")
    assert.deepStrictEqual(own.map((r) => [r.scope, r.agent, r.path]), [["agent", "ops", join(h, "workspaces", "ops", "skills", "deploy")]])

    const all = await annaJson<ReadonlyArray<Row>>(h, "skill", "list")
    assert.deepStrictEqual(all.map((r) => [r.name, r.scope, r.agent]), [["deploy", "global", null], ["deploy", "agent", "ops"]])
    const seen = await annaJson<ReadonlyArray<Row>>(h, "skill", "list", "--agent", "ops")
    assert.deepStrictEqual(seen.map((r) => r.description), ["Deploy the ops way"])
    const text = await anna(h, "skill", "list")
    assert.match(text.stdout, /deploy\s+global\s+Deploy the global way/)

    const removed = await annaJson<Row>(h, "skill", "remove", "deploy", "--agent", "ops")
    assert.strictEqual(removed.scope, "agent")
    assert.deepStrictEqual((await annaJson<ReadonlyArray<Row>>(h, "skill", "list", "--agent", "ops")).map((r) => r.description), ["Deploy the global way"])
  })

  it("refuses in one line: an existing skill without --force, a hostile tarball, an unknown agent or skill", async () => {
    const h = home()
    const dir = skillFolder(h, "pdf", "PDFs")
    assert.strictEqual((await anna(h, "skill", "install", dir)).code, 0)
    refused(await anna(h, "skill", "install", dir), "already installed (global); use --force")
    assert.strictEqual((await anna(h, "skill", "install", dir, "--force")).code, 0)
    const evil = join(h, "evil.tgz")
    writeFileSync(evil, tarball([{ path: "SKILL.md", text: skillMd("evil") }, { path: "x", type: "SymbolicLink", linkpath: "/etc/passwd" }]))
    refused(await anna(h, "skill", "install", evil), "refused, nothing installed: x: symbolic link (to /etc/passwd)")
    refused(await anna(h, "skill", "install", dir, "--agent", "ghost"), "no agent \"ghost\"")
    refused(await anna(h, "skill", "remove", "nope"), "no skill named nope (global)")
    assert.deepStrictEqual((await annaJson<ReadonlyArray<Row>>(h, "skill", "list")).map((r) => r.name), ["pdf"])
  })

  it("feedback records outcomes per agent; rank orders by mean and ucb, one agent's or every agent's counts", async () => {
    const h = await threeSkills()
    const fb = await annaJson<Feedback>(h, "skill", "feedback", "deploy", "success", "--agent", "ops")
    assert.deepStrictEqual(fb, { name: "deploy", agent: "ops", user: null, outcome: "success", successes: 1, failures: 0, alpha: 2, beta: 1, mean: 2 / 3 })
    const text = await anna(h, "skill", "feedback", "deploy-old", "failure", "--agent", "ops")
    assert.strictEqual(text.stdout.trim(), "recorded failure for deploy-old (agent ops): 0 successes, 1 failure, mean 0.33")

    const byMean = await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "--agent", "ops", "--by", "mean")
    assert.deepStrictEqual(byMean.map((r) => [r.rank, r.name, r.scope, r.successes, r.failures, r.alpha, r.beta]), [
      [1, "deploy", "global", 1, 0, 2, 1],
      [2, "cook", "global", 0, 0, 1, 1],
      [3, "deploy-old", "global", 0, 1, 1, 2]
    ])
    assert.deepStrictEqual(byMean.map((r) => r.score), [2 / 3, 0.5, 1 / 3])
    // UCB: mean + √(2 ln T / n), T = the pseudo-counts of the skills ranked (the two matching: 3 + 3).
    const ucb = await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "deploy", "--agent", "ops", "--by", "ucb")
    assert.deepStrictEqual(ucb.map((r) => r.name), ["deploy", "deploy-old"])
    assert.closeTo(ucb[0]?.score ?? 0, 2 / 3 + Math.sqrt((2 * Math.log(6)) / 3), 1e-9)
    // Another agent's outcomes are its own; without --agent, every agent's count for the global skills.
    assert.strictEqual((await anna(h, "agent", "set", "dev")).code, 0)
    await annaJson<Feedback>(h, "skill", "feedback", "cook", "success", "--agent", "dev")
    assert.strictEqual((await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "cook", "--agent", "ops", "--by", "mean"))[0]?.successes, 0)
    const all = await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "--by", "mean")
    assert.deepStrictEqual(all.map((r) => [r.name, r.successes, r.failures]), [["cook", 1, 0], ["deploy", 1, 0], ["deploy-old", 0, 1]])
  })

  it("rank --seed gives the same draws twice; the text table; feedback refusals in one line, nothing recorded", async () => {
    const h = await threeSkills()
    await annaJson<Feedback>(h, "skill", "feedback", "deploy", "success", "--agent", "ops")
    const seeded = await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "--agent", "ops", "--seed", "42")
    assert.deepStrictEqual(await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "--agent", "ops", "--seed", "42"), seeded)
    assert.strictEqual(seeded.length, 3)
    for (const r of seeded) assert.isTrue(r.score > 0 && r.score < 1, String(r.score))
    const table = await anna(h, "skill", "rank", "--agent", "ops", "--by", "mean")
    assert.match(table.stdout, /RANK\s+NAME\s+SCOPE\s+SUCCESSES\s+FAILURES\s+α\s+β\s+SCORE/)
    assert.match(table.stdout, /1\s+deploy\s+global\s+1\s+0\s+2\s+1\s+0\.6667/)
    assert.strictEqual((await anna(h, "skill", "rank", "nothing-like-this")).stdout.trim(), "No skill matches.")

    refused(await anna(h, "skill", "feedback", "ghost", "success", "--agent", "ops"), "no skill named ghost (among the skills agent ops sees)")
    refused(await anna(h, "skill", "feedback", "deploy", "success", "--agent", "ghost"), "no agent \"ghost\"")
    refused(await anna(h, "skill", "feedback", "deploy", "success"), "no agent to record it for")
    assert.notStrictEqual((await anna(h, "skill", "feedback", "deploy", "maybe", "--agent", "ops")).code, 0)
    assert.strictEqual((await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "deploy", "--agent", "ops", "--by", "mean"))[0]?.successes, 1)
  })

  it("a user's own skill: feedback under the user's id (found in their workspace), ranked with --user; operator names refused", async () => {
    const h = home()
    assert.strictEqual((await anna(h, "agent", "set", "ops")).code, 0)
    assert.strictEqual((await anna(h, "skill", "install", skillFolder(h, "deploy", "Deploy the service"))).code, 0)
    const own = join(h, "workspaces", "ops", "users", "ann", "skills", "mine")
    mkdirSync(own, { recursive: true })
    writeFileSync(join(own, "SKILL.md"), skillMd("mine", "My checklist"))

    const fb = await annaJson<Feedback>(h, "skill", "feedback", "mine", "success", "--agent", "ops", "--user", "ann")
    assert.deepStrictEqual([fb.user, fb.successes, fb.failures], ["ann", 1, 0])
    refused(await anna(h, "skill", "feedback", "mine", "success", "--agent", "ops"), "no skill named mine")
    refused(await anna(h, "skill", "feedback", "mine", "success", "--agent", "ops", "--user", "bob"), "no skill named mine (user bob of agent ops)")
    refused(await anna(h, "skill", "feedback", "../mine", "success", "--agent", "ops", "--user", "ann"), "no skill named ../mine")
    refused(await anna(h, "skill", "feedback", "deploy", "failure", "--agent", "ops", "--user", "ann"), "is the operator's skill")

    const ranked = await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "--agent", "ops", "--user", "ann", "--by", "mean")
    assert.deepStrictEqual(ranked.map((r) => [r.name, r.scope, r.successes]), [["mine", "user", 1], ["deploy", "global", 0]])
    assert.deepStrictEqual((await annaJson<ReadonlyArray<RankRow>>(h, "skill", "rank", "--agent", "ops", "--by", "mean")).map((r) => r.name), ["deploy"])
  })
})
