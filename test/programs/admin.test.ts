/**
 * `anna admin …` and `anna user token --role` through the real CLI on a fresh ANNA_HOME: passwords
 * come from stdin (--password-stdin) or a hidden prompt on a terminal, never from the command line;
 * what the CLI stored is checked by logging in with the Accounts layer on the same database file.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { spawn } from "node:child_process"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import * as SqliteAccounts from "../../src/layers/admin/SqliteAccounts.ts"
import * as SqliteConfigStore from "../../src/layers/config/SqliteConfigStore.ts"
import { type AccountInfo, Accounts, type WebSessionInfo } from "../../src/services/Accounts.ts"
import type { TokenInfo } from "../../src/services/ConfigStore.ts"
import { anna, annaJson, finish, MAIN, newHome, type Run } from "../support/cli.ts"
import { ptyAnna } from "../support/pty.ts"
import { childEnv } from "../support/spawnAnna.ts"
import { homeDatabase } from "../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

/** `anna …` with `input` on its stdin. */
const annaIn = (h: string, input: string, ...args: ReadonlyArray<string>): Promise<Run> => {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...childEnv(h, {}), ANNA_LOG_LEVEL: "warn" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdin.end(input)
  return finish(child)
}

/** Accounts on the CLI's own database file. */
const withAccounts = <A, E>(h: string, body: (accounts: Accounts["Service"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      return yield* body(yield* Accounts)
    }).pipe(
      Effect.provide(
        SqliteAccounts.layer.pipe(
          Layer.provideMerge(SqliteConfigStore.layerWithStores(h)),
          Layer.provideMerge(homeDatabase(h))
        )
      )
    )
  )
const browser = { address: "127.0.0.1", userAgent: "test browser" }
const logsIn = (h: string, user: string, password: string) =>
  withAccounts(h, (a) => Effect.map(Effect.result(a.login(user, password, browser)), (r) => r._tag === "Success"))

const refused = (r: Run, code: number, says: string) => {
  assert.strictEqual(r.code, code, r.stdout + r.stderr)
  assert.strictEqual(r.stderr.trim().split("\n").length, 1, r.stderr)
  assert.include(r.stderr, says)
  assert.notInclude(r.stderr, "    at ")
}

const PASSWORD = "tr0ub4dor & 3"

