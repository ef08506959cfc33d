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
import { startServer } from "./pgServer.ts"
import { psqlStatement, HOME_DATABASE_PREFIX, suiteOnPostgres } from "./suiteDatabase.ts"

/**
 * When the whole suite runs on PostgreSQL (`ANNA_TEST_DATABASE=postgres`, suiteDatabase.ts): one
 * server for the run (ANNA_TEST_DATABASE_URL's, or a throwaway one started here), named to every
 * worker through ANNA_TEST_DATABASE_URL; at the end the databases given to `anna` homes are dropped
 * (each test drops its own) and a throwaway server stopped.
 */
const suiteServer = async (): Promise<() => void> => {
  if (!suiteOnPostgres()) return () => undefined
  const server = await startServer()
  const tag = Date.now().toString(36)
  process.env.ANNA_TEST_DATABASE_URL = server.adminUrl
  process.env.ANNA_TEST_RUN_TAG = tag
  return () => {
    try {
      const names = psqlStatement(server.adminUrl, `SELECT datname FROM pg_database WHERE datname LIKE '${HOME_DATABASE_PREFIX}${tag}\\_%'`)
      for (const name of names.split("\n").filter((n) => n !== "")) psqlStatement(server.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    } finally {
      server.stop()
    }
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  const run = mkdtempSync(join(tmpdir(), "anna-test-run-"))
  process.env.TMPDIR = run
  const stopServer = await suiteServer()
  return async () => {
    stopServer()
    const left = await detachUnder(run).catch(() => [])
    if (left.length > 0) console.warn(`⚠ unmounted ${left.length} workspace filesystem(s) left by tests: ${left.join(", ")}`)
    rmSync(run, { recursive: true, force: true, maxRetries: 3 })
  }
}
