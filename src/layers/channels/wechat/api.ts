/**
 * The WeChat iLink bot HTTP API (issue 12) as Effects: JSON POSTs to `<base_url>/ilink/bot/<method>`
 * with the bot token (`AuthorizationType: ilink_bot_token`, `Authorization: Bearer …`, a random
 * `X-WECHAT-UIN`) and `base_info`; the QR login's two GETs without a token. Retried as the shared
 * calls retry (shared/calls.ts: 429 after `Retry-After`, 5xx and network failures with backoff).
 *
 * An answer is an HTTP 200 with `ret` (0 = success) and, on failure, `errcode` / `errmsg`; `-14`
 * (in either) means the bot's session expired and only a new QR login helps (`sessionExpired`).
 * No iLink return code is documented as a rate limit, so only HTTP 429 is retried as one.
 *
 * Every answer is size-capped and decoded by a Schema (the platform is not trusted either);
 * uint64 ids (`message_id`) are read as text so they keep every digit. The token never appears in
 * an error.
 */
import { Effect, Schema } from "effect"
import { randomInt } from "node:crypto"
import { kindOfStatus, networkError, PlatformCallError, platformCall, retryAfterHeader } from "../shared/calls.ts"

export const PLATFORM = "wechat"

/** The iLink code for an expired bot session (a new QR login is needed). */
export const SESSION_EXPIRED = -14
/** The largest JSON answer read (a getupdates batch is far smaller). */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024
/** Time for an ordinary call. */
export const CALL_TIMEOUT_MS = 15_000
/** Time a getupdates long poll may be held by the server (it suggests ~35 s). */
export const LONG_POLL_MS = 38_000

const BASE_INFO = { channel_version: "1.0.0", bot_agent: "anna" }

export interface Endpoint {
  readonly baseUrl: string
  readonly token: string | undefined
}

/** Whether a failed call means the session expired (a new `anna channel login wechat` is needed). */
export const sessionExpired = (e: PlatformCallError): boolean => e.status === SESSION_EXPIRED

const fail = (method: string, kind: PlatformCallError["kind"], status: number | undefined, description: string, retryAfterMs?: number) =>
  new PlatformCallError({ platform: PLATFORM, method, kind, status, description, retryAfterMs })

const classify = (method: string, e: unknown): PlatformCallError =>
  e instanceof PlatformCallError ? e : networkError(PLATFORM, method, e)

/** Reads at most `max` bytes of a body; fails beyond it (the rest is not downloaded). */
export const readCapped = async (res: Response, max: number, what: string): Promise<Uint8Array> => {
  const declared = Number(res.headers.get("content-length") ?? "")
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel()
    throw new Error(`${what} is ${declared} bytes, more than ${max}`)
  }
  const reader = res.body?.getReader()
  if (reader === undefined) return new Uint8Array()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel()
      throw new Error(`${what} is more than ${max} bytes`)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

/** `"message_id": 123…` → `"message_id": "123…"`: uint64 ids survive JSON.parse whole. */
const quoteIds = (text: string): string => text.replace(/"(message_id|msg_id|svr_id)"\s*:\s*(\d+)/g, "\"$1\":\"$2\"")

/** A random uint32 as decimal text, base64-encoded (what iLink expects in `X-WECHAT-UIN`). */
const uin = (): string => Buffer.from(String(randomInt(0, 2 ** 32 - 1))).toString("base64")

const Envelope = Schema.Struct({
  ret: Schema.optionalKey(Schema.Number),
  errcode: Schema.optionalKey(Schema.Number),
  errmsg: Schema.optionalKey(Schema.String)
})

interface Request {
  readonly method: string
  readonly url: string
  readonly body?: unknown
  readonly token?: string | undefined
  readonly timeoutMs: number
  /** What the call means when its own time limit passes (a long poll: nothing happened). */
  readonly onTimeout?: unknown
}

