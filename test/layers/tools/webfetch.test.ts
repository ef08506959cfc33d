/**
 * The webfetch tool against a real HTTP server on 127.0.0.1, through the agent's real plugin
 * configuration in SQLite: `allow_private=true` relaxes the guard for the page tests (the only way
 * it is relaxed — no environment variable, no test-only path). Without it, the same server is refused:
 * directly, through a host name that resolves to it (the resolver is injected), through a redirect
 * from an allowed host, and when one of several resolved addresses is private.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll } from "vitest"
import type { ToolError } from "../../../src/domain/tool.ts"
import * as SqlitePluginStore from "../../../src/layers/config/SqlitePluginStore.ts"
import { webfetchTool, type WebFetchOptions } from "../../../src/layers/tools/webfetch.ts"
import type { Resolver } from "../../../src/layers/webfetch/guardedGet.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import { sqliteTemp } from "../../support/db.ts"

const ARTICLE = `<!doctype html><html><head><title>Tides of the North Sea</title></head><body>
<nav><a href="/">Home</a> | <a href="/shop">Shop</a> | <a href="/login">Log in</a> NAVIGATION-BOILERPLATE</nav>
<div class="sidebar"><h3>Popular</h3><ul><li><a href="/x">Something else</a></li></ul></div>
<article><h1>Tides of the North Sea</h1>
<p>The tides of the North Sea are driven by the Atlantic, entering from the north and through the Channel. Amphidromic points
rotate the tidal wave counter-clockwise around the basin, so that high water comes hours apart along the coasts.</p>
<p>See <a href="/maps/amphidromes.html">the map of amphidromes</a> and the <a href="https://example.org/tables">official tables</a>
for details. The tidal range is smallest near the amphidromic points and largest in the Wash and the German Bight.</p>
<p>Storm surges add to the tide when north-westerly gales push water into the southern basin, as in 1953.</p>
<img src="img/wave.png" alt="tidal wave"></article>
<footer>Copyright 2026 FOOTER-BOILERPLATE · <a href="/privacy">Privacy</a></footer></body></html>`

const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000100000000808060000001ff3ff610000000a49444154789c6300010000050001" +
    "0d0a2db40000000049454e44ae426082",
  "hex"
)

const bytes = (...parts: ReadonlyArray<string | ReadonlyArray<number>>) =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))))

let server: Server
let base = ""
let hanging: () => void = () => {}
let hangArrived = new Promise<void>((done) => (hanging = done))
const openSockets = new Set<import("node:net").Socket>()

const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  "/article": (_q, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(ARTICLE),
  "/latin1": (_q, res) =>
    res.writeHead(200, { "content-type": "text/plain; charset=ISO-8859-1" }).end(bytes("caf", [0xe9], " cr", [0xe8], "me br", [0xfb], "l", [0xe9], "e")),
  // no charset in the header: the <meta charset> says Shift_JIS (日本語 = 93FA 967B 8CEA)
  "/sjis": (_q, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end(
      bytes(`<html><head><meta charset="Shift_JIS"><title>t</title></head><body><p>`, [0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea], "</p></body></html>")
    ),
  // http-equiv form, GBK (中文 = D6D0 CEC4)
  "/gbk": (_q, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end(
      bytes(`<html><head><meta http-equiv="Content-Type" content="text/html; charset=gbk"></head><body><p>`, [0xd6, 0xd0, 0xce, 0xc4], "</p></body></html>")
    ),
  "/weird-charset": (_q, res) => res.writeHead(200, { "content-type": "text/plain; charset=x-klingon" }).end("plain ascii"),
  "/png": (_q, res) => res.writeHead(200, { "content-type": "image/png", "content-length": PNG.length }).end(PNG),
  "/png-unsized": (_q, res) => {
    res.writeHead(200, { "content-type": "image/png" })
    res.end(PNG)
  },
  "/json": (_q, res) => res.writeHead(200, { "content-type": "application/json" }).end(`{"a":1,"b":[true,"x"]}`),
  "/gzip": (_q, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-encoding": "gzip" }).end(gzipSync(ARTICLE)),
  "/huge": (_q, res) => {
    res.writeHead(200, { "content-type": "text/plain" })
    const chunk = "y".repeat(64 * 1024)
    let sent = 0
    const more = () => {
      while (sent < 64 && !res.destroyed) {
        sent++
        if (!res.write(chunk)) return res.once("drain", more)
      }
      res.end()
    }
    more()
  },
  "/hang": () => hanging(),
  "/loop": (_q, res) => res.writeHead(302, { location: "/loop" }).end(),
  "/redirect": (req, res) => {
    const to = new URL(req.url ?? "/", "http://x").searchParams.get("to") ?? "/"
    res.writeHead(302, { location: to }).end()
  }
}

const startServer = () =>
  new Promise<void>((done) => {
    server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0] ?? "/"
      const route = routes[path]
      if (route === undefined) return res.writeHead(404, { "content-type": "text/plain" }).end("not found")
      route(req, res)
    })
    server.on("connection", (s) => {
      openSockets.add(s)
      s.on("close", () => openSockets.delete(s))
    })
    server.listen(0, "127.0.0.1", () => {
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      done()
    })
  })

beforeAll(startServer)
afterAll(() =>
  new Promise<void>((done) => {
    for (const s of openSockets) s.destroy()
    server.close(() => done())
  }))

const AGENT = "fetcher"

/** A PluginStore on a fresh database with agent `fetcher` and these webfetch settings for it. */
const withAgent = (config: Readonly<Record<string, unknown>>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO agents (id, name, created_at, updated_at) VALUES (${AGENT}, ${AGENT}, 0, 0)`
    yield* (yield* PluginStore).configure("webfetch", AGENT, { set: config, unset: [] })
  })).pipe(Layer.provideMerge(SqlitePluginStore.layer), Layer.provideMerge(sqliteTemp))

const ctx = { sessionKey: "s1", userId: "u1", agentId: AGENT }

const fetchWith = (url: string, options: WebFetchOptions = {}, maxChars?: number) =>
  Effect.flatMap(PluginStore, (plugins) => webfetchTool(plugins, { maxBytes: 256 * 1024, ...options }).execute({ url, ...(maxChars === undefined ? {} : { max_chars: maxChars }) }, ctx))

const refused = (url: string, options: WebFetchOptions = {}) => Effect.flip(fetchWith(url, options)).pipe(Effect.map((e: ToolError) => e.reason))

const relaxed = withAgent({ allow_private: true })
const strict = withAgent({})

describe("webfetch against a local server (allow_private=true)", () => {
  it.effect("an article page: Markdown of the main content, title first, absolute links, no navigation or footer", () =>
    Effect.gen(function*() {
      const out = yield* fetchWith(`${base}/article`)
      assert.match(out, new RegExp(`^URL: ${base}/article · status 200 · text/html; charset=utf-8 · \\d`))
      assert.include(out, "# Tides of the North Sea")
      assert.include(out, "Amphidromic points")
      assert.include(out, `[the map of amphidromes](${base}/maps/amphidromes.html)`)
      assert.include(out, "[official tables](https://example.org/tables)")
      assert.include(out, `![tidal wave](${base}/img/wave.png)`)
      assert.notInclude(out, "NAVIGATION-BOILERPLATE")
      assert.notInclude(out, "FOOTER-BOILERPLATE")
      assert.notInclude(out, "<p>")
      // gzip-encoded, the same content
      assert.include(yield* fetchWith(`${base}/gzip`), `[the map of amphidromes](${base}/maps/amphidromes.html)`)
    }).pipe(Effect.provide(relaxed)))

  it.effect("decodes ISO-8859-1 (header), Shift_JIS (<meta charset>) and GBK (http-equiv)", () =>
    Effect.gen(function*() {
      assert.include(yield* fetchWith(`${base}/latin1`), "café crème brûlée")
      assert.include(yield* fetchWith(`${base}/sjis`), "日本語")
      assert.include(yield* fetchWith(`${base}/gbk`), "中文")
      const weird = yield* fetchWith(`${base}/weird-charset`)
      assert.include(weird, `unknown charset "x-klingon", decoded as UTF-8`)
      assert.include(weird, "plain ascii")
    }).pipe(Effect.provide(relaxed)))

  it.effect("describes a PNG in one line, never its bytes; pretty-prints small JSON", () =>
    Effect.gen(function*() {
      const png = yield* fetchWith(`${base}/png`)
      assert.include(png, `[image/png, ${PNG.length} B: not text, so its content is not shown]`)
      assert.notInclude(png, "PNG")
      assert.include(yield* fetchWith(`${base}/png-unsized`), `[image/png, ${PNG.length} B, 16×8 pixels`)
      assert.include(yield* fetchWith(`${base}/json`), `{\n  "a": 1,\n  "b": [\n    true,\n    "x"\n  ]\n}`)
    }).pipe(Effect.provide(relaxed)))

  it.effect("cuts a huge body at the byte limit and long output at max_chars, and says so", () =>
    Effect.gen(function*() {
      const out = yield* fetchWith(`${base}/huge`, { maxBytes: 100_000 }, 150_000)
      assert.include(out, "Note: the response was cut at 97.7 KiB")
      assert.strictEqual(out.split("\n").at(-1)?.length, 100_000)
      const short = yield* fetchWith(`${base}/article`, {}, 300)
      assert.include(short, "Note: shown: the first 300 of")
      assert.isAtMost(short.split("\n\n").slice(1).join("\n\n").length, 300 + 2)
    }).pipe(Effect.provide(relaxed)))

  it.effect("gives up on a server that never answers after the timeout (TestClock)", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(Effect.flip(fetchWith(`${base}/hang`, { timeout: "5 seconds" })))
      yield* Effect.promise(() => hangArrived)
      yield* TestClock.adjust("5 seconds")
      const e = yield* Fiber.join(fiber)
      assert.include(e.reason, `no complete answer from ${base}/hang within 5s`)
      hangArrived = new Promise<void>((done) => (hanging = done))
    }).pipe(Effect.provide(relaxed)))

  it.effect("refuses more than 5 redirects", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(fetchWith(`${base}/loop`))
      assert.include(e.reason, "more than 5 redirects")
    }).pipe(Effect.provide(relaxed)))

  it.effect("logs every connection the relaxed policy lets through to a non-public address", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const capture = Logger.make((o) => {
        if (o.logLevel === "Warn") warnings.push(Array.isArray(o.message) ? o.message.join(" ") : String(o.message))
      })
      yield* fetchWith(`${base}/article`).pipe(Effect.provide(Logger.layer([capture])))
      assert.deepStrictEqual(warnings, ["webfetch reached a non-public address: allowed by the agent's webfetch plugin configuration"])
    }).pipe(Effect.provide(relaxed)))

  it.effect("still refuses the metadata address, even when a redirect points there", () =>
    Effect.gen(function*() {
      assert.include(yield* refused(`${base}/redirect?to=http://169.254.169.254/latest/meta-data/`), "metadata")
    }).pipe(Effect.provide(relaxed)))
})

