/**
 * A throwaway PostgreSQL server for tests (issue 26): Debian's `postgresql` binaries, a data folder
 * in the run's temporary folder, loopback only, a free port, fsync off. One server per test file
 * (about 2 s to create and start), a fresh database per test (`pgTemp`), stopped when the file ends.
 *
 * `ANNA_TEST_DATABASE_URL=postgres://…` uses a server you run instead (each test still gets a
 * database of its own, created and dropped there). Without either, the tests on PostgreSQL are
 * skipped with what to install — except when `ANNA_REQUIRE_POSTGRES=1` (as in CI), where they fail.
 * Install: `apt-get install -y postgresql` (the binaries go to /usr/lib/postgresql/15/bin).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Postgres from "../../src/layers/sql/Postgres.ts"
import * as Sqlite from "../../src/layers/sql/Sqlite.ts"
import { tempDbFile } from "./db.ts"

const binDir = (): string | undefined => {
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

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

interface Server {
  /** URL of the server's `postgres` database (for CREATE/DROP DATABASE). */
  readonly adminUrl: string
  readonly stop: () => void
}

let started: Promise<Server> | undefined

const startServer = async (): Promise<Server> => {
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
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`
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

/** The file's server, started on first use and stopped after the file's tests. */
const server = (): Promise<Server> => {
  started ??= startServer()
  return started
}

// Registered when the test file imports this module (a hook added inside a test would not run).
afterAll(async () => {
  if (started !== undefined) (await started.catch(() => undefined))?.stop()
})

let databases = 0

/** A database of its own on the file's server: created, then dropped when the scope closes. */
export const tempDatabaseUrl = Effect.acquireRelease(
  Effect.gen(function*() {
    const s = yield* Effect.promise(server)
    const name = `anna_test_${process.pid}_${++databases}_${Date.now().toString(36)}`
    yield* adminQuery(s.adminUrl, `CREATE DATABASE ${name}`)
    const url = new URL(s.adminUrl)
    url.pathname = `/${name}`
    return { url: url.toString(), name, adminUrl: s.adminUrl }
  }),
  (db) => adminQuery(db.adminUrl, `DROP DATABASE IF EXISTS ${db.name} WITH (FORCE)`).pipe(Effect.ignore)
).pipe(Effect.map((db) => db.url))

const adminQuery = (url: string, statement: string) =>
  Effect.scoped(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(statement)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
  ).pipe(Effect.orDie)

/** SqlClient on a fresh PostgreSQL database, migrated (the counterpart of db.ts's `sqliteTemp`). */
export const pgTemp = Layer.unwrap(Effect.map(tempDatabaseUrl, (url) => Postgres.layer(url, { maxConnections: 4 })))

/** A database the store suites run on: a fresh SQLite file, and a fresh PostgreSQL database when enabled. */
export interface TestDatabase {
  readonly name: "SQLite" | "PostgreSQL"
  /** SqlClient on a fresh database. */
  readonly layer: Layer.Layer<SqlClient.SqlClient, unknown>
  /**
   * A fresh database (removed when the scope closes) and where it is: its SQLite file (undefined on
   * PostgreSQL) and a layer that opens it again each time it is built, as a second process would.
   */
  readonly open: Effect.Effect<{ readonly file: string | undefined; readonly layer: Layer.Layer<SqlClient.SqlClient, unknown> }, never, Scope.Scope>
}

let enabled: boolean | undefined

/** SQLite always; PostgreSQL too when a server can run (see the header). */
export const testDatabases = (sqlite: Layer.Layer<SqlClient.SqlClient, unknown>): ReadonlyArray<TestDatabase> => {
  enabled ??= postgresEnabled()
  const postgres: TestDatabase = {
    name: "PostgreSQL",
    layer: pgTemp,
    open: Effect.map(tempDatabaseUrl, (url) => ({ file: undefined, layer: Postgres.layer(url, { maxConnections: 4 }) }))
  }
  const lite: TestDatabase = {
    name: "SQLite",
    layer: sqlite,
    open: Effect.map(tempDbFile, (file) => ({ file, layer: Sqlite.layer(file) }))
  }
  return [lite, ...(enabled ? [postgres] : [])]
}
