/**
 * The Feishu/Lark open platform through `@larksuiteoapi/node-sdk`'s `Client` (issue 12), with our
 * own HTTP underneath it (the SDK's `httpInstance` option) so that every request has a time limit,
 * an abort signal when its fiber is interrupted, a size cap on downloads and errors that say what
 * the platform answered (HTTP status, Feishu's `code`, its retry hint) without the token in them.
 *
 * - The tenant access token is the SDK's business: it fetches it from
 *   `/open-apis/auth/v3/tenant_access_token/internal` with the app's id and secret and caches it
 *   (in a cache of this client's own, not the SDK's process-wide one) until 3 minutes before it
 *   expires. A token the platform says is invalid or expired is dropped and the call retried.
 * - What a failure means (shared/calls.ts kinds): HTTP 429 and the frequency-limit codes (99991400
 *   gateway, 11232 tenant, 230020 per chat) are retried after `x-ogw-ratelimit-reset` /
 *   `Retry-After` or with backoff; so are 5xx and network failures; a card Feishu cannot build
 *   (230099, 11310) is `format` (the reply falls back to plain text); the rest is refused.
 * - Uploads (`im.image.create`): the SDK hands us `Content-Type: multipart/form-data` and the data
 *   as an object; we send it as a real multipart form (fetch writes the boundary), the bytes as a
 *   file part with a name (a part without one is a text field, which Feishu refuses with 234001).
 */
import { AsyncLocalStorage } from "node:async_hooks"
import { Readable } from "node:stream"
import * as Lark from "@larksuiteoapi/node-sdk"
import { Effect } from "effect"
import { type CallErrorKind, networkError, PlatformCallError, platformCall, retryAfterHeader } from "../shared/calls.ts"
import { sniffImage } from "../shared/images.ts"

export const PLATFORM = "feishu"

/** A request's time limit (the platform answers in well under a second; downloads take longer). */
const REQUEST_TIMEOUT_MS = 30_000
/** An upload's time limit (10 MB on a slow uplink). */
const UPLOAD_TIMEOUT_MS = 120_000
/** The largest resource (an image a user sent) downloaded. */
export const MAX_DOWNLOAD_BYTES = 10 * 1024 * 1024

/** Frequency-limit codes (gateway, tenant-level message sending, per chat). */
const RATE_LIMIT_CODES = new Set([99991400, 11232, 11233, 230020])
/** The tenant access token is invalid or expired: fetched again and the call retried. */
const TOKEN_CODES = new Set([99991661, 99991663, 99991664, 99991668])
/** The card could not be built from what we sent. */
const FORMAT_CODES = new Set([230099, 11310])
/** Wrong app credentials (tenant token endpoint: invalid app id, invalid secret). */
export const CREDENTIAL_CODES = new Set([10003, 10014, 99991543, 99991661, 99991663, 99991664])

/** What the platform answered when it refused a request. */
export class FeishuHttpError extends Error {
  readonly status: number
  readonly code: number | undefined
  readonly msg: string
  readonly retryAfterMs: number | undefined
  constructor(status: number, code: number | undefined, msg: string, retryAfterMs: number | undefined) {
    super(`${status}${code === undefined ? "" : ` code ${code}`}: ${msg}`)
    this.status = status
    this.code = code
    this.msg = msg
    this.retryAfterMs = retryAfterMs
  }
}

/** The abort signal of the platform call running now (our HTTP reads it: the SDK has no option for it). */
const currentSignal = new AsyncLocalStorage<AbortSignal>()

const queryString = (params: Record<string, unknown> | undefined): string => {
  if (params === undefined) return ""
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue
    if (Array.isArray(v)) for (const x of v) q.append(k, String(x))
    else q.append(k, String(v))
  }
  const s = q.toString()
  return s === "" ? "" : `?${s}`
}