describe("webfetch refuses the same server without allow_private", () => {
  /** `public.test` (allowed by name) and `evil.test` resolve to the local server; others to a public address too. */
  const calls: Array<string> = []
  const resolver: Resolver = (host) => {
    calls.push(host)
    if (host === "mixed.test") return Promise.resolve([{ address: "93.184.216.34", family: 4 }, { address: "127.0.0.1", family: 4 }])
    return Promise.resolve([{ address: "127.0.0.1", family: 4 }])
  }
  const port = () => new URL(base).port
  const allowPublicTest = withAgent({ allow_hosts: ["public.test"] })

  it.effect("refuses the IP literal and localhost before connecting", () =>
    Effect.gen(function*() {
      assert.include(yield* refused(`${base}/article`), "127.0.0.1 is a loopback address")
      assert.include(yield* refused(`http://localhost:${port()}/article`), "localhost names this machine")
      assert.include(yield* refused(`http://[::ffff:127.0.0.1]:${port()}/article`), "IPv4-mapped IPv6 form of 127.0.0.1")
      assert.include(yield* refused("file:///etc/passwd"), "only http and https")
    }).pipe(Effect.provide(strict)))

  it.effect("refuses a host name that resolves to loopback, checked once, when the socket connects", () =>
    Effect.gen(function*() {
      calls.length = 0
      assert.include(yield* refused(`http://evil.test:${port()}/article`, { resolver }), "evil.test resolves to 127.0.0.1, a loopback address")
      assert.deepStrictEqual(calls, ["evil.test"])
      assert.include(yield* refused(`http://mixed.test:${port()}/article`, { resolver }), "mixed.test resolves to 127.0.0.1")
    }).pipe(Effect.provide(strict)))

  it.effect("refuses a redirect from an allowed host to loopback or to a name resolving to it", () =>
    Effect.gen(function*() {
      // the allowed host itself is fetched…
      assert.include(yield* fetchWith(`http://public.test:${port()}/article`, { resolver }), "Amphidromic points")
      // …but not where it redirects
      assert.include(yield* refused(`http://public.test:${port()}/redirect?to=${base}/article`, { resolver }), "127.0.0.1 is a loopback address")
      assert.include(
        yield* refused(`http://public.test:${port()}/redirect?to=http://evil.test:${port()}/article`, { resolver }),
        "evil.test resolves to 127.0.0.1"
      )
      assert.include(yield* refused(`http://public.test:${port()}/redirect?to=file:///etc/passwd`, { resolver }), "only http and https")
    }).pipe(Effect.provide(allowPublicTest)))

})
