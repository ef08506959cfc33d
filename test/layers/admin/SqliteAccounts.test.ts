/**
 * Accounts on a real SQLite file and on PostgreSQL (issue 26): accounts and passwords, logins (refused alike for a wrong password,
 * an unknown user and a user without an account), the login throttle (a backoff per username and
 * address, and per address; in the database), browser sessions (idle and absolute expiry on the TestClock, revoke, logout, ended by
 * a new password, role or removal, the cookie stored only hashed) and role-scoped API tokens (never
 * above the account's role, checked as a property).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Arbitrary, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { createHash } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import * as SqliteAccounts from "../../../src/layers/admin/SqliteAccounts.ts"
import * as SqliteConfigStore from "../../../src/layers/config/SqliteConfigStore.ts"
import { Accounts, type Role, SESSION_IDLE_MS, SESSION_MAX_MS } from "../../../src/services/Accounts.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { sqliteTemp } from "../../support/db.ts"
import { type TestDatabase, testDatabases } from "../../support/postgres.ts"

const HOME = "/srv/anna-home"
const stackOn = <E, R>(sql: Layer.Layer<SqlClient.SqlClient, E, R>) =>
  SqliteAccounts.layer.pipe(Layer.provideMerge(SqliteConfigStore.layerWithStores(HOME)), Layer.provideMerge(sql))

/** Runs `body` against Accounts on a fresh database, with its file on SQLite. */
const withAccounts = <A, E>(db: TestDatabase, body: (file: string | undefined) => Effect.Effect<A, E, Accounts | ConfigStore | SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const opened = yield* db.open
    return yield* body(opened.file).pipe(Effect.provide(stackOn(opened.layer)))
  })

const PASSWORD = "correct horse battery"
const browser = { address: "10.0.0.1", userAgent: "  Firefox/140\u0007 " }
const MINUTE = 60_000
const DAY = 24 * 3600_000

const tagOf = <A, E extends { readonly _tag: string }, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(self), (e) => e._tag)

