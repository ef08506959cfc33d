/**
 * `anna db copy`'s engine (issue 26) on real SQLite files and a throwaway PostgreSQL: everything
 * arrives (counts, ids, times, bytes), sequences move past the copied ids, a non-empty target is
 * refused, a failure part-way leaves the target empty, and every table and column of a freshly
 * migrated SQLite database has a place on PostgreSQL.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Searcher } from "../../../src/services/Searcher.ts"
import { copyDatabase, type CopyEvent } from "../../../src/layers/sql/copy.ts"
import { DERIVED_TABLES, plan, skippedTable } from "../../../src/layers/sql/copyPlan.ts"
import * as Postgres from "../../../src/layers/sql/Postgres.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import { lcmOn, tempDbFile } from "../../support/db.ts"
import { postgresEnabled, tempDatabaseUrl } from "../../support/postgres.ts"
import { fillHome, SESSIONS } from "../../support/richHome.ts"

const enabled = postgresEnabled()

const client = <E>(layer: Layer.Layer<SqlClient.SqlClient, E>) => Effect.map(Layer.build(layer), (c) => Context.get(c, SqlClient.SqlClient))

/** A fresh SQLite file (filled by `fill`) and a fresh PostgreSQL database, both open. */
const databases = (fill: (file: string) => Effect.Effect<void, unknown> = () => Effect.void) =>
  Effect.gen(function*() {
    const file = yield* tempDbFile
    yield* Effect.orDie(fill(file))
    const url = yield* tempDatabaseUrl
    const source = yield* Effect.orDie(client(Sqlite.layer(file)))
    const target = yield* Effect.orDie(client(Postgres.layer(url, { maxConnections: 2 })))
    return { file, url, source, target }
  })

const rows = (sql: SqlClient.SqlClient, statement: string) =>
  Effect.map(sql.unsafe<Record<string, unknown>>(statement), (r) =>
    r.map((row) =>
      JSON.stringify(
        Object.fromEntries(Object.entries(row).sort(([a], [b]) => a.localeCompare(b))),
        (_, v: unknown) => typeof v === "bigint" ? Number(v) : v instanceof Uint8Array ? [...v] : v
      )
    ))

const SAMPLES = [
  "SELECT * FROM ctx_conversations ORDER BY id",
  "SELECT * FROM ctx_messages ORDER BY id",
  "SELECT * FROM ctx_summaries ORDER BY id",
  "SELECT * FROM ctx_summary_parents ORDER BY condensed_id, ord",
  "SELECT * FROM ctx_items ORDER BY conversation_id, position",
  "SELECT * FROM ctx_vectors ORDER BY source, row_id",
  "SELECT * FROM users ORDER BY id",
  "SELECT rowid, * FROM providers ORDER BY id",
  "SELECT rowid, * FROM agents ORDER BY id",
  "SELECT * FROM model_usage ORDER BY id",
  "SELECT * FROM scheduler_runs ORDER BY id",
  "SELECT * FROM diary_entries ORDER BY id",
  "SELECT * FROM plugins ORDER BY id",
  "SELECT * FROM ctx_search_counts WHERE n <> 0 ORDER BY conversation_id, source"
]

