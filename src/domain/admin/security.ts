/**
 * The admin API's security, as declared (shared by the server, the tests and the browser UI: Schemas
 * and service keys only, no I/O): the errors every endpoint may answer with, the principal a request
 * acts for, which endpoints a `user` may call, and the authentication middleware's declaration.
 *
 * - Authentication (`AdminAuth`): the browser session cookie `anna_session` or `Authorization: Bearer
 *   <token>`; a request with a bearer header is judged by it alone (a wrong token is not rescued by a
 *   cookie). The implementation is src/layers/admin/AdminAuth.ts.
 * - CSRF: a cookie-authenticated POST/PUT/PATCH/DELETE must echo the session's CSRF token in
 *   `x-csrf-token` (403 `csrf` otherwise); bearer requests carry no ambient credential, so are exempt.
 * - Authorization: every endpoint is admin-only unless annotated `UserAllowed` (then its handler
 *   limits a `user` to their own data). 401 for anonymous, 403 for forbidden.
 * - Error bodies are `{error: {code, message}}` whatever the status.
 */
import { Context, Schema } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { Principal } from "../../services/Accounts.ts"

/** The session cookie's name. */
export const SESSION_COOKIE = "anna_session"
/** The header a cookie-authenticated state-changing request echoes the CSRF token in. */
export const CSRF_HEADER = "x-csrf-token"

export const Role = Schema.Literals(["admin", "user"])

export const ErrorDetail = Schema.Struct({
  /** A stable machine-readable code, e.g. `unauthorized`, `csrf`, `not_found`, `invalid`. */
  code: Schema.String,
  message: Schema.String
})

const detail = (code: string, message: string) => ({ error: { code, message } })

/** 400: the request cannot be done as asked (invalid value, contradiction); the message says what to change. */
export class BadRequest extends Schema.Error<BadRequest>("BadRequest")({ error: ErrorDetail }, { httpApiStatus: 400 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, code = "invalid") {
    return new BadRequest(detail(code, message))
  }
}

/** 401: no valid session cookie or bearer token (or a wrong login). */
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")({ error: ErrorDetail }, { httpApiStatus: 401 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, code = "unauthorized") {
    return new Unauthorized(detail(code, message))
  }
}

/** 403: authenticated, but not allowed (role, someone else's data, a missing CSRF token). */
export class Forbidden extends Schema.Error<Forbidden>("Forbidden")({ error: ErrorDetail }, { httpApiStatus: 403 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, code = "forbidden") {
    return new Forbidden(detail(code, message))
  }
}

/** 404: no such thing. */
export class NotFound extends Schema.Error<NotFound>("NotFound")({ error: ErrorDetail }, { httpApiStatus: 404 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, code = "not_found") {
    return new NotFound(detail(code, message))
  }
}

/** 409: it exists already, or is in use. */
export class Conflict extends Schema.Error<Conflict>("Conflict")({ error: ErrorDetail }, { httpApiStatus: 409 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, code = "conflict") {
    return new Conflict(detail(code, message))
  }
}

/** 413: the request, or the message it carries, is larger than anna takes (the message says the limit). */
export class TooLarge extends Schema.Error<TooLarge>("TooLarge")({ error: ErrorDetail }, { httpApiStatus: 413 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, code = "too_large") {
    return new TooLarge(detail(code, message))
  }
}

/** 429: too many failed logins; the response carries `Retry-After` (seconds). */
export class TooManyRequests extends Schema.Error<TooManyRequests>("TooManyRequests")({
  error: ErrorDetail,
  retryAfterSeconds: Schema.Number
}, { httpApiStatus: 429 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, retryAfterSeconds: number) {
    return new TooManyRequests({ ...detail("throttled", message), retryAfterSeconds })
  }
}

/** 500: anna could not do it (storage failed); the details are in the gateway's log. */
export class ServerError extends Schema.Error<ServerError>("ServerError")({ error: ErrorDetail }, { httpApiStatus: 500 }) {
  override get message() {
    return this.error.message
  }
  static of(message: string, code = "server_error") {
    return new ServerError(detail(code, message))
  }
}

/** What most endpoints may answer besides their success (the middleware adds 401 and 403). */
export const CommonErrors = [BadRequest, NotFound, Conflict, ServerError] as const

/** Who the request acts for: provided by `AdminAuth` to every handler behind it. */
export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("anna/admin/CurrentPrincipal") {}

/**
 * Annotation of an endpoint a `user` may call too (its handler keeps them to their own data);
 * endpoints without it are admin-only.
 */
export const UserAllowed = Context.Reference<boolean>("anna/admin/UserAllowed", { defaultValue: () => false })

/** The authentication middleware of the admin API (cookie or bearer; CSRF; the role rule). */
export class AdminAuth extends HttpApiMiddleware.Service<AdminAuth, { provides: CurrentPrincipal }>()("anna/admin/AdminAuth", {
  security: {
    bearer: HttpApiSecurity.bearer,
    session: HttpApiSecurity.apiKey({ in: "cookie", key: SESSION_COOKIE })
  },
  error: [Unauthorized, Forbidden]
}) {}

/**
 * Requests the API's Schemas refuse (a missing field, a wrong type) answered as a 400 with the usual
 * error body instead of the HTTP API's bare default. Applied to the whole API.
 */
export class SchemaErrors extends HttpApiMiddleware.Service<SchemaErrors>()("anna/admin/SchemaErrors", {
  error: [BadRequest, ServerError]
}) {}
