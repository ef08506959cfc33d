/**
 * A listener for a platform's webhook (issue 12, shared): one path, POST only, the body read up to
 * a cap (a larger one is refused with 413 before it is buffered), the answer given only when
 * `handle` is done — a platform that gets no 2xx delivers again, so a handler that answers after the
 * message is claimed loses nothing to a crash in between. Its connections have the limits of every
 * anna server (connectionLimits.ts): headers within 10 s, the whole request within 30 s, at most
 * WEBHOOK_MAX_CONNECTIONS open, WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS of them from one address.
 *
 * Scoped: the server listens while the scope is open and is closed with it (open connections too).
 */
import { Effect } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { ChannelStartFailed } from "../../../domain/channels/errors.ts"
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, limitedServer } from "./connectionLimits.ts"

/** The largest webhook body read (platforms' updates are a few KiB). */
export const WEBHOOK_MAX_BYTES = 1024 * 1024
/** Open connections at once; one beyond is closed (a platform delivers with a few). */
export const WEBHOOK_MAX_CONNECTIONS = 256
/** Open connections from one address (Telegram delivers with up to 40 by default). */
export const WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS = DEFAULT_MAX_CONNECTIONS_PER_ADDRESS

export interface WebhookRequest {
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

export interface WebhookAnswer {
  readonly status: number
  readonly body?: unknown
}

export interface WebhookOptions {
  readonly platform: string
  readonly host: string
  readonly port: number
  readonly path: string
  readonly handle: (request: WebhookRequest) => Effect.Effect<WebhookAnswer>
}

/** Listens until the scope closes; the address it listens on (port 0 = a free one). */
export const listenWebhook = (o: WebhookOptions) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const run = Effect.runPromiseWith(context)
    const server = limitedServer({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      maxConnections: WEBHOOK_MAX_CONNECTIONS,
      maxConnectionsPerAddress: WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS
    })
    server.on("request", (req, res) => {
      const answer = (a: WebhookAnswer) => {
        if (res.headersSent) return
        res.writeHead(a.status, { "content-type": "application/json" })
        res.end(JSON.stringify(a.body ?? {}))
      }
      const path = (req.url ?? "").split("?")[0]
      if (path !== o.path) return answer({ status: 404, body: { error: "not found" } })
      if (req.method !== "POST") return answer({ status: 405, body: { error: "POST only" } })
      const declared = Number(req.headers["content-length"] ?? "0")
      if (declared > WEBHOOK_MAX_BYTES) {
        answer({ status: 413, body: { error: "too large" } })
        req.destroy()
        return
      }
      const chunks: Array<Buffer> = []
      let total = 0
      req.on("data", (chunk: Buffer) => {
        total += chunk.length
        if (total > WEBHOOK_MAX_BYTES) {
          answer({ status: 413, body: { error: "too large" } })
          req.destroy()
          return
        }
        chunks.push(chunk)
      })
      req.on("end", () => {
        if (total > WEBHOOK_MAX_BYTES) return
        run(o.handle({ headers: req.headers, body: Buffer.concat(chunks) })).then(answer, () => answer({ status: 500 }))
      })
      req.on("error", () => req.destroy())
    })
    const address = yield* Effect.acquireRelease(
      Effect.callback<{ readonly host: string; readonly port: number }, ChannelStartFailed>((resume) => {
        const failed = (e: Error) =>
          resume(Effect.fail(new ChannelStartFailed({ channel: o.platform, reason: `its webhook cannot listen on ${o.host}:${o.port}: ${e.message}` })))
        server.once("error", failed)
        server.listen(o.port, o.host, () => {
          server.off("error", failed)
          const a = server.address()
          resume(Effect.succeed({ host: o.host, port: typeof a === "object" && a !== null ? a.port : o.port }))
        })
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    yield* Effect.logInfo(`${o.platform}: webhook listening on http://${address.host}:${address.port}${o.path}`)
    return address
  })
