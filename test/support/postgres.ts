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
import { afterAll } from "vitest"
import * as Postgres from "../../src/layers/sql/Postgres.ts"
import * as Sqlite from "../../src/layers/sql/Sqlite.ts"
import { onRealClock, tempDbFile } from "./db.ts"
import { postgresEnabled, postgresMissing, type Server, startServer } from "./pgServer.ts"
import { suiteOnPostgres } from "./suiteDatabase.ts"

export { postgresEnabled, postgresMissing }

let started: Promise<Server> | undefined

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
export const pgTemp = Layer.unwrap(Effect.map(tempDatabaseUrl, (url) => onRealClock(Postgres.layer(url, { maxConnections: 4 }))))

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

/**
 * SQLite always; PostgreSQL too when a server can run (see the header). When the whole suite runs on
 * PostgreSQL (`ANNA_TEST_DATABASE=postgres`, suiteDatabase.ts), PostgreSQL alone.
 */
export const testDatabases = (sqlite: Layer.Layer<SqlClient.SqlClient, unknown>): ReadonlyArray<TestDatabase> => {
  const postgres: TestDatabase = {
    name: "PostgreSQL",
    layer: pgTemp,
    open: Effect.map(tempDatabaseUrl, (url) => ({ file: undefined, layer: onRealClock(Postgres.layer(url, { maxConnections: 4 })) }))
  }
  const lite: TestDatabase = {
    name: "SQLite",
    layer: sqlite,
    open: Effect.map(tempDbFile, (file) => ({ file, layer: Sqlite.layer(file) }))
  }
  if (suiteOnPostgres()) return [postgres]
  enabled ??= postgresEnabled()
  return [lite, ...(enabled ? [postgres] : [])]
}
