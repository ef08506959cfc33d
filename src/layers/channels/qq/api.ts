/**
 * The QQ Bot API (bot.q.qq.com/wiki, "api-v2") as Effects, on `fetch`:
 *
 * - Access token: POST `token_url` `{appId, clientSecret}` → `{access_token, expires_in}` (seconds,
 *   sent as text); cached and fetched again 30 s before it expires (QQ issues a new one only in the
 *   last 60 s), and again at once when the API answers 401 (`tokenCache`). Every API call carries
 *   `Authorization: QQBot <token>`.
 * - Calls retry what QQ asks to retry (shared/calls.ts: 429, 5xx, network failures, QQ's own
 *   "msg limit exceed" 22009, a 401 after the token is fetched again), at most MAX_ATTEMPTS times,
 *   then fail loudly. QQ's error answers are `{code, message}` (sometimes `err_code`, `trace_id`).
 * - Downloads (images users send): http(s) only, at most `maxBytes`, within a time limit.
 * - Pictures out (rich media): POST /v2/users/{openid}/files or /v2/groups/{group_openid}/files
 *   `{file_type: 1, file_data: <base64>, srv_send_msg: false}` → `{file_uuid, file_info, ttl}`; the
 *   `file_info` is then sent as `media` of a msg_type 7 message. QQ takes at most MAX_UPLOAD_BYTES
 *   inline (larger files need its chunked upload, not used) and PNG or JPEG pictures. Its "rich media
 *   fetch failed, please retry" answers (304082, 304083) are retried like a 5xx.
 *
 * Secrets never reach an error text: the AppSecret and tokens are cut out of every description.
 */
import { Clock, Effect, Schema, Semaphore } from "effect"
import { kindOfStatus, loudly, networkError, PlatformCallError, retryAfterHeader, retrying } from "../shared/calls.ts"

export const PLATFORM = "qq"

/** Time limit of one API call (QQ suggests at least 5 s for sending). */
const REQUEST_TIMEOUT_MS = 20_000
/** Time limit of one download. */
const DOWNLOAD_TIMEOUT_MS = 30_000
/** A token is fetched again this long before it expires (QQ renews it in its last 60 s). */
export const TOKEN_REFRESH_BEFORE_MS = 30_000
/** QQ's "msg limit exceed": sending too often, retried like a 429. */
const CODE_MSG_LIMIT = 22009
/** QQ's "upload media info fail" / "convert media info fail" (documented as "please retry"). */
const CODES_MEDIA_RETRY: ReadonlyArray<number> = [304082, 304083]
/** Time limit of one upload (up to ~14 MB of JSON). */
const UPLOAD_TIMEOUT_MS = 120_000
/** The largest file QQ takes inline (base64 `file_data`); larger ones need its chunked upload. */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024
/** `file_type` of a picture. */
export const FILE_TYPE_IMAGE = 1

export interface QqApiOptions {
  readonly appId: string
  readonly secret: string
  /** API root, e.g. https://api.sgroup.qq.com */
  readonly baseUrl: string
  /** The access-token endpoint, e.g. https://bots.qq.com/app/getAppAccessToken */
  readonly tokenUrl: string
}

const TokenAnswer = Schema.Struct({
  access_token: Schema.String.check(Schema.isNonEmpty()),
  expires_in: Schema.Union([Schema.Number, Schema.String])
})

const ErrorAnswer = Schema.Struct({
  code: Schema.optional(Schema.Union([Schema.Number, Schema.String])),
  err_code: Schema.optional(Schema.Union([Schema.Number, Schema.String])),
  message: Schema.optional(Schema.String)
})

const GatewayAnswer = Schema.Struct({ url: Schema.String.check(Schema.isNonEmpty()) })

const SentAnswer = Schema.Struct({ id: Schema.optional(Schema.String) })

const UploadAnswer = Schema.Struct({
  file_uuid: Schema.optional(Schema.String),
  file_info: Schema.String.check(Schema.isNonEmpty()),
  ttl: Schema.optional(Schema.Number)
})

export interface Token {
  readonly token: string
  readonly expiresInSeconds: number
}

/** An answer of QQ: status, headers and the parsed JSON body (undefined when not JSON). */
interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: unknown
}

const hide = (o: QqApiOptions, text: string, token?: string): string => {
  let t = o.secret === "" ? text : text.replaceAll(o.secret, "<secret>")
  if (token !== undefined && token !== "") t = t.replaceAll(token, "<token>")
  return t
}

/** A QQ error answer's code and message. */
export const errorFields = (body: unknown): { readonly code: number | undefined; readonly message: string | undefined } => {
  const e = Schema.decodeUnknownOption(ErrorAnswer)(body)
  if (e._tag === "None") return { code: undefined, message: undefined }
  const raw = e.value.code ?? e.value.err_code
  const code = raw === undefined ? undefined : Number(raw)
  return { code: code !== undefined && Number.isFinite(code) ? code : undefined, message: e.value.message }
}

