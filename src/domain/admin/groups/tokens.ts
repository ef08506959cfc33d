/**
 * `/api/tokens`: bearer API tokens (as `anna user token issue|list|revoke`), for the admin API and
 * the OpenAI-compatible channel. A token is shown once, in the issue response; lists show an id made
 * from its hash. A `user` lists, issues and revokes only their own, and only with role `user`.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { AdminAuth, CommonErrors, Role, UserAllowed } from "../security.ts"

export const TokenView = Schema.Struct({
  id: Schema.String,
  userId: Schema.String,
  label: Schema.String,
  createdAt: Schema.Number
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
    HttpApiEndpoint.delete("revoke", "/:id", { params: { id: Schema.String }, success: HttpApiSchema.NoContent, error: CommonErrors })
  )
  .annotate(UserAllowed, true)
  .middleware(AdminAuth)
  .prefix("/tokens")
{}
