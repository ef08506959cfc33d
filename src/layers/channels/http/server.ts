/**
 * The gateway's one HTTP server: `effect/http`'s router served by `@effect/platform-node`'s Node
 * server on {host, port} (default 127.0.0.1:8787). Channels and the admin UI contribute route
 * layers (`HttpRouter.add`/`use`), merged and served together; a request no route matches gets a
 * 404 with an OpenAI-style error body (the OpenAI-compatible API is the main client), unless
 * `notFound` answers it (the web console's files and pages).
 *
 * Lifetime is the layer's scope: on close the server stops accepting connections and lets requests
 * in flight (a streamed answer, say) finish for up to `gracefulShutdown` (default 10 s). A handler
 * still waiting then (on a turn, say) is told so by `ShutdownDeadline` and answers with an error of
 * its own, rather than being cut off with an empty response; what is left 5 s later is interrupted.
 * Per-request logs are off (a chatty client would flood the gateway's log); the bound address is
 * logged once and provided as `HttpAddress`. Every request counts in `anna_http_requests_total` and
 * `anna_http_request_duration_seconds`, labelled with its route's pattern.
 *
 * Slow or greedy clients are bounded (`ServeOptions`; the http channel's `request_timeout_seconds`,
 * `headers_timeout_seconds`, `max_connections`, `max_connections_per_address`; see
 * ../shared/connectionLimits.ts): a request must arrive whole within its timeout (else 408 and
 * close), and connections beyond the caps (in all, or from one address) are closed as they come.
 */
