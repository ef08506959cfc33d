/**
 * Small HTTP helpers of the admin API's layers: request headers, whether the request came over
 * https, the session cookie's attributes, the login's same-origin check.
 */
import { Duration, Effect, Option } from "effect"
import { Headers, HttpEffect, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { SESSION_COOKIE } from "../../domain/admin/security.ts"

export const header = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined =>
  Option.getOrUndefined(Headers.get(request.headers, name))

/** Whether the client reached us over https (directly, or through a proxy that says so). */
export const overHttps = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.protocol === "https" ||
  (header(request, "x-forwarded-proto") ?? "").split(",")[0]?.trim().toLowerCase() === "https"

/** The session cookie: HttpOnly, SameSite=Strict, Path=/, Max-Age to its expiry, Secure over https. */
export const setSessionCookie = (request: HttpServerRequest.HttpServerRequest, value: string, expiresAt: number, now: number) =>
  HttpEffect.appendPreResponseHandler((_req, response) =>
    Effect.orDie(HttpServerResponse.setCookie(response, SESSION_COOKIE, value, {
      httpOnly: true,
      sameSite: "strict",
      path: "/",
      maxAge: Duration.seconds(Math.max(0, Math.floor((expiresAt - now) / 1000))),
      secure: overHttps(request)
    }))
  )

/** Tells the browser to forget the session cookie. */
export const clearSessionCookie = (request: HttpServerRequest.HttpServerRequest) =>
  HttpEffect.appendPreResponseHandler((_req, response) =>
    Effect.orDie(HttpServerResponse.setCookie(response, SESSION_COOKIE, "", {
      httpOnly: true,
      sameSite: "strict",
      path: "/",
      maxAge: Duration.zero,
      secure: overHttps(request)
    }))
  )

/** Adds a response header (Retry-After, say) to whatever the endpoint answers. */
export const addResponseHeader = (name: string, value: string) =>
  HttpEffect.appendPreResponseHandler((_req, response) => Effect.succeed(HttpServerResponse.setHeader(response, name, value)))

/**
 * Whether an `Origin` header (when sent) names this server: same scheme, host and port as the
 * request's `Host` (and the forwarded proto).
 */
export const sameOrigin = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const origin = header(request, "origin")
  if (origin === undefined) return true
  const host = header(request, "x-forwarded-host") ?? header(request, "host")
  if (host === undefined) return false
  try {
    const url = new URL(origin)
    return url.host.toLowerCase() === host.split(",")[0]?.trim().toLowerCase() && url.protocol === (overHttps(request) ? "https:" : "http:")
  } catch {
    return false
  }
}
