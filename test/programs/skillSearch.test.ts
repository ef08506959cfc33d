/**
 * `anna skill search <query> [--agent A] [--user U] [--json]` (issue 24): the search the agents'
 * `search_skills` tool runs, from the command line — the skills the agent sees (and with --user, that
 * user's own, read from their workspace) whose name and description hold every word, best first by a
 * Thompson draw over their outcomes (--seed to repeat a draw). Real CLI, fresh ANNA_HOME.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { anna, annaJson, newHome } from "../support/cli.ts"
import { skillMd } from "../layers/skills/tarballs.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

interface Hit {
  readonly rank: number
  readonly name: string
  readonly scope: string
  readonly description: string
  readonly successes: number
  readonly failures: number
  readonly mean: number
}

const ok = async (h: string, ...args: ReadonlyArray<string>) => {
  const r = await anna(h, ...args)
  assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
  return r
}

describe("anna skill search", () => {
  it("ranks the matching skills as search_skills does: outcomes first, the user's own with --user", async () => {
    const h = newHome()
    homes.push(h)
    await ok(h, "provider", "add", "p1", "--type", "openai", "--base-url", "http://127.0.0.1:9/v1", "--default-model", "m")
    await ok(h, "agent", "set", "ops", "--model", "p1/m")
    for (const [name, description] of [["deploy-blue-green", "Deploy with the blue-green script"], ["deploy-by-hand", "Deploy by copying files by hand"], ["pdf-forms", "Fill PDF forms"]]) {
      const dir = join(h, "src", name)
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, "SKILL.md"), skillMd(name, description))
      await ok(h, "skill", "install", dir)
    }
    for (let i = 0; i < 4; i++) {
      await ok(h, "skill", "feedback", "deploy-blue-green", "success", "--agent", "ops")
      await ok(h, "skill", "feedback", "deploy-by-hand", "failure", "--agent", "ops")
    }
    // Alice's own skill, in her workspace of the agent (as create_skill writes it).
    const mine = join(h, "workspaces", "ops", "users", "alice", "skills", "deploy-notes")
    mkdirSync(mine, { recursive: true })
    writeFileSync(join(mine, "SKILL.md"), skillMd("deploy-notes", "Alice's deploy notes"))

    const hits = await annaJson<Array<Hit>>(h, "skill", "search", "deploy", "--agent", "ops", "--seed", "7")
    assert.deepStrictEqual(hits.map((x) => [x.rank, x.name, x.scope]), [[1, "deploy-blue-green", "global"], [2, "deploy-by-hand", "global"]])
    assert.deepInclude(hits[0], { description: "Deploy with the blue-green script", successes: 4, failures: 0 })
    assert.deepInclude(hits[1], { successes: 0, failures: 4 })

    const hers = await annaJson<Array<Hit>>(h, "skill", "search", "deploy", "--agent", "ops", "--user", "alice", "--seed", "7")
    assert.sameMembers(hers.map((x) => `${x.name} (${x.scope})`), ["deploy-blue-green (global)", "deploy-by-hand (global)", "deploy-notes (yours)"])
    assert.strictEqual(hers.at(-1)?.name, "deploy-by-hand", "four failures rank last")

    // Text: the tool's lines.
    const text = await ok(h, "skill", "search", "blue green", "--agent", "ops")
    assert.strictEqual(text.stdout.trim(), "1. deploy-blue-green (global): Deploy with the blue-green script [successes 4, failures 0, mean 0.83]")
    assert.strictEqual((await ok(h, "skill", "search", "kubernetes", "--agent", "ops")).stdout.trim(), "No skill matches.")
  }, 180_000)
})
