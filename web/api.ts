/**
 * The console's API client: `HttpApiClient` built from the same declaration the gateway serves
 * (src/domain/admin/api.ts), so every request and response is typed and Schema-checked from the
 * server's own schemas. Requests go same-origin with the session cookie (HttpOnly, never read
 * here); the CSRF token the login (or GET /api/auth/me) returns rides in `x-csrf-token` on every
 * state-changing request.
 */
import { Cause, Effect, Exit } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { AdminApi } from "../src/domain/admin/api.ts"
import { CSRF_HEADER } from "../src/domain/admin/security.ts"

let csrfToken: string | undefined

/** Remembers the CSRF token of this browser session (from login or `auth.me`). */
export const setCsrfToken = (token: string | undefined) => {
  csrfToken = token
}
export const getCsrfToken = () => csrfToken

const SAFE = new Set(["GET", "HEAD", "OPTIONS"])

const makeClient = HttpApiClient.make(AdminApi, {
  baseUrl: location.origin,
  transformClient: (client) =>
    HttpClient.mapRequest(client, (request) =>
      SAFE.has(request.method) || csrfToken === undefined ? request : HttpClientRequest.setHeader(request, CSRF_HEADER, csrfToken)
    )
})

export type Api = Effect.Success<typeof makeClient>

/** The client (built once). */
export const api: Api = Effect.runSync(makeClient.pipe(Effect.provide(FetchHttpClient.layer)))

/** A failed call, as the console shows it. */
export class ApiError extends Error {
  readonly code: string
  readonly status: number | undefined
  constructor(code: string, message: string, status?: number) {
    super(message)
    this.code = code
    this.status = status
  }
}

/** Listeners told when a call comes back 401 (the session ended): the app goes back to login. */
const onUnauthorized = new Set<() => void>()
export const whenUnauthorized = (f: () => void) => {
  onUnauthorized.add(f)
  return () => onUnauthorized.delete(f)
}

const toApiError = (failure: unknown): ApiError => {
  if (failure instanceof ApiError) return failure
  if (typeof failure === "object" && failure !== null) {
    const f = failure as { _tag?: string; error?: { code?: string; message?: string }; message?: string }
    if (f.error !== undefined && typeof f.error.message === "string") {
      const status = f._tag === "Unauthorized" ? 401 : f._tag === "Forbidden" ? 403 : undefined
      return new ApiError(f.error.code ?? String(f._tag ?? "error"), f.error.message, status)
    }
    if (typeof f.message === "string" && f.message !== "") return new ApiError(String(f._tag ?? "error"), f.message)
  }
  return new ApiError("error", String(failure))
}

/** Runs one call of the typed client; fails with an ApiError carrying the server's message. */
export const call = async <A, E>(f: (client: Api) => Effect.Effect<A, E>, signal?: AbortSignal): Promise<A> => {
  const exit = await Effect.runPromiseExit(f(api), { signal })
  if (Exit.isSuccess(exit)) return exit.value
  if (signal?.aborted === true) throw new ApiError("aborted", "stopped")
  const error = toApiError(Cause.squash(exit.cause))
  if (error.status === 401) for (const g of onUnauthorized) g()
  throw error
}
