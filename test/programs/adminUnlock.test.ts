/**
 * `anna admin unlock`: the login throttle lives in the database, so the CLI clears it while another
 * process (a running gateway; here the Accounts layer on the same file) holds failed logins — for
 * one address (and that address's own count), or every address that failed on the username.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import * as SqliteAccounts from "../../src/layers/admin/SqliteAccounts.ts"
import * as SqliteConfigStore from "../../src/layers/config/SqliteConfigStore.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import { anna, annaJson, finish, MAIN, newHome, type Run } from "../support/cli.ts"
import { childEnv } from "../support/spawnAnna.ts"
import { homeDatabase } from "../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const annaIn = (h: string, input: string, ...args: ReadonlyArray<string>): Promise<Run> => {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...childEnv(h, {}), ANNA_LOG_LEVEL: "warn" }, stdio: ["pipe", "pipe", "pipe"] })
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
        SqliteAccounts.layer.pipe(Layer.provideMerge(SqliteConfigStore.layerWithStores(h)), Layer.provideMerge(homeDatabase(h)))
      )
    )
  )

const PASSWORD = "tr0ub4dor & 3"

/** How a login of alice from `address` ends: Success, LoginRefused or LoginThrottled. */
const loginFrom = (h: string, address: string, password: string) =>
  withAccounts(h, (a) =>
    Effect.map(Effect.result(a.login("alice", password, { address, userAgent: "test" })), (r) => r._tag === "Success" ? "Success" : r.failure._tag))

/** Five wrong passwords from `address`: the sixth attempt, even with the right password, waits. */
const throttleFrom = async (h: string, address: string) => {
  for (let i = 0; i < 5; i++) assert.strictEqual(await loginFrom(h, address, `wrong ${i}`), "LoginRefused")
  assert.strictEqual(await loginFrom(h, address, PASSWORD), "LoginThrottled")
}

describe("anna admin unlock", () => {
  it("clears the failed logins of a username from one address, or from all, as the gateway sees them", async () => {
    const h = newHome()
    homes.push(h)
    const created = await annaIn(h, `${PASSWORD}\n`, "admin", "create", "alice", "--role", "user", "--password-stdin")
    assert.strictEqual(created.code, 0, created.stderr)
    await throttleFrom(h, "10.0.0.9")
    // An IPv6 client counts by its /64 (one machine usually holds many of its addresses).
    await throttleFrom(h, "2001:db8::9")
    assert.strictEqual(await loginFrom(h, "2001:db8::10", PASSWORD), "LoginThrottled")

    const one = await annaJson<{ user: string; address: string | null; cleared: ReadonlyArray<string> }>(h, "admin", "unlock", "alice", "--address", "10.0.0.9")
    assert.deepStrictEqual(one, { user: "alice", address: "10.0.0.9", cleared: ["10.0.0.9"] })
    assert.strictEqual(await loginFrom(h, "10.0.0.9", PASSWORD), "Success")
    assert.strictEqual(await loginFrom(h, "2001:db8::9", PASSWORD), "LoginThrottled", "another address stays held back")

    const all = await anna(h, "admin", "unlock", "alice")
    assert.strictEqual(all.code, 0, all.stderr)
    assert.strictEqual(all.stdout.trim(), "Cleared the failed logins of alice from 1 address (2001:db8::/64); they may log in at once.")
    assert.strictEqual(await loginFrom(h, "2001:db8::9", PASSWORD), "Success")

    const nothing = await anna(h, "admin", "unlock", "alice")
    assert.strictEqual(nothing.stdout.trim(), "No failed logins of alice to clear.")
    const bad = await anna(h, "admin", "unlock", "alice", "--address", "not-an-ip")
    assert.strictEqual(bad.code, 1, bad.stdout + bad.stderr)
    assert.strictEqual(bad.stderr.trim().split("\n").length, 1, bad.stderr)
    assert.include(bad.stderr, "not an IP address")
  }, 120_000)
})
