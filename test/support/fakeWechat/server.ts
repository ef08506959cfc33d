/**
 * A fake WeChat iLink bot API on 127.0.0.1 (real HTTP, ephemeral port), speaking the wire format of
 * the public iLink protocol (the one Tencent's openclaw-weixin plugin documents): point the WeChat
 * channel's `base_url` at `baseUrl` and its `cdn_base_url` at `cdnBaseUrl`.
 *
 * Covered:
 * - QR login: `get_bot_qrcode?bot_type=3` (GET or POST) issues `qr-N` codes; `get_qrcode_status`
 *   is a long poll (answers at once when the code's state changed since the last answer, else when
 *   it changes or after `qrHoldMs` with `wait`); the test moves the latest code through `wait →
 *   scaned → confirmed` (with `bot_token`, `ilink_bot_id`, `baseurl`, `ilink_user_id`) or `expired`.
 * - Bot calls `POST /ilink/bot/<method>` with `AuthorizationType: ilink_bot_token` and
 *   `Authorization: Bearer <token>` (anything else: `ret -14`, as an invalid session): `getupdates`
 *   (long poll over a log of inbound messages; `get_updates_buf` is an opaque cursor into it, an
 *   old one makes the fake send again what followed it, as the platform does), `sendmessage`
 *   (needs a `context_token` the fake gave that user; recorded with it), `getconfig` (a
 *   `typing_ticket` per user), `sendtyping` (needs that ticket; recorded).
 * - `message_id`s are uint64 written as bare JSON numbers above 2^53 (a client must keep the digits).
 * - CDN: `GET /c2c/download?encrypted_query_param=…` serves images encrypted with AES-128-ECB
 *   (PKCS#7); a message gives the key as `image_item.aeskey` (hex) or `media.aes_key` (base64 of
 *   the raw key or of its hex), and the address as `full_url` or `encrypt_query_param`.
 * - Pictures out: `getuploadurl` checks what the bot declares (`filekey`, `media_type`, `to_user_id`,
 *   `rawsize`, `rawfilemd5`, `filesize` = the size once padded, `aeskey` as 32 hex digits, a
 *   thumbnail unless `no_need_thumb`) and answers `upload_param` (and `upload_full_url` with the
 *   `uploadFullUrl` option); `POST /c2c/upload?encrypted_query_param=…&filekey=…` takes the
 *   encrypted bytes, decrypts them with the declared key and checks size and MD5 (else HTTP 400 with
 *   the reason in `x-error-message`), and answers the download parameter in `x-encrypted-param`
 *   (the picture is then served by `/c2c/download` too). `sendmessage` takes an image item naming
 *   that parameter with the key (`media.aes_key`, base64 of the hex or of the raw key); `uploads`
 *   holds what reached the CDN, `SentMessage.image` the picture a message shows (decrypted).
 * - Failure injection: `failNext(method, { status | ret, message, retryAfter, times })` (method
 *   `cdn_upload` for the CDN's upload); `expireSession()`
 *   makes every bot call answer `ret -14` until `renewSession()`; `redeliver(id)` queues a message
 *   again (a duplicate delivery); `holdSendsAfter(n)` holds the sends to a user past their n-th
 *   message (one whose client goes away meanwhile is dropped).
 *
 * Not covered: thumbnails, video/file/voice uploads, voice/file/video downloads, `notifystart/stop`,
 * verification codes and IDC redirects in the QR login, groups.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { EventEmitter } from "node:events"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"

export interface FakeWechatOptions {
  /** The bot token a confirmed login hands out and bot calls must carry. */
  readonly token?: string
  /** How long a `getupdates` with nothing new is held (ms). */
  readonly pollHoldMs?: number
  /** How long a `get_qrcode_status` with nothing new is held (ms). */
  readonly qrHoldMs?: number
  readonly botId?: string
  /** `getuploadurl` also answers `upload_full_url` (newer servers do). */
  readonly uploadFullUrl?: boolean
}

export type QrState = "wait" | "scaned" | "confirmed" | "expired"

export interface Call {
  readonly method: string
  readonly status: number
  readonly ret: number
  readonly body: unknown
}

export interface SentMessage {
  readonly to: string
  readonly text: string
  readonly contextToken: string
  readonly clientId: string
  /** The picture the message shows (decrypted), for an image item. */
  readonly image?: Buffer
}

