/**
 * The SQLite database (`node:sqlite` through @effect/sql-sqlite-node): one connection in WAL mode
 * with foreign keys and a busy timeout, and the numbered migrations of `migrations/` applied
 * automatically, in one transaction, when the layer starts.
 */
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/**
 * A transaction that takes the write lock at BEGIN: a read-then-write transaction (next seq, check
 * then replace) never fails halfway with SQLITE_BUSY because another process wrote in between.
 */
export const immediate = (sql: SqlClient.SqlClient) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  sql.withTransaction(self).pipe(Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE"))

/** How long a statement waits for another process's write lock before failing. */
export const BUSY_TIMEOUT_MS = 10_000

/** `migrations/` of the package, found from this file whether it runs from src/ or dist/. */
export const migrationsDir = (): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "migrations")
    if (existsSync(join(dir, "package.json")) && existsSync(candidate)) return candidate
    dir = dirname(dir)
  }
  throw new Error("anna: the migrations/ folder is missing from the installation")
}

/** Reads `NNNN_name.sql` files and splits each on `--> statement-breakpoint`. */
export const loadSqlMigrations = (dir: string): Array<readonly [number, string, ReadonlyArray<string>]> =>
  readdirSync(dir)
    .flatMap((f) => {
      const m = /^(\d+)_(.+)\.sql$/.exec(f)
      if (m === null) return []
      const statements = readFileSync(join(dir, f), "utf8")
        .split("--> statement-breakpoint")
        .map((s) => s.trim())
        .filter((s) => s.replace(/--[^\n]*/g, "").trim().length > 0)
      return [[Number(m[1]), m[2] ?? f, statements] as const]
    })
    .sort((a, b) => a[0] - b[0])

const migrator = SqliteMigrator.layer({
  loader: Effect.sync(() =>
    loadSqlMigrations(migrationsDir()).map(([id, name, statements]) =>
      [
        id,
        name,
        Effect.succeed(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          for (const s of statements) yield* sql.unsafe(s)
        }))
      ] as const
    )
  )
})

const pragmas = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe("PRAGMA foreign_keys = ON")
  yield* sql.unsafe(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
  yield* sql.unsafe("PRAGMA synchronous = NORMAL")
}))

/**
 * SqlClient (and SqliteClient) on `filename`, migrated. The parent folder is created if missing.
 * A file that cannot be opened is a defect here; the CLI edge turns it into one line on stderr.
 */
export const layer = (filename: string) =>
  migrator.pipe(
    Layer.provideMerge(pragmas),
    Layer.provideMerge(
      Layer.unwrap(Effect.sync(() => {
        if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
        return SqliteClient.layer({ filename })
      }))
    )
  )
