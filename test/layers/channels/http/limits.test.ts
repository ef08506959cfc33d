/**
 * The HTTP server's limits: a client that sends headers and half a body (or half its headers), then
 * stalls, is answered 408 and closed; a streamed answer that outlives the request timeout is not cut;
 * connections past the cap are closed at once; the settings are validated.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Layer, Result } from "effect"
import { connect, type Socket } from "node:net"
import { decodeChannelSettings, type HttpSettings, httpOptions, mergeChannelConfig } from "../../../../src/domain/config/channel.ts"
import * as HttpChannel from "../../../../src/layers/channels/HttpChannel.ts"
import { HttpAddress } from "../../../../src/services/HttpAddress.ts"
import { control, fakeServices } from "../../../support/httpChannelFakes.ts"

/** A raw connection and everything it received until the server closed it. */
const open = (port: number) =>
  Effect.promise(() =>
    new Promise<{ readonly socket: Socket; readonly closed: Promise<string> }>((ready) => {
      const socket = connect(port, "127.0.0.1")
      let received = ""
      socket.setEncoding("utf8")
      socket.on("data", (d: string) => (received += d))
      socket.on("error", () => undefined)
      const closed = new Promise<string>((done) => socket.on("close", () => done(received)))
      socket.on("connect", () => ready({ socket, closed }))
    })
  )

const HALF_A_BODY = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-alice\r\n" +
  "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":\"default\""

/** A client that sends half a request and stalls; resolves with what the server sent before closing. */
const stalledClient = (port: number, partial: string) =>
  Effect.gen(function*() {
    const { socket, closed } = yield* open(port)
    socket.write(partial)
    return yield* Effect.promise(() => closed)
  })

/** The limits the server is started with for a stored config. */
const limits = (config: Readonly<Record<string, unknown>>) => {
  const decoded = decodeChannelSettings<HttpSettings>("http", config)
  if (decoded._tag === "Failure") throw new Error(decoded.failure)
  const { requestTimeoutSeconds, headersTimeoutSeconds, maxConnections, maxConnectionsPerAddress } = httpOptions(decoded.success)
  return { requestTimeoutSeconds, headersTimeoutSeconds, maxConnections, maxConnectionsPerAddress }
}

describe("http channel limits in the channel settings", () => {
  it("accepts whole numbers in range and refuses the rest with the key named", () => {
    const ok = mergeChannelConfig("http", {}, {
      request_timeout_seconds: "90",
      headers_timeout_seconds: "10",
      max_connections: "64",
      max_connections_per_address: "16"
    })
    assert.deepStrictEqual(ok, { config: { request_timeout_seconds: 90, headers_timeout_seconds: 10, max_connections: 64, max_connections_per_address: 16 } })
    if ("config" in ok) {
      assert.deepStrictEqual(limits(ok.config), { requestTimeoutSeconds: 90, headersTimeoutSeconds: 10, maxConnections: 64, maxConnectionsPerAddress: 16 })
    }
    assert.deepStrictEqual(limits({}), { requestTimeoutSeconds: 60, headersTimeoutSeconds: 10, maxConnections: 512, maxConnectionsPerAddress: 64 })
    assert.deepStrictEqual(mergeChannelConfig("http", {}, { max_connections_per_address: "none" }), {
      problem: 'channel http: max_connections_per_address must be a whole number from 1 to 100000 (open connections at once from one client address), got "none"'
    })
    assert.deepStrictEqual(mergeChannelConfig("http", {}, { max_connections: "0" }), {
      problem: 'channel http: max_connections must be a whole number from 1 to 100000 (open connections at once), got "0"'
    })
    assert.deepStrictEqual(mergeChannelConfig("http", {}, { request_timeout_seconds: "soon" }), {
      problem: 'channel http: request_timeout_seconds must be a whole number from 1 to 3600 (seconds to receive a whole request), got "soon"'
    })
    assert.deepStrictEqual(mergeChannelConfig("http", { port: 80, max_connections: 64 }, { max_connections: "" }), { config: { port: 80 } })
    // The default headers timeout follows a shorter request timeout; one set longer is refused.
    assert.deepStrictEqual(limits({ request_timeout_seconds: 5 }).headersTimeoutSeconds, 5)
    assert.deepStrictEqual(mergeChannelConfig("http", { request_timeout_seconds: 10 }, { headers_timeout_seconds: "20" }), {
      problem: "channel http: headers_timeout_seconds (20) must not exceed request_timeout_seconds (10)"
    })
    // A stored config that was never checked (edited by hand) fails at the gateway the same way.
    assert.deepStrictEqual(decodeChannelSettings("http", { port: "eighty" }), Result.fail('channel http: port must be a whole number from 0 to 65535 (0 = any free port), got "eighty"'))
  })
})

const Timeouts = HttpChannel.layer({ port: 0, requestTimeoutSeconds: 1, headersTimeoutSeconds: 1 }).pipe(Layer.provide(fakeServices))

layer(Timeouts, { excludeTestServices: true })("http server timeouts", (it) => {
  it.effect("a client that sends headers and half its body, then stalls, gets 408 and is closed", () =>
    Effect.gen(function*() {
      const { port } = yield* HttpAddress
      assert.match(yield* stalledClient(port, HALF_A_BODY), /^HTTP\/1\.1 408 /)
    }))

  it.effect("a client that stalls in the middle of its headers gets 408 and is closed", () =>
    Effect.gen(function*() {
      const { port } = yield* HttpAddress
      assert.match(yield* stalledClient(port, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "), /^HTTP\/1\.1 408 /)
    }))

  it.effect("a streamed answer that outlives the request timeout is not cut", () =>
    Effect.gen(function*() {
      const { port, url } = yield* HttpAddress
      control.gate = Deferred.makeUnsafe<void>()
      const reader = yield* Effect.promise(async () => {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: "Bearer tok-alice", "content-type": "application/json" },
          body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "gate" }], stream: true })
        })
        if (res.body === null) throw new Error("no body")
        return res.body.pipeThrough(new TextDecoderStream()).getReader()
      })
      const readUntil = (needle: string) =>
        Effect.promise(async () => {
          let text = ""
          while (!text.includes(needle)) {
            const { done, value } = await reader.read()
            if (done) return text
            text += value
          }
          return text
        })
      assert.include(yield* readUntil('"before"'), '"before"')
      // A client that connected after the stream started is timed out: the stream has now been open
      // longer than the request timeout, and the server's timeout sweep has run since.
      assert.match(yield* stalledClient(port, HALF_A_BODY), /^HTTP\/1\.1 408 /)
      yield* Deferred.succeed(control.gate, undefined)
      const rest = yield* readUntil("data: [DONE]")
      assert.include(rest, '"after"')
      assert.include(rest, "data: [DONE]")
    }))
})

const Capped = HttpChannel.layer({ port: 0, maxConnections: 1 }).pipe(Layer.provide(fakeServices))

layer(Capped, { excludeTestServices: true })("http server connection cap", (it) => {
  it.effect("a connection past the cap is closed without an answer", () =>
    Effect.gen(function*() {
      const { port } = yield* HttpAddress
      const first = yield* open(port)
      // The first connection is known to the server once it has answered on it (keep-alive keeps it).
      const answered = new Promise<void>((done) => first.socket.once("data", () => done()))
      first.socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
      yield* Effect.promise(() => answered)
      const second = yield* open(port)
      second.socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
      assert.strictEqual(yield* Effect.promise(() => second.closed), "")
      first.socket.destroy()
    }))
})