/** A picture the CDN took. */
export interface Upload {
  readonly to: string
  readonly filekey: string
  readonly plain: Buffer
  readonly encrypted: Buffer
  /** Its download parameter (`x-encrypted-param`). */
  readonly downloadParam: string
  /** Whether it came to `upload_full_url` (else to the address built from `upload_param`). */
  readonly viaFullUrl: boolean
}

interface PendingUpload {
  readonly to: string
  readonly filekey: string
  readonly rawsize: number
  readonly md5: string
  readonly filesize: number
  readonly key: Buffer
}

export interface InboundSpec {
  readonly from: string
  readonly text?: string
  /** Plain image bytes, put on the CDN encrypted. */
  readonly image?: Buffer
  /** How the image's key and address are given (default `hex` + `query`). */
  readonly imageKey?: "hex" | "base64raw" | "base64hex"
  readonly imageAddress?: "query" | "full_url"
  readonly groupId?: string
  readonly messageType?: number
}

export interface Failure {
  readonly status?: number
  readonly ret?: number
  /** The reason given: `errmsg`, or the CDN's `x-error-message`. */
  readonly message?: string
  readonly retryAfter?: number
  readonly times?: number
}

interface Qr {
  readonly qrcode: string
  readonly url: string
  state: QrState
  reported: QrState | undefined
}

/** AES-128-ECB with PKCS#7 padding (what iLink's CDN stores). */
export const encryptEcb = (plain: Buffer, key: Buffer): Buffer => {
  const c = createCipheriv("aes-128-ecb", key, null)
  return Buffer.concat([c.update(plain), c.final()])
}

/** AES-128-ECB undone, or undefined when the bytes or the padding are wrong. */
const decryptOr = (data: Buffer, key: Buffer): Buffer | undefined => {
  try {
    const d = createDecipheriv("aes-128-ecb", key, null)
    return Buffer.concat([d.update(data), d.final()])
  } catch {
    return undefined
  }
}

/** The padded size of `n` bytes under AES-128-ECB with PKCS#7. */
const paddedSize = (n: number): number => (Math.floor(n / 16) + 1) * 16

/** The AES key of `media.aes_key`: base64 of the 16 bytes or of their 32 hex digits. */
const keyOfBase64 = (b64: string): Buffer | undefined => {
  const raw = Buffer.from(b64, "base64")
  if (raw.length === 16) return raw
  const hex = raw.toString("latin1")
  return /^[0-9a-f]{32}$/i.test(hex) ? Buffer.from(hex, "hex") : undefined
}

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((done, fail) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => done(Buffer.concat(chunks)))
    req.on("error", fail)
  })

const readJson = (req: IncomingMessage): Promise<unknown> =>
  new Promise((done, fail) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      try {
        done(text.trim() === "" ? {} : JSON.parse(text))
      } catch (e) {
        fail(e)
      }
    })
    req.on("error", fail)
  })

const rec = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {})
const str = (v: unknown): string => (typeof v === "string" ? v : "")