/** Reads a body, failing past `max` bytes. */
const readCapped = async (res: Response, max: number): Promise<Buffer> => {
  const declared = Number(res.headers.get("content-length") ?? "")
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel()
    throw new FeishuHttpError(413, undefined, `resource of ${declared} bytes is over the ${max}-byte limit`, undefined)
  }
  const chunks: Array<Uint8Array> = []
  let size = 0
  if (res.body !== null) {
    for await (const chunk of res.body) {
      size += chunk.byteLength
      if (size > max) {
        await res.body.cancel().catch(() => undefined)
        throw new FeishuHttpError(413, undefined, `resource is over the ${max}-byte limit`, undefined)
      }
      chunks.push(chunk)
    }
  }
  return Buffer.concat(chunks)
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** The retry hint of a refusal: Feishu's gateway sends `x-ogw-ratelimit-reset` (seconds). */
const retryHint = (headers: Headers): number | undefined => {
  const reset = Number(headers.get("x-ogw-ratelimit-reset") ?? "")
  if (headers.get("x-ogw-ratelimit-reset") !== null && Number.isFinite(reset) && reset >= 0) return Math.min(reset, 3_600) * 1000
  return retryAfterHeader(headers, Date.now())
}

/** The file name a multipart part is sent with (Feishu reads the image from its bytes). */
const partName = (bytes: Uint8Array): { readonly name: string; readonly type: string } => {
  const type = sniffImage(bytes)
  return type === undefined ? { name: "file", type: "application/octet-stream" } : { name: `image.${type.slice("image/".length)}`, type }
}

/**
 * A multipart form of the SDK's `data` (what axios would build for `Content-Type:
 * multipart/form-data`): strings and numbers as fields, bytes as a file part. Streams are not
 * taken (we always pass bytes).
 */
const formOf = (data: unknown): FormData => {
  const form = new FormData()
  if (!isRecord(data)) return form
  for (const [key, value] of Object.entries(data)) {
    if (value === undefined || value === null) continue
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") form.append(key, String(value))
    else if (value instanceof Uint8Array) {
      const part = partName(value)
      form.append(key, new Blob([new Uint8Array(value)], { type: part.type }), part.name)
    } else throw new Error(`multipart field ${key}: only text and bytes are sent`)
  }
  return form
}

interface RequestOptions {
  readonly url?: string
  readonly method?: string
  readonly headers?: Record<string, unknown>
  readonly params?: Record<string, unknown>
  readonly data?: unknown
  readonly responseType?: string
  readonly timeout?: number
  readonly $return_headers?: boolean
}

/**
 * The SDK's HTTP on `fetch`: JSON in and out; an answer with a non-2xx status or a non-zero `code`
 * throws FeishuHttpError (except the WebSocket endpoint's, which the SDK reads itself); `stream`
 * answers (resource downloads) are read whole, capped at MAX_DOWNLOAD_BYTES.
 */
const request = async (o: RequestOptions): Promise<unknown> => {
  const url = `${o.url ?? ""}${queryString(o.params)}`
  const method = (o.method ?? "GET").toUpperCase()
  const headers: Record<string, string> = {}
  // A multipart upload (the SDK sets the bare type): fetch writes the type with its boundary.
  let multipart = false
  for (const [k, v] of Object.entries(o.headers ?? {})) {
    if (k.toLowerCase() === "content-type") multipart = typeof v === "string" && /^multipart\/form-data/i.test(v)
    else if (typeof v === "string" || typeof v === "number") headers[k] = String(v)
  }
  const hasBody = o.data !== undefined && method !== "GET" && method !== "HEAD"
  if (hasBody && !multipart) headers["Content-Type"] = "application/json; charset=utf-8"
  const outer = currentSignal.getStore()
  const timeout = AbortSignal.timeout(o.timeout ?? (multipart ? UPLOAD_TIMEOUT_MS : REQUEST_TIMEOUT_MS))
  const signal = outer === undefined ? timeout : AbortSignal.any([outer, timeout])
  const requestBody = !hasBody ? null : multipart ? formOf(o.data) : JSON.stringify(o.data)
  const res = await fetch(url, { method, headers, body: requestBody, signal, redirect: "error" })
  if (o.responseType === "stream") {
    if (!res.ok) {
      const text = await res.text().catch(() => "")
      const body: unknown = (() => {
        try {
          return JSON.parse(text)
        } catch {
          return undefined
        }
      })()
      const code = isRecord(body) && typeof body.code === "number" ? body.code : undefined
      const msg = isRecord(body) && typeof body.msg === "string" ? body.msg : text.slice(0, 200)
      throw new FeishuHttpError(res.status, code, msg, retryHint(res.headers))
    }
    const bytes = await readCapped(res, MAX_DOWNLOAD_BYTES)
    const data = Readable.from([bytes])
    return o.$return_headers === true ? { data, headers: Object.fromEntries(res.headers.entries()) } : data
  }
  const text = await readCapped(res, 4 * 1024 * 1024).then((b) => b.toString("utf8"))
  let body: unknown
  try {
    body = text === "" ? {} : JSON.parse(text)
  } catch {
    throw new FeishuHttpError(res.status, undefined, `not JSON: ${text.slice(0, 200)}`, retryHint(res.headers))
  }
  const code = isRecord(body) && typeof body.code === "number" ? body.code : undefined
  const msg = isRecord(body) && typeof body.msg === "string" ? body.msg : ""
  const wsEndpoint = url.includes("/callback/ws/endpoint")
  if (!res.ok || (code !== undefined && code !== 0 && !wsEndpoint)) {
    throw new FeishuHttpError(res.status, code, msg === "" ? res.statusText : msg, retryHint(res.headers))
  }
  return o.$return_headers === true ? { data: body, headers: Object.fromEntries(res.headers.entries()) } : body
}