import { Context, Deferred, Duration, Effect, Exit, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as NetAddress from "effect/net/NetAddress"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { HttpAddress } from "../../../services/HttpAddress.ts"
import { HTTP_DEFAULT_HOST, HTTP_DEFAULT_PORT, HTTP_LIMIT_DEFAULTS } from "../../../domain/config/channel.ts"
import * as Metrics from "../../../domain/observability/metrics.ts"
import { limitedServer } from "../shared/connectionLimits.ts"
import { ApiError, errorBody } from "./openaiWire.ts"

export const DEFAULT_HOST = HTTP_DEFAULT_HOST
export const DEFAULT_PORT = HTTP_DEFAULT_PORT

export interface ServeOptions {
  /** Interface to bind (default 127.0.0.1: local clients only). */
  readonly host?: string | undefined
  /** Port (default 8787; 0 = any free port, see `HttpAddress`). */
  readonly port?: number | undefined
  /** How long requests in flight may run on after close (default 10 s); see `ShutdownDeadline`. */
  readonly gracefulShutdown?: Duration.Input | undefined
  /**
   * Seconds a client has to send a whole request (default 60); then it gets 408 and is closed. Node
   * stops this clock once the request is received, so a long streamed answer is never cut by it.
   */
  readonly requestTimeoutSeconds?: number | undefined
  /** Seconds a client has to send a request's headers (default 10; at most the request timeout). */
  readonly headersTimeoutSeconds?: number | undefined
  /** Connections open at once (default 512); Node closes any connection beyond it at once. */
  readonly maxConnections?: number | undefined
  /** Connections open at once from one client address (default 64); one beyond is closed at once. */
  readonly maxConnectionsPerAddress?: number | undefined
  /**
   * Answers what no route takes (default: a 404 with an OpenAI-style error body). The web console
   * answers GETs of its files and pages here; a router cannot hold a GET wildcard beside this one.
   */
  readonly notFound?: ((request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>) | undefined
}

/**
 * The shutdown deadline of the server a handler runs in: `reached` resolves once the server is
 * closing and requests in flight have had their grace (`gracefulShutdown`), and never before the
 * server closes. A handler still waiting then should answer now (its error, not nothing).
 */
export class ShutdownDeadline extends Context.Service<ShutdownDeadline, {
  readonly reached: Effect.Effect<void>
}>()("anna/http/ShutdownDeadline") {}

/** Completed when the server starts closing (one per server). */
class Closing extends Context.Service<Closing, Deferred.Deferred<void>>()("anna/http/Closing") {}

/** How long after the grace the server interrupts what is still running: handlers answer within it. */
const INTERRUPT_AFTER_GRACE = Duration.seconds(5)

/** An OpenAI-style error response (with `Retry-After` when the error carries one). */
export const errorResponse = (e: ApiError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(errorBody(e), {
    status: e.status,
    ...(e.retryAfterSeconds === undefined ? {} : { headers: { "retry-after": String(e.retryAfterSeconds) } })
  })

const pathOf = (url: string): string => {
  const q = url.search(/[?#]/)
  return q < 0 ? url : url.slice(0, q)
}

/** The 404 of a request no route takes. */
export const notFoundResponse = (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse =>
  errorResponse(ApiError.notFound(request.method, pathOf(request.url)))

/**
 * Counts and times every request by its route's pattern (`/api/agents/:id`, `/*` for what no other
 * route takes), never its path; the status is the response's, or the one its failure becomes.
 */
const requestMetrics = HttpRouter.middleware((httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { route } = yield* HttpRouter.RouteContext
    // The request's span (when traces are exported) says its route's pattern, never the path.
    yield* Effect.annotateCurrentSpan("http.route", route.path)
    return yield* Metrics.timed(httpEffect, (seconds, exit) =>
      Effect.flatMap(
        Exit.isSuccess(exit) ? Effect.succeed(exit.value.status) : Effect.map(HttpServerError.causeResponse(exit.cause), ([response]) => response.status),
        (status) => Metrics.httpRequest({ method: request.method, route: route.path, status }, seconds)
      ))
  })
).layer

/** Anything no other route takes (static routes and parameters win over the wildcard). */
const fallback = (notFound: ServeOptions["notFound"]) =>
  HttpRouter.add("*", "/*", (request) => notFound === undefined ? Effect.succeed(notFoundResponse(request)) : notFound(request))

const addressOf = (address: NetAddress.SocketAddress) => {
  const url = HttpServer.formatAddress(address).replace(/\/$/, "")
  return address._tag === "UnixPathAddress"
    ? HttpAddress.of({ host: address.path, port: 0, url })
    : HttpAddress.of({ host: NetAddress.formatIp(address.address), port: address.port, url })
}

const addressLayer = Layer.effect(
  HttpAddress,
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const address = addressOf(server.address)
    yield* Effect.logInfo(`HTTP server listening on ${address.url}`)
    return address
  })
)

/**
 * A Node server with the limits of `ServeOptions`.
 *
 * Node's `close()` closes the connections idle at that moment and then waits for the others to end;
 * a keep-alive connection whose answer finishes later stays open until the client drops it (seconds).
 * So once closing, each connection is closed as soon as its answer is done.
 */
const makeServer = (options: ServeOptions) => () => {
  const server = limitedServer({
    requestTimeoutMs: (options.requestTimeoutSeconds ?? HTTP_LIMIT_DEFAULTS.request_timeout_seconds) * 1000,
    headersTimeoutMs: (options.headersTimeoutSeconds ?? HTTP_LIMIT_DEFAULTS.headers_timeout_seconds) * 1000,
    maxConnections: options.maxConnections ?? HTTP_LIMIT_DEFAULTS.max_connections,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? HTTP_LIMIT_DEFAULTS.max_connections_per_address
  })
  server.on("request", (_request, response) => {
    response.once("finish", () => {
      if (!server.listening) setImmediate(() => server.closeIdleConnections())
    })
  })
  return server
}

/**
 * Serves the given route layers on one Node HTTP server; provides the bound address. The routes'
 * handlers may read `ShutdownDeadline`.
 */
export const serve = <E, R>(routes: Layer.Layer<never, E, R>, options: ServeOptions = {}) => {
  const grace = Duration.fromInputUnsafe(options.gracefulShutdown ?? Duration.seconds(10))
  const closing = Layer.effect(Closing, Deferred.make<void>())
  const deadline = Layer.effect(
    ShutdownDeadline,
    Effect.gen(function*() {
      const closing = yield* Closing
      return ShutdownDeadline.of({ reached: Effect.andThen(Deferred.await(closing), Effect.sleep(grace)) })
    })
  )
  // Built after the server, so released before it: the deadline's clock starts as the server
  // starts closing (the server's finalizer then waits for the requests in flight).
  const startClock = Layer.effectDiscard(Effect.gen(function*() {
    const closing = yield* Closing
    yield* Effect.addFinalizer(() => Deferred.succeed(closing, undefined))
  }))
  return startClock.pipe(
    Layer.provideMerge(Layer.merge(
      HttpRouter.serve(Layer.merge(routes, fallback(options.notFound)).pipe(Layer.provide(requestMetrics)), {
        disableLogger: true,
        disableListenLog: true
      }),
      addressLayer
    )),
    Layer.provide(Layer.merge(
      NodeHttpServer.layerServer(makeServer(options), {
        host: options.host ?? DEFAULT_HOST,
        port: options.port ?? DEFAULT_PORT,
        gracefulShutdownTimeout: Duration.sum(grace, INTERRUPT_AFTER_GRACE)
      }),
      deadline
    )),
    Layer.provide(closing)
  )
}
