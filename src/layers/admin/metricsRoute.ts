/**
 * `GET /metrics`: every metric of this gateway (src/domain/observability/metrics.ts) in the
 * Prometheus text format (`PrometheusMetrics.format` of effect/observability), on the gateway's HTTP
 * server beside the admin API, for an admin only — an admin's bearer token (what a Prometheus scrape
 * config sends) or an admin's console session — checked as the admin API checks (AdminAuth):
 * 401 without valid credentials, 403 for a `user` account, with the API's `{error: {code, message}}`.
 *
 * Not an endpoint of the API's declaration: it lives outside `/api` (where scrapers look for it)
 * and answers text, not JSON.
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { Forbidden, Unauthorized } from "../../domain/admin/security.ts"
import { Accounts } from "../../services/Accounts.ts"
import { authenticator } from "./AdminAuth.ts"

export const METRICS_PATH = "/metrics"

/** The Prometheus text exposition format, version 0.0.4. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** A refusal as the API answers it (the same status and body). */
const refusal = (e: Unauthorized | Forbidden) =>
  Effect.succeed(HttpServerResponse.jsonUnsafe({ error: e.error }, { status: e instanceof Unauthorized ? 401 : 403 }))

export const layer = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const authenticate = authenticator(yield* Accounts)

  const scrape = Effect.fn("Metrics.scrape")(function*(request: HttpServerRequest.HttpServerRequest) {
    const principal = yield* authenticate(request)
    if (principal.role !== "admin") return yield* Forbidden.of("the metrics are for an admin account")
    return HttpServerResponse.text(yield* PrometheusMetrics.format(), { contentType: CONTENT_TYPE })
  }, Effect.catch(refusal))

  yield* router.add("GET", METRICS_PATH, scrape)
}))