/** Our HTTP as the SDK's `HttpInstance`. */
export const httpInstance: Lark.HttpInstance = {
  request: <T, R = T>(o: Lark.HttpRequestOptions<unknown>) => request(o) as Promise<R>,
  get: <T, R = T>(url: string, o?: Lark.HttpRequestOptions<unknown>) => request({ ...o, url, method: "GET" }) as Promise<R>,
  delete: <T, R = T>(url: string, o?: Lark.HttpRequestOptions<unknown>) => request({ ...o, url, method: "DELETE" }) as Promise<R>,
  head: <T, R = T>(url: string, o?: Lark.HttpRequestOptions<unknown>) => request({ ...o, url, method: "HEAD" }) as Promise<R>,
  options: <T, R = T>(url: string, o?: Lark.HttpRequestOptions<unknown>) => request({ ...o, url, method: "OPTIONS" }) as Promise<R>,
  post: <T, R = T>(url: string, data?: unknown, o?: Lark.HttpRequestOptions<unknown>) => request({ ...o, url, method: "POST", data }) as Promise<R>,
  put: <T, R = T>(url: string, data?: unknown, o?: Lark.HttpRequestOptions<unknown>) => request({ ...o, url, method: "PUT", data }) as Promise<R>,
  patch: <T, R = T>(url: string, data?: unknown, o?: Lark.HttpRequestOptions<unknown>) => request({ ...o, url, method: "PATCH", data }) as Promise<R>
}

/** The open-platform domain a `base_url` setting names (`feishu` / `lark` are shortcuts). */
export const domainOf = (baseUrl: string | undefined): string => {
  const b = (baseUrl ?? "").trim()
  if (b === "" || /^feishu$/i.test(b)) return "https://open.feishu.cn"
  if (/^lark$/i.test(b)) return "https://open.larksuite.com"
  return b.replace(/\/+$/, "")
}

/** Where the SDK's log lines go (already stripped of anything but text). */
export type LogSink = (level: "warn" | "error", text: string) => void

/**
 * The SDK's logger: only its text is kept (objects, which can hold request headers, are dropped),
 * with the secret and bearer tokens redacted.
 */
export const sdkLogger = (secret: string, sink: LogSink): Lark.Logger => {
  const text = (args: ReadonlyArray<unknown>) =>
    redact(secret, args.flatMap((a) => (typeof a === "string" ? [a] : a instanceof Error ? [a.message] : [])).join(" "))
  const quiet = () => undefined
  return {
    error: (...args: Array<unknown>) => {
      const t = text(args)
      if (t !== "") sink("error", t)
    },
    warn: (...args: Array<unknown>) => {
      const t = text(args)
      if (t !== "") sink("warn", t)
    },
    info: quiet,
    debug: quiet,
    trace: quiet
  }
}