/** One HTTP exchange: the decoded answer, or a PlatformCallError saying what it means. */
const exchange = async <A>(r: Request, schema: Schema.Decoder<A>, signal: AbortSignal): Promise<A> => {
  const timeout = AbortSignal.timeout(r.timeoutMs)
  const headers: Record<string, string> = { "X-WECHAT-UIN": uin(), "iLink-App-Id": "bot" }
  if (r.body !== undefined) headers["Content-Type"] = "application/json"
  if (r.token !== undefined) {
    headers.AuthorizationType = "ilink_bot_token"
    headers.Authorization = `Bearer ${r.token}`
  }
  let res: Response
  try {
    res = await fetch(r.url, {
      method: r.body === undefined ? "GET" : "POST",
      headers,
      ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }),
      signal: AbortSignal.any([signal, timeout])
    })
  } catch (e) {
    if (timeout.aborted && !signal.aborted && r.onTimeout !== undefined) return decodeOr(r.method, schema, r.onTimeout)
    throw e
  }
  let raw: Uint8Array
  try {
    raw = await readCapped(res, MAX_ANSWER_BYTES, "the answer")
  } catch (e) {
    if (timeout.aborted && !signal.aborted && r.onTimeout !== undefined) return decodeOr(r.method, schema, r.onTimeout)
    throw e
  }
  const text = Buffer.from(raw).toString("utf8")
  if (res.status !== 200) {
    throw fail(r.method, kindOfStatus(res.status), res.status, `HTTP ${res.status} ${text.slice(0, 200).trim()}`.trim(), retryAfterHeader(res.headers, Date.now()))
  }
  let json: unknown
  try {
    json = text.trim() === "" ? {} : JSON.parse(quoteIds(text))
  } catch {
    throw fail(r.method, "refused", undefined, "the answer is not JSON")
  }
  const envelope = Schema.decodeUnknownResult(Envelope)(json)
  if (envelope._tag === "Failure") throw fail(r.method, "refused", undefined, "the answer is malformed")
  const { ret, errcode, errmsg } = envelope.success
  const code = ret !== undefined && ret !== 0 ? ret : errcode !== undefined && errcode !== 0 ? errcode : undefined
  if (code !== undefined) {
    throw fail(
      r.method,
      "refused",
      code,
      code === SESSION_EXPIRED ? `session expired (${errmsg ?? `ret ${code}`})` : (errmsg ?? "").slice(0, 200) || `ret ${code}`
    )
  }
  return decodeOr(r.method, schema, json)
}

const decodeOr = <A>(method: string, schema: Schema.Decoder<A>, json: unknown): A => {
  const decoded = Schema.decodeUnknownResult(schema)(json)
  if (decoded._tag === "Failure") throw fail(method, "refused", undefined, `the answer is malformed: ${decoded.failure.message.split("\n")[0] ?? ""}`)
  return decoded.success
}

const redacted = (token: string | undefined) => (e: PlatformCallError): PlatformCallError =>
  token === undefined || token === "" || !e.description.includes(token)
    ? e
    : new PlatformCallError({ ...e, description: e.description.replaceAll(token, "<token>") })

const joinUrl = (base: string, path: string) => `${base.replace(/\/+$/, "")}/${path}`

/** An authenticated bot call: `POST <base>/ilink/bot/<method>` with `base_info`. */
export const botCall = <A>(
  o: Endpoint,
  method: string,
  body: Readonly<Record<string, unknown>>,
  schema: Schema.Decoder<A>,
  options: { readonly timeoutMs?: number; readonly onTimeout?: unknown } = {}
): Effect.Effect<A, PlatformCallError> =>
  platformCall(PLATFORM, method, (signal) =>
    exchange({
      method,
      url: joinUrl(o.baseUrl, `ilink/bot/${method}`),
      body: { ...body, base_info: BASE_INFO },
      token: o.token,
      timeoutMs: options.timeoutMs ?? CALL_TIMEOUT_MS,
      onTimeout: options.onTimeout
    }, schema, signal), classify).pipe(Effect.mapError(redacted(o.token)))

// --- The wire's shapes (only what anna reads; every field optional, as the platform omits freely) ---

const Str = Schema.optionalKey(Schema.String)
const Num = Schema.optionalKey(Schema.Number)
/** An id as text (uint64 ids are quoted before parsing; small ones may come as numbers). */
const Id = Schema.optionalKey(Schema.Union([Schema.String, Schema.Number]))

