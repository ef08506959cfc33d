/**
 * `/api/tokens` handlers: `anna user token issue|list|revoke` over Accounts. A `user` lists, issues
 * (role `user` only) and revokes only their own tokens. A request authenticated by a token records it
 * as the new token's minter, and the token gives no more than it has (Accounts checks it again).
 * Revoking with `cascade=true` takes every token the named one minted, whoever they were minted for:
 * a stolen token's offspring is as stolen as it is.
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { CurrentPrincipal, Forbidden, NotFound } from "../../domain/admin/security.ts"
import { Accounts } from "../../services/Accounts.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { answer } from "./errors.ts"

export const layer = HttpApiBuilder.group(AdminApi, "tokens", Effect.fn(function*(handlers) {
  const config = yield* ConfigStore
  const accounts = yield* Accounts

  return handlers
    .handle("list", ({ query }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        if (p.role !== "admin" && query.user !== undefined && query.user !== p.userId) return yield* Forbidden.of("you may list only your own tokens")
        return yield* accounts.listTokens(p.role === "admin" ? query.user : p.userId)
      })))
    .handle("issue", ({ payload }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        const userId = payload.userId ?? p.userId
        const role = payload.role ?? "user"
        if (p.role !== "admin" && userId !== p.userId) return yield* Forbidden.of("you may issue tokens only for yourself")
        if (p.role !== "admin" && role !== "user") return yield* Forbidden.of("you may issue only tokens of role user")
        if (Option.isNone(yield* config.getUser(userId))) return yield* NotFound.of(`no user "${userId}"`)
        const label = payload.label ?? ""
        const token = yield* accounts.issueToken(userId, label, role, { mintedBy: p.via === "token" ? p.tokenHash : undefined })
        return { token, userId, label, role }
      })))
    .handle("revoke", ({ params, query }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        const cascade = query.cascade === "true"
        if (p.role === "admin") return yield* accounts.revokeToken(params.id, { cascade })
        // A user's own tokens only: anything else is "not found" to them.
        return yield* accounts.revokeToken(params.id, { cascade, owner: p.userId }).pipe(
          Effect.catchTag("AccountError", (e) => Effect.fail(NotFound.of(e.reason)))
        )
      })))
}))
