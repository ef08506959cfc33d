/**
 * `/api/auth` handlers: login (cookie set, CSRF token returned), logout, me, the caller's browser
 * sessions, and their password. Login is guarded by a JSON content type and a same-origin `Origin`
 * when one is sent (a form on another site cannot post JSON without a preflight), and by Accounts'
 * login throttle (429 with Retry-After). The throttle counts the client's address: the socket's peer,
 * or, when the peer is in `admin.trusted_proxies` (read at each login), the right-most
 * X-Forwarded-For entry outside that list (src/domain/admin/clientAddress.ts).
 */
import { Clock, Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { clientAddress, parseTrustedProxies } from "../../domain/admin/clientAddress.ts"
import { CurrentPrincipal, Forbidden, NotFound, SESSION_COOKIE, TooManyRequests, Unauthorized } from "../../domain/admin/security.ts"
import { settingValue } from "../../domain/config/settings.ts"
import { Accounts, type LoginResult } from "../../services/Accounts.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { answer, toApiFailure } from "./errors.ts"
import { addResponseHeader, clearSessionCookie, header, sameOrigin, setSessionCookie } from "./http.ts"

const TRUSTED_PROXIES = "admin.trusted_proxies"

export const layer = HttpApiBuilder.group(AdminApi, "auth", Effect.fn(function*(handlers) {
  const accounts = yield* Accounts
  const config = yield* ConfigStore

  /** Who the throttle counts for this request (see the header). */
  const clientOf = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.map(config.getSetting(TRUSTED_PROXIES), (stored) =>
      clientAddress(
        Option.getOrUndefined(request.remoteAddress),
        // Node joins repeated X-Forwarded-For headers with ", ", in order.
        [header(request, "x-forwarded-for") ?? ""],
        parseTrustedProxies(settingValue(TRUSTED_PROXIES, Option.getOrUndefined(stored)))
      ))

  /** Logs in and sets the cookie; the login's refusals as 401/429. */
  const logIn = Effect.fn("AdminApi.logIn")(function*(username: string, password: string, withCookie: boolean) {
    const request = yield* HttpServerRequest.HttpServerRequest
    const address = yield* clientOf(request).pipe(Effect.catchTag("StorageError", toApiFailure))
    const result: LoginResult = yield* accounts.login(username, password, {
      address,
      userAgent: (header(request, "user-agent") ?? "").slice(0, 200)
    }).pipe(
      Effect.catchTags({
        LoginRefused: (e) => Effect.fail(Unauthorized.of(e.message, "login_refused")),
        LoginThrottled: (e) =>
          addResponseHeader("retry-after", String(Math.max(1, Math.ceil(e.retryAfterSeconds)))).pipe(
            Effect.andThen(Effect.fail(TooManyRequests.of(e.message, e.retryAfterSeconds)))
          )
      }),
      Effect.catchTag("StorageError", toApiFailure)
    )
    if (withCookie) yield* setSessionCookie(request, result.cookie, result.expiresAt, yield* Clock.currentTimeMillis)
    return {
      cookie: result.cookie,
      body: {
        user: result.principal.userId,
        role: result.principal.role,
        login: Option.match(yield* answer(accounts.get(result.principal.userId)), {
          onNone: () => username,
          onSome: (a) => a.login
        }),
        csrfToken: result.csrfToken,
        expiresAt: result.expiresAt
      }
    }
  })

  return handlers
    .handle("login", ({ payload }) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const type = (header(request, "content-type") ?? "").split(";")[0]?.trim().toLowerCase()
        if (type !== "application/json") return yield* Forbidden.of("log in with a JSON body (content-type: application/json)", "content_type")
        if (!sameOrigin(request)) return yield* Forbidden.of("the login must come from this server's own page", "origin")
        return (yield* logIn(payload.username, payload.password, true)).body
      }))
    .handle("logout", () =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const cookie = request.cookies[SESSION_COOKIE]
        if (cookie !== undefined && cookie !== "") yield* answer(accounts.logout(cookie))
        yield* clearSessionCookie(request)
      }))
    .handle("me", () =>
      Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        const account = yield* answer(accounts.get(p.userId))
        return {
          user: p.userId,
          role: p.role,
          ...(Option.isSome(account) ? { login: account.value.login } : {}),
          ...(p.csrfToken === undefined ? {} : { csrfToken: p.csrfToken })
        }
      }))
    .handle("sessions", () =>
      Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        const all = yield* answer(accounts.listSessions(p.userId))
        return all.map((s) => ({ ...s, current: s.id === p.sessionId }))
      }))
    .handle("revokeSession", ({ params }) =>
      Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        const own = yield* answer(accounts.listSessions(p.userId))
        // Someone else's session is "not found" to a caller, whatever their role: this is "my sessions".
        if (!own.some((s) => s.id === params.id)) return yield* NotFound.of(`you have no browser session ${params.id}`)
        yield* answer(accounts.revokeSession(params.id))
      }))
    .handle("changePassword", ({ payload }) =>
      Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        // The name the account logs in with, which need not be the user id (Accounts: `login`).
        const name = Option.match(yield* answer(accounts.get(p.userId)), { onNone: () => p.userId, onSome: (a) => a.login })
        // The current password is checked by a login (under its rate limit); that session is ended at once.
        const check = yield* logIn(name, payload.currentPassword, false).pipe(
          Effect.catchIf((e) => e instanceof Unauthorized, () => Effect.fail(Forbidden.of("the current password is wrong", "wrong_password")))
        )
        yield* answer(accounts.logout(check.cookie))
        yield* answer(accounts.setPassword(p.userId, payload.newPassword))
        // Every session of the user ended with the change: this browser gets a fresh one.
        return (yield* logIn(name, payload.newPassword, true)).body
      }))
}))