export const CdnMedia = Schema.Struct({ encrypt_query_param: Str, aes_key: Str, encrypt_type: Num, full_url: Str })
export type CdnMedia = typeof CdnMedia.Type

export const ImageItem = Schema.Struct({
  media: Schema.optionalKey(CdnMedia),
  /** The AES-128 key as 32 hex digits (preferred over `media.aes_key`). */
  aeskey: Str,
  mid_size: Num,
  hd_size: Num
})
export type ImageItem = typeof ImageItem.Type

export const MessageItem = Schema.Struct({
  type: Num,
  text_item: Schema.optionalKey(Schema.Struct({ text: Str })),
  image_item: Schema.optionalKey(ImageItem),
  voice_item: Schema.optionalKey(Schema.Struct({ text: Str }))
})
export type MessageItem = typeof MessageItem.Type

/** An inbound message (iLink's `WeixinMessage`). `message_type` 1 = from a user, 2 = from a bot. */
export const WeixinMessage = Schema.Struct({
  seq: Num,
  message_id: Id,
  from_user_id: Str,
  to_user_id: Str,
  client_id: Str,
  create_time_ms: Num,
  session_id: Str,
  group_id: Str,
  message_type: Num,
  message_state: Num,
  item_list: Schema.optionalKey(Schema.Array(MessageItem)),
  context_token: Str
})
export type WeixinMessage = typeof WeixinMessage.Type

export const GetUpdatesResponse = Schema.Struct({
  msgs: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  get_updates_buf: Str,
  longpolling_timeout_ms: Num
})

export const SendMessageResponse = Schema.Struct({ message_id: Id })
export const GetConfigResponse = Schema.Struct({ typing_ticket: Str })
/** Where to POST an encrypted upload: the full address, or the parameter of `<cdn_base_url>/upload`. */
export const GetUploadUrlResponse = Schema.Struct({ upload_param: Str, upload_full_url: Str })
export const Empty = Schema.Struct({})

export const QrCodeResponse = Schema.Struct({ qrcode: Schema.String, qrcode_img_content: Schema.String })
export type QrCodeResponse = typeof QrCodeResponse.Type

export const QrStatusResponse = Schema.Struct({
  status: Schema.String,
  bot_token: Str,
  ilink_bot_id: Str,
  baseurl: Str,
  ilink_user_id: Str,
  redirect_host: Str
})
export type QrStatusResponse = typeof QrStatusResponse.Type

/** The message as one decoded value, or undefined when it is malformed (it is then skipped). */
export const decodeMessage = (raw: unknown): WeixinMessage | undefined => {
  const decoded = Schema.decodeUnknownResult(WeixinMessage)(raw)
  return decoded._tag === "Success" ? decoded.success : undefined
}

/** iLink's QR login, step 1: a new code to scan (`qrcode` to poll with, `qrcode_img_content` to show). */
export const getBotQrcode = (baseUrl: string): Effect.Effect<QrCodeResponse, PlatformCallError> =>
  platformCall(PLATFORM, "get_bot_qrcode", (signal) =>
    exchange({
      method: "get_bot_qrcode",
      url: joinUrl(baseUrl, "ilink/bot/get_bot_qrcode?bot_type=3"),
      body: { local_token_list: [] },
      timeoutMs: CALL_TIMEOUT_MS
    }, QrCodeResponse, signal), classify)

/** Step 2, a long poll: what happened to the code (`wait` when nothing did before the time limit). */
export const getQrcodeStatus = (baseUrl: string, qrcode: string): Effect.Effect<QrStatusResponse, PlatformCallError> =>
  platformCall(PLATFORM, "get_qrcode_status", (signal) =>
    exchange({
      method: "get_qrcode_status",
      url: joinUrl(baseUrl, `ilink/bot/get_qrcode_status?qrcode=${encodeURIComponent(qrcode)}`),
      timeoutMs: LONG_POLL_MS,
      onTimeout: { status: "wait" }
    }, QrStatusResponse, signal), classify)
