/**
 * One guarded HTTP GET with manual redirects, for webfetch. The SSRF guard runs at CONNECT time: the
 * request's `lookup` resolves the host, checks EVERY address it got (one refused address refuses the
 * host) and hands the socket only checked addresses — so a DNS answer that changes between a check and
 * the connection (rebinding) cannot win, because there is no separate check. IP literals are checked
 * before the request (Node does not look them up); each redirect's target is checked the same way
 * before it is followed. Our own http(s).Agent per request: no proxy from the environment, no pooled
 * socket reused across hosts. Bodies are read up to a byte limit (then cut and said so), decompressed
 * with the same limit counted after decompression (no zip bomb), and binary bodies with a known
 * length are not read at all — unless the caller wants the bytes (`readBinary`: the HTTP channel's
 * image URLs).
 */
import { Effect } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { lookup as dnsLookup } from "node:dns/promises"
import type { LookupAddress } from "node:dns"
import type { Readable } from "node:stream"
import * as zlib from "node:zlib"
import { type FetchPolicy, hostOf, refuseAddress, refuseUrl } from "../../domain/webfetch/address.ts"
import { FetchFailed, FetchRefused, type WebFetchError } from "../../domain/webfetch/errors.ts"
import { type FetchedBody, isBinaryType, mediaType } from "../../domain/webfetch/render.ts"

/** Resolves a host name to its addresses (the system resolver by default; tests inject their own). */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<LookupAddress>>

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

export interface GetOptions {
  readonly policy: FetchPolicy
  readonly resolver: Resolver
  readonly maxBytes: number
  readonly maxRedirects: number
  /** Called when the policy let a non-public address through (for the log). */
  readonly onRelaxed?: ((url: string, address: string) => void) | undefined
  /** Read binary bodies too, up to `maxBytes` (default: only their size is reported). */
  readonly readBinary?: boolean | undefined
  /** The Accept header (default: pages, text and JSON first). */
  readonly accept?: string | undefined
}

export const USER_AGENT = "anna-webfetch/1.0 (+https://github.com/anna)"

interface Hop {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: FetchedBody
}

class Refusal extends Error {}

/** A `lookup` for net.connect that resolves, checks every address, and returns only checked ones. */
const guardedLookup = (options: GetOptions, url: string) =>
  ((hostname: string, lookupOptions: { readonly all?: boolean }, callback: (...args: Array<unknown>) => void) => {
    options.resolver(hostname).then(
      (addresses) => {
        if (addresses.length === 0) return callback(new Error(`${hostname} has no address`))
        for (const a of addresses) {
          const why = refuseAddress(a.address, hostname, options.policy)
          if (why !== undefined) return callback(new Refusal(why))
          if (options.onRelaxed !== undefined && refuseAddress(a.address, hostname, { allowPrivate: false, allowHosts: [] }) !== undefined) {
            options.onRelaxed(url, a.address)
          }
        }
        const checked = addresses.map((a) => ({ address: a.address, family: a.family }))
        const [first] = checked
        if (lookupOptions.all === true) return callback(null, checked)
        return callback(null, first?.address, first?.family)
      },
      (e: unknown) => callback(e instanceof Error ? e : new Error(String(e)))
    )
  }) as unknown as NonNullable<http.RequestOptions["lookup"]>

const decompressed = (res: http.IncomingMessage): Readable => {
  const encoding = (res.headers["content-encoding"] ?? "").toLowerCase().trim()
  if (encoding === "gzip" || encoding === "x-gzip") return res.pipe(zlib.createGunzip())
  if (encoding === "deflate") return res.pipe(zlib.createInflate())
  if (encoding === "br") return res.pipe(zlib.createBrotliDecompress())
  return res
}