describe("anna admin create", () => {
  it("creates an account (and its user) from the first line of stdin and says where to log in", async () => {
    const h = home()
    const r = await annaIn(h, `${PASSWORD}\nsecond line\n`, "admin", "create", "alice", "--role", "admin", "--name", "Alice", "--password-stdin")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(
      r.stdout,
      "Created admin account alice (and the user alice).\n" +
        "Open http://127.0.0.1:8787/ and log in as alice (start the gateway with `npm start` or `anna gateway` if it is not running).\n"
    )
    assert.notInclude(r.stdout + r.stderr, PASSWORD)
    assert.isTrue(await logsIn(h, "alice", PASSWORD))
    assert.isFalse(await logsIn(h, "alice", `${PASSWORD}\n`))
    const users = await annaJson<Array<{ id: string; name: string }>>(h, "user", "list")
    assert.deepStrictEqual(users.map((u) => [u.id, u.name]), [["alice", "Alice"]])

    // An existing user, the http channel on every interface and another port; --json is one document.
    await annaJson(h, "user", "add", "bob")
    await annaJson(h, "channel", "set", "http", "--config", "host=0.0.0.0", "--config", "port=9099")
    const j = await annaIn(h, "another password\r\n", "admin", "create", "bob", "--password-stdin", "--json")
    assert.strictEqual(j.code, 0, j.stderr)
    const doc = JSON.parse(j.stdout) as { account: AccountInfo; userCreated: boolean; url: string }
    // Without --role the account is an admin: `anna admin create` makes the first admin.
    assert.deepStrictEqual([doc.account.userId, doc.account.role, doc.userCreated, doc.url], ["bob", "admin", false, "http://127.0.0.1:9099/"])
    assert.isTrue(await logsIn(h, "bob", "another password"))

    refused(await annaIn(h, "whatever password\n", "admin", "create", "bob", "--password-stdin"), 1, "already has an account")
  }, 120_000)

  it("never takes a password from the command line, and without a terminal or --password-stdin exits 2 with one line", async () => {
    const h = home()
    const onArgv = await anna(h, "admin", "create", "alice", "--password", "s3cret-password")
    assert.strictEqual(onArgv.code, 2)
    assert.include(onArgv.stderr, "Unrecognized flag: --password")
    const noTty = await anna(h, "admin", "create", "alice")
    refused(noTty, 2, "stdin is not a terminal")
    assert.include(noTty.stderr, "--password-stdin")
    refused(await annaIn(h, "", "admin", "create", "alice", "--password-stdin"), 1, "no password on stdin")
    refused(await annaIn(h, "short\n", "admin", "create", "alice", "--password-stdin"), 1, "at least 8 characters")
    // A malformed id is a usage error (exit 2), checked before any password is read or asked for.
    const malformed = await annaIn(h, `${PASSWORD}\n`, "admin", "create", "no such id", "--password-stdin")
    assert.strictEqual(malformed.code, 2)
    assert.include(malformed.stderr, "user id \"no such id\" must be")
    const malformedNoTty = await anna(h, "admin", "create", "no such id")
    assert.strictEqual(malformedNoTty.code, 2)
    assert.include(malformedNoTty.stderr, "user id \"no such id\" must be")
    assert.notInclude(malformedNoTty.stderr, "stdin is not a terminal")
    refused(await anna(h, "admin", "passwd", "alice"), 1, "has no account")
    assert.deepStrictEqual(await annaJson<Array<AccountInfo>>(h, "admin", "list"), [])
    assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "user", "list"), [], "no user left behind either")
  }, 120_000)

  it("asks for the password twice on a terminal, hidden, until both match", async () => {
    const h = home()
    const session = ptyAnna(h, ["admin", "create", "carol"])
    // The prompt redraws itself on each keystroke: wait for `text` drawn after `mark` (a new prompt).
    const promptAfter = async (mark: string, text: string) => {
      await session.screen(mark)
      const out = session.output()
      await session.screen(text, out.slice(0, out.lastIndexOf(mark) + mark.length).split(text).length - 1)
    }
    await session.screen("Password")
    session.type("first attempt!\r")
    await session.screen("Password again")
    session.type("something else\r")
    await promptAfter("The passwords differ; try again.", "Password")
    session.type("short\r")
    await promptAfter("at least 8 characters; try again.", "Password")
    const asked = session.count("Password again")
    session.type("the real password\r")
    await session.screen("Password again", asked)
    session.type("the real password\r")
    const r = await session.done
    assert.strictEqual(r.code, 0, session.output())
    assert.include(session.output(), "Created admin account carol")
    for (const typed of ["first attempt!", "something else", "the real password"]) assert.notInclude(session.output(), typed)
    assert.isTrue(await logsIn(h, "carol", "the real password"))
  }, 120_000)
})