/** What a failed answer means. */
const failureOf = (o: QqApiOptions, method: string, a: Answer, token?: string): PlatformCallError => {
  const { code, message } = errorFields(a.body)
  const retry = kindOfStatus(a.status) === "retry" || code === CODE_MSG_LIMIT || (code !== undefined && CODES_MEDIA_RETRY.includes(code)) ||
    a.status === 401
  const text = message ?? (typeof a.body === "string" ? a.body.slice(0, 200) : `HTTP ${a.status}`)
  return new PlatformCallError({
    platform: PLATFORM,
    method,
    kind: retry ? "retry" : "refused",
    status: code ?? a.status,
    description: hide(o, `${code === undefined ? "" : `code ${code}: `}${text} (HTTP ${a.status})`, token),
    retryAfterMs: retryAfterHeader(a.headers, Date.now())
  })
}

/** One HTTP exchange (no retry); a failure to get any answer is a retried network error. */
const exchange = (o: QqApiOptions, method: string, url: string, init: RequestInit, timeoutMs = REQUEST_TIMEOUT_MS): Effect.Effect<Answer, PlatformCallError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const res = await fetch(url, { ...init, signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) })
      const text = await res.text()
      let body: unknown = text
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        body = text
      }
      return { status: res.status, headers: res.headers, body }
    },
    catch: (e) => {
      const err = networkError(PLATFORM, method, e)
      return new PlatformCallError({
        platform: PLATFORM,
        method,
        kind: err.kind,
        status: undefined,
        description: hide(o, err.description),
        retryAfterMs: undefined
      })
    }
  })

/** Fetches an access token once (no retry). A refusal says what QQ said (`code`, `message`). */
export const fetchToken = (o: QqApiOptions): Effect.Effect<Token, PlatformCallError> =>
  exchange(o, "getAppAccessToken", o.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ appId: o.appId, clientSecret: o.secret })
  }).pipe(
    Effect.flatMap((a) => {
      const ok = Schema.decodeUnknownOption(TokenAnswer)(a.body)
      if (a.status >= 200 && a.status < 300 && ok._tag === "Some") {
        const seconds = Number(ok.value.expires_in)
        return Effect.succeed({ token: ok.value.access_token, expiresInSeconds: Number.isFinite(seconds) && seconds > 0 ? seconds : 60 })
      }
      // QQ answers a refused AppID/AppSecret with 200 and `{code, message}`.
      const f = failureOf(o, "getAppAccessToken", a)
      return Effect.fail(
        f.kind === "retry" && a.status !== 401
          ? f
          : new PlatformCallError({ platform: PLATFORM, method: f.method, kind: "refused", status: f.status, description: f.description, retryAfterMs: undefined })
      )
    })
  )

/**
 * The current token, fetched when there is none or it expires within TOKEN_REFRESH_BEFORE_MS
 * (Effect's Clock); one fetch at a time. `invalidate(t)` drops `t` (the API refused it).
 */
export const tokenCache = (fetch: Effect.Effect<Token, PlatformCallError>) => {
  let current: { readonly token: string; readonly refreshAt: number } | undefined
  const lock = Semaphore.makeUnsafe(1)
  const get = lock.withPermits(1)(
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (current !== undefined && now < current.refreshAt) return current.token
      const t = yield* fetch
      const lifetimeMs = t.expiresInSeconds * 1000
      current = { token: t.token, refreshAt: now + Math.max(1_000, lifetimeMs - TOKEN_REFRESH_BEFORE_MS) }
      return t.token
    })
  )
  const invalidate = (token: string) =>
    Effect.sync(() => {
      if (current?.token === token) current = undefined
    })
  return { get, invalidate }
}

export interface QqApi {
  readonly options: QqApiOptions
  /** The current access token (fetched, retried as QQ asks). */
  readonly token: Effect.Effect<string, PlatformCallError>
  /** Drops a token the gateway refused. */
  readonly invalidate: (token: string) => Effect.Effect<void>
  /** One API call with the token, retried as QQ asks; the answer's JSON body. */
  readonly call: (method: string, httpMethod: "GET" | "POST", path: string, body?: unknown) => Effect.Effect<unknown, PlatformCallError>
  /** The WebSocket gateway's address (GET /gateway). */
  readonly gatewayUrl: Effect.Effect<string, PlatformCallError>
  /** Sends a message to a user (`users`, by user_openid) or a group (`groups`, by group_openid); its id. */
  readonly sendMessage: (
    to: { readonly kind: "users" | "groups"; readonly openid: string },
    body: Readonly<Record<string, unknown>>
  ) => Effect.Effect<string | undefined, PlatformCallError>
  /**
   * Uploads a picture (PNG or JPEG, at most MAX_UPLOAD_BYTES) for a user's or a group's chat,
   * without sending it; the `file_info` to send as a msg_type 7 message's `media`.
   */
  readonly uploadImage: (
    to: { readonly kind: "users" | "groups"; readonly openid: string },
    bytes: Uint8Array
  ) => Effect.Effect<string, PlatformCallError>
  /** Downloads a file a user sent (http/https only), at most `maxBytes`. */
  readonly download: (url: string, maxBytes: number) => Effect.Effect<{ readonly mediaType: string; readonly bytes: Uint8Array }, PlatformCallError>
}

