/**
 * Which database the whole suite runs on (issue 26). `ANNA_TEST_DATABASE=postgres npm test` puts
 * PostgreSQL wherever a test would otherwise get a fresh SQLite file: every in-process store
 * (`sqliteTemp` and what is built on it, support/db.ts) and every `anna` a test starts (a fresh
 * database per `ANNA_HOME`, selected by `ANNA_DATABASE_URL`). The server is the one
 * `ANNA_TEST_DATABASE_URL` names (its role needs CREATEDB) or a throwaway one the run starts
 * (support/globalSetup.ts). Unset (or `sqlite`), the suite runs as always: SQLite files, with the
 * SQL-touching suites on both databases (support/postgres.ts).
 *
 * No test framework and no Effect here: spawnAnna.ts and globalSetup.ts use it too.
 */
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { binDir } from "./pgServer.ts"

/** Whether the whole suite runs on PostgreSQL; any other value than `sqlite` or `postgres` stops the run. */
export const suiteOnPostgres = (): boolean => {
  const chosen = process.env["ANNA_TEST_DATABASE"] ?? ""
  if (chosen === "" || chosen === "sqlite") return false
  if (chosen === "postgres") return true
  throw new Error(`ANNA_TEST_DATABASE=${chosen}: expected sqlite (the default) or postgres`)
}

/** `psql` from the server's binaries, or the one on PATH. */
const psql = (): string => {
  const bin = binDir()
  return bin !== undefined && existsSync(join(bin, "psql")) ? join(bin, "psql") : "psql"
}

/** Runs one statement on the database at `url` with `psql`, synchronously; its output unaligned, without headers. */
export const psqlStatement = (url: string, statement: string): string =>
  execFileSync(psql(), ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", statement], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

/** The prefix of the databases this run gives to `anna` homes (dropped at the run's end). */
export const HOME_DATABASE_PREFIX = "anna_home_"

const homes = new Map<string, string>()
const pinned = new Set<string>()

/**
 * Keeps the home `home` on its SQLite file whatever the suite runs on: for tests of SQLite itself
 * (file modes, an old release's file, a fixture). Returns `home`.
 */
export const sqliteHome = (home: string): string => {
  pinned.add(home)
  return home
}

/**
 * The PostgreSQL database of the `anna` home `home` when the suite runs there: created on first use
 * (every process started on the home shares it), as a URL. Undefined when the suite runs on SQLite.
 */
export const homeDatabaseUrl = (home: string): string | undefined => {
  if (!suiteOnPostgres() || pinned.has(home)) return undefined
  const known = homes.get(home)
  if (known !== undefined) return known
  const adminUrl = process.env["ANNA_TEST_DATABASE_URL"]
  if (adminUrl === undefined) throw new Error("ANNA_TEST_DATABASE=postgres, but no server: the run's global setup sets ANNA_TEST_DATABASE_URL")
  // Random, not the worker's pid and a count: a long run reuses pids, and a worker's databases live
  // until the run ends (one test file met "already exists" 27 minutes into a whole run on PostgreSQL).
  const name = `${HOME_DATABASE_PREFIX}${process.env["ANNA_TEST_RUN_TAG"] ?? "x"}_${randomBytes(6).toString("hex")}`
  psqlStatement(adminUrl, `CREATE DATABASE ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  homes.set(home, url.toString())
  return url.toString()
}
