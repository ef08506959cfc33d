/**
 * Slow and greedy clients against every server anna listens with (issue 23, item 7), through real
 * sockets: a client holding hundreds of slow connections from one address (a slowloris) must not
 * starve other clients. Connections from one address beyond its cap are closed at accept; a client
 * that trickles its headers is closed at the headers timeout (counted from its first byte, not
 * reset by each one); the freed places can be used again.
 *
 * The attacker connects from 127.0.0.1, the honest client from 127.0.0.2 (loopback is all of
 * 127/8 on Linux), so the two are different addresses to the server.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { request } from "node:http"
import { connect, type Socket } from "node:net"
import { HTTP_LIMIT_DEFAULTS } from "../../../src/domain/config/channel.ts"
import * as HttpChannel from "../../../src/layers/channels/HttpChannel.ts"
import { clientKey } from "../../../src/layers/channels/shared/connectionLimits.ts"
import { listenWebhook, WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS } from "../../../src/layers/channels/shared/webhook.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { fakeServices } from "../../support/httpChannelFakes.ts"

const ATTACKER = "127.0.0.1"
const HONEST = "127.0.0.2"

/** What a slow client sends, one byte at a time: a request line, then a header that never ends. */
const SLOW_BYTES = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "

interface Slow {
  readonly socket: Socket
  /** Resolves with what the server sent once it closed the connection. */
  readonly closed: Promise<string>
  readonly isClosed: () => boolean
}

/**
 * A connection from `from` that sends SLOW_BYTES a byte per tick (then "a" forever), never ending
 * its headers. Resolves once connected (or closed, if the server closed it first).
 */
const slowClient = (port: number, from: string, tick: (f: () => void) => void) =>
  new Promise<Slow>((ready) => {
    const socket = connect({ port, host: "127.0.0.1", localAddress: from })
    let received = ""
    let closed = false
    let sent = 0
    socket.setEncoding("utf8")
    socket.on("data", (d: string) => (received += d))
    socket.on("error", () => undefined)
    const done = new Promise<string>((resolve) =>
      socket.on("close", () => {
        closed = true
        resolve(received)
      })
    )
    const slow: Slow = { socket, closed: done, isClosed: () => closed }
    socket.on("connect", () => {
      tick(() => {
        if (!closed && socket.writable) socket.write(SLOW_BYTES[sent++] ?? "a")
      })
      ready(slow)
    })
    void done.then(() => ready(slow))
  })

/** One interval driving every slow client (the attacker's pace), stopped with the scope. */
const ticker = Effect.acquireRelease(
  Effect.sync(() => {
    const clients = new Set<() => void>()
    const timer = setInterval(() => {
      for (const f of clients) f()
    }, 50)
    return { timer, add: (f: () => void) => void clients.add(f) }
  }),
  ({ timer }) => Effect.sync(() => clearInterval(timer))
)

/** Opens `n` slow clients from `from`; every socket is destroyed when the scope closes. */
const slowClients = (port: number, from: string, n: number) =>
  Effect.gen(function*() {
    const tick = yield* ticker
    return yield* Effect.acquireRelease(
      Effect.promise(() => Promise.all(Array.from({ length: n }, () => slowClient(port, from, tick.add)))),
      (all) =>
        Effect.sync(() => {
          for (const s of all) s.socket.destroy()
        })
    )
  })

/** Resolves once `count` of the clients have been closed by the server. */
const whenClosed = (clients: ReadonlyArray<Slow>, count: number) =>
  Effect.promise(() =>
    new Promise<void>((done) => {
      let n = 0
      if (count === 0) return done()
      for (const c of clients) {
        void c.closed.then(() => {
          if (++n === count) done()
        })
      }
    })
  )

/** One request on a fresh connection from `from`: its status, or the error that ended it. */
const send = (port: number, from: string, method: string, path: string, body?: string) =>
  Effect.promise(() =>
    new Promise<number | string>((done) => {
      const req = request({
        host: "127.0.0.1",
        port,
        localAddress: from,
        method,
        path,
        agent: false,
        headers: { authorization: "Bearer tok-alice", "content-type": "application/json" }
      }, (res) => {
        res.resume()
        res.on("end", () => done(res.statusCode ?? 0))
        res.on("error", (e) => done(e.message))
      })
      req.on("error", (e) => done(e.message))
      req.end(body)
    })
  )

const completion = (port: number, from: string, i: number) =>
  send(port, from, "POST", "/v1/chat/completions", JSON.stringify({ model: "default", messages: [{ role: "user", content: `hello ${i}` }] }))

