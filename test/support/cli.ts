/**
 * Runs the real `anna` CLI in a child process: the built binary, dist/main.js, the bundle `npm start`
 * and the `anna` bin run — so a fault of the bundling (a CommonJS global a bundled SDK reads, a chunk
 * that fails to load) fails the tests, not a user. `ANNA_TEST_ENTRY=src` runs the sources
 * (src/main.ts, on this Node, which strips types) instead, e.g. to debug without rebuilding. A
 * dist/ that is missing or older than src/ stops the test file, saying what to run (builtEntry.ts).
 */
import type { ChildProcess } from "node:child_process"
import { join, resolve } from "node:path"
import { staleBuild } from "./builtEntry.ts"
import { finish, type Run, startEntry } from "./spawnAnna.ts"

export { finish, newHome, type Run, startEntry, waitForLine, waitForOutput } from "./spawnAnna.ts"

/** Which `anna` the tests run: "dist" (the default) or "src" (`ANNA_TEST_ENTRY=src`). */
export const ENTRY: "dist" | "src" = process.env.ANNA_TEST_ENTRY === "src" ? "src" : "dist"
const ROOT = resolve(import.meta.dirname, "../..")
export const MAIN = join(ROOT, ENTRY === "src" ? "src/main.ts" : "dist/main.js")

// Checked here, when a test file that runs anna loads, not in vitest's global setup: a run of unit
// tests alone needs no build.
if (ENTRY === "dist") {
  const stale = staleBuild(ROOT)
  if (stale !== undefined) throw new Error(stale)
}

export const start = (
  home: string,
  args: ReadonlyArray<string>,
  logLevel = "warn",
  env: Readonly<Record<string, string>> = {}
): ChildProcess => startEntry(MAIN, home, args, logLevel, env)

export const anna = (home: string, ...args: ReadonlyArray<string>): Promise<Run> => finish(start(home, args))

/** `anna` with extra environment variables. */
export const annaEnv = (home: string, env: Readonly<Record<string, string>>, ...args: ReadonlyArray<string>): Promise<Run> =>
  finish(start(home, args, "warn", env))

/** Runs and parses stdout as JSON, failing with the whole output when the command failed. */
export const annaJson = async <A>(home: string, ...args: ReadonlyArray<string>): Promise<A> => {
  const r = await anna(home, ...args, "--json")
  if (r.code !== 0) throw new Error(`anna ${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`)
  return JSON.parse(r.stdout) as A
}
