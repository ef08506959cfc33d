/**
 * `anna playbook export|import` as an operator runs them (issue 28), on SQLite (the rules are the
 * YAML files) and on PostgreSQL (rows of playbook_rules): export prints the YAML the file holds (or
 * writes it to --output FILE, mode 0600, never through a link); the file edited by hand and imported
 * replaces that playbook's rules, saying what was added, changed and removed; a file with a mistake
 * is refused with its line as a usage error, and nothing changes.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { parsePlaybook } from "../../src/domain/learning/yaml.ts"
import { annaEnv, newHome, type Run } from "../support/cli.ts"
import { processDatabases } from "../support/processDatabases.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

/** A usage error: exit 2, the problem on the first line, then the command's usage. */
const misused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 2, r.stdout + r.stderr)
  const first = r.stderr.split("\n")[0] ?? ""
  assert.match(first, /^anna: /)
  assert.include(first, says)
  assert.match(r.stderr.split("\n")[1] ?? "", /^usage: anna /)
}

interface Report {
  readonly added: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly unchanged: number
  readonly invalid: ReadonlyArray<string>
}

for (const db of processDatabases()) {
  describe(`anna playbook export|import (${db.name})`, () => {
    it("export → edit → import round trip; a bad file is refused with its line and nothing changes", { timeout: 180_000 }, async () => {
      const h = newHome()
      homes.push(h)
      const env = await db.env()
      const run = (...args: ReadonlyArray<string>) => annaEnv(h, env, ...args)
      const json = async <A>(...args: ReadonlyArray<string>): Promise<A> => {
        const r = await run(...args, "--json")
        assert.strictEqual(r.code, 0, `anna ${args.join(" ")}\n${r.stdout}\n${r.stderr}`)
        return JSON.parse(r.stdout) as A
      }
      await json("agent", "set", "a1")
      const first = await json<{ id: string }>("playbook", "add", "--text", "Pin image tags", "--tags", "docker")
      const second = await json<{ id: string }>("playbook", "add", "--text", "Run the linter before committing", "--tags", "ci")
      const own = await json<{ id: string }>("playbook", "add", "--agent", "a1", "--text", "Use compose files", "--tags", "docker")

      // Export: the YAML a file holds, the global rules alone (or the agent's own).
      const exported = await run("playbook", "export")
      assert.strictEqual(exported.code, 0, exported.stderr)
      const parsed = parsePlaybook(exported.stdout, "stdout")
      assert.isTrue(parsed._tag === "Success", exported.stdout)
      assert.deepStrictEqual(parsed._tag === "Success" ? parsed.success.map((r) => [r.id, r.text]) : [], [[first.id, "Pin image tags"], [second.id, "Run the linter before committing"]])
      assert.match(exported.stdout, /^# anna playbook: rules learned from experience/)
      if (db.name === "SQLite") assert.strictEqual(exported.stdout, readFileSync(join(h, "playbook.yaml"), "utf8"), "the file, byte for byte")
      else assert.isFalse(existsSync(join(h, "playbook.yaml")), "on PostgreSQL the rules are in the table")
      const agentBefore = await run("playbook", "export", "--agent", "a1")
      assert.include(agentBefore.stdout, `- id: ${own.id}`)
      assert.notInclude(agentBefore.stdout, first.id)

      const file = join(h, "edit.yaml")
      const written = await run("playbook", "export", "--output", file)
      assert.strictEqual(written.code, 0, written.stderr)
      assert.strictEqual(written.stdout.trim(), `Exported 2 rules of the global playbook to ${file}.`)
      assert.strictEqual(readFileSync(file, "utf8"), exported.stdout)
      assert.strictEqual(statSync(file).mode & 0o777, 0o600)

      // Edited by hand: one text changed, one rule removed, one added.
      const edited = exported.stdout
        .replace("text: Pin image tags", "text: Pin image tags by digest")
        .replace(/\n\s*- id: [^\n]+\n\s*text: Run the linter[\s\S]*$/, "\n") +
        "\n  - id: hand-written\n    text: Keep secrets out of images\n    tags: [docker, security]\n    created_at: 2026-01-01\n"
      writeFileSync(file, edited)
      const report = await json<Report & { file: string; agent: string | null }>("playbook", "import", file)
      assert.deepStrictEqual(report, { file, agent: null, added: ["hand-written"], changed: [first.id], removed: [second.id], unchanged: 0, invalid: [] })
      const listed = await json<Array<{ id: string; text: string; tags: Array<string>; source: string }>>("playbook", "list")
      assert.deepStrictEqual(listed.map((r) => [r.id, r.text, r.tags]), [[first.id, "Pin image tags by digest", ["docker"]], ["hand-written", "Keep secrets out of images", ["docker", "security"]]])
      assert.deepStrictEqual((await run("playbook", "export", "--agent", "a1")).stdout, agentBefore.stdout, "the agent's rules are untouched")
      const again = await run("playbook", "import", file)
      assert.strictEqual(again.code, 0, again.stderr)
      assert.include(again.stdout, "0 added, 0 changed, 0 removed, 2 unchanged.")

      // Into an agent's playbook, in words.
      const toAgent = await run("playbook", "import", file, "--agent", "a1")
      assert.strictEqual(toAgent.code, 0, toAgent.stderr)
      assert.strictEqual(
        toAgent.stdout.trim(),
        `Imported ${file} into agent a1's playbook: 2 rules.\n2 added (${first.id}, hand-written), 0 changed, 1 removed (${own.id}), 0 unchanged.`
      )

      // A mistake: refused with its line (a usage error), nothing changed.
      const before = (await run("playbook", "export")).stdout
      const lines = edited.split("\n")
      const typo = lines.findIndex((l) => l.includes("text: Keep secrets"))
      lines[typo] = lines[typo]?.replace("text:", "txet:") ?? ""
      writeFileSync(file, lines.join("\n"))
      misused(await run("playbook", "import", file), `${file}:${typo + 1}: unknown field "txet"`)
      misused(await run("playbook", "import", file), "(nothing was imported)")
      writeFileSync(file, "rules:\n  - id: Bad Id\n    text: x\n    created_at: 2026-01-01\n")
      misused(await run("playbook", "import", file), `${file}:2: id:`)
      writeFileSync(file, "rules: [\n")
      misused(await run("playbook", "import", file), `${file}:`)
      misused(await run("playbook", "import", join(h, "missing.yaml")), "no such file")
      const link = join(h, "link.yaml")
      symlinkSync(file, link)
      misused(await run("playbook", "import", link), "not a regular file")
      assert.strictEqual((await run("playbook", "export")).stdout, before)

      // --output never writes through a link: the link's target stays as it was.
      const refused = await run("playbook", "export", "--output", link)
      assert.strictEqual(refused.code, 1, refused.stdout + refused.stderr)
      assert.include(refused.stderr, "not a regular file")
      assert.strictEqual(readFileSync(file, "utf8"), "rules: [\n")
    })
  })
}
