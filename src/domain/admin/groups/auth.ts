/**
 * `/api/auth`: logging in and out of the web console, who am I, my browser sessions, my password.
 * Login is the one endpoint without `AdminAuth`: it is guarded by requiring a JSON body and a
 * same-origin `Origin` (when one is sent), and by the accounts' login throttle (429 + Retry-After; a
 * backoff per username and client address, so a stranger's guesses never refuse the owner elsewhere).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { AdminAuth, BadRequest, CommonErrors, Forbidden, Role, TooManyRequests, Unauthorized, UserAllowed } from "../security.ts"

export const Me = Schema.Struct({
  user: Schema.String,
  role: Role,
  /** The name the caller's console account logs in with (not always its user's id: issue 24), when it has one. */
  login: Schema.optional(Schema.String),
  /** Echo it in `x-csrf-token` on POST/PUT/PATCH/DELETE (cookie sessions only; absent for bearer tokens). */
  csrfToken: Schema.optional(Schema.String)
})

export const LoginResponse = Schema.Struct({ user: Schema.String, role: Role, login: Schema.String, csrfToken: Schema.String, expiresAt: Schema.Number })

export const WebSession = Schema.Struct({
  id: Schema.String,
  userId: Schema.String,
  createdAt: Schema.Number,
  lastSeenAt: Schema.Number,
  expiresAt: Schema.Number,
  client: Schema.String,
  /** The session this request came with. */
  current: Schema.Boolean
})

const login = HttpApiEndpoint.post("login", "/login", {
  payload: Schema.Struct({ username: Schema.String, password: Schema.String }),
  success: LoginResponse,
  error: [Unauthorized, Forbidden, TooManyRequests, BadRequest, ...CommonErrors]
})

const logout = HttpApiEndpoint.post("logout", "/logout", { success: HttpApiSchema.NoContent, error: CommonErrors })
  .annotate(UserAllowed, true)

const me = HttpApiEndpoint.get("me", "/me", { success: Me, error: CommonErrors }).annotate(UserAllowed, true)

const sessions = HttpApiEndpoint.get("sessions", "/sessions", { success: Schema.Array(WebSession), error: CommonErrors })
  .annotate(UserAllowed, true)

const revokeSession = HttpApiEndpoint.delete("revokeSession", "/sessions/:id", {
  params: { id: Schema.String },
  success: HttpApiSchema.NoContent,
  error: CommonErrors
}).annotate(UserAllowed, true)

const changePassword = HttpApiEndpoint.put("changePassword", "/password", {
  payload: Schema.Struct({ currentPassword: Schema.String, newPassword: Schema.String }),
  success: LoginResponse,
  error: [TooManyRequests, ...CommonErrors]
}).annotate(UserAllowed, true)

export class AuthGroup extends HttpApiGroup.make("auth")
  .add(logout, me, sessions, revokeSession, changePassword)
  .middleware(AdminAuth)
  .add(login)
  .prefix("/auth")
{}