/** One request, no redirects followed; interruption destroys the socket. */
const hop = (url: URL, options: GetOptions) =>
  Effect.callback<Hop, WebFetchError>((resumeOnce) => {
    // the request and the response streams can both report after the answer is settled: first one wins
    let settled = false
    const resume = (effect: Effect.Effect<Hop, WebFetchError>) => {
      if (settled) return
      settled = true
      resumeOnce(effect)
    }
    const module = url.protocol === "https:" ? https : http
    const agent = url.protocol === "https:" ? new https.Agent({ keepAlive: false }) : new http.Agent({ keepAlive: false })
    const fail = (e: unknown) => {
      agent.destroy()
      if (e instanceof Refusal) return resume(Effect.fail(new FetchRefused({ url: url.href, reason: e.message })))
      const reason = e instanceof Error ? (("code" in e && typeof e.code === "string") ? `${e.code}: ${e.message}` : e.message) : String(e)
      resume(Effect.fail(new FetchFailed({ url: url.href, reason })))
    }
    const req = module.request(url, {
      method: "GET",
      agent,
      lookup: guardedLookup(options, url.href),
      headers: {
        "user-agent": USER_AGENT,
        accept: options.accept ?? "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.8",
        "accept-encoding": "gzip, deflate, br"
      }
    }, (res) => {
      const status = res.statusCode ?? 0
      const contentType = res.headers["content-type"] ?? ""
      const length = Number(res.headers["content-length"])
      const declaredSize = Number.isFinite(length) && length >= 0 ? length : undefined
      const done = (bytes: Uint8Array, truncated: boolean) => {
        res.destroy()
        agent.destroy()
        resume(Effect.succeed({ status, headers: res.headers, body: { url: url.href, status, contentType, bytes, truncated, declaredSize } }))
      }
      // redirects and binary bodies of known size: the body is not needed
      const skipBinary = options.readBinary !== true && isBinaryType(mediaType(contentType)) && declaredSize !== undefined
      if ((status >= 300 && status < 400 && res.headers.location !== undefined) || skipBinary) {
        return done(new Uint8Array(0), declaredSize !== undefined && declaredSize > 0)
      }
      const chunks: Array<Buffer> = []
      let size = 0
      let finished = false
      const stream = decompressed(res)
      stream.on("data", (chunk: Buffer) => {
        if (finished) return
        if (size + chunk.length > options.maxBytes) {
          chunks.push(chunk.subarray(0, options.maxBytes - size))
          finished = true
          stream.destroy()
          return done(new Uint8Array(Buffer.concat(chunks)), true)
        }
        chunks.push(chunk)
        size += chunk.length
      })
      stream.on("end", () => {
        if (finished) return
        finished = true
        done(new Uint8Array(Buffer.concat(chunks)), false)
      })
      stream.on("error", (e) => {
        if (finished) return
        finished = true
        fail(e)
      })
    })
    req.on("error", fail)
    req.end()
    return Effect.sync(() => {
      req.destroy()
      agent.destroy()
    })
  })

/**
 * GETs `start`, following at most `maxRedirects` redirects, each target checked by the guard. The
 * final response's body (or a redirect-loop failure).
 */
export const guardedGet = (start: string, options: GetOptions): Effect.Effect<FetchedBody, WebFetchError> =>
  Effect.gen(function*() {
    let url: URL
    try {
      url = new URL(start)
    } catch {
      return yield* new FetchFailed({ url: start, reason: "not a valid URL" })
    }
    for (let redirects = 0; ; redirects++) {
      const why = refuseUrl(url, options.policy)
      if (why !== undefined) return yield* new FetchRefused({ url: url.href, reason: why })
      if (options.onRelaxed !== undefined && refuseUrl(url, { allowPrivate: false, allowHosts: [] }) !== undefined) {
        options.onRelaxed(url.href, hostOf(url))
      }
      const res = yield* hop(url, options)
      const location = res.headers.location
      if (res.status < 300 || res.status >= 400 || location === undefined) return res.body
      if (redirects >= options.maxRedirects) {
        return yield* new FetchFailed({ url: start, reason: `more than ${options.maxRedirects} redirects (last to ${location})` })
      }
      try {
        url = new URL(location, url)
      } catch {
        return yield* new FetchFailed({ url: url.href, reason: `redirect to an invalid URL (${location})` })
      }
    }
  })
