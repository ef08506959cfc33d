/**
 * PostgreSQL (issue 26, in progress): a pool through @effect/sql-pg whose 64-bit integers
 * (`bigint` columns, `count(*)`) are JS numbers as on SQLite (a value beyond 2^53 stays a bigint
 * rather than losing digits), and the numbered migrations of `migrations/pg/` applied when the layer
 * starts, under a transaction-scoped advisory lock: two processes starting at once migrate once,
 * the second waiting for the first. Stores that run on both databases pick their dialect's SQL with
 * `sql.onDialectOrElse`; the rest of anna still runs on SQLite only.
 */
import { PgClient, PgTypes } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Result } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { join } from "node:path"
import { loadSqlMigrations, migrationsDir } from "./Sqlite.ts"

/** The advisory lock every anna process takes to migrate (any constant; "anna" in ASCII). */
export const MIGRATION_LOCK = 0x616e6e61

/** int8 as a number when it is a safe integer (a bigint otherwise); numbers and bigints bind as int8. */
const int8: PgTypes.Codec<number | bigint> = {
  decode: (bytes) => {
    if (bytes.length !== 8) return Result.fail(new PgTypes.CodecError({ message: `int8 of ${bytes.length} bytes` }))
    const value = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0)
    return Result.succeed(value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value)
  },
  encode: (value) => {
    if (typeof value === "number" && !Number.isSafeInteger(value)) {
      return Result.fail(new PgTypes.CodecError({ message: `int8 takes an integer, not ${value}` }))
    }
    const bytes = new Uint8Array(8)
    new DataView(bytes.buffer).setBigInt64(0, BigInt(value))
    return Result.succeed(bytes)
  }
}

/** The codecs of anna's pools. */
export const registry = (): PgTypes.Registry => {
  const types = PgTypes.makeRegistry()
  types.register(PgTypes.OID.int8, int8, { arrayOid: PgTypes.OID.int8Array })
  return types
}

/** `migrations/pg/` of the package. */
export const pgMigrationsDir = (): string => join(migrationsDir(), "pg")

/** effect's migrator without PgMigrator's schema dumps (they need pg_dump and a process spawner). */
const runMigrations = Migrator.make({})

const migrate = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const run = runMigrations({
    loader: Effect.sync(() =>
      loadSqlMigrations(pgMigrationsDir()).map(([id, name, statements]) =>
        [
          id,
          name,
          Effect.succeed(Effect.gen(function*() {
            const inner = yield* SqlClient.SqlClient
            for (const s of statements) yield* inner.unsafe(s)
          }))
        ] as const
      )
    )
  })
  // The migrator's own transaction nests in this one (a savepoint), after the lock.
  yield* sql.withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`, run))
}))

/** Options of the pool (tests and `anna doctor` shorten the connect timeout). */
export interface PostgresOptions {
  readonly maxConnections?: number | undefined
  readonly connectTimeoutMs?: number | undefined
}

/** SqlClient (and PgClient) on the database at `url`, migrated. */
export const layer = (url: Redacted.Redacted<string> | string, options: PostgresOptions = {}) =>
  migrate.pipe(
    Layer.provideMerge(
      PgClient.layer({
        url: typeof url === "string" ? Redacted.make(url) : url,
        types: registry(),
        applicationName: "anna",
        // No JIT compilation: anna's statements read a few rows by index, but the planner's guesses
        // for a JSON list of ranges (100 elements × 500 rows) passed its cost threshold, and compiling
        // took 20 ms of a 1 ms read of a search hit's neighbouring turns.
        startupParameters: { jit: "off" },
        maxConnections: options.maxConnections ?? 10,
        connectTimeout: options.connectTimeoutMs ?? 10_000
      })
    )
  )
