/**
 * `anna/memory` (src/memory.ts → dist/memory.js, issue 25) stays light: importing it, opening a
 * database with its layers and searching it loads no model SDK, Docker client, chat platform client
 * or MCP SDK — only effect and the SQLite driver — and prints nothing. `anna/layers` is checked the
 * same way to show the probe does see those packages when they load. Runs the built dist/ (`npm run
 * build`, as `npm test` does first) in a Node of its own, through scripts/entry-probe.mjs.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ROOT } from "../support/bundle.ts"

interface Figures {
  readonly modules: number
  readonly packages: ReadonlyArray<string>
}

interface Probe {
  readonly imported: Figures
  readonly searched: (Figures & { readonly hits: number }) | null
}

const probe = (entry: string, database?: string): Probe => {
  const run = spawnSync(process.execPath, [join(ROOT, "scripts/entry-probe.mjs"), join(ROOT, entry), ...(database === undefined ? [] : [database])], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, ANNA_LOG_LEVEL: "warn" }
  })
  assert.strictEqual(run.status, 0, run.stderr)
  assert.strictEqual(run.stderr, "", "the import printed something")
  return JSON.parse(run.stdout) as Probe
}

/** What a memory-only deployment must not load. */
const HEAVY = ["@anthropic-ai/sdk", "openai", "dockerode", "grammy", "@larksuiteoapi/node-sdk", "@modelcontextprotocol/sdk", "linkedom", "ws"]

describe("anna/memory", () => {
  it("is exported by package.json next to anna/layers", () => {
    const exports = JSON.parse(execFileSync(process.execPath, ["-p", "JSON.stringify(require('./package.json').exports)"], { cwd: ROOT, encoding: "utf8" }))
    assert.deepStrictEqual(exports["./memory"], { development: "./src/memory.ts", types: "./dist/memory.d.ts", default: "./dist/memory.js" })
  })

  it("imports, opens a database and searches it with effect and the SQLite driver only", () => {
    const dir = mkdtempSync(join(tmpdir(), "anna-entry-"))
    try {
      const memory = probe("dist/memory.js", join(dir, "anna.db"))
      assert.deepStrictEqual(memory.imported.packages, ["@effect/sql-sqlite-node", "effect"])
      assert.deepStrictEqual(memory.searched?.packages, ["@effect/sql-sqlite-node", "effect"])
      assert.strictEqual(memory.searched?.hits, 2, "the search found both messages")
      const layers = probe("dist/layers.js")
      const seen = HEAVY.filter((p) => layers.imported.packages.includes(p))
      assert.includeMembers(seen, ["@anthropic-ai/sdk", "openai"], "the probe sees the SDKs anna/layers loads")
      assert.isBelow(memory.imported.modules, layers.imported.modules / 2)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
