/**
 * The gateway's one HTTP server: `effect/http`'s router served by `@effect/platform-node`'s Node
 * server on {host, port} (default 127.0.0.1:8787). Channels and the admin UI contribute route
 * layers (`HttpRouter.add`/`use`), merged and served together; a request no route matches gets a
 * 404 with an OpenAI-style error body (the OpenAI-compatible API is the main client).
 *
 * Lifetime is the layer's scope: on close the server stops accepting connections, lets requests in
 * flight (a streamed answer, say) finish for up to `gracefulShutdown` (default 10 s), then
 * interrupts what is left. Per-request logs are off (a chatty client would flood the gateway's
 * log); the bound address is logged once and provided as `HttpAddress`.
 */
import { Duration, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import * as NetAddress from "effect/net/NetAddress"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { createServer } from "node:http"
import { HttpAddress } from "../../services/HttpAddress.ts"
import { ApiError, errorBody } from "./openaiWire.ts"

export const DEFAULT_HOST = "127.0.0.1"
export const DEFAULT_PORT = 8787

export interface ServeOptions {
  /** Interface to bind (default 127.0.0.1: local clients only). */
  readonly host?: string | undefined
  /** Port (default 8787; 0 = any free port, see `HttpAddress`). */
  readonly port?: number | undefined
  /** How long requests in flight may run on after close (default 10 s). */
  readonly gracefulShutdown?: Duration.Input | undefined
}

/** An OpenAI-style error response. */
export const errorResponse = (e: ApiError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(errorBody(e), { status: e.status })

const pathOf = (url: string): string => {
  const q = url.search(/[?#]/)
  return q < 0 ? url : url.slice(0, q)
}

/** Anything no other route takes (static routes and parameters win over the wildcard). */
const fallback = HttpRouter.add("*", "/*", (request) => Effect.succeed(errorResponse(ApiError.notFound(request.method, pathOf(request.url)))))

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
 * Node's `close()` closes the connections idle at that moment and then waits for the others to end;
 * a keep-alive connection whose answer finishes later stays open until the client drops it (seconds).
 * So once closing, each connection is closed as soon as its answer is done.
 */
const makeServer = () => {
  const server = createServer()
  server.on("request", (_request, response) => {
    response.once("finish", () => {
      if (!server.listening) setImmediate(() => server.closeIdleConnections())
    })
  })
  return server
}

/** Serves the given route layers on one Node HTTP server; provides the bound address. */
export const serve = <E, R>(routes: Layer.Layer<never, E, R>, options: ServeOptions = {}) =>
  Layer.merge(
    HttpRouter.serve(Layer.merge(routes, fallback), { disableLogger: true, disableListenLog: true }),
    addressLayer
  ).pipe(
    Layer.provide(NodeHttpServer.layerServer(makeServer, {
      host: options.host ?? DEFAULT_HOST,
      port: options.port ?? DEFAULT_PORT,
      gracefulShutdownTimeout: options.gracefulShutdown ?? Duration.seconds(10)
    }))
  )
