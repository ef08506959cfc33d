/**
 * `anna skill install|list|remove` through the real CLI (child processes, a fresh ANNA_HOME):
 * --json documents, an agent's skill shadowing the global one, refusals as one line with exit 1.
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

const skillFolder = (root: string, name: string, description: string) => {
  const dir = join(root, "src", `${name}-${description.length}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "SKILL.md"), skillMd(name, description))
  return dir
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
})