export const makeQqApi = (o: QqApiOptions): QqApi => {
  const tokens = tokenCache(fetchToken(o).pipe(Effect.retry(retrying<PlatformCallError>())))

  const once = (method: string, httpMethod: "GET" | "POST", path: string, body?: unknown, timeoutMs?: number) =>
    Effect.gen(function*() {
      const token = yield* tokens.get
      const a = yield* exchange(o, method, `${o.baseUrl}${path}`, {
        method: httpMethod,
        headers: {
          authorization: `QQBot ${token}`,
          "x-union-appid": o.appId,
          ...(body === undefined ? {} : { "content-type": "application/json" })
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }, timeoutMs)
      if (a.status >= 200 && a.status < 300) return a.body
      // A token QQ no longer takes: fetch another before the retry.
      if (a.status === 401) yield* tokens.invalidate(token)
      return yield* Effect.fail(failureOf(o, method, a, token))
    })

  const call = (method: string, httpMethod: "GET" | "POST", path: string, body?: unknown, timeoutMs?: number) =>
    loudly(PLATFORM, method, once(method, httpMethod, path, body, timeoutMs).pipe(Effect.retry(retrying<PlatformCallError>())))

  const malformed = (method: string, what: string) =>
    new PlatformCallError({ platform: PLATFORM, method, kind: "refused", status: undefined, description: `unexpected answer: ${what}`, retryAfterMs: undefined })

  const gatewayUrl = call("gateway", "GET", "/gateway").pipe(
    Effect.flatMap((body) => {
      const g = Schema.decodeUnknownOption(GatewayAnswer)(body)
      return g._tag === "Some" && /^wss?:\/\//i.test(g.value.url)
        ? Effect.succeed(g.value.url)
        : Effect.fail(malformed("gateway", "no WebSocket url"))
    })
  )

  const sendMessage: QqApi["sendMessage"] = (to, body) =>
    call(
      to.kind === "users" ? "sendC2CMessage" : "sendGroupMessage",
      "POST",
      `/v2/${to.kind}/${encodeURIComponent(to.openid)}/messages`,
      body
    ).pipe(Effect.map((answer) => {
      const sent = Schema.decodeUnknownOption(SentAnswer)(answer)
      return sent._tag === "Some" ? sent.value.id : undefined
    }))

  const uploadImage: QqApi["uploadImage"] = (to, bytes) => {
    const method = to.kind === "users" ? "uploadC2CMedia" : "uploadGroupMedia"
    if (bytes.byteLength > MAX_UPLOAD_BYTES) {
      return Effect.fail(
        new PlatformCallError({
          platform: PLATFORM,
          method,
          kind: "refused",
          status: undefined,
          description: `the picture is larger than QQ's ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB`,
          retryAfterMs: undefined
        })
      )
    }
    const body = { file_type: FILE_TYPE_IMAGE, file_data: Buffer.from(bytes).toString("base64"), srv_send_msg: false }
    return call(method, "POST", `/v2/${to.kind}/${encodeURIComponent(to.openid)}/files`, body, UPLOAD_TIMEOUT_MS).pipe(
      Effect.flatMap((answer) => {
        const up = Schema.decodeUnknownOption(UploadAnswer)(answer)
        return up._tag === "Some" ? Effect.succeed(up.value.file_info) : Effect.fail(malformed(method, "no file_info"))
      })
    )
  }

  const download: QqApi["download"] = (url, maxBytes) =>
    Effect.tryPromise({
      try: async (signal) => {
        const address = url.startsWith("//") ? `https:${url}` : url
        if (!/^https?:\/\//i.test(address)) throw new DownloadRefused("not an http(s) address")
        const res = await fetch(address, { signal: AbortSignal.any([signal, AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS)]), redirect: "follow" })
        if (!res.ok) throw new DownloadRefused(`HTTP ${res.status}`)
        const declared = Number(res.headers.get("content-length") ?? "0")
        if (declared > maxBytes) throw new DownloadRefused(`larger than ${maxBytes} bytes`)
        const reader = res.body?.getReader()
        const chunks: Array<Uint8Array> = []
        let size = 0
        if (reader !== undefined) {
          for (;;) {
            const { done, value } = await reader.read()
            if (done) break
            size += value.byteLength
            if (size > maxBytes) {
              await reader.cancel()
              throw new DownloadRefused(`larger than ${maxBytes} bytes`)
            }
            chunks.push(value)
          }
        }
        const bytes = new Uint8Array(size)
        let at = 0
        for (const c of chunks) {
          bytes.set(c, at)
          at += c.byteLength
        }
        return { mediaType: (res.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "", bytes }
      },
      catch: (e) =>
        e instanceof DownloadRefused
          ? new PlatformCallError({ platform: PLATFORM, method: "download", kind: "refused", status: undefined, description: e.message, retryAfterMs: undefined })
          : networkError(PLATFORM, "download", e)
    })

  return { options: o, token: tokens.get, invalidate: tokens.invalidate, call, gatewayUrl, sendMessage, uploadImage, download }
}

class DownloadRefused extends Error {}
