/**
 * `anna doctor`'s database checks when PostgreSQL is selected (issue 26), asked on a connection of
 * their own before anything else opens the database (which would migrate it):
 *
 * - connection: the server answers within 5 s (named by host:port and the masked URL);
 * - version: PostgreSQL 14 or newer (older is refused: anna's SQL and effect/cluster need 14);
 * - migrations: those recorded in effect's `effect_sql_migrations` against the files of
 *   `migrations/pg/` (pending ones are applied at the next start; ones this anna does not know mean
 *   a newer anna migrated the database);
 * - privileges: the role may CREATE in the schema (future migrations) and SELECT, INSERT, UPDATE
 *   and DELETE every table there.
 *
 * Nothing printed carries the URL's password.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { DoctorCheck } from "../layers/sandbox/docker/client.ts"
import * as Postgres from "../layers/sql/Postgres.ts"
import { loadSqlMigrations } from "../layers/sql/Sqlite.ts"
import { type PostgresUrl, unavailable } from "./env.ts"

/** The oldest PostgreSQL anna runs on. */
export const MIN_SERVER_VERSION = 14

const CONNECT_TIMEOUT_MS = 5_000

/** The checks, in order; `reachable` false when the server did not answer (nothing else can be checked). */
export interface PostgresDoctor {
  readonly reachable: boolean
  readonly checks: ReadonlyArray<DoctorCheck>
}

const MIGRATOR_TABLE = "effect_sql_migrations"

const inspect = (where: PostgresUrl) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const checks: Array<DoctorCheck> = []
    checks.push({ name: "connection", ok: true, detail: `PostgreSQL ${where.masked}: connected` })

    const [v] = yield* sql<{ num: string; text: string }>`SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS text`
    const major = Math.floor(Number(v?.num ?? 0) / 10_000)
    checks.push(
      major >= MIN_SERVER_VERSION
        ? { name: "version", ok: true, detail: `PostgreSQL ${v?.text ?? major} (${MIN_SERVER_VERSION} or newer is needed)` }
        : {
          name: "version",
          ok: false,
          detail: `PostgreSQL ${v?.text ?? major}: anna needs PostgreSQL ${MIN_SERVER_VERSION} or newer`,
          fix: `upgrade the server to PostgreSQL ${MIN_SERVER_VERSION} or newer, or unset ANNA_DATABASE_URL to use SQLite`
        }
    )

    const files = loadSqlMigrations(Postgres.pgMigrationsDir()).map(([id, name]) => ({ id, name }))
    const [table] = yield* sql<{ present: boolean }>`SELECT to_regclass(${MIGRATOR_TABLE}) IS NOT NULL AS present`
    const applied = table?.present === true
      ? (yield* sql<{ id: number }>`SELECT migration_id AS id FROM effect_sql_migrations`).map((r) => Number(r.id))
      : []
    const pending = files.filter((f) => !applied.includes(f.id))
    const unknown = applied.filter((id) => !files.some((f) => f.id === id)).sort((a, b) => a - b)
    checks.push(
      unknown.length > 0
        ? {
          name: "migrations",
          ok: false,
          detail: `the database has migration(s) ${unknown.join(", ")} that this anna does not know: a newer anna migrated it`,
          fix: "run the newer anna (or restore the database from before its upgrade)"
        }
        : pending.length === 0
        ? { name: "migrations", ok: true, detail: `${applied.length} of ${files.length} applied (${MIGRATOR_TABLE})` }
        : {
          name: "migrations",
          ok: true,
          detail: `${applied.length} of ${files.length} applied; ${pending.map((p) => `${p.id}_${p.name}`).join(", ")} will be applied at the next start`
        }
    )

    const [schema] = yield* sql<{ name: string; create: boolean }>`SELECT current_schema() AS name, has_schema_privilege(current_schema(), 'CREATE') AS create`
    const denied = yield* sql<{ name: string }>`SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
      AND NOT (has_table_privilege(c.oid, 'SELECT') AND has_table_privilege(c.oid, 'INSERT')
        AND has_table_privilege(c.oid, 'UPDATE') AND has_table_privilege(c.oid, 'DELETE'))
      ORDER BY c.relname`
    const problems = [
      ...(schema?.create === true ? [] : [`cannot CREATE in the schema ${schema?.name ?? "(none)"} (future migrations need it)`]),
      ...(denied.length === 0 ? [] : [`lacks SELECT, INSERT, UPDATE or DELETE on ${denied.map((d) => d.name).join(", ")}`])
    ]
    const role = (yield* sql<{ name: string }>`SELECT current_user AS name`)[0]?.name ?? "?"
    checks.push(
      problems.length === 0
        ? { name: "privileges", ok: true, detail: `role ${role} may create in the schema ${schema?.name ?? "?"} and read and write anna's tables` }
        : {
          name: "privileges",
          ok: false,
          detail: `role ${role} ${problems.join("; ")}`,
          fix: `as the database's owner: GRANT CREATE ON SCHEMA ${schema?.name ?? "public"} TO ${role}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema?.name ?? "public"} TO ${role}`
        }
    )
    return checks
  })

/** The checks of the PostgreSQL database at `where`, on a connection of their own. */
export const postgresDoctor = (where: PostgresUrl): Effect.Effect<PostgresDoctor> =>
  inspect(where).pipe(
    Effect.provide(Layer.fresh(PgClient.layer({
      url: where.url,
      types: Postgres.registry(),
      applicationName: "anna doctor",
      maxConnections: 1,
      connectTimeout: CONNECT_TIMEOUT_MS
    }))),
    Effect.timeoutOption(Duration.millis(CONNECT_TIMEOUT_MS + 1_000)),
    Effect.map(Option.match({
      onNone: () => unreachable(where, `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`),
      onSome: (checks): PostgresDoctor => ({ reachable: true, checks })
    })),
    Effect.catchCause((cause) => Effect.succeed(unreachable(where, unavailable(where, cause).message)))
  )

const unreachable = (where: PostgresUrl, detail: string): PostgresDoctor => ({
  reachable: false,
  checks: [{
    name: "connection",
    ok: false,
    detail: detail.startsWith("could not") ? detail : `PostgreSQL at ${where.address} (${where.masked}): ${detail}`,
    fix: `check that the server runs and takes connections at ${where.address}, and the URL's user, password and database (ANNA_DATABASE_URL)`
  }]
})
