/**
 * A throwaway PostgreSQL server (issue 26), for the tests (./postgres.ts) and the benchmarks
 * (bench/postgres.ts): Debian's `postgresql` binaries, a data folder in a temporary folder, loopback
 * only, a free port, fsync off; or the server `ANNA_TEST_DATABASE_URL` names. No test framework here.
 */
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./ports.ts"

export const binDir = (): string | undefined => {
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin")
}

/** Why PostgreSQL tests cannot run here (undefined: they can). */
export const postgresMissing = (): string | undefined =>
  process.env["ANNA_TEST_DATABASE_URL"] !== undefined || binDir() !== undefined
    ? undefined
    : "PostgreSQL is not installed: apt-get install -y postgresql (or set ANNA_TEST_DATABASE_URL=postgres://… to a server of yours)"

/** Whether to run the PostgreSQL half of a suite; fails instead of skipping when it is required. */
export const postgresEnabled = (): boolean => {
  const missing = postgresMissing()
  if (missing === undefined) return true
  if (process.env["ANNA_REQUIRE_POSTGRES"] === "1") throw new Error(`ANNA_REQUIRE_POSTGRES=1 but ${missing}`)
  console.warn(`⚠ skipping the PostgreSQL tests: ${missing}`)
  return false
}

export interface Server {
  /** URL of the server's `postgres` database (for CREATE/DROP DATABASE). */
  readonly adminUrl: string
  readonly stop: () => void
}

export const startServer = async (): Promise<Server> => {
  const given = process.env["ANNA_TEST_DATABASE_URL"]
  if (given !== undefined) return { adminUrl: given, stop: () => undefined }
  const bin = binDir()
  if (bin === undefined) throw new Error(postgresMissing())
  // initdb refuses to run as root: as root, the server runs as the postgres user, in a folder it
  // can reach (the run's TMPDIR is private to root).
  const asRoot = process.getuid?.() === 0
  const dir = mkdtempSync(join(asRoot ? "/tmp" : tmpdir(), "anna-pg-"))
  const data = join(dir, "data")
  if (asRoot) {
    chmodSync(dir, 0o777)
    execFileSync("chown", ["postgres", dir])
  }
  const run = (cmd: string, args: ReadonlyArray<string>) =>
    asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", join(bin, cmd), ...args], { stdio: "pipe" })
      : execFileSync(join(bin, cmd), [...args], { stdio: "pipe" })
  run("initdb", ["-D", data, "-A", "trust", "-U", "anna", "--no-sync", "-E", "UTF8", "--locale", "C"])
  const port = await freePort()
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`
  run("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "server.log"), "-w", "-t", "60", "start"])
  return {
    adminUrl: `postgres://anna@127.0.0.1:${port}/postgres`,
    stop: () => {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}

