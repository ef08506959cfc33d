/**
 * The web console's files on the gateway's server (issue 13): index.html for `/` and for console
 * pages reloaded in the browser, hashed assets cached for good, index.html never, the security
 * headers on every file, APIs never answered with HTML, and nothing outside dist/web served —
 * neither by `..` (sent raw, as a hostile client would, not normalised by a URL parser) nor through
 * a symlink. Without a build, `/` says to run `npm run build`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { afterAll } from "vitest"
import { startAdminHarness } from "../../support/adminHarness.ts"

const base = mkdtempSync(join(tmpdir(), "anna-web-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const root = join(base, "dist", "web")
mkdirSync(join(root, "assets"), { recursive: true })
const INDEX = "<!doctype html><title>anna console</title><script type=module src=/assets/app-3f9a.js></script>"
writeFileSync(join(root, "index.html"), INDEX)
writeFileSync(join(root, "assets", "app-3f9a.js"), "console.log('anna')")
writeFileSync(join(root, "robots.txt"), "User-agent: *")
writeFileSync(join(base, "secret.txt"), "TOP-SECRET-OUTSIDE")
symlinkSync(join(base, "secret.txt"), join(root, "assets", "link.js"))

/** A GET with the path sent exactly as written. */
const raw = (url: string, path: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((done, fail) => {
      const { hostname, port } = new URL(url)
      const req = request({ host: hostname, port, path, method: "GET", headers }, (res) => {
        let body = ""
        res.setEncoding("utf8")
        res.on("data", (c: string) => (body += c))
        res.on("end", () => done({ status: res.statusCode ?? 0, headers: res.headers, body }))
      })
      req.on("error", fail)
      req.end()
    })
  )

const HTML = { accept: "text/html,application/xhtml+xml" }

describe("web console files", () => {
  it.live("a script is sent gzipped (the build's NAME.gz) to a client that takes gzip, as it is to one that does not", () =>
    Effect.gen(function*() {
      const script = `console.log(${JSON.stringify("anna ".repeat(200))})`
      writeFileSync(join(root, "assets", "big-77aa.js"), script)
      writeFileSync(join(root, "assets", "big-77aa.js.gz"), gzipSync(script))
      writeFileSync(join(root, "assets", "plain-88bb.css"), "body{margin:0}")
      const h = yield* startAdminHarness({ webRoot: root })
      const zipped = yield* Effect.promise(() => fetch(`${h.url}/assets/big-77aa.js`, { headers: { "accept-encoding": "gzip, br" } }))
      assert.strictEqual(zipped.headers.get("content-encoding"), "gzip")
      assert.strictEqual(zipped.headers.get("vary"), "accept-encoding")
      assert.include(String(zipped.headers.get("content-type")), "text/javascript")
      assert.strictEqual(yield* Effect.promise(() => zipped.text()), script, "the gzipped copy decodes to the script")
      for (const headers of [{}, { "accept-encoding": "gzip;q=0, identity" }, { "accept-encoding": "br" }]) {
        const plain = yield* raw(h.url, "/assets/big-77aa.js", headers)
        assert.deepStrictEqual([plain.status, plain.headers["content-encoding"], plain.body], [200, undefined, script], JSON.stringify(headers))
        assert.strictEqual(plain.headers["vary"], "accept-encoding")
      }
      // No gzipped copy: sent as it is.
      const css = yield* raw(h.url, "/assets/plain-88bb.css", { "accept-encoding": "gzip" })
      assert.deepStrictEqual([css.status, css.headers["content-encoding"], css.body], [200, undefined, "body{margin:0}"])
    }))

  it.live("/ and console pages get index.html (no-store, CSP, nosniff); assets are cached for good; APIs never get HTML", () =>
    Effect.gen(function*() {
      const h = yield* startAdminHarness({ webRoot: root })
      const index = yield* raw(h.url, "/", HTML)
      assert.strictEqual(index.status, 200)
      assert.strictEqual(index.body, INDEX)
      assert.strictEqual(index.headers["cache-control"], "no-store")
      assert.include(String(index.headers["content-type"]), "text/html")
      const csp = String(index.headers["content-security-policy"])
      assert.include(csp, "default-src 'self'")
      assert.include(csp, "script-src 'self'")
      assert.notInclude(csp, "unsafe-inline")
      assert.include(csp, "frame-ancestors 'none'")
      assert.strictEqual(index.headers["x-content-type-options"], "nosniff")

      const asset = yield* raw(h.url, "/assets/app-3f9a.js")
      assert.strictEqual(asset.status, 200)
      assert.strictEqual(asset.body, "console.log('anna')")
      assert.include(String(asset.headers["content-type"]), "text/javascript")
      assert.strictEqual(asset.headers["cache-control"], "public, max-age=31536000, immutable")
      assert.strictEqual(asset.headers["x-content-type-options"], "nosniff")

      const other = yield* raw(h.url, "/robots.txt")
      assert.deepStrictEqual([other.status, other.body], [200, "User-agent: *"])

      const page = yield* raw(h.url, "/agents/default", HTML)
      assert.deepStrictEqual([page.status, page.body, page.headers["cache-control"]], [200, INDEX, "no-store"])
      assert.strictEqual((yield* raw(h.url, "/agents/default", { accept: "application/json" })).status, 404)
      assert.strictEqual((yield* raw(h.url, "/assets/missing-1234.js", HTML)).status, 404)

      for (const path of ["/api/nope", "/v1/nope"]) {
        const api = yield* raw(h.url, path, HTML)
        assert.strictEqual(api.status, 404)
        assert.include(String(api.headers["content-type"]), "application/json")
      }
      const post = yield* Effect.promise(() => h.fetch("/", { method: "POST", headers: HTML }))
      assert.strictEqual(post.status, 404)
    }))

  it.live("nothing outside dist/web: .. in any spelling, encoded slashes, backslashes and symlinks are refused", () =>
    Effect.gen(function*() {
      const h = yield* startAdminHarness({ webRoot: root })
      for (
        const path of [
          "/../secret.txt",
          "/assets/../../secret.txt",
          "/%2e%2e/secret.txt",
          "/assets/%2e%2e%2f%2e%2e%2fsecret.txt",
          "/assets/..%5c..%5csecret.txt",
          "/..%2fsecret.txt",
          "/assets/link.js",
          "/%00index.html"
        ]
      ) {
        const r = yield* raw(h.url, path, HTML)
        assert.notInclude(r.body, "TOP-SECRET-OUTSIDE", path)
        // A refused path is a 404, or (a page-like path asking for HTML) the console's index.
        assert.isTrue(r.status === 404 || (r.status === 200 && r.body === INDEX), `${path}: ${r.status}`)
      }
      assert.strictEqual((yield* raw(h.url, "/assets/link.js")).status, 404)
    }))

  it.live("without a build, / says to run npm run build", () =>
    Effect.gen(function*() {
      const h = yield* startAdminHarness({ webRoot: join(base, "not-built") })
      const r = yield* raw(h.url, "/", HTML)
      assert.strictEqual(r.status, 200)
      assert.include(r.body, "npm run build")
      assert.strictEqual(r.headers["cache-control"], "no-store")
    }))
})