describe.skipIf(!enabled)("anna db copy (SQLite → PostgreSQL)", () => {
  it.effect("maps every table and column of a freshly migrated SQLite database to the PostgreSQL schema", () =>
    Effect.gen(function*() {
      const { source, target } = yield* databases()
      const p = yield* plan(source, target)
      const all = yield* source<{ name: string; type: string }>`SELECT name, type FROM pragma_table_list WHERE schema = 'main' AND type = 'table'`
      const expected = all.map((t) => t.name).filter((n) => !skippedTable(n) && !DERIVED_TABLES.includes(n)).sort()
      assert.deepStrictEqual(p.tables.map((t) => t.name).sort(), expected)
      assert.isAbove(expected.length, 30)
      // The derived tables exist on both sides (they are compared, not copied).
      for (const t of DERIVED_TABLES) assert.isTrue(all.some((s) => s.name === t))
    }), 60_000)

  it.effect("refuses a source column that has no place on the target, naming it, and writes nothing", () =>
    Effect.gen(function*() {
      const { source, target } = yield* databases()
      yield* source`ALTER TABLE users ADD COLUMN nickname TEXT`
      yield* source`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`
      const e = yield* Effect.flip(copyDatabase(source, target))
      assert.strictEqual(e._tag, "CopyRefused")
      assert.include(e.message, "column users.nickname")
      assert.include(e.message, "table notes")
      const n = yield* target<{ n: number }>`SELECT count(*) AS n FROM plugins`
      assert.strictEqual(n[0]?.n, 5)
    }), 60_000)

  it.effect("copies a home with sessions and configuration: counts, ids, times and bytes equal, sequences advanced, verified", () =>
    Effect.gen(function*() {
      const { source, target } = yield* databases((file) => fillHome(file))
      const events: Array<CopyEvent> = []
      const summary = yield* copyDatabase(source, target, (e) => Effect.sync(() => events.push(e)))
      assert.isTrue(summary.verified)
      assert.strictEqual(summary.sessions, SESSIONS.length)
      const messages = summary.tables.find((t) => t.table === "ctx_messages")
      assert.strictEqual(messages?.rows, 360)
      assert.isAbove(summary.tables.find((t) => t.table === "ctx_summaries")?.rows ?? 0, 3)
      // Progress: every table reported to its total.
      const last = events.filter((e): e is Extract<CopyEvent, { _tag: "Table" }> => e._tag === "Table" && e.table === "ctx_messages").at(-1)
      assert.deepStrictEqual(last, { _tag: "Table", table: "ctx_messages", done: 360, total: 360 })
      for (const statement of SAMPLES) assert.deepStrictEqual(yield* rows(target, statement), yield* rows(source, statement), statement)
      // SQLite's implicit rowid (insertion order) became the identity: s2 before s1 on both.
      const order = "SELECT id FROM web_sessions ORDER BY rowid"
      assert.deepStrictEqual(yield* rows(target, order), yield* rows(source, order))
      // Condensed summaries exist (the DAG is more than leaves).
      const condensed = yield* target<{ n: number }>`SELECT count(*) AS n FROM ctx_summaries WHERE kind = 'condensed'`
      assert.isAbove(condensed[0]?.n ?? 0, 0)
      // New rows take ids past the copied ones (AUTOINCREMENT's mark included: run 3 was deleted).
      const [msg] = yield* target<{ id: number }>`INSERT INTO ctx_conversations (session_key, created_at, updated_at) VALUES ('new', 1, 1) RETURNING id`
      assert.strictEqual(msg?.id, SESSIONS.length + 1)
      const [run] = yield* target<{ id: number }>`INSERT INTO scheduler_runs (job_id, trigger, started_at, status) VALUES ('j1', 'x', 1, 'ok') RETURNING id`
      assert.strictEqual(run?.id, 4)
      const [p] = yield* target<{ rowid: number }>`INSERT INTO providers (id, type, default_model, created_at, updated_at) VALUES ('p3', 'openai', 'm', 1, 1) RETURNING rowid`
      assert.strictEqual(p?.rowid, 3)
      const [m] = yield* target<{ id: number }>`INSERT INTO ctx_messages (conversation_id, seq, role, text, token_count, created_at) VALUES (1, 1000, 'user', 'x', 1, 1) RETURNING id`
      assert.strictEqual(m?.id, 361)
      // The counting triggers, off during the copy, count again.
      const counted = yield* target<{ n: number }>`SELECT n FROM ctx_search_counts WHERE conversation_id = 1 AND source = 'message'`
      assert.strictEqual(counted[0]?.n, 121)
    }), 120_000)

  it.effect("refuses a target that is not empty and leaves it as it was", () =>
    Effect.gen(function*() {
      const { source, target } = yield* databases((file) => fillHome(file, 10))
      yield* target`INSERT INTO settings (key, value) VALUES ('mine', '1')`
      const e = yield* Effect.flip(copyDatabase(source, target))
      assert.strictEqual(e._tag, "CopyRefused")
      assert.include(e.message, "not empty (rows in settings)")
      assert.deepStrictEqual(yield* rows(target, "SELECT count(*) AS n FROM ctx_messages"), ["{\"n\":0}"])
      // A seeded row a store has changed counts as data too.
      const other = yield* databases((file) => fillHome(file, 10))
      yield* other.target`UPDATE plugins SET enabled = 0, updated_at = 5 WHERE id = 'mcp'`
      assert.include((yield* Effect.flip(copyDatabase(other.source, other.target))).message, "rows in plugins")
    }), 120_000)

  it.effect("a row the target refuses part-way rolls the whole copy back and says why", () =>
    Effect.gen(function*() {
      const { source, target } = yield* databases((file) => fillHome(file, 20))
      // SQLite keeps a text where PostgreSQL wants a number: the last table of the copy fails.
      yield* source.unsafe("PRAGMA ignore_check_constraints = ON")
      yield* source`INSERT INTO skill_stats (agent_id, user_id, name, successes, failures, updated_at) VALUES ('a1', 'u1', 'k', 'many', 0, 1)`
      const e = yield* Effect.flip(copyDatabase(source, target))
      assert.include(e.message, "copying skill_stats: ")
      assert.match(e.message, /bigint/)
      for (const t of ["ctx_messages", "ctx_conversations", "providers", "users", "ctx_search_counts"]) {
        assert.deepStrictEqual(yield* rows(target, `SELECT count(*) AS n FROM ${t}`), ["{\"n\":0}"], t)
      }
      assert.deepStrictEqual(yield* rows(target, "SELECT count(*) AS n FROM plugins"), ["{\"n\":5}"])
      const triggers = yield* target<{ tgenabled: string }>`SELECT tgenabled FROM pg_trigger WHERE tgname IN ('ctx_messages_count', 'ctx_messages_uncount', 'ctx_summaries_count', 'ctx_summaries_uncount')`
      assert.deepStrictEqual(triggers.map((t) => t.tgenabled), ["O", "O", "O", "O"])
    }), 120_000)

  it.effect("after the copy the target's search index is rebuilt: the same queries return the same hits on both", () =>
    Effect.gen(function*() {
      const { file, url, source, target } = yield* databases((f) => fillHome(f, 60))
      const summary = yield* copyDatabase(source, target)
      const messages = yield* source<{ n: number }>`SELECT count(*) AS n FROM ctx_messages`
      const summaries = yield* source<{ n: number }>`SELECT count(*) AS n FROM ctx_summaries`
      assert.strictEqual(summary.indexed, (messages[0]?.n ?? 0) + (summaries[0]?.n ?? 0))
      const left = yield* target<{ n: number }>`SELECT count(*) AS n FROM ctx_search_backlog`
      assert.strictEqual(left[0]?.n, 0)
      const indexed = yield* target<{ n: number }>`SELECT count(*) AS n FROM ctx_messages_search`
      assert.strictEqual(indexed[0]?.n, messages[0]?.n)
      const hits = (layer: Layer.Layer<SqlClient.SqlClient, unknown>) =>
        Effect.gen(function*() {
          const searcher = yield* Searcher
          const out: Array<unknown> = []
          for (const query of ["topic depth", "Message 1003", "天气", "details words", "\"more words\""]) {
            for (const scope of [{ _tag: "All" as const }, { _tag: "Session" as const, sessionKey: SESSIONS[1] ?? "" }]) {
              out.push(query, (yield* searcher.search(query, { scope, limit: 20 })).map((h) => [h.id, h.sessionKey, h.snippet, h.matched]))
            }
          }
          return out
        }).pipe(Effect.provide(lcmOn(layer)))
      const before = yield* hits(Sqlite.layer(file))
      const after = yield* hits(Postgres.layer(url, { maxConnections: 2 }))
      assert.deepStrictEqual(after, before)
      assert.isAbove(JSON.stringify(before).length, 500)
    }), 120_000)
})
