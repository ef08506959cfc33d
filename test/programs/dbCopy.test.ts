/**
 * `anna db copy` as users run it (issue 26): the built dist/main.js copies a home filled through the
 * stores into a throwaway PostgreSQL database, prints its summary, reports progress on stderr,
 * refuses to copy twice, and never prints the target's password.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { join } from "node:path"
import * as Postgres from "../../src/layers/sql/Postgres.ts"
import { anna, finish, newHome, start, waitForLine } from "../support/cli.ts"
import { postgresEnabled, tempDatabaseUrl } from "../support/postgres.ts"
import { fillHome } from "../support/richHome.ts"

const enabled = postgresEnabled()
const PASSWORD = "s3cret-Pw0rd"

/** The test database's URL with a password in it (the throwaway server trusts loopback, so it is not checked). */
const withPassword = (url: string): string => {
  const u = new URL(url)
  u.password = PASSWORD
  return u.toString()
}

interface Summary {
  readonly to: string
  readonly tables: ReadonlyArray<{ readonly table: string; readonly rows: number }>
  readonly rows: number
  readonly seconds: number
  readonly verified: boolean
  readonly sessions: number
}

describe.skipIf(!enabled)("anna db copy (built CLI)", () => {
  it.effect("copies the home, masks the password, and refuses a second copy into the now non-empty target", () =>
    Effect.gen(function*() {
      const home = newHome()
      yield* fillHome(join(home, "anna.db"), 30)
      const url = withPassword(yield* tempDatabaseUrl)
      const first = yield* Effect.promise(() => anna(home, "db", "copy", "--to", url, "--json"))
      assert.strictEqual(first.code, 0, first.stderr)
      const summary = JSON.parse(first.stdout) as Summary
      assert.isTrue(summary.verified)
      assert.strictEqual(summary.sessions, 3)
      assert.strictEqual(summary.tables.find((t) => t.table === "ctx_messages")?.rows, 90)
      assert.strictEqual(summary.rows, summary.tables.reduce((n, t) => n + t.rows, 0))
      assert.match(summary.to, /^postgres:\/\/anna:\*\*\*@127\.0\.0\.1:\d+\/anna_test_/)
      assert.include(first.stderr, "copy ctx_messages: 90/90 (100%)")
      assert.include(first.stderr, "verify:")
      const second = yield* Effect.promise(() => anna(home, "db", "copy", "--to", url))
      assert.strictEqual(second.code, 1)
      assert.match(second.stderr, /^anna: db copy refused: the target database is not empty \(rows in [a-z_, ]*ctx_messages/m)
      for (const out of [first.stdout, first.stderr, second.stdout, second.stderr]) assert.notInclude(out, PASSWORD)
    }), 120_000)

  it.effect("says what it needs: --help, a postgres:// URL (exit 2), an existing source (exit 1), a reachable target without its password", () =>
    Effect.gen(function*() {
      const home = newHome()
      const help = yield* Effect.promise(() => anna(home, "db", "copy", "--help"))
      assert.strictEqual(help.code, 0)
      assert.include(help.stdout, "--to")
      assert.include(help.stdout, "--from")
      const bad = yield* Effect.promise(() => anna(home, "db", "copy", "--to", `mysql://u:${PASSWORD}@h/db`))
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "--to must be a postgres:// URL")
      const missing = yield* Effect.promise(() => anna(home, "db", "copy", "--to", `postgres://u:${PASSWORD}@127.0.0.1:1/db`, "--from", join(home, "none.db")))
      assert.strictEqual(missing.code, 1)
      assert.include(missing.stderr, "there is no database at")
      yield* fillHome(join(home, "anna.db"), 4)
      const unreachable = yield* Effect.promise(() => anna(home, "db", "copy", "--to", `postgres://u:${PASSWORD}@127.0.0.1:1/db`))
      assert.strictEqual(unreachable.code, 1)
      assert.include(unreachable.stderr, "postgres://u:***@127.0.0.1:1/db")
      for (const out of [bad.stderr, missing.stderr, unreachable.stdout, unreachable.stderr]) assert.notInclude(out, PASSWORD)
    }), 120_000)

  it.effect("killed part-way (SIGKILL with every table but the last copied), it leaves the target empty; the next copy succeeds", () =>
    Effect.gen(function*() {
      const home = newHome()
      yield* fillHome(join(home, "anna.db"), 200)
      const url = yield* tempDatabaseUrl
      const target = Context.get(yield* Layer.build(Postgres.layer(url, { maxConnections: 2 })), SqlClient.SqlClient)
      // web_sessions is the last table in foreign-key order: while this transaction holds a lock
      // that keeps inserts out of it, the copy cannot get past it (nor commit), whatever its speed.
      yield* target.withTransaction(Effect.gen(function*() {
        yield* target`LOCK TABLE web_sessions IN SHARE MODE`
        const child = start(home, ["db", "copy", "--to", url])
        const exited = finish(child)
        yield* Effect.promise(() => waitForLine(child, (l) => l.startsWith("copy web_sessions: 0/2") ? l : undefined))
        child.kill("SIGKILL")
        assert.strictEqual((yield* Effect.promise(() => exited)).signal, "SIGKILL")
      }))
      for (const t of ["ctx_conversations", "ctx_messages", "ctx_summaries", "users", "accounts", "providers"]) {
        const [n] = yield* target.unsafe<{ n: number }>(`SELECT count(*) AS n FROM ${t}`)
        assert.strictEqual(n?.n, 0, t)
      }
      const again = yield* Effect.promise(() => anna(home, "db", "copy", "--to", url, "--json"))
      assert.strictEqual(again.code, 0, again.stderr)
      assert.strictEqual((JSON.parse(again.stdout) as Summary).tables.find((t) => t.table === "ctx_messages")?.rows, 600)
    }), 180_000)
})
