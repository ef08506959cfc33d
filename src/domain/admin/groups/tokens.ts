/**
 * `/api/tokens`: bearer API tokens (as `anna user token issue|list|revoke`), for the admin API and
 * the OpenAI-compatible channel. A token is shown once, in the issue response; lists show an id made
 * from its hash. A `user` lists, issues and revokes only their own, and only with role `user`.
 *
 * A token issued by a request authenticated with a token records that token as its minter (a stolen
 * token's offspring can be found and revoked). Revoking takes `?cascade=true` to revoke every token
 * the named one minted, directly or not (also when it was revoked before); without it, the answer
 * says how many of them still work.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors, Role, UserAllowed } from "../security.ts"

/** A token as a revoke reports it. */
export const RevokedToken = Schema.Struct({
  id: Schema.String,
  userId: Schema.String,
  label: Schema.String,
  role: Role,
  createdAt: Schema.Number
})

export const TokenView = Schema.Struct({
  ...RevokedToken.fields,
  /** The id of the token that minted it (perhaps revoked since); null when a person issued it. */
  mintedBy: Schema.NullOr(Schema.String),
  /** How many live tokens it minted, directly or through others. */
  minted: Schema.Number
})

export const RevokeResult = Schema.Struct({
  /** The token named; null when it was revoked before and only what it minted went now. */
  revoked: Schema.NullOr(RevokedToken),
  /** What it minted, directly or not, revoked with it (`cascade=true`). */
  cascaded: Schema.Array(RevokedToken),
  /** How many live tokens it minted, directly or not, still work (without `cascade`). */
  remainingMinted: Schema.Number
})

export const IssuedToken = Schema.Struct({
  /** The token itself: shown this once. */
  token: Schema.String,
  userId: Schema.String,
  label: Schema.String,
  role: Role
})

export class TokensGroup extends HttpApiGroup.make("tokens")
  .add(
    HttpApiEndpoint.get("list", "/", {
      /** Only this user's (a `user` always gets only their own). */
      query: { user: Schema.optional(Schema.String) },
      success: Schema.Array(TokenView),
      error: CommonErrors
    }),
    HttpApiEndpoint.post("issue", "/", {
      /** `userId` defaults to the caller; `role` to `user`. */
      payload: Schema.Struct({ userId: Schema.optional(Schema.String), label: Schema.optional(Schema.String), role: Schema.optional(Role) }),
      success: IssuedToken,
      error: CommonErrors
    }),
    HttpApiEndpoint.delete("revoke", "/:id", {
      params: { id: Schema.String },
      /** `true`: every token it minted, directly or not, goes too. */
      query: { cascade: Schema.optional(Schema.Literals(["true", "false"])) },
      success: RevokeResult,
      error: CommonErrors
    })
  )
  .annotate(UserAllowed, true)
  .middleware(AdminAuth)
  .prefix("/tokens")
{}
