/**
 * Starting an `anna` in a child process and reading what it writes, whichever main.js or main.ts it
 * is: cli.ts runs the one the tests run (dist/main.js, or the sources); the bundle's tests run one
 * they built themselves and so need no dist/ (test/support/bundle.ts).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { homeDatabaseUrl } from "./suiteDatabase.ts"

export interface Run {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export const newHome = (): string => mkdtempSync(join(tmpdir(), "anna-cli-"))

/**
 * The provider variables, the database and the telemetry (every `OTEL_*`: an exporter the runner
 * has set up must not receive the tests' gateways) of the test runner's own environment never leak
 * into a child.
 */
const NEVER_INHERITED = ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANNA_DATABASE_URL", "ANNA_LOG_FORMAT"]
const NEVER_INHERITED_PREFIX = "OTEL_"

/**
 * A child's environment: the runner's without NEVER_INHERITED, the home, and — when the whole suite
 * runs on PostgreSQL (suiteDatabase.ts) — the home's database, unless `env` chooses one itself.
 */
export const childEnv = (home: string, env: Readonly<Record<string, string>>): Record<string, string | undefined> => {
  const base: Record<string, string | undefined> = { ...process.env }
  for (const v of NEVER_INHERITED) delete base[v]
  for (const v of Object.keys(base)) if (v.startsWith(NEVER_INHERITED_PREFIX)) delete base[v]
  const database = env["ANNA_DATABASE_URL"] === undefined ? homeDatabaseUrl(home) : undefined
  return { ...base, ANNA_HOME: home, ...(database === undefined ? {} : { ANNA_DATABASE_URL: database }) }
}

/** Starts the `anna` at `main` (a main.js or main.ts). */
export const startEntry = (
  main: string,
  home: string,
  args: ReadonlyArray<string>,
  logLevel = "warn",
  env: Readonly<Record<string, string>> = {}
): ChildProcess => {
  return spawn(process.execPath, [main, ...args], {
    env: { ...childEnv(home, env), ANNA_LOG_LEVEL: logLevel, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
}

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
