/**
 * The databases a spawned `anna` (the built dist/main.js) runs its end-to-end tests on (issue 26):
 * the SQLite file under its ANNA_HOME, and a fresh PostgreSQL database selected by
 * ANNA_DATABASE_URL when a server can run here (./postgres.ts; required in CI). The URL carries a
 * password (the test server trusts loopback, so any is taken) that nothing anna prints may show.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll } from "vitest"
import { postgresEnabled, tempDatabaseUrl } from "./postgres.ts"
import { suiteOnPostgres } from "./suiteDatabase.ts"

/** The password every test URL carries; tests grep anna's output for it. */
export const DB_PASSWORD = "pw-Never-Printed-9k2"

const scope = Effect.runSync(Scope.make())
// The databases are dropped before the file's server stops (vitest runs after-hooks last-first).
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

/** A fresh database on the file's PostgreSQL server, as a URL with DB_PASSWORD in it. */
export const freshDatabaseUrl = async (): Promise<string> => {
  const url = new URL(await Effect.runPromise(Scope.provide(scope)(tempDatabaseUrl)))
  url.password = DB_PASSWORD
  return url.toString()
}

export interface ProcessDatabase {
  readonly name: "SQLite" | "PostgreSQL"
  /** The environment that selects a fresh database of this kind (none for SQLite: the home's file). */
  readonly env: () => Promise<Readonly<Record<string, string>>>
}

/** SQLite always; PostgreSQL too when it can run (see ./postgres.ts); PostgreSQL alone when the whole suite runs there. */
export const processDatabases = (): ReadonlyArray<ProcessDatabase> => {
  const postgres = { name: "PostgreSQL" as const, env: async () => ({ ANNA_DATABASE_URL: await freshDatabaseUrl() }) }
  if (suiteOnPostgres()) return [postgres]
  return [{ name: "SQLite", env: () => Promise.resolve({}) }, ...(postgresEnabled() ? [postgres] : [])]
}