describe("anna admin list|passwd|role|remove|sessions|revoke", () => {
  it("manages accounts and browser sessions", async () => {
    const h = home()
    assert.strictEqual((await annaIn(h, `${PASSWORD}\n`, "admin", "create", "alice", "--role", "admin", "--password-stdin")).code, 0)
    assert.strictEqual((await annaIn(h, `${PASSWORD}\n`, "admin", "create", "bob", "--role", "user", "--password-stdin")).code, 0)
    const listed = await annaJson<Array<AccountInfo>>(h, "admin", "list")
    assert.deepStrictEqual(listed.map((a) => [a.userId, a.role]), [["alice", "admin"], ["bob", "user"]])
    const text = await anna(h, "admin", "list")
    assert.match(text.stdout, /^LOGIN +USER +ROLE +CREATED +PASSWORD CHANGED\nalice +alice +admin +\d{4}-/)

    // Sessions: listed by public id, never the cookie; revoked by id.
    const [cookie, sessionId] = await withAccounts(h, (a) =>
      Effect.map(a.login("alice", PASSWORD, browser), (l) => [l.cookie, l.principal.sessionId ?? ""] as const))
    await withAccounts(h, (a) => a.login("bob", PASSWORD, browser))
    const all = await annaJson<Array<WebSessionInfo>>(h, "admin", "sessions")
    assert.deepStrictEqual(all.map((s) => s.userId).sort(), ["alice", "bob"])
    const mine = await annaJson<Array<WebSessionInfo>>(h, "admin", "sessions", "--user", "alice")
    assert.deepStrictEqual(mine.map((s) => [s.id, s.client]), [[sessionId, "test browser"]])
    const sessionsText = await anna(h, "admin", "sessions")
    assert.include(sessionsText.stdout, sessionId)
    assert.notInclude(sessionsText.stdout + JSON.stringify(all), cookie)
    const revoked = await anna(h, "admin", "revoke", sessionId)
    assert.strictEqual(revoked.stdout.trim(), `Ended session ${sessionId} of alice; its next request must log in again.`)
    assert.isTrue(await withAccounts(h, (a) => Effect.map(a.authenticateSession(cookie), Option.isNone)))
    refused(await anna(h, "admin", "revoke", sessionId), 1, `no session "${sessionId}"`)

    // A new password: the old one is refused, bob's sessions end.
    const passwd = await annaIn(h, "a brand new password\n", "admin", "passwd", "bob", "--password-stdin")
    assert.strictEqual(passwd.stdout.trim(), "Changed the password of bob; their browser sessions were ended.")
    assert.deepStrictEqual(await annaJson<Array<WebSessionInfo>>(h, "admin", "sessions", "--user", "bob"), [])
    assert.deepStrictEqual([await logsIn(h, "bob", PASSWORD), await logsIn(h, "bob", "a brand new password")], [false, true])

    // Roles.
    const role = await anna(h, "admin", "role", "bob", "admin")
    assert.strictEqual(role.stdout.trim(), "bob is now admin; their browser sessions were ended.")
    assert.strictEqual((await annaJson<AccountInfo>(h, "admin", "role", "alice", "user")).role, "user")
    const badRole = await anna(h, "admin", "role", "bob", "root")
    assert.strictEqual(badRole.code, 2)
    refused(await anna(h, "admin", "role", "carol", "admin"), 1, "carol\" has no account")

    // Removing an account needs --yes and leaves the user.
    refused(await anna(h, "admin", "remove", "bob"), 1, "pass --yes")
    const removed = await anna(h, "admin", "remove", "bob", "--yes")
    assert.strictEqual(removed.code, 0, removed.stderr)
    assert.deepStrictEqual((await annaJson<Array<AccountInfo>>(h, "admin", "list")).map((a) => a.userId), ["alice"])
    assert.deepStrictEqual((await annaJson<Array<{ id: string }>>(h, "user", "list")).map((u) => u.id), ["alice", "bob"])
    assert.isFalse(await logsIn(h, "bob", "a brand new password"))
  }, 120_000)
})

describe("anna user token --role", () => {
  it("issues admin-scoped tokens to admins only, and lists each token's role", async () => {
    const h = home()
    assert.strictEqual((await annaIn(h, `${PASSWORD}\n`, "admin", "create", "alice", "--role", "admin", "--password-stdin")).code, 0)
    await annaJson(h, "user", "add", "bob")
    const adminToken = await anna(h, "user", "token", "alice", "--role", "admin", "--label", "ops")
    assert.strictEqual(adminToken.code, 0, adminToken.stderr)
    assert.include(adminToken.stderr, "admin-scoped")
    const token = adminToken.stdout.trim()
    assert.match(token, /^anna_[A-Za-z0-9_-]{43}$/)
    assert.strictEqual((await anna(h, "user", "token", "alice", "--label", "laptop")).code, 0)
    refused(await anna(h, "user", "token", "bob", "--role", "admin"), 1, "an admin token needs an admin account")
    const bobs = await annaJson<{ role: string; token: string }>(h, "user", "token", "bob")
    assert.strictEqual(bobs.role, "user")

    const tokens = await annaJson<Array<TokenInfo>>(h, "user", "token", "list")
    assert.deepStrictEqual(tokens.map((t) => [t.userId, t.label, t.role]).sort(), [["alice", "laptop", "user"], ["alice", "ops", "admin"], ["bob", "", "user"]])
    const text = await anna(h, "user", "token", "list", "alice")
    assert.match(text.stdout, /^TOKEN ID +USER +ROLE +LABEL +CREATED +MINTED BY +MINTED\n/)
    assert.match(text.stdout, /alice +admin +ops/)

    // The account demoted: the admin token acts as user from then on.
    const actsAs = () => withAccounts(h, (a) => Effect.map(a.authenticateToken(token), (p) => Option.map(p, (x) => x.role)))
    assert.deepStrictEqual(await actsAs(), Option.some("admin"))
    assert.strictEqual((await anna(h, "admin", "role", "alice", "user")).code, 0)
    assert.deepStrictEqual(await actsAs(), Option.some("user"))
  }, 120_000)
})
