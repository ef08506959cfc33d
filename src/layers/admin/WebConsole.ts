/**
 * The web console's files, served by the gateway: `dist/web/` of the package (index.html and its
 * hashed assets, built by `npm run build`). `/` and any other GET outside the APIs that asks for
 * HTML get index.html (the console routes in the browser); other paths are files of the folder.
 *
 * - Caching: index.html `no-store` (it names the current assets); files under `assets/` are hashed,
 *   so they are cached for a year, immutable; anything else for an hour (revalidated).
 * - Compression: the build writes each script and stylesheet gzipped beside it (`NAME.gz`); a client
 *   whose `Accept-Encoding` takes gzip gets that copy (`Content-Encoding: gzip`, `Vary: accept-encoding`).
 * - Headers: a strict Content-Security-Policy (default-src 'self', no inline scripts, no framing),
 *   `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`.
 * - Paths: decoded once, normalised, refused with `..` segments, NUL or backslashes, and resolved
 *   through symlinks: a file whose real path is outside the folder is not served.
 * - Without dist/web, `/` says to run `npm run build`.
 * API paths (`/api/…`, `/v1/…`) never fall through to it: they get the server's 404.
 */
import { Effect } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { existsSync } from "node:fs"
import { readFile, realpath, stat } from "node:fs/promises"
import { dirname, extname, join, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { notFoundResponse } from "../channels/http/server.ts"
import { header } from "./http.ts"

/** The package's dist/web, found from this file whether it runs from src/ or dist/. */
export const defaultWebRoot = (): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, "package.json"))) return join(dir, "dist", "web")
    dir = dirname(dir)
  }
  return join(dirname(fileURLToPath(import.meta.url)), "web")
}

export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const SECURITY_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8"
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>anna</title></head><body>
<h1>anna</h1><p>The web console is not built. Run <code>npm run build</code> and reload this page.</p>
<p>The admin API is at <a href="/api/openapi.json">/api/openapi.json</a>.</p></body></html>
`

const pathOf = (url: string): string => {
  const q = url.search(/[?#]/)
  return q < 0 ? url : url.slice(0, q)
}

/** Paths the console never answers (APIs and the health check). */
const isApiPath = (path: string) => path === "/api" || path.startsWith("/api/") || path === "/v1" || path.startsWith("/v1/") || path === "/health"

/** The folder-relative segments of a URL path, or undefined when it may not be served. */
export const safeSegments = (urlPath: string): ReadonlyArray<string> | undefined => {
  let decoded: string
  try {
    decoded = decodeURIComponent(urlPath)
  } catch {
    return undefined
  }
  if (decoded.includes("\0") || decoded.includes("\\")) return undefined
  const segments = decoded.split("/").filter((s) => s !== "" && s !== ".")
  if (segments.some((s) => s === ".." || s.startsWith("."))) return undefined
  return segments
}

const respond = (body: Uint8Array | string, contentType: string, cache: string, extra: Readonly<Record<string, string>> = {}) =>
  typeof body === "string"
    ? HttpServerResponse.text(body, { status: 200, contentType, headers: { ...SECURITY_HEADERS, "cache-control": cache, ...extra } })
    : HttpServerResponse.uint8Array(body, { status: 200, contentType, headers: { ...SECURITY_HEADERS, "cache-control": cache, ...extra } })

/** Files the build gzips beside themselves (`NAME.gz`). */
const PRECOMPRESSED = new Set([".js", ".css"])

/** Whether the client takes gzip: `Accept-Encoding` names it (or `*`) without `q=0`. */
export const acceptsGzip = (acceptEncoding: string | undefined): boolean =>
  (acceptEncoding ?? "").split(",").some((part) => {
    const [coding = "", ...params] = part.trim().toLowerCase().split(";").map((x) => x.trim())
    if (coding !== "gzip" && coding !== "*") return false
    const q = params.find((x) => x.startsWith("q="))
    return q === undefined || Number(q.slice(2)) > 0
  })

/** A regular file inside `root` (after symlinks), or undefined. */
const fileInside = (root: string, segments: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    try {
      const realRoot = await realpath(root)
      const real = await realpath(join(realRoot, ...segments))
      if (!real.startsWith(realRoot + sep)) return undefined
      const info = await stat(real)
      return info.isFile() ? real : undefined
    } catch {
      return undefined
    }
  })

const read = (file: string) => Effect.promise(() => readFile(file))

/**
 * The console as the server's `notFound` (see http/server.ts): GET and HEAD of its files and pages;
 * anything else, and every API path, gets the server's 404.
 */
export const notFound = (webRoot?: string | undefined) => {
  const root = webRoot ?? defaultWebRoot()

  const index = Effect.gen(function*() {
    const file = yield* fileInside(root, ["index.html"])
    if (file === undefined) return respond(NOT_BUILT, "text/html; charset=utf-8", "no-store")
    return respond(yield* read(file), "text/html; charset=utf-8", "no-store")
  })

  return (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const path = pathOf(request.url)
      const missing = notFoundResponse(request)
      if ((request.method !== "GET" && request.method !== "HEAD") || isApiPath(path)) return missing
      if (path === "/" || path === "/index.html") return yield* index
      const segments = safeSegments(path)
      if (segments === undefined) return missing
      const file = segments.length === 0 ? undefined : yield* fileInside(root, segments)
      if (file !== undefined) {
        const ext = extname(file).toLowerCase()
        const type = TYPES[ext] ?? "application/octet-stream"
        const cache = segments[0] === "assets" ? "public, max-age=31536000, immutable" : "public, max-age=3600, must-revalidate"
        if (!PRECOMPRESSED.has(ext)) return respond(yield* read(file), type, cache)
        // The build's gzipped copy when the client takes it; caches keep the two apart (Vary).
        const last = segments[segments.length - 1] ?? ""
        const gz = acceptsGzip(header(request, "accept-encoding")) ? yield* fileInside(root, [...segments.slice(0, -1), `${last}.gz`]) : undefined
        return gz === undefined
          ? respond(yield* read(file), type, cache, { vary: "accept-encoding" })
          : respond(yield* read(gz), type, cache, { vary: "accept-encoding", "content-encoding": "gzip" })
      }
      // A console page reloaded in the browser (e.g. /agents/default): the console routes it.
      const accepts = header(request, "accept") ?? ""
      if (segments[0] !== "assets" && accepts.includes("text/html")) return yield* index
      return missing
    })
}
