/**
 * Tokens minted by tokens, through the admin API over a real socket: a token that calls
 * `POST /api/tokens` is recorded as the new token's minter; the list shows each token's minter and
 * how many live tokens descend from it; `DELETE /api/tokens/{id}` revokes the token alone and says
 * how many it minted remain, or with `?cascade=true` every descendant too — also through tokens
 * revoked in between, and from a token already revoked. A token never mints one above its own role.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ADMIN, type AdminClient, Harness, harnessLayer, outcome, USER } from "../../support/adminHarness.ts"

/** The token's id as the list shows it (its creation order is the list's: the newest last). */
const idOf = (client: AdminClient, label: string) =>
  Effect.map(client.tokens.list({ query: {} }), (ts) => {
    const found = ts.find((t) => t.label === label)
    if (found === undefined) throw new Error(`no token labelled ${label}`)
    return found
  })

layer(harnessLayer(), { excludeTestServices: true, timeout: "60 seconds" })("tokens minted by tokens", (it) => {
  it.effect("record their minter; revoking without cascade keeps them and says how many remain", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // alice's stolen token mints a child, which mints a grandchild; her browser mints one too.
      const stolen = yield* h.user.tokens.issue({ payload: { label: "a-stolen" } })
      const viaStolen = yield* h.client({ bearer: stolen.token })
      const child = yield* viaStolen.tokens.issue({ payload: { label: "a-child" } })
      const grandchild = yield* (yield* h.client({ bearer: child.token })).tokens.issue({ payload: { label: "a-grandchild" } })
      yield* h.user.tokens.issue({ payload: { label: "a-browser" } })

      const s = yield* idOf(h.user, "a-stolen")
      const c = yield* idOf(h.user, "a-child")
      const g = yield* idOf(h.user, "a-grandchild")
      const b = yield* idOf(h.user, "a-browser")
      assert.deepStrictEqual([s.mintedBy, c.mintedBy, g.mintedBy, b.mintedBy], [null, s.id, c.id, null])
      assert.deepStrictEqual([s.minted, c.minted, g.minted, b.minted], [2, 1, 0, 0])

      const answer = yield* h.user.tokens.revoke({ params: { id: s.id }, query: {} })
      assert.strictEqual(answer.revoked?.id, s.id)
      assert.deepStrictEqual(answer.cascaded, [])
      assert.strictEqual(answer.remainingMinted, 2)
      assert.strictEqual(yield* outcome(viaStolen.auth.me()), 401)
      for (const t of [child.token, grandchild.token]) assert.strictEqual((yield* (yield* h.client({ bearer: t })).auth.me()).user, USER.user)

      // Revoking the already revoked token with cascade sweeps what it left behind.
      const swept = yield* h.user.tokens.revoke({ params: { id: s.id }, query: { cascade: "true" } })
      assert.isNull(swept.revoked)
      assert.sameMembers(swept.cascaded.map((t) => t.id), [c.id, g.id])
      assert.strictEqual(swept.remainingMinted, 0)
      for (const t of [child.token, grandchild.token]) assert.strictEqual(yield* outcome((yield* h.client({ bearer: t })).auth.me()), 401)
      // The browser's token and the harness's stay.
      assert.strictEqual((yield* h.userBearer.auth.me()).user, USER.user)
      assert.isTrue((yield* h.user.tokens.list({ query: {} })).some((t) => t.id === b.id))
    }))

  it.effect("revoking with cascade revokes every descendant, through tokens revoked in between, and nothing else", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // root's admin token mints an admin token, which mints one for alice (admins may), which mints hers.
      const top = yield* h.admin.tokens.issue({ payload: { label: "r-top", role: "admin" } })
      const viaTop = yield* h.client({ bearer: top.token })
      const mid = yield* viaTop.tokens.issue({ payload: { label: "r-mid", role: "admin" } })
      const forAlice = yield* (yield* h.client({ bearer: mid.token })).tokens.issue({ payload: { label: "r-alice", userId: USER.user } })
      const hers = yield* (yield* h.client({ bearer: forAlice.token })).tokens.issue({ payload: { label: "r-hers" } })
      const sibling = yield* h.admin.tokens.issue({ payload: { label: "r-sibling" } })

      const all = yield* h.admin.tokens.list({ query: {} })
      const id = (label: string) => all.find((t) => t.label === label)?.id ?? ""
      assert.strictEqual(all.find((t) => t.label === "r-top")?.minted, 3)
      // A user sees her tokens' minter even when it is another user's token (its id only).
      assert.strictEqual((yield* idOf(h.user, "r-alice")).mintedBy, id("r-mid"))
      // She may not revoke root's token, cascade or not.
      assert.strictEqual(yield* outcome(h.user.tokens.revoke({ params: { id: id("r-top") }, query: { cascade: "true" } })), 404)

      // The middle one goes first, alone: its descendants stay.
      const alone = yield* h.admin.tokens.revoke({ params: { id: id("r-mid") }, query: { cascade: "false" } })
      assert.strictEqual(alone.remainingMinted, 2)
      // Revoking the top with cascade reaches them through the revoked middle.
      const all3 = yield* h.admin.tokens.revoke({ params: { id: id("r-top") }, query: { cascade: "true" } })
      assert.strictEqual(all3.revoked?.id, id("r-top"))
      assert.sameMembers(all3.cascaded.map((t) => t.id), [id("r-alice"), id("r-hers")])
      assert.strictEqual(all3.remainingMinted, 0)
      for (const t of [top.token, mid.token, forAlice.token, hers.token]) {
        assert.strictEqual(yield* outcome((yield* h.client({ bearer: t })).auth.me()), 401)
      }
      assert.strictEqual((yield* (yield* h.client({ bearer: sibling.token })).auth.me()).user, ADMIN.user)
      assert.strictEqual((yield* h.adminBearer.auth.me()).user, ADMIN.user)
    }))

  it.effect("a token never mints a token with more rights than itself", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // root's token scoped to user acts as a user: no admin token, no token for someone else.
      const scoped = yield* h.admin.tokens.issue({ payload: { label: "x-scoped", role: "user" } })
      const viaScoped = yield* h.client({ bearer: scoped.token })
      assert.strictEqual(yield* outcome(viaScoped.tokens.issue({ payload: { role: "admin" } })), 403)
      assert.strictEqual(yield* outcome(viaScoped.tokens.issue({ payload: { userId: USER.user } })), 403)
      const minted = yield* viaScoped.tokens.issue({ payload: { label: "x-minted" } })
      assert.strictEqual(minted.role, "user")
      assert.strictEqual((yield* (yield* h.client({ bearer: minted.token })).auth.me()).role, "user")
      // alice's token: only role user, only for her.
      assert.strictEqual(yield* outcome(h.userBearer.tokens.issue({ payload: { role: "admin" } })), 403)
      assert.strictEqual(yield* outcome(h.userBearer.tokens.issue({ payload: { userId: ADMIN.user } })), 403)
    }))
})
