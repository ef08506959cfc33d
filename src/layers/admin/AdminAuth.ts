/**
 * The admin API's authentication middleware (declared as `AdminAuth` in
 * src/domain/admin/security.ts): who the request acts for, from `Authorization: Bearer <token>`
 * (judged alone when sent) or the `anna_session` cookie, via Accounts; the CSRF check of cookie
 * requests that change something; the role rule (admin-only unless the endpoint or its group is
 * annotated `UserAllowed`). Provides `CurrentPrincipal` to the handlers.
 *
 * Both declared schemes run the same check: the builder tries each scheme in turn and answers with
 * the last failure, so a scheme-specific check would let a bearer request's 403 become the cookie
 * scheme's 401. Failing twice costs one more lookup, and only for a request that fails anyway.
 */
import { Context, Effect, Layer, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { type HttpApiEndpoint, type HttpApiGroup, HttpApiMiddleware } from "effect/http-api"
import { timingSafeEqual } from "node:crypto"
import {
  AdminAuth,
  BadRequest,
  CSRF_HEADER,
  CurrentPrincipal,
  Forbidden,
  SchemaErrors,
  ServerError,
  SESSION_COOKIE,
  Unauthorized,
  UserAllowed
} from "../../domain/admin/security.ts"
import { Accounts, type Principal } from "../../services/Accounts.ts"
import { header } from "./http.ts"

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

const sameSecret = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** Whether `user` accounts may call the endpoint. */
export const userAllowed = (endpoint: HttpApiEndpoint.Top, group: HttpApiGroup.Top): boolean =>
  Context.get(endpoint.annotations, UserAllowed) || Context.get(group.annotations, UserAllowed)

/**
 * Who a request acts for: its bearer token (judged alone when sent) or its session cookie, with the
 * CSRF check of a cookie request that changes something. Also the check of the gateway's routes
 * outside the API (`GET /metrics`, ./metricsRoute.ts).
 */
export const authenticator = (accounts: Accounts["Service"]) =>
  Effect.fn("AdminAuth.authenticate")(function*(request: HttpServerRequest.HttpServerRequest) {
    const authorization = header(request, "authorization")
    if (authorization !== undefined) {
      const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1]
      if (token === undefined) return yield* Unauthorized.of("the Authorization header must be: Bearer <token>")
      const principal = yield* accounts.authenticateToken(token).pipe(Effect.orDie)
      if (Option.isNone(principal)) return yield* Unauthorized.of("unknown or revoked token")
      return principal.value
    }
    const cookie = request.cookies[SESSION_COOKIE]
    if (cookie === undefined || cookie === "") return yield* Unauthorized.of("log in first (POST /api/auth/login), or send Authorization: Bearer <token>")
    const found = yield* accounts.authenticateSession(cookie).pipe(Effect.orDie)
    if (Option.isNone(found)) return yield* Unauthorized.of("the session has ended; log in again", "session_expired")
    const principal: Principal = found.value
    if (!SAFE_METHODS.has(request.method.toUpperCase())) {
      const sent = header(request, CSRF_HEADER)
      if (sent === undefined || principal.csrfToken === undefined || !sameSecret(sent, principal.csrfToken)) {
        return yield* Forbidden.of(`send the session's CSRF token (from /api/auth/login or /api/auth/me) in ${CSRF_HEADER}`, "csrf")
      }
    }
    return principal
  })

export const make = Effect.gen(function*() {
  const authenticate = authenticator(yield* Accounts)

  const check = <A, E, R>(
    httpEffect: Effect.Effect<A, E, R>,
    options: { readonly endpoint: HttpApiEndpoint.Top; readonly group: HttpApiGroup.Top }
  ) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const principal = yield* authenticate(request)
      if (principal.role !== "admin" && !userAllowed(options.endpoint, options.group)) {
        return yield* Forbidden.of("this needs an admin account")
      }
      return yield* Effect.provideService(httpEffect, CurrentPrincipal, principal)
    })

  return AdminAuth.of({ bearer: check, session: check })
})

export const layer = Layer.effect(AdminAuth, make)

/** `SchemaErrors`: a request the Schemas refuse is a 400 with the usual body (a response that fails them, a 500). */
export const schemaErrorsLayer = HttpApiMiddleware.layerSchemaErrorTransform(SchemaErrors, (error) =>
  error.kind === "ResponseHeaders"
    ? Effect.fail(ServerError.of("anna built a response its own API refuses; see the gateway's log"))
    : Effect.fail(BadRequest.of(`the request's ${error.kind.toLowerCase()} is not what the API takes: ${error.cause.message.slice(0, 400)}`)))
