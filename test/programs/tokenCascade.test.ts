/**
 * `anna user token list|revoke --cascade`: real CLI processes on a fresh ANNA_HOME. Tokens minted by
 * a token (through the admin API; here through the Accounts layer on the same database file, as the
 * API's handler does) show their minter; revoking the minter says how many of its tokens remain, and
 * `--cascade` (also on a token already revoked) revokes them all.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import * as SqliteAccounts from "../../src/layers/admin/SqliteAccounts.ts"
import * as SqliteConfigStore from "../../src/layers/config/SqliteConfigStore.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import { anna, annaJson, newHome } from "../support/cli.ts"
import { homeDatabase } from "../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

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

/** A new token minted by `minter` (as POST /api/tokens with `Authorization: Bearer <minter>`). */
const mint = (h: string, minter: string, label: string) =>
  withAccounts(h, (a) =>
    Effect.gen(function*() {
      const p = Option.getOrThrow(yield* a.authenticateToken(minter))
      return yield* a.issueToken(p.userId, label, "user", { mintedBy: p.tokenHash })
    }))

const works = (h: string, token: string) => withAccounts(h, (a) => Effect.map(a.authenticateToken(token), Option.isSome))

interface Listed {
  readonly id: string
  readonly label: string
  readonly mintedBy: string | null
  readonly minted: number
}

describe("anna user token revoke --cascade", () => {
  it("lists each token's minter, says how many minted tokens a revoke leaves, and --cascade revokes them", async () => {
    const h = newHome()
    homes.push(h)
    await annaJson(h, "user", "add", "alice")
    const issued = await anna(h, "user", "token", "alice", "--label", "parent")
    assert.strictEqual(issued.code, 0, issued.stderr)
    const parent = issued.stdout.trim()
    const child = await mint(h, parent, "child")
    const grandchild = await mint(h, child, "grandchild")

    const listed = await annaJson<Array<Listed>>(h, "user", "token", "list")
    const byLabel = (l: string) => listed.find((t) => t.label === l)
    const parentId = byLabel("parent")?.id ?? ""
    assert.deepStrictEqual(listed.map((t) => [t.label, t.mintedBy, t.minted]), [
      ["parent", null, 2],
      ["child", parentId, 1],
      ["grandchild", byLabel("child")?.id ?? "", 0]
    ])
    const text = await anna(h, "user", "token", "list")
    assert.include(text.stdout, "MINTED BY")

    const alone = await anna(h, "user", "token", "revoke", parentId)
    assert.strictEqual(alone.code, 0, alone.stderr)
    assert.strictEqual(
      alone.stdout.trim(),
      `Revoked token ${parentId} (parent) of alice; it is refused from now on.\n` +
        `2 tokens it minted (directly or not) still work: anna user token revoke ${parentId} --cascade revokes them.`
    )
    assert.isFalse(await works(h, parent))
    assert.isTrue(await works(h, child))
    assert.isTrue(await works(h, grandchild))

    const swept = await annaJson<{ revoked: null; cascaded: Array<Listed>; remainingMinted: number }>(h, "user", "token", "revoke", parentId, "--cascade")
    assert.isNull(swept.revoked)
    assert.deepStrictEqual(swept.cascaded.map((t) => t.label).sort(), ["child", "grandchild"])
    assert.strictEqual(swept.remainingMinted, 0)
    assert.isFalse(await works(h, child))
    assert.isFalse(await works(h, grandchild))
    assert.deepStrictEqual(await annaJson<Array<Listed>>(h, "user", "token", "list"), [])
  }, 120_000)
})