export class FakeWechat {
  readonly token: string
  readonly botId: string
  readonly calls: Array<Call> = []
  readonly sent: Array<SentMessage> = []
  readonly typing: Array<{ readonly to: string; readonly status: number }> = []
  readonly qrs: Array<Qr> = []
  readonly uploads: Array<Upload> = []
  #pending = new Map<string, PendingUpload>()
  #uploadFullUrl: boolean
  #baseUrl = ""
  #log: Array<string> = []
  #nextId = 7_000_000_000_000_000_000n
  #contexts = new Map<string, Set<string>>()
  #tickets = new Map<string, string>()
  #cdn = new Map<string, Buffer>()
  #failures = new Map<string, Failure & { left: number }>()
  #expired = false
  #holdAfter: number | undefined = undefined
  /** sendmessage requests held now (see `holdSendsAfter`). */
  held = 0
  #closed = false
  #events = new EventEmitter()
  #sockets = new Set<Socket>()
  #server = createServer((req, res) => {
    this.#route(req, res).catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(e))
    })
  })
  readonly #pollHoldMs: number
  readonly #qrHoldMs: number

  constructor(options: FakeWechatOptions = {}) {
    this.token = options.token ?? "fake-ilink-bot-token-0123456789"
    this.botId = options.botId ?? "b0f1c2d3@im.bot"
    this.#pollHoldMs = options.pollHoldMs ?? 20_000
    this.#qrHoldMs = options.qrHoldMs ?? 20_000
    this.#uploadFullUrl = options.uploadFullUrl ?? false
    this.#events.setMaxListeners(0)
    this.#server.on("connection", (s) => {
      this.#sockets.add(s)
      s.on("close", () => this.#sockets.delete(s))
    })
  }

  get baseUrl() {
    return this.#baseUrl
  }
  get cdnBaseUrl() {
    return `${this.#baseUrl}/c2c`
  }

  async listen(): Promise<this> {
    await new Promise<void>((done) => this.#server.listen(0, "127.0.0.1", done))
    this.#baseUrl = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
    return this
  }

  #changed() {
    this.#events.emit("change")
  }

  /** A message from a WeChat user to the bot; returns it as delivered (with its id and context token). */
  sendUserMessage(spec: InboundSpec): Record<string, unknown> {
    const id = String(++this.#nextId)
    const contextToken = `ctx-${spec.from}-${id.slice(-6)}`
    const known = this.#contexts.get(spec.from) ?? new Set()
    known.add(contextToken)
    this.#contexts.set(spec.from, known)
    const items: Array<unknown> = []
    if (spec.text !== undefined) items.push({ type: 1, text_item: { text: spec.text } })
    if (spec.image !== undefined) {
      const key = randomBytes(16)
      const param = `eqp-${id}`
      this.#cdn.set(param, encryptEcb(spec.image, key))
      const form = spec.imageKey ?? "hex"
      const media: Record<string, unknown> = {
        encrypt_type: 1,
        ...(spec.imageAddress === "full_url"
          ? { full_url: `${this.cdnBaseUrl}/download?encrypted_query_param=${encodeURIComponent(param)}` }
          : { encrypt_query_param: param }),
        ...(form === "base64raw" ? { aes_key: key.toString("base64") } : {}),
        ...(form === "base64hex" ? { aes_key: Buffer.from(key.toString("hex")).toString("base64") } : {})
      }
      items.push({ type: 2, image_item: { media, ...(form === "hex" ? { aeskey: key.toString("hex") } : {}), mid_size: spec.image.length } })
    }
    const m = {
      seq: this.#log.length + 1,
      message_id: id,
      from_user_id: spec.from,
      to_user_id: this.botId,
      client_id: `c-${id}`,
      create_time_ms: Date.now(),
      session_id: `s-${spec.from}`,
      ...(spec.groupId === undefined ? {} : { group_id: spec.groupId }),
      message_type: spec.messageType ?? 1,
      message_state: 2,
      item_list: items,
      context_token: contextToken
    }
    this.#log.push(JSON.stringify(m).replace(/"message_id":"(\d+)"/, "\"message_id\":$1"))
    this.#changed()
    return m
  }

  /** Delivers the message with `messageId` once more (a duplicate delivery). */
  redeliver(messageId: string): void {
    const found = this.#log.find((m) => m.includes(`"message_id":${messageId},`))
    if (found === undefined) throw new Error(`no message ${messageId}`)
    this.#log.push(found)
    this.#changed()
  }

  /** The cursor a client holds after reading the first `n` log entries. */
  cursorAfter(n: number): string {
    return Buffer.from(JSON.stringify({ n, bot: this.botId })).toString("base64")
  }

  #position(buf: string): number {
    if (buf === "") return 0
    try {
      const v = rec(JSON.parse(Buffer.from(buf, "base64").toString("utf8")))
      return typeof v.n === "number" && Number.isInteger(v.n) && v.n >= 0 ? Math.min(v.n, this.#log.length) : 0
    } catch {
      return 0
    }
  }

  messages(to: string): ReadonlyArray<SentMessage> {
    return this.sent.filter((m) => m.to === to)
  }

  failNext(method: string, failure: Failure): void {
    this.#failures.set(method, { ...failure, left: failure.times ?? 1 })
  }

  /**
   * Holds every sendmessage to a user who already got `n` messages (a slow platform), until
   * `holdSendsAfter(undefined)`; a held request whose client goes away is dropped, not delivered.
   */
  holdSendsAfter(n: number | undefined): void {
    this.#holdAfter = n
    this.#changed()
  }

  /** Whether `getuploadurl` answers `upload_full_url` too (newer servers do). */
  answerUploadFullUrl(on: boolean): void {
    this.#uploadFullUrl = on
  }

  expireSession(): void {
    this.#expired = true
    this.#changed()
  }

  renewSession(): void {
    this.#expired = false
  }

  /** The latest QR code's state moves on (the user scans, confirms, or it times out). */
  setQr(state: QrState): void {
    const qr = this.qrs.at(-1)
    if (qr === undefined) throw new Error("no QR code was issued")
    qr.state = state
    this.#changed()
  }

  waitFor<T>(predicate: () => T | undefined | null | false, description: string, timeoutMs = 15_000): Promise<T> {
    return new Promise((done, fail) => {
      const check = () => {
        const v = predicate()
        if (v !== undefined && v !== null && v !== false) {
          cleanup()
          done(v)
        }
      }
      const timer = setTimeout(() => {
        cleanup()
        fail(new Error(`fake WeChat: timed out waiting for ${description}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        this.#events.off("change", check)
      }
      this.#events.on("change", check)
      check()
    })
  }

  /** Resolves when something changes or after `ms`; false once the fake is closed. */
  #until(ms: number, ready: () => boolean): Promise<void> {
    return new Promise((done) => {
      const check = () => {
        if (this.#closed || ready()) finish()
      }
      const timer = setTimeout(() => finish(), ms)
      const finish = () => {
        clearTimeout(timer)
        this.#events.off("change", check)
        done()
      }
      this.#events.on("change", check)
      check()
    })
  }

  #answer(res: ServerResponse, method: string, body: unknown, status: number, payload: string, ret: number, headers: Record<string, string> = {}) {
    this.calls.push({ method, status, ret, body })
    if (!res.destroyed) res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(payload)
    this.#changed()
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on("close", () => this.#changed())
    const url = new URL(req.url ?? "/", this.#baseUrl)
    if (req.method === "GET" && url.pathname === "/c2c/download") {
      const data = this.#cdn.get(url.searchParams.get("encrypted_query_param") ?? "")
      this.calls.push({ method: "cdn", status: data === undefined ? 404 : 200, ret: 0, body: null })
      this.#changed()
      if (data === undefined) return void res.writeHead(404).end("not found")
      return void res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": String(data.length) }).end(data)
    }
    if (req.method === "POST" && url.pathname === "/c2c/upload") return this.#cdnUpload(req, res, url)
    const match = /^\/ilink\/bot\/([a-z_]+)$/.exec(url.pathname)
    if (match === null) return void res.writeHead(404).end("not found")
    const method = match[1] ?? ""
    const body = req.method === "POST" ? await readJson(req) : {}
    const failure = this.#failures.get(method)
    if (failure !== undefined && failure.left > 0) {
      failure.left--
      if (failure.status !== undefined) {
        return this.#answer(res, method, body, failure.status, failure.status >= 500 ? "<html>502 Bad Gateway</html>" : JSON.stringify({ ret: -1, errmsg: "too many requests" }), 0, failure.retryAfter === undefined ? {} : { "Retry-After": String(failure.retryAfter) })
      }
      return this.#answer(res, method, body, 200, JSON.stringify({ ret: failure.ret, errcode: failure.ret, errmsg: failure.message ?? "injected failure" }), failure.ret ?? -1)
    }
    if (method === "get_bot_qrcode") return this.#qrcode(res, method, body)
    if (method === "get_qrcode_status") return this.#qrStatus(res, method, url.searchParams.get("qrcode") ?? "")
    const authorized = req.headers.authorizationtype === "ilink_bot_token" && req.headers.authorization === `Bearer ${this.token}`
    if (req.method !== "POST") return this.#answer(res, method, body, 405, "{}", 0)
    if (!authorized || this.#expired) {
      return this.#answer(res, method, body, 200, JSON.stringify({ ret: -14, errcode: -14, errmsg: "session timeout" }), -14)
    }
    const b = rec(body)
    switch (method) {
      case "getupdates":
        return this.#getUpdates(res, method, b)
      case "sendmessage": {
        const msg = rec(b.msg)
        const to = str(msg.to_user_id)
        const ctx = str(msg.context_token)
        const items = Array.isArray(msg.item_list) ? msg.item_list.map(rec) : []
        const text = items.map((i) => str(rec(i.text_item).text)).join("")
        if (!(this.#contexts.get(to)?.has(ctx) ?? false)) {
          return this.#answer(res, method, b, 200, JSON.stringify({ ret: -2, errmsg: "invalid context_token" }), -2)
        }
        const imageItems = items.filter((i) => i.type === 2)
        let image: Buffer | undefined
        for (const item of imageItems) {
          const media = rec(rec(item.image_item).media)
          const upload = this.uploads.find((u) => u.downloadParam === str(media.encrypt_query_param))
          const key = keyOfBase64(str(media.aes_key))
          if (upload === undefined || upload.to !== to) {
            return this.#answer(res, method, b, 200, JSON.stringify({ ret: -2, errmsg: "invalid encrypt_query_param" }), -2)
          }
          const plain = key === undefined ? undefined : decryptOr(upload.encrypted, key)
          if (plain === undefined || !plain.equals(upload.plain)) {
            return this.#answer(res, method, b, 200, JSON.stringify({ ret: -2, errmsg: "invalid aes_key" }), -2)
          }
          image = plain
        }
        if (text === "" && image === undefined) return this.#answer(res, method, b, 200, JSON.stringify({ ret: -2, errmsg: "empty message" }), -2)
        if (this.#holdAfter !== undefined && this.messages(to).length >= this.#holdAfter) {
          this.held++
          this.#changed()
          await this.#until(24 * 3600 * 1000, () => this.#holdAfter === undefined || res.destroyed)
          this.held--
          // A client that went away never learns of it: the message is not delivered.
          if (res.destroyed || this.#closed) return
        }
        this.sent.push({ to, text, contextToken: ctx, clientId: str(msg.client_id), ...(image === undefined ? {} : { image }) })
        return this.#answer(res, method, b, 200, JSON.stringify({ ret: 0 }), 0)
      }
      case "getuploadurl":
        return this.#getUploadUrl(res, method, b)
      case "getconfig": {
        const user = str(b.ilink_user_id)
        const ticket = Buffer.from(`ticket-${user}`).toString("base64")
        this.#tickets.set(user, ticket)
        return this.#answer(res, method, b, 200, JSON.stringify({ ret: 0, typing_ticket: ticket }), 0)
      }
      case "sendtyping": {
        const user = str(b.ilink_user_id)
        if (this.#tickets.get(user) !== str(b.typing_ticket)) {
          return this.#answer(res, method, b, 200, JSON.stringify({ ret: -2, errmsg: "invalid typing_ticket" }), -2)
        }
        this.typing.push({ to: user, status: typeof b.status === "number" ? b.status : 0 })
        return this.#answer(res, method, b, 200, JSON.stringify({ ret: 0 }), 0)
      }
      default:
        return this.#answer(res, method, b, 404, "{}", 0)
    }
  }

  #getUploadUrl(res: ServerResponse, method: string, b: Record<string, unknown>) {
    const refuse = (errmsg: string) => this.#answer(res, method, b, 200, JSON.stringify({ ret: -2, errmsg }), -2)
    const filekey = str(b.filekey)
    const to = str(b.to_user_id)
    const rawsize = b.rawsize
    const filesize = b.filesize
    const md5 = str(b.rawfilemd5)
    const aeskey = str(b.aeskey)
    if (filekey === "") return refuse("filekey is empty")
    if (typeof b.media_type !== "number" || ![1, 2, 3, 4].includes(b.media_type)) return refuse("invalid media_type")
    if (to === "") return refuse("to_user_id is empty")
    if (typeof rawsize !== "number" || !Number.isInteger(rawsize) || rawsize <= 0) return refuse("invalid rawsize")
    if (!/^[0-9a-f]{32}$/.test(md5)) return refuse("invalid rawfilemd5")
    if (filesize !== paddedSize(rawsize)) return refuse("filesize does not match rawsize")
    if (!/^[0-9a-f]{32}$/i.test(aeskey)) return refuse("invalid aeskey")
    if (b.no_need_thumb !== true && (b.media_type === 1 || b.media_type === 2) && typeof b.thumb_rawsize !== "number") {
      return refuse("thumbnail missing")
    }
    const param = `up-${randomBytes(12).toString("hex")}`
    this.#pending.set(param, { to, filekey, rawsize, md5, filesize, key: Buffer.from(aeskey, "hex") })
    const full = `${this.cdnBaseUrl}/upload?encrypted_query_param=${encodeURIComponent(param)}&filekey=${encodeURIComponent(filekey)}&via=full`
    const payload = { ret: 0, upload_param: param, ...(this.#uploadFullUrl ? { upload_full_url: full } : {}) }
    return this.#answer(res, method, b, 200, JSON.stringify(payload), 0)
  }

  async #cdnUpload(req: IncomingMessage, res: ServerResponse, url: URL) {
    const method = "cdn_upload"
    const data = await readBody(req)
    const param = url.searchParams.get("encrypted_query_param") ?? ""
    const record = (status: number) => {
      this.calls.push({ method, status, ret: 0, body: { encrypted_query_param: param, filekey: url.searchParams.get("filekey"), bytes: data.length } })
      this.#changed()
    }
    const refuse = (status: number, reason: string) => {
      record(status)
      if (!res.destroyed) res.writeHead(status, { "x-error-message": reason, "Content-Type": "text/plain" }).end(reason)
    }
    const failure = this.#failures.get(method)
    if (failure !== undefined && failure.left > 0) {
      failure.left--
      const status = failure.status ?? 500
      if (status >= 500) {
        record(status)
        return void res.writeHead(status, failure.retryAfter === undefined ? {} : { "Retry-After": String(failure.retryAfter) }).end("<html>502 Bad Gateway</html>")
      }
      return refuse(status, failure.message ?? "injected failure")
    }
    const pending = this.#pending.get(param)
    if (pending === undefined) return refuse(400, "invalid encrypted_query_param")
    if (url.searchParams.get("filekey") !== pending.filekey) return refuse(400, "filekey mismatch")
    if (data.length !== pending.filesize) return refuse(400, "file size mismatch")
    const plain = decryptOr(data, pending.key)
    if (plain === undefined) return refuse(400, "decrypt failed")
    if (plain.length !== pending.rawsize || createHash("md5").update(plain).digest("hex") !== pending.md5) return refuse(400, "md5 mismatch")
    const downloadParam = `dl-${randomBytes(12).toString("hex")}`
    this.#cdn.set(downloadParam, data)
    this.uploads.push({ to: pending.to, filekey: pending.filekey, plain, encrypted: data, downloadParam, viaFullUrl: url.searchParams.get("via") === "full" })
    record(200)
    if (!res.destroyed) res.writeHead(200, { "x-encrypted-param": downloadParam, "Content-Length": "0" }).end()
  }

  async #getUpdates(res: ServerResponse, method: string, b: Record<string, unknown>) {
    const buf = str(b.get_updates_buf)
    const from = this.#position(buf)
    await this.#until(this.#pollHoldMs, () => this.#log.length > from || this.#expired)
    if (this.#expired) return this.#answer(res, method, b, 200, JSON.stringify({ ret: -14, errcode: -14, errmsg: "session timeout" }), -14)
    const batch = this.#log.slice(from, from + 20)
    const next = batch.length === 0 ? buf : this.cursorAfter(from + batch.length)
    const payload = `{"ret":0,"msgs":[${batch.join(",")}],"get_updates_buf":${JSON.stringify(next)},"longpolling_timeout_ms":${this.#pollHoldMs}}`
    this.#answer(res, method, b, 200, payload, 0)
  }

  #qrcode(res: ServerResponse, method: string, body: unknown) {
    const n = this.qrs.length + 1
    const qr: Qr = { qrcode: `qr-${n}`, url: `https://liteapp.weixin.qq.com/q/fake${n}?qrcode=qr-${n}&bot_type=3`, state: "wait", reported: undefined }
    this.qrs.push(qr)
    this.#answer(res, method, body, 200, JSON.stringify({ ret: 0, qrcode: qr.qrcode, qrcode_img_content: qr.url }), 0)
  }

  async #qrStatus(res: ServerResponse, method: string, qrcode: string) {
    const qr = this.qrs.find((q) => q.qrcode === qrcode)
    if (qr === undefined) return this.#answer(res, method, { qrcode }, 200, JSON.stringify({ ret: -1, errmsg: "unknown qrcode" }), -1)
    await this.#until(this.#qrHoldMs, () => qr.state !== qr.reported)
    if (res.destroyed) return
    qr.reported = qr.state
    const confirmed = qr.state === "confirmed"
      ? { bot_token: this.token, ilink_bot_id: this.botId, baseurl: this.#baseUrl, ilink_user_id: "owner01@im.wechat" }
      : {}
    this.#answer(res, method, { qrcode }, 200, JSON.stringify({ ret: 0, status: qr.state, ...confirmed }), 0)
  }

  /** `waitFor` a call to `method` (the n-th, counting from 1). */
  callsTo(method: string): ReadonlyArray<Call> {
    return this.calls.filter((c) => c.method === method)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#changed()
    for (const s of this.#sockets) s.destroy()
    await new Promise<void>((done) => this.#server.close(() => done()))
  }
}

export const startFakeWechat = (options: FakeWechatOptions = {}): Promise<FakeWechat> => new FakeWechat(options).listen()
