/**
 * The SQLite database (`node:sqlite` through @effect/sql-sqlite-node): one connection in WAL mode
 * with foreign keys and a busy timeout, and the numbered migrations of `migrations/` applied
 * automatically, in one transaction, when the layer starts. The file holds provider keys and every
 * conversation, so it and its WAL companions are readable by their owner only (0600).
 */
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The advisory lock PostgreSQL writers take in `immediate` (any constant; "anW" in ASCII). */
export const WRITE_LOCK = 0x616e57

/**
 * A transaction that takes the write lock at BEGIN: a read-then-write transaction (next seq, check
 * then replace) never fails halfway with SQLITE_BUSY because another process wrote in between. On
 * PostgreSQL (issue 26) the same: a transaction-scoped advisory lock taken first, so these
 * transactions run one at a time as on SQLite, whatever the isolation level.
 */
export const immediate = (sql: SqlClient.SqlClient) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  sql.onDialectOrElse({
    pg: () => sql.withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(${WRITE_LOCK})`, self)),
    orElse: () => sql.withTransaction(self).pipe(Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE"))
  })

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

/** The database file and the companions SQLite keeps next to it in WAL mode. */
export const databaseFiles = (filename: string): ReadonlyArray<string> => [filename, `${filename}-wal`, `${filename}-shm`]

/** Permission bits for group and others: none of them should be set on anna's private state. */
export const GROUP_OTHER = 0o077

/**
 * Removes the group and other bits of `path` if it exists and has any. Returns why it could not
 * (e.g. not the owner), so the caller can warn; `anna doctor` reports what is still loose.
 */
export const tighten = (path: string): string | undefined => {
  try {
    if (!existsSync(path)) return undefined
    const mode = statSync(path).mode & 0o7777
    if ((mode & GROUP_OTHER) !== 0) chmodSync(path, mode & ~GROUP_OTHER)
    return undefined
  } catch (e) {
    return e instanceof Error ? e.message : String(e)
  }
}

/**
 * Before SQLite opens `filename`: a missing file is created empty with mode 0600 (SQLite gives the
 * -wal and -shm files it creates the mode of the main file, so they follow), and existing ones lose
 * group and other permissions. A missing folder is created 0700; an existing one is left to the
 * caller (it may be shared, like /tmp).
 */
const secureFiles = (filename: string) =>
  Effect.gen(function*() {
    if (filename === ":memory:") return
    mkdirSync(dirname(filename), { recursive: true, mode: 0o700 })
    try {
      closeSync(openSync(filename, "wx", 0o600))
    } catch (e) {
      // Already there (the usual case); any other problem is SQLite's to report when it opens the file.
      if (!(e instanceof Error && "code" in e && e.code === "EEXIST")) yield* Effect.logDebug(`sqlite: could not pre-create ${filename}: ${String(e)}`)
    }
    for (const f of databaseFiles(filename)) {
      const problem = tighten(f)
      if (problem !== undefined) yield* Effect.logWarning(`sqlite: ${f} stays readable by others: ${problem} (see anna doctor)`)
    }
  })

/**
 * SqlClient (and SqliteClient) on `filename`, migrated. The parent folder is created if missing.
 * A file that cannot be opened is a defect here; the CLI edge turns it into one line on stderr.
 */
export const layer = (filename: string) =>
  migrator.pipe(
    Layer.provideMerge(pragmas),
    Layer.provideMerge(
      Layer.unwrap(Effect.as(secureFiles(filename), SqliteClient.layer({ filename })))
    )
  )