for (const db of testDatabases(sqliteTemp)) {
  describe(`accounts (${db.name})`, () => {
    it.effect("are created with their user, refuse a second account or a weak password, and list by user", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          const config = yield* ConfigStore
          yield* TestClock.setTime(1_000)
          const alice = yield* accounts.create({ userId: "alice", password: PASSWORD, role: "admin", name: "Alice A." })
          assert.deepStrictEqual(alice, { login: "alice", userId: "alice", role: "admin", createdAt: 1_000, passwordChangedAt: 1_000 })
          assert.strictEqual(Option.getOrThrow(yield* config.getUser("alice")).name, "Alice A.")
          // An existing user keeps their name.
          yield* config.createUser("bob", "Bobby")
          yield* accounts.create({ userId: "bob", password: PASSWORD, role: "user" })
          assert.strictEqual(Option.getOrThrow(yield* config.getUser("bob")).name, "Bobby")

          const again = yield* Effect.flip(accounts.create({ userId: "alice", password: PASSWORD, role: "user" }))
          assert.include(again.message, "already has an account")
          const weak = yield* Effect.flip(accounts.create({ userId: "carol", password: "1234567", role: "user" }))
          assert.include(weak.message, "at least 8 characters")
          const badId = yield* Effect.flip(accounts.create({ userId: "no spaces", password: PASSWORD, role: "user" }))
          assert.strictEqual(badId._tag, "AccountError")
          assert.isTrue(Option.isNone(yield* config.getUser("carol")), "a refused account creates no user")

          assert.deepStrictEqual((yield* accounts.list).map((a) => [a.userId, a.role]), [["alice", "admin"], ["bob", "user"]])
          assert.isTrue(Option.isNone(yield* accounts.get("carol")))
        })
      ))

    it.effect("an account may log in with a name that is not its user's id: that name only, unique, never another user's id (issue 24)", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          const config = yield* ConfigStore
          const terminal = yield* config.upsertUser("cli", "root", "root")
          const made = yield* accounts.create({ userId: terminal.id, login: "root", password: PASSWORD, role: "admin" })
          assert.deepInclude(made, { login: "root", userId: terminal.id })
          assert.strictEqual((yield* accounts.login("root", PASSWORD, browser)).principal.userId, terminal.id)
          assert.strictEqual(yield* tagOf(accounts.login(terminal.id, PASSWORD, browser)), "LoginRefused", "the user id is not a login")
          assert.strictEqual(Option.getOrThrow(yield* accounts.find("root")).userId, terminal.id)
          assert.strictEqual(Option.getOrThrow(yield* accounts.find(terminal.id)).login, "root")
          assert.isTrue(Option.isNone(yield* config.getUser("root")), "no second user")

          // The name is taken: neither a user of that id nor another login may have it.
          yield* config.createUser("root", "")
          const sameName = yield* Effect.flip(accounts.create({ userId: "root", password: PASSWORD, role: "user" }))
          assert.include(sameName.message, "the console account root already exists")
          yield* config.createUser("bob", "")
          const taken = yield* Effect.flip(accounts.create({ userId: "bob", login: "root", password: PASSWORD, role: "user" }))
          assert.include(taken.message, "another user's id")
          const missing = yield* Effect.flip(accounts.create({ userId: "u_nobody", login: "ghost", password: PASSWORD, role: "user" }))
          assert.include(missing.message, "no user \"u_nobody\"")
          assert.isTrue(Option.isNone(yield* config.getUser("u_nobody")), "another name never creates a user")
          assert.deepStrictEqual((yield* accounts.list).map((a) => [a.login, a.userId]), [["root", terminal.id]])
        })
      ))

    it.effect("log in with the right password only; a wrong password, an unknown user and a user without account are refused alike", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "admin" })
          yield* (yield* ConfigStore).createUser("dave", "")
          const ok = yield* accounts.login("alice", PASSWORD, browser)
          assert.match(ok.cookie, /^[A-Za-z0-9_-]{43}$/)
          assert.strictEqual(ok.expiresAt, SESSION_IDLE_MS)
          assert.deepStrictEqual({ ...ok.principal, sessionId: undefined }, {
            userId: "alice",
            role: "admin",
            via: "session",
            sessionId: undefined,
            csrfToken: ok.csrfToken
          })
          const seen = Option.getOrThrow(yield* accounts.authenticateSession(ok.cookie))
          assert.deepStrictEqual(seen, ok.principal)
          const [session] = yield* accounts.listSessions("alice")
          assert.strictEqual(session?.id, ok.principal.sessionId)
          assert.strictEqual(session?.client, "Firefox/140", "trimmed, control characters out")

          const refusals = [
            yield* Effect.flip(accounts.login("alice", "wrong password", browser)),
            yield* Effect.flip(accounts.login("nobody", PASSWORD, browser)),
            yield* Effect.flip(accounts.login("dave", PASSWORD, browser))
          ]
          assert.deepStrictEqual(refusals.map((e) => [e._tag, e.message]), Array(3).fill(["LoginRefused", "wrong username or password"]))
          assert.isTrue(Option.isNone(yield* accounts.authenticateSession("not-a-cookie-at-all-but-long-enough")))
          assert.isTrue(Option.isNone(yield* accounts.authenticateSession("")))
        })
      ))
  })

  describe(`the login throttle (${db.name})`, () => {
    const from = (address: string) => ({ address, userAgent: "" })
    const waitOf = <A, R>(self: Effect.Effect<A, { readonly _tag: string }, R>) =>
      Effect.map(Effect.flip(self), (e) => (e._tag === "LoginThrottled" && "retryAfterSeconds" in e ? Number(e.retryAfterSeconds) : -1))

    it.effect("backs off per username and address: 5 failures free, then 30 s doubling to an hour; other addresses never wait", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "user" })
          const attacker = from("203.0.113.9")
          for (let i = 0; i < 5; i++) assert.strictEqual(yield* tagOf(accounts.login("alice", "guess " + i, attacker)), "LoginRefused")
          // The sixth attempt waits 30 s, even with the right password.
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, attacker)), 30)
          // alice from anywhere else is not held back at all, however long the stranger goes on.
          yield* accounts.login("alice", PASSWORD, browser)
          const waits: Array<number> = []
          for (let i = 0; i < 9; i++) {
            yield* TestClock.adjust(3_600_000)
            assert.strictEqual(yield* tagOf(accounts.login("alice", "more " + i, attacker)), "LoginRefused")
            waits.push(yield* waitOf(accounts.login("alice", PASSWORD, attacker)))
            yield* accounts.login("alice", PASSWORD, from(`198.51.100.${i}`))
          }
          assert.deepStrictEqual(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600, 3600])
          // The wait runs from the last failure: one second short, still refused; then let in.
          yield* TestClock.adjust(3_600_000 - 1_000)
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, attacker)), 1)
          yield* TestClock.adjust(1_000)
          yield* accounts.login("alice", PASSWORD, attacker)
          // That success started the pair over: five free failures again.
          for (let i = 0; i < 5; i++) assert.strictEqual(yield* tagOf(accounts.login("alice", "x" + i, attacker)), "LoginRefused")
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, attacker)), 30)
          // Forgotten a day after the last failure.
          yield* TestClock.adjust(DAY)
          for (let i = 0; i < 5; i++) assert.strictEqual(yield* tagOf(accounts.login("alice", "y" + i, attacker)), "LoginRefused")
          // An unknown username is throttled alike (nothing tells them apart).
          for (let i = 0; i < 5; i++) assert.strictEqual(yield* tagOf(accounts.login("nobody", "z" + i, attacker)), "LoginRefused")
          assert.strictEqual(yield* waitOf(accounts.login("nobody", PASSWORD, attacker)), 30)
        })
      ), 60_000)

    it.effect("backs off an address across usernames (20 free, then 1 s doubling to a minute) without refusing other addresses; its successes do not wash it", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "user" })
          const sprayer = from("203.0.113.9")
          for (let i = 0; i < 19; i++) {
            // Never 5 on one username.
            assert.strictEqual(yield* tagOf(accounts.login(`user${i % 5}`, "guess", sprayer)), "LoginRefused")
          }
          // A valid login from the same address succeeds, and does not take back the address's failures.
          yield* accounts.login("alice", PASSWORD, sprayer)
          assert.strictEqual(yield* tagOf(accounts.login("user5", "guess", sprayer)), "LoginRefused", "the 20th failure")
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, sprayer)), 1)
          const waits: Array<number> = []
          for (let i = 0; i < 8; i++) {
            yield* TestClock.adjust(60_000)
            assert.strictEqual(yield* tagOf(accounts.login(`other${i}`, "guess", sprayer)), "LoginRefused")
            waits.push(yield* waitOf(accounts.login("alice", PASSWORD, sprayer)))
          }
          assert.deepStrictEqual(waits, [2, 4, 8, 16, 32, 60, 60, 60])
          // alice from her own address is not slowed by someone else's spraying.
          yield* accounts.login("alice", PASSWORD, browser)
          yield* TestClock.adjust(60_000)
          yield* accounts.login("alice", PASSWORD, sprayer)
        })
      ), 60_000)

    it.effect("counts an IPv6 client by its /64, and an IPv4-mapped peer as its IPv4", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "user" })
          for (let i = 1; i <= 5; i++) yield* tagOf(accounts.login("alice", "guess", from(`2001:db8:1:2::${i}`)))
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, from("2001:db8:1:2:ffff::1"))), 30)
          yield* accounts.login("alice", PASSWORD, from("2001:db8:1:3::1"))
          for (let i = 0; i < 5; i++) yield* tagOf(accounts.login("alice", "guess", from("::ffff:192.0.2.1")))
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, from("192.0.2.1"))), 30)
        })
      ), 60_000)

    it.effect("keeps its counts in the database: a second Accounts on the same file sees them, and unlock clears them", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const on = <A, E>(body: Effect.Effect<A, E, Accounts>) => body.pipe(Effect.provide(stackOn(opened.layer)))
        yield* on(Effect.gen(function*() {
          const accounts = yield* Accounts
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "user" })
          for (const address of ["10.0.0.7", "10.0.0.8"]) {
            for (let i = 0; i < 5; i++) yield* tagOf(accounts.login("alice", "guess", from(address)))
          }
        }))
        // Another process (the CLI) on the same file.
        yield* on(Effect.gen(function*() {
          const accounts = yield* Accounts
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, from("10.0.0.7"))), 30)
          assert.deepStrictEqual(yield* accounts.unlock("alice", "10.0.0.7"), ["10.0.0.7"])
          yield* accounts.login("alice", PASSWORD, from("10.0.0.7"))
          assert.strictEqual(yield* waitOf(accounts.login("alice", PASSWORD, from("10.0.0.8"))), 30)
          assert.deepStrictEqual(yield* accounts.unlock("alice"), ["10.0.0.8"])
          yield* accounts.login("alice", PASSWORD, from("10.0.0.8"))
          assert.deepStrictEqual(yield* accounts.unlock("alice"), [])
          assert.include((yield* Effect.flip(accounts.unlock("alice", "ten.0.0.1"))).message, "not an IP address")
        }))
      }), 60_000)
  })

  describe(`browser sessions (${db.name})`, () => {
    it.effect("end after a week without requests, slide with use (written at most once a minute), and end after 30 days anyway", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "user" })
          const idle = yield* accounts.login("alice", PASSWORD, browser)
          const busy = yield* accounts.login("alice", PASSWORD, browser)
          const lastSeen = (cookie: string, id: string | undefined) =>
            Effect.gen(function*() {
              assert.isTrue(Option.isSome(yield* accounts.authenticateSession(cookie)))
              return (yield* accounts.listSessions()).find((s) => s.id === id)?.lastSeenAt
            })
          yield* TestClock.adjust(30_000)
          assert.strictEqual(yield* lastSeen(busy.cookie, busy.principal.sessionId), 0, "not written within a minute")
          yield* TestClock.adjust(30_000)
          assert.strictEqual(yield* lastSeen(busy.cookie, busy.principal.sessionId), MINUTE)

          yield* TestClock.setTime(SESSION_IDLE_MS - 1)
          assert.isTrue(Option.isSome(yield* accounts.authenticateSession(busy.cookie)))
          assert.deepStrictEqual((yield* accounts.listSessions("alice")).map((s) => s.id), [busy.principal.sessionId, idle.principal.sessionId])
          yield* TestClock.setTime(SESSION_IDLE_MS)
          assert.isTrue(Option.isNone(yield* accounts.authenticateSession(idle.cookie)), "idle for 7 days")
          assert.deepStrictEqual((yield* accounts.listSessions("alice")).map((s) => s.id), [busy.principal.sessionId])
          // Used every 6 days, it lives on past the idle limit — up to 30 days after login.
          for (let day = 12; day < 30; day += 6) {
            yield* TestClock.setTime(day * DAY)
            assert.isTrue(Option.isSome(yield* accounts.authenticateSession(busy.cookie)), `day ${day}`)
          }
          const [s] = yield* accounts.listSessions("alice")
          assert.strictEqual(s?.expiresAt, SESSION_MAX_MS, "the idle expiry never passes the absolute one")
          yield* TestClock.setTime(SESSION_MAX_MS - 1)
          assert.isTrue(Option.isSome(yield* accounts.authenticateSession(busy.cookie)))
          yield* TestClock.setTime(SESSION_MAX_MS)
          assert.isTrue(Option.isNone(yield* accounts.authenticateSession(busy.cookie)), "30 days after login")
          assert.deepStrictEqual(yield* accounts.listSessions(), [])
        })
      ))

    it.effect("are revoked by id, end at logout, and end with a new password, a new role or the account", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "admin" })
          yield* accounts.create({ userId: "bob", password: PASSWORD, role: "user" })
          const live = (cookie: string) => Effect.map(accounts.authenticateSession(cookie), Option.isSome)
          const a1 = yield* accounts.login("alice", PASSWORD, browser)
          const a2 = yield* accounts.login("alice", PASSWORD, browser)
          const b1 = yield* accounts.login("bob", PASSWORD, browser)

          const revoked = yield* accounts.revokeSession(a1.principal.sessionId ?? "")
          assert.strictEqual(revoked.userId, "alice")
          assert.deepStrictEqual([yield* live(a1.cookie), yield* live(a2.cookie), yield* live(b1.cookie)], [false, true, true])
          assert.include((yield* Effect.flip(accounts.revokeSession(a1.principal.sessionId ?? ""))).message, "no session")
          yield* accounts.logout(a2.cookie)
          assert.isFalse(yield* live(a2.cookie))
          yield* accounts.logout("unknown-cookie-value-0123456789")

          // A new role: sessions end; logging in again gives the new role.
          const a3 = yield* accounts.login("alice", PASSWORD, browser)
          const demoted = yield* accounts.setRole("alice", "user")
          assert.strictEqual(demoted.role, "user")
          assert.isFalse(yield* live(a3.cookie))
          assert.strictEqual((yield* accounts.login("alice", PASSWORD, browser)).principal.role, "user")

          // A new password: sessions end, the old password is refused, the new one works.
          yield* TestClock.adjust(5_000)
          yield* accounts.setPassword("bob", "a new long password")
          assert.isFalse(yield* live(b1.cookie))
          assert.strictEqual(yield* tagOf(accounts.login("bob", PASSWORD, browser)), "LoginRefused")
          const b2 = yield* accounts.login("bob", "a new long password", browser)
          assert.strictEqual(Option.getOrThrow(yield* accounts.get("bob")).passwordChangedAt, 5_000)
          assert.include((yield* Effect.flip(accounts.setPassword("bob", "short"))).message, "at least 8")
          assert.include((yield* Effect.flip(accounts.setPassword("carol", PASSWORD))).message, "has no account")

          // The account removed: its sessions end, it cannot log in, the user stays.
          yield* accounts.remove("bob")
          assert.isFalse(yield* live(b2.cookie))
          assert.strictEqual(yield* tagOf(accounts.login("bob", "a new long password", browser)), "LoginRefused")
          assert.isTrue(Option.isSome(yield* (yield* ConfigStore).getUser("bob")))
          assert.strictEqual(yield* tagOf(accounts.remove("bob")), "AccountError")
          assert.strictEqual(yield* tagOf(accounts.setRole("bob", "admin")), "AccountError")
        })
      ))

    it.effect("keep only the SHA-256 of the cookie on disk (nor the password anywhere); removing the user takes account and sessions", () =>
      withAccounts(db, (file) =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          const sql = yield* SqlClient.SqlClient
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "admin" })
          const login = yield* accounts.login("alice", PASSWORD, browser)
          if (file !== undefined) {
            yield* sql`PRAGMA wal_checkpoint(FULL)`
            const disk = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f).toString("latin1")).join("")
            assert.notInclude(disk, login.cookie)
            assert.notInclude(disk, Buffer.from(login.cookie).toString("base64"))
            assert.notInclude(disk, PASSWORD)
          }
          const rows = yield* sql<{ token_hash: string }>`SELECT token_hash FROM web_sessions`
          assert.deepStrictEqual(rows.map((r) => r.token_hash), [createHash("sha256").update(login.cookie).digest("hex")])
          const hashes = yield* sql<{ password_hash: string }>`SELECT password_hash FROM accounts`
          assert.match(hashes[0]?.password_hash ?? "", /^scrypt\$32768\$8\$1\$/)

          const removed = yield* (yield* ConfigStore).removeUser("alice")
          assert.strictEqual(removed.userId, "alice")
          const left = yield* sql<{ n: number }>`SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM web_sessions) AS n`
          assert.strictEqual(left[0]?.n, 0)
          assert.isTrue(Option.isNone(yield* accounts.authenticateSession(login.cookie)))
        })
      ))
  })

  describe(`API tokens (${db.name})`, () => {
    it.effect("are scoped to a role that never exceeds the account's, at the time of use", () =>
      withAccounts(db, () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          const config = yield* ConfigStore
          yield* accounts.create({ userId: "alice", password: PASSWORD, role: "admin" })
          yield* accounts.create({ userId: "bob", password: PASSWORD, role: "user" })
          yield* config.createUser("carol", "")
          const roleOf = (token: string) =>
            Effect.map(accounts.authenticateToken(token), (p) => Option.map(p, (x) => `${x.userId}:${x.role}:${x.via}`))

          const adminToken = yield* accounts.issueToken("alice", "ops", "admin")
          yield* TestClock.adjust(1_000)
          const userToken = yield* accounts.issueToken("alice", "", "user")
          assert.deepStrictEqual(yield* roleOf(adminToken), Option.some("alice:admin:token"))
          assert.deepStrictEqual(yield* roleOf(userToken), Option.some("alice:user:token"))
          assert.include((yield* Effect.flip(accounts.issueToken("bob", "", "admin"))).message, "bob is a user")
          assert.include((yield* Effect.flip(accounts.issueToken("carol", "", "admin"))).message, "carol has no account")
          assert.include((yield* Effect.flip(accounts.issueToken("nobody", "", "user"))).message, "no user \"nobody\"")
          // A user without an account acts as user with any token, ConfigStore's own tokens included.
          assert.deepStrictEqual(yield* roleOf(yield* accounts.issueToken("carol", "", "user")), Option.some("carol:user:token"))
          assert.deepStrictEqual(yield* roleOf(yield* config.issueToken("carol", "")), Option.some("carol:user:token"))

          // Demoted: the admin token acts as user from the next use on; promoted again, as admin.
          yield* accounts.setRole("alice", "user")
          assert.deepStrictEqual(yield* roleOf(adminToken), Option.some("alice:user:token"))
          yield* accounts.setRole("alice", "admin")
          assert.deepStrictEqual(yield* roleOf(adminToken), Option.some("alice:admin:token"))

          // The same tokens as ConfigStore's: the HTTP channel takes them, listing shows the role, revoking ends them.
          assert.strictEqual((yield* config.userForToken(adminToken)).id, "alice")
          const listed = yield* config.listTokens("alice")
          assert.deepStrictEqual(listed.map((t) => [t.label, t.role]), [["ops", "admin"], ["", "user"]])
          yield* config.revokeToken(listed[0]?.id ?? "")
          assert.isTrue(Option.isNone(yield* accounts.authenticateToken(adminToken)))
          assert.isTrue(Option.isNone(yield* accounts.authenticateToken("anna_unknown")))
        })
      ))
  })

  const Step = Schema.Union([
    Schema.Struct({ op: Schema.Literal("setRole"), role: Schema.Literals(["admin", "user"]) }),
    Schema.Struct({ op: Schema.Literal("issue"), role: Schema.Literals(["admin", "user"]) }),
    Schema.Struct({ op: Schema.Literal("removeAccount") })
  ])
  const Scenario = Schema.Struct({
    start: Schema.Literals(["admin", "user", "none"]),
    steps: Schema.Array(Step).check(Schema.isMaxLength(10))
  })

  layer(stackOn(db.layer), { timeout: 60_000 })(`API tokens (property, ${db.name})`, (it) => {
    let run = 0
    it.effect.prop(
      "a token never acts above its account's current role (none = user), and is issued as admin only to an admin",
      { scenario: Arbitrary.schema(Scenario) },
      ({ scenario }) =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          const userId = `p${run++}`
          let accountRole: Role | undefined
          if (scenario.start === "none") yield* (yield* ConfigStore).createUser(userId, "")
          else {
            yield* accounts.create({ userId, password: PASSWORD, role: scenario.start })
            accountRole = scenario.start
          }
          const tokens: Array<readonly [string, Role]> = []
          for (const step of scenario.steps) {
            if (step.op === "setRole") {
              const r = yield* Effect.result(accounts.setRole(userId, step.role))
              assert.strictEqual(r._tag === "Success", accountRole !== undefined)
              if (accountRole !== undefined) accountRole = step.role
            } else if (step.op === "removeAccount") {
              const r = yield* Effect.result(accounts.remove(userId))
              assert.strictEqual(r._tag === "Success", accountRole !== undefined)
              accountRole = undefined
            } else {
              const r = yield* Effect.result(accounts.issueToken(userId, "", step.role))
              assert.strictEqual(r._tag === "Success", step.role === "user" || accountRole === "admin")
              if (r._tag === "Success") tokens.push([r.success, step.role])
            }
            for (const [token, scope] of tokens) {
              const p = Option.getOrThrow(yield* accounts.authenticateToken(token))
              const cap = accountRole ?? "user"
              assert.strictEqual(p.role, scope === "admin" && cap === "admin" ? "admin" : "user")
              if (cap === "user") assert.strictEqual(p.role, "user")
            }
          }
        }),
      { timeout: 60_000, arbitrary: { runs: 25 } }
    )
  })
}