/** Never print the secret or a token, whatever a message carries. */
export const redact = (secret: string, text: string): string =>
  (secret === "" ? text : text.replaceAll(secret, "<secret>")).replace(/Bearer\s+[\w.-]+/gi, "Bearer <token>").replace(/\bt-[\w.-]{16,}/g, "<token>")

export interface FeishuClient {
  readonly client: Lark.Client
  readonly domain: string
  readonly appId: string
  readonly appSecret: string
  /** Forgets the cached tenant token (the platform said it is no longer valid). */
  readonly dropToken: () => void
}

export const makeClient = (appId: string, appSecret: string, domain: string, sink: LogSink): FeishuClient => {
  const cache = new Lark.DefaultCache()
  const client = new Lark.Client({
    appId,
    appSecret,
    domain,
    httpInstance,
    cache,
    logger: sdkLogger(appSecret, sink),
    loggerLevel: Lark.LoggerLevel.warn
  })
  return { client, domain, appId, appSecret, dropToken: () => cache.values.clear() }
}

/** What a thrown error means for us. */
export const classify = (secret: string) => (method: string, e: unknown): PlatformCallError => {
  if (e instanceof FeishuHttpError) {
    const code = e.code
    const kind: CallErrorKind = e.status === 429 || e.status >= 500 || (code !== undefined && (RATE_LIMIT_CODES.has(code) || TOKEN_CODES.has(code)))
      ? "retry"
      : code !== undefined && FORMAT_CODES.has(code)
      ? "format"
      : "refused"
    return new PlatformCallError({
      platform: PLATFORM,
      method,
      kind,
      status: code ?? e.status,
      description: redact(secret, e.msg),
      retryAfterMs: e.retryAfterMs
    })
  }
  if (e instanceof Error && /failed to get tenant_access_token/.test(e.message)) {
    return new PlatformCallError({ platform: PLATFORM, method, kind: "refused", status: undefined, description: redact(secret, e.message), retryAfterMs: undefined })
  }
  const n = networkError(PLATFORM, method, e)
  return new PlatformCallError({ ...n, description: redact(secret, n.description) })
}

/** One API call through the SDK, retried as Feishu asks. */
export const call = <A>(c: FeishuClient, method: string, f: (client: Lark.Client) => Promise<A>): Effect.Effect<A, PlatformCallError> =>
  platformCall(
    PLATFORM,
    method,
    (signal) =>
      currentSignal.run(signal, () =>
        f(c.client).catch((e: unknown) => {
          if (e instanceof FeishuHttpError && e.code !== undefined && TOKEN_CODES.has(e.code)) c.dropToken()
          throw e
        })),
    classify(c.appSecret)
  )

export interface BotInfo {
  readonly openId: string
  readonly name: string
}

/** `/open-apis/bot/v3/info`: the bot's open_id (how mentions of it are recognised) and name. */
export const botInfo = (c: FeishuClient): Effect.Effect<BotInfo, PlatformCallError> =>
  call(c, "bot/v3/info", (client) => client.request<unknown>({ method: "GET", url: "/open-apis/bot/v3/info" })).pipe(
    Effect.flatMap((body) => {
      const bot = isRecord(body) && isRecord(body.bot) ? body.bot : undefined
      const openId = bot !== undefined && typeof bot.open_id === "string" ? bot.open_id : undefined
      return openId === undefined
        ? Effect.fail(new PlatformCallError({ platform: PLATFORM, method: "bot/v3/info", kind: "refused", status: undefined, description: "no bot in the answer (is the bot capability enabled?)", retryAfterMs: undefined }))
        : Effect.succeed({ openId, name: bot !== undefined && typeof bot.app_name === "string" ? bot.app_name : "" })
    })
  )

const messageIdOf = (method: string) => (res: unknown): Effect.Effect<string, PlatformCallError> => {
  const data = isRecord(res) && isRecord(res.data) ? res.data : undefined
  const id = data !== undefined && typeof data.message_id === "string" ? data.message_id : undefined
  return id === undefined
    ? Effect.fail(new PlatformCallError({ platform: PLATFORM, method, kind: "refused", status: undefined, description: "no message_id in the answer", retryAfterMs: undefined }))
    : Effect.succeed(id)
}

