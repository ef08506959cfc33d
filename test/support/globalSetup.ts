/**
 * One temporary folder for the whole run: TMPDIR points into it for the test workers and every
 * `anna` process they start, so what a run leaves there — above all workspace filesystems still
 * mounted (src/layers/sandbox/workspaceDisk.ts) — is unmounted and removed after it, and nothing of
 * another run on the same machine (a second vitest at the same time) is ever touched. Each test
 * removes its own (support/cleanup.ts); this is the net under them.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { detachUnder } from "../../src/layers/sandbox/workspaceDisk.ts"

export default function setup(): () => Promise<void> {
  const run = mkdtempSync(join(tmpdir(), "anna-test-run-"))
  process.env.TMPDIR = run
  return async () => {
    const left = await detachUnder(run).catch(() => [])
    if (left.length > 0) console.warn(`⚠ unmounted ${left.length} workspace filesystem(s) left by tests: ${left.join(", ")}`)
    rmSync(run, { recursive: true, force: true, maxRetries: 3 })
  }
}