const Defaults = HttpChannel.layer({ port: 0 }).pipe(Layer.provide(fakeServices))

layer(Defaults, { excludeTestServices: true })("http server: a slowloris from one address (default limits)", (it) => {
  it.effect("600 slow sockets: those past the per-address cap are closed at once, and 30 authenticated requests from another address all succeed", () =>
    Effect.gen(function*() {
      const { port } = yield* HttpAddress
      const perAddress = HTTP_LIMIT_DEFAULTS.max_connections_per_address
      assert.isBelow(perAddress, HTTP_LIMIT_DEFAULTS.max_connections, "one address cannot fill the server")
      const slow = yield* slowClients(port, ATTACKER, 600)
      // The honest client connects after the attacker's 600 were accepted (or refused).
      const statuses = yield* Effect.all(Array.from({ length: 30 }, (_, i) => completion(port, HONEST, i)), { concurrency: "unbounded" })
      assert.deepStrictEqual(statuses, Array.from({ length: 30 }, () => 200))
      yield* whenClosed(slow, 600 - perAddress)
      // Refused at accept: closed without a byte of answer; the cap's worth are still held (timed by the headers timeout).
      const refused = yield* Effect.promise(() => Promise.all(slow.filter((s) => s.isClosed()).map((s) => s.closed)))
      assert.strictEqual(refused.length, 600 - perAddress)
      assert.isTrue(refused.every((r) => r === ""))
      assert.strictEqual(slow.filter((s) => !s.isClosed()).length, perAddress)
    }))
})

describe("http channel limits: defaults", () => {
  it("a short headers timeout and a per-address cap below the total", () => {
    assert.strictEqual(HTTP_LIMIT_DEFAULTS.headers_timeout_seconds, 10)
    assert.strictEqual(HTTP_LIMIT_DEFAULTS.max_connections_per_address, 64)
    assert.strictEqual(HTTP_LIMIT_DEFAULTS.max_connections, 512)
  })

  it("an IPv4 address counts as itself (also IPv4-mapped), an IPv6 one by its /64", () => {
    assert.strictEqual(clientKey("203.0.113.7"), "203.0.113.7")
    assert.strictEqual(clientKey("::ffff:203.0.113.7"), "203.0.113.7")
    assert.strictEqual(clientKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64")
    assert.strictEqual(clientKey("2001:0db8:0001:0002:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64")
    assert.strictEqual(clientKey("2001:db8::5"), "2001:db8:0:0::/64")
    assert.strictEqual(clientKey("::1"), "0:0:0:0::/64")
    assert.strictEqual(clientKey("fe80::1%eth0"), "fe80:0:0:0::/64")
  })
})

const Short = HttpChannel.layer({ port: 0, requestTimeoutSeconds: 1, headersTimeoutSeconds: 1, maxConnectionsPerAddress: 8 }).pipe(
  Layer.provide(fakeServices)
)

layer(Short, { excludeTestServices: true })("http server: slow headers (1 s timeout, 8 per address)", (it) => {
  it.effect("sockets trickling their headers are answered 408 and closed at the headers timeout; the address may connect again", () =>
    Effect.gen(function*() {
      const { port } = yield* HttpAddress
      const slow = yield* slowClients(port, ATTACKER, 8 + 4)
      // The 4 past the cap go at once; the 8 kept go at the timeout although they keep sending.
      yield* whenClosed(slow, 12)
      const answers = yield* Effect.promise(() => Promise.all(slow.map((s) => s.closed)))
      assert.strictEqual(answers.filter((a) => a === "").length, 4)
      assert.strictEqual(answers.filter((a) => /^HTTP\/1\.1 408 /.test(a)).length, 8)
      // Closed connections no longer count against the address.
      assert.strictEqual(yield* send(port, ATTACKER, "GET", "/health"), 200)
    }))
})

describe("webhook listener: a slowloris from one address", () => {
  it.live("connections past the per-address cap are closed at once; another address is still served", () =>
    Effect.scoped(Effect.gen(function*() {
      const { port } = yield* listenWebhook({
        platform: "test",
        host: "127.0.0.1",
        port: 0,
        path: "/hook",
        handle: () => Effect.succeed({ status: 200, body: { ok: true } })
      })
      const cap = WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS
      const slow = yield* slowClients(port, ATTACKER, cap + 10)
      assert.strictEqual(yield* send(port, HONEST, "POST", "/hook", "{}"), 200)
      yield* whenClosed(slow, 10)
      assert.strictEqual(slow.filter((s) => s.isClosed()).length, 10)
      assert.strictEqual(slow.filter((s) => !s.isClosed()).length, cap)
    })))
})