export type MsgType = "interactive" | "text" | "image"

/** Where a new message goes. */
export type Destination =
  | { readonly kind: "reply"; readonly messageId: string }
  | { readonly kind: "chat"; readonly chatId: string }
  | { readonly kind: "user"; readonly openId: string }

/**
 * Sends a message; its id. `uuid` makes the send idempotent (Feishu sends one message per uuid
 * within an hour), so a retry after a lost answer does not send it twice.
 */
export const sendMessage = (
  c: FeishuClient,
  to: Destination,
  msgType: MsgType,
  content: string,
  uuid: string
): Effect.Effect<string, PlatformCallError> =>
  to.kind === "reply"
    ? call(c, "im.message.reply", (client) =>
      client.im.message.reply({ path: { message_id: to.messageId }, data: { msg_type: msgType, content, uuid } })).pipe(
        Effect.flatMap(messageIdOf("im.message.reply"))
      )
    : call(c, "im.message.create", (client) =>
      client.im.message.create({
        params: { receive_id_type: to.kind === "chat" ? "chat_id" : "open_id" },
        data: { receive_id: to.kind === "chat" ? to.chatId : to.openId, msg_type: msgType, content, uuid }
      })).pipe(Effect.flatMap(messageIdOf("im.message.create")))

/** Whether message `messageId` was sent by this app (`GET /open-apis/im/v1/messages/:id`). */
export const sentByApp = (c: FeishuClient, messageId: string): Effect.Effect<boolean, PlatformCallError> =>
  call(c, "im.message.get", (client) => client.im.message.get({ path: { message_id: messageId } })).pipe(
    Effect.map((res: unknown) => {
      const data = isRecord(res) && isRecord(res.data) ? res.data : undefined
      const first: unknown = data !== undefined && Array.isArray(data.items) ? data.items[0] : undefined
      const sender = isRecord(first) && isRecord(first.sender) ? first.sender : undefined
      return sender !== undefined && sender.sender_type === "app" && sender.id === c.appId
    })
  )

/** Replaces a card's content (only cards sent with `update_multi` can be). */
export const patchCard = (c: FeishuClient, messageId: string, content: string): Effect.Effect<void, PlatformCallError> =>
  call(c, "im.message.patch", (client) => client.im.message.patch({ path: { message_id: messageId }, data: { content } })).pipe(Effect.asVoid)

/** Downloads an image of a message (at most MAX_DOWNLOAD_BYTES): its bytes and declared type. */
export const downloadImage = (
  c: FeishuClient,
  messageId: string,
  imageKey: string
): Effect.Effect<{ readonly bytes: Buffer; readonly contentType: string | undefined }, PlatformCallError> =>
  call(c, "im.messageResource.get", async (client) => {
    const res = await client.im.messageResource.get({ path: { message_id: messageId, file_key: imageKey }, params: { type: "image" } })
    const chunks: Array<Buffer> = []
    for await (const chunk of res.getReadableStream()) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array))
    const headers: unknown = res.headers
    const type = isRecord(headers) && typeof headers["content-type"] === "string" ? headers["content-type"] : undefined
    return { bytes: Buffer.concat(chunks), contentType: type }
  })

/** The largest image Feishu takes (`POST /open-apis/im/v1/images`: at most 10 MB, not empty). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024

/**
 * Uploads an image for a message (`im.image.create`: multipart, `image_type=message`, the file as
 * `image`); its `image_key`.
 */
export const uploadImage = (c: FeishuClient, bytes: Uint8Array): Effect.Effect<string, PlatformCallError> =>
  call(c, "im.image.create", (client) => client.im.image.create({ data: { image_type: "message", image: Buffer.from(bytes) } })).pipe(
    Effect.flatMap((data) =>
      typeof data?.image_key === "string" && data.image_key !== ""
        ? Effect.succeed(data.image_key)
        : Effect.fail(new PlatformCallError({ platform: PLATFORM, method: "im.image.create", kind: "refused", status: undefined, description: "no image_key in the answer", retryAfterMs: undefined }))
    )
  )
