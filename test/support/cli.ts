/**
 * Runs the real `anna` CLI in a child process: the built binary, dist/main.js, the bundle `npm start`
 * and the `anna` bin run — so a fault of the bundling (a CommonJS global a bundled SDK reads, a chunk
 * that fails to load) fails the tests, not a user. `ANNA_TEST_ENTRY=src` runs the sources
 * (src/main.ts, on this Node, which strips types) instead, e.g. to debug without rebuilding. A
 * dist/ that is missing or older than src/ stops the test file, saying what to run (builtEntry.ts).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { staleBuild } from "./builtEntry.ts"

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

export interface Run {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export const newHome = (): string => mkdtempSync(join(tmpdir(), "anna-cli-"))

/** The provider variables of the test runner's own environment never leak into a child. */
const PROVIDER_VARS = ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"]

/** Starts the `anna` at `main` (a main.js or main.ts). */
export const startEntry = (
  main: string,
  home: string,
  args: ReadonlyArray<string>,
  logLevel = "warn",
  env: Readonly<Record<string, string>> = {}
): ChildProcess => {
  const base: Record<string, string | undefined> = { ...process.env }
  for (const v of PROVIDER_VARS) delete base[v]
  return spawn(process.execPath, [main, ...args], {
    env: { ...base, ANNA_HOME: home, ANNA_LOG_LEVEL: logLevel, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
}

export const start = (
  home: string,
  args: ReadonlyArray<string>,
  logLevel = "warn",
  env: Readonly<Record<string, string>> = {}
): ChildProcess => startEntry(MAIN, home, args, logLevel, env)

/** Resolves once the child has written `text` (to stdout or stderr). */
export const waitForOutput = (child: ChildProcess, text: string): Promise<void> =>
  new Promise((done) => {
    let seen = ""
    const check = (d: Buffer) => {
      seen += d.toString()
      if (seen.includes(text)) done()
    }
    child.stdout?.on("data", check)
    child.stderr?.on("data", check)
  })

/**
 * Resolves with the first line the child writes (to stdout or stderr) for which `accept` returns
 * something; rejects if the child exits before writing one.
 */
export const waitForLine = <A>(child: ChildProcess, accept: (line: string) => A | undefined): Promise<A> =>
  new Promise((done, fail) => {
    const partial = { stdout: "", stderr: "" }
    let settled = false
    const feed = (from: "stdout" | "stderr") => (d: Buffer) => {
      if (settled) return
      const lines = (partial[from] + d.toString()).split("\n")
      partial[from] = lines.pop() ?? ""
      for (const line of lines) {
        const found = accept(line)
        if (found !== undefined) {
          settled = true
          return done(found)
        }
      }
    }
    child.stdout?.on("data", feed("stdout"))
    child.stderr?.on("data", feed("stderr"))
    child.on("close", (code, signal) => {
      if (!settled) fail(new Error(`the child exited (${code ?? signal}) before writing the awaited line`))
    })
  })

export const finish = (child: ChildProcess): Promise<Run> =>
  new Promise((done, fail) => {
    let stdout = ""
    let stderr = ""
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("error", fail)
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }))
  })

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
