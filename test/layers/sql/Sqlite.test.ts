import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import { sqliteFileTemp, tempDbFile, tempDir } from "../../support/db.ts"

const migrationCount = Sqlite.loadSqlMigrations(Sqlite.migrationsDir()).length

describe("Sqlite.layer", () => {
  it.effect("turns on WAL, foreign keys and a busy timeout", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [journal] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      const [fk] = yield* sql<{ foreign_keys: number }>`PRAGMA foreign_keys`
      const [busy] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`
      assert.strictEqual(journal?.journal_mode, "wal")
      assert.strictEqual(fk?.foreign_keys, 1)
      assert.strictEqual(busy?.timeout, Sqlite.BUSY_TIMEOUT_MS)
    }).pipe(Effect.provide(sqliteFileTemp)))

  it.effect("enforces foreign keys", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const exit = yield* sql`INSERT INTO ctx_messages (conversation_id, seq, role, text, token_count, created_at)
        VALUES (999, 1, 'user', 'orphan', 1, 0)`.pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      const [n] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_messages`
      assert.strictEqual(n?.n, 0)
    }).pipe(Effect.provide(sqliteFileTemp)))

  it.effect("applies migrations once; reopening the same file neither re-runs nor fails", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const readMigrations = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ migration_id: number; name: string }>`SELECT migration_id, name FROM effect_sql_migrations
          ORDER BY migration_id`
      })
      const first = yield* readMigrations.pipe(Effect.provide(Sqlite.layer(file)))
      // A row written between the two opens survives: the schema was not recreated.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO ctx_conversations (session_key, created_at, updated_at) VALUES ('kept', 1, 1)`
      }).pipe(Effect.provide(Sqlite.layer(file)))
      const second = yield* readMigrations.pipe(Effect.provide(Sqlite.layer(file)))
      const kept = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ session_key: string }>`SELECT session_key FROM ctx_conversations`
      }).pipe(Effect.provide(Sqlite.layer(file)))
      assert.isAtLeast(migrationCount, 1)
      assert.strictEqual(first.length, migrationCount)
      assert.deepStrictEqual(second, first)
      assert.strictEqual(new Set(first.map((r) => r.migration_id)).size, first.length)
      assert.deepStrictEqual(first[0], { migration_id: 1, name: "memory" })
      assert.deepStrictEqual(kept, [{ session_key: "kept" }])
    }))

  it.effect("seeds the plugins exactly once", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const plugins = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ id: string; enabled: number }>`SELECT id, enabled FROM plugins ORDER BY id`
      })
      yield* plugins.pipe(Effect.provide(Sqlite.layer(file)))
      const again = yield* plugins.pipe(Effect.provide(Sqlite.layer(file)))
      assert.deepStrictEqual(again, [
        { id: "learning", enabled: 1 },
        { id: "mcp", enabled: 1 },
        { id: "memory/lcm", enabled: 1 },
        { id: "memory/simple", enabled: 0 },
        { id: "webfetch", enabled: 1 }
      ])
    }))

  it.effect("keeps raw messages immutable: UPDATE and DELETE fail", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO ctx_conversations (id, session_key, created_at, updated_at) VALUES (1, 's', 0, 0)`
      yield* sql`INSERT INTO ctx_messages (conversation_id, seq, role, text, token_count, created_at)
        VALUES (1, 1, 'user', 'original', 3, 0)`
      const update = yield* sql`UPDATE ctx_messages SET text = 'changed'`.pipe(Effect.flip)
      const del = yield* sql`DELETE FROM ctx_messages`.pipe(Effect.flip)
      assert.strictEqual(update.reason._tag, "ConstraintError")
      assert.include(String(update.reason.cause), "ctx_messages rows are immutable")
      assert.include(String(del.reason.cause), "ctx_messages rows are immutable")
      const rows = yield* sql<{ text: string }>`SELECT text FROM ctx_messages`
      assert.deepStrictEqual(rows, [{ text: "original" }])
    }).pipe(Effect.provide(sqliteFileTemp)))

  it.effect("creates the search indexes (FTS5, porter) for messages and summaries, fed by triggers", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ name: string; sql: string }>`SELECT name, sql FROM sqlite_master
        WHERE type = 'table' AND name IN ('ctx_messages_search', 'ctx_summaries_search') ORDER BY name`
      assert.deepStrictEqual(rows.map((r) => r.name), ["ctx_messages_search", "ctx_summaries_search"])
      for (const r of rows) {
        assert.include(r.sql, "fts5")
        assert.include(r.sql, "porter")
      }
      // the index answers queries; rows with CJK letters wait in the backlog for the store (it cuts them)
      yield* sql`INSERT INTO ctx_conversations (id, session_key, created_at, updated_at) VALUES (1, 's', 0, 0)`
      yield* sql`INSERT INTO ctx_messages (conversation_id, seq, role, text, token_count, has_cjk, created_at)
        VALUES (1, 1, 'user', 'running containers', 5, 0, 0), (1, 2, 'user', 'running containers 运行容器', 5, 1, 0)`
      const porter = yield* sql<{ rowid: number }>`SELECT rowid FROM ctx_messages_search WHERE ctx_messages_search MATCH 'container'`
      const queued = yield* sql<{ source: string; id: number }>`SELECT source, id FROM ctx_search_backlog`
      assert.deepStrictEqual(porter.map((r) => r.rowid), [1])
      assert.deepStrictEqual(queued, [{ source: "message", id: 2 }])
    }).pipe(Effect.provide(sqliteFileTemp)))

  it.effect("creates the parent folder of the database file", () =>
    Effect.gen(function*() {
      const file = join(yield* tempDbFile, "..", "nested", "deeper", "anna.db")
      const [row] = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ n: number }>`SELECT count(*) AS n FROM effect_sql_migrations`
      }).pipe(Effect.provide(Sqlite.layer(file)))
      assert.strictEqual(row?.n, migrationCount)
    }))
})

describe("loadSqlMigrations", () => {
  it("numbers, sorts and splits migration files on statement breakpoints", () => {
    const dir = tempDir()
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, "0002_second.sql"), "CREATE TABLE b (x);\n--> statement-breakpoint\n-- only a comment\n")
    writeFileSync(
      join(dir, "0001_first.sql"),
      "-- header\nCREATE TABLE a (x);\n--> statement-breakpoint\nINSERT INTO a VALUES (1);\n--> statement-breakpoint\n"
    )
    writeFileSync(join(dir, "README.md"), "not a migration")
    const loaded = Sqlite.loadSqlMigrations(dir)
    assert.deepStrictEqual(loaded, [
      [1, "first", ["-- header\nCREATE TABLE a (x);", "INSERT INTO a VALUES (1);"]],
      [2, "second", ["CREATE TABLE b (x);"]]
    ])
  })

  it("splits the memory migration into one statement per breakpoint", () => {
    const [first] = Sqlite.loadSqlMigrations(Sqlite.migrationsDir())
    assert.isDefined(first)
    const statements = first?.[2] ?? []
    assert.isAbove(statements.length, 10)
    for (const s of statements) assert.notInclude(s, "--> statement-breakpoint")
    assert.isTrue(statements.some((s) => s.includes("CREATE TRIGGER ctx_messages_immutable_update")))
  })
})
