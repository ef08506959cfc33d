/**
 * A fake QQ Bot API (bot.q.qq.com/wiki, api-v2) on 127.0.0.1: real HTTP and a real WebSocket
 * gateway on one ephemeral port, speaking QQ's wire format, so a client pointed at `baseUrl` and
 * `tokenUrl` cannot tell it from QQ for what it covers.
 *
 * Covered:
 * - POST /app/getAppAccessToken `{appId, clientSecret}` (JSON only) → `{access_token, expires_in}`
 *   with `expires_in` as text, as QQ sends it; a wrong AppID or AppSecret is answered 200 with
 *   `{code, message}` like QQ (100007 "appid invalid", 100016 "invalid appid or secret").
 * - `Authorization: QQBot <token>` on every API call; an unknown or expired token → 401
 *   `{code: 11244, message: "token not exist or expire"}`.
 * - GET /gateway → `{url}`; GET /gateway/bot → `{url, shards, session_start_limit}`.
 * - POST /v2/users/{openid}/messages and /v2/groups/{group_openid}/messages: `msg_type` 0 (text,
 *   `content` required) or 2 (markdown); with `msg_id` a passive reply (to a message delivered in
 *   that chat; at most 5 replies to one message) with `msg_seq` (default 1) — a repeated
 *   msg_id + msg_seq is refused with 40054005 like QQ; without `msg_id` an active message. Answers
 *   `{id, timestamp}`; errors are `{code, message, err_code, trace_id}` with an HTTP status.
 * - Rich media: POST /v2/users/{openid}/files and /v2/groups/{group_openid}/files with
 *   `{file_type, file_data (base64) | url, srv_send_msg}` → `{file_uuid, file_info, ttl}`. Checked as
 *   QQ documents it: file_type 1–4 (4, files, refused: "暂不开放"), srv_send_msg a boolean, exactly one
 *   of url and file_data, file_data valid base64 of at most 10 MiB (QQ's inline limit), a picture
 *   (file_type 1) a PNG or JPEG by its bytes. `srv_send_msg: true` sends it at once as an active
 *   message. A msg_type 7 message needs `media.file_info` from an upload in the same kind of chat
 *   (a C2C upload only in C2C, a group upload only in groups) and a `content` (QQ wants one, " " will
 *   do). Error codes of these refusals are not documented: the fake's are its own.
 * - The gateway at /websocket: op 10 Hello (heartbeat_interval), op 2 Identify (token checked,
 *   intents must include 1<<25) → READY with a session id, op 1 Heartbeat → op 11 ACK, op 6 Resume
 *   (replays every dispatch after `seq`, then RESUMED; an unknown session → op 9), dispatches
 *   (op 0) with `s` increasing by one per session.
 * - Test controls: user messages (C2C, group @-messages, with image attachments served by the fake
 *   over HTTP), duplicate pushes of a message, dropped connections, op 7 Reconnect, op 9 Invalid
 *   Session, unacknowledged heartbeats, raw (malformed) dispatches, expired tokens, scripted failures (429 with Retry-After, 500, 502, 400 with a given code) per route, and a record
 *   of every call, message, identify, resume and heartbeat, with `waitFor` re-checked on changes.
 *
 * Not covered: webhooks (signature check), guild channels, uploads by `url` (refused by the fake),
 * chunked uploads of large files, file_info expiry (`ttl` is told, not enforced), markdown templates and keyboards (markdown content is recorded, not checked), ark/embed,
 * shards beyond [0, 1], the passive-reply time window, monthly limits of active messages.
 */
import { randomUUID } from "node:crypto"
import { EventEmitter } from "node:events"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { WebSocket, WebSocketServer } from "ws"

export const INTENT_GROUP_AND_C2C = 1 << 25
export const CODE_DUPLICATE_SEQ = 40054005
export const MAX_PASSIVE_REPLIES = 5

export interface FakeQqOptions {
  /** Default "102000001". */
  readonly appId?: string
  /** Default "fakeQqSecret0123456789". */
  readonly secret?: string
  /** Seconds a token lives (default 7200). */
  readonly tokenTtlSeconds?: number
  /** The heartbeat interval told in Hello (default 30 000 ms). */
  readonly heartbeatIntervalMs?: number
}

export interface Attachment {
  readonly bytes: Uint8Array
  /** Default image/png. */
  readonly contentType?: string
  readonly filename?: string
}

export interface UserMessageInput {
  /** A C2C message (from `user`) or a group @-message (from `user` in `group`). */
  readonly user: string
  readonly group?: string
  readonly content: string
  readonly attachments?: ReadonlyArray<Attachment>
}

export interface Delivered {
  readonly id: string
  readonly t: "C2C_MESSAGE_CREATE" | "GROUP_AT_MESSAGE_CREATE"
  readonly d: Record<string, unknown>
}

export interface BotMessage {
  readonly id: string
  /** The picture of a msg_type 7 message (its uploaded bytes), else undefined. */
  readonly image: Upload | undefined
  /** `users` or `groups` */
  readonly kind: "users" | "groups"
  /** The user_openid or group_openid. */
  readonly chat: string
  readonly content: string
  readonly msgType: number
  readonly msgId: string | undefined
  readonly msgSeq: number | undefined
}

/** A file uploaded through /v2/{users|groups}/{id}/files. */
export interface Upload {
  readonly kind: "users" | "groups"
  /** The user_openid or group_openid it was uploaded for. */
  readonly chat: string
  readonly fileType: number
  readonly bytes: Uint8Array
  readonly fileUuid: string
  readonly fileInfo: string
  readonly srvSendMsg: boolean
}

/** QQ's inline (base64) upload limit. */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024
/** How long a file_info lives, as told in `ttl` (seconds). */
export const FILE_TTL_SECONDS = 3600

export interface ApiCall {
  readonly method: string
  readonly path: string
  readonly status: number
  readonly body: unknown
}

export interface FailureSpec {
  /** 400 answers `code` and `message` (e.g. QQ's 304082 "upload media info fail", documented as "please retry"). */
  readonly status: 400 | 429 | 500 | 502
  readonly code?: number
  readonly message?: string
  /** Seconds, sent as Retry-After (429). */
  readonly retryAfter?: number
  readonly times?: number
}

export type Route = "token" | "gateway" | "messages" | "files"

export interface GatewayFrame {
  readonly op: number
  readonly d: unknown
}

export interface FakeQq {
  readonly appId: string
  readonly secret: string
  /** The API root (the channel's base_url). */
  readonly baseUrl: string
  /** The token endpoint (the channel's token_url). */
  readonly tokenUrl: string
  readonly calls: ReadonlyArray<ApiCall>
  /** Identify (op 2) and Resume (op 6) frames received, in order. */
  readonly sessions: ReadonlyArray<GatewayFrame>
  /** Heartbeat (op 1) `d` values received. */
  readonly heartbeats: ReadonlyArray<unknown>
  /** Tokens issued so far. */
  readonly tokensIssued: number
  /** Whether a gateway connection has a live session (after READY or RESUMED). */
  readonly connected: boolean
  sendUserMessage(input: UserMessageInput): Delivered
  /** Pushes a delivered message again (a new `s`, the same message id). */
  redeliver(messageId: string): void
  /** Cuts the gateway connection without a close frame; the session stays resumable. */
  dropConnection(): void
  /** Sends op 7 Reconnect. */
  requestReconnect(): void
  /** Sends op 9 Invalid Session and forgets the session (the client must identify anew). */
  invalidateSession(): void
  /** Every issued token stops working (as when it expires). */
  expireTokens(): void
  /**
   * Active messages (no msg_id) are refused from now on with this code and message (QQ's codes for
   * this are not documented; the test picks them), as QQ does for most bots since April 2025.
   */
  refuseActiveMessages(code: number, message: string): void
  /** Uploads are refused from now on with this code and message (the test picks them). */
  refuseUploads(code: number, message: string): void
  /** Files uploaded so far (refused ones are not), in order. */
  readonly uploads: ReadonlyArray<Upload>
  /** Heartbeats are no longer ACKed (a half-dead connection). */
  stopAcks(): void
  /** A raw dispatch (any `t`, any `d`: malformed events too) on the current session. */
  dispatch(t: string, d: unknown): void
  failNext(route: Route, spec: FailureSpec): void
  /** Bot messages in a chat (a user_openid or a group_openid), in order. */
  messages(chat: string): ReadonlyArray<BotMessage>
  readonly allMessages: ReadonlyArray<BotMessage>
  waitFor<T>(predicate: () => T | undefined | null | false, description: string, timeoutMs?: number): Promise<T>
  close(): Promise<void>
}

interface Session {
  readonly id: string
  nextS: number
  readonly log: Array<{ readonly s: number; readonly frame: string }>
}

interface Connection {
  readonly socket: WebSocket
  session: Session | undefined
  ready: boolean
}

class QqError extends Error {
  readonly status: number
  readonly code: number
  constructor(status: number, code: number, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

export const startFakeQq = async (options: FakeQqOptions = {}): Promise<FakeQq> => {
  const appId = options.appId ?? "102000001"
  const secret = options.secret ?? "fakeQqSecret0123456789"
  const ttl = options.tokenTtlSeconds ?? 7200
  const heartbeatInterval = options.heartbeatIntervalMs ?? 30_000
  const events = new EventEmitter()
  const changed = () => events.emit("change")

  const calls: Array<ApiCall> = []
  const sessionsLog: Array<GatewayFrame> = []
  const heartbeats: Array<unknown> = []
  const tokens = new Map<string, number>()
  let tokensIssued = 0
  const failures = new Map<Route, Array<FailureSpec>>()
  const bot: Array<BotMessage> = []
  /** Inbound messages by id: their chat, and the reply seqs used. */
  const inbound = new Map<string, { readonly kind: "users" | "groups"; readonly chat: string; readonly delivered: Delivered; readonly seqs: Set<number> }>()
  const files = new Map<string, Attachment>()
  let session: Session | undefined
  /** Dispatches made while no session existed: sent after the next READY. */
  const pending: Array<string> = []
  let connection: Connection | undefined
  let counter = 0
  let closed = false
  let acks = true
  let activeRefusal: QqError | undefined
  let uploadRefusal: QqError | undefined
  const uploads: Array<Upload> = []

  const server = createServer((req, res) => {
    void handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) send(res, 500, { code: 500, message: e instanceof Error ? e.message : "internal" })
    })
  })
  const wss = new WebSocketServer({ noServer: true })
  server.on("upgrade", (req, socket, head) => {
    if ((req.url ?? "").split("?")[0] !== "/websocket") {
      socket.destroy()
      return
    }
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws))
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", () => done()))
  const port = (server.address() as AddressInfo).port
  const root = `http://127.0.0.1:${port}`

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers })
    res.end(JSON.stringify(body))
  }

  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
      req.on("error", reject)
    })

  const record = (method: string, path: string, status: number, body: unknown) => {
    calls.push({ method, path, status, body })
    changed()
  }

  const scripted = (route: Route, res: ServerResponse, method: string, path: string, body: unknown): boolean => {
    const queue = failures.get(route)
    const next = queue?.[0]
    if (queue === undefined || next === undefined) return false
    const left = (next.times ?? 1) - 1
    if (left <= 0) queue.shift()
    else queue[0] = { ...next, times: left }
    record(method, path, next.status, body)
    const headers: Record<string, string> = next.retryAfter === undefined ? {} : { "retry-after": String(next.retryAfter) }
    if (next.status === 502) {
      res.writeHead(502, { "content-type": "text/html" })
      res.end("<html><body>502 Bad Gateway</body></html>")
    } else {
      const code = next.code ?? (next.status === 429 ? 22009 : next.status === 400 ? 40034001 : 500000)
      const message = next.message ?? (next.status === 429 ? "msg limit exceed" : next.status === 400 ? "bad request" : "internal error")
      send(res, next.status, { code, err_code: code, message, trace_id: randomUUID() }, headers)
    }
    return true
  }

  const authorized = (req: IncomingMessage): boolean => {
    const header = req.headers.authorization ?? ""
    const m = /^QQBot (\S+)$/.exec(header)
    const expires = m?.[1] === undefined ? undefined : tokens.get(m[1])
    return expires !== undefined && expires > Date.now()
  }

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", root)
    const path = url.pathname
    const method = req.method ?? "GET"
    const text = method === "POST" ? await readBody(req) : ""
    let body: unknown
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = text
    }
    const reply = (status: number, answer: unknown) => {
      record(method, path, status, body)
      send(res, status, answer)
    }
    const fail = (e: QqError) => reply(e.status, { code: e.code, err_code: e.code, message: e.message, trace_id: randomUUID() })

    if (method === "GET" && path.startsWith("/files/")) {
      const file = files.get(path.slice("/files/".length))
      record(method, path, file === undefined ? 404 : 200, undefined)
      if (file === undefined) {
        res.writeHead(404)
        res.end()
        return
      }
      res.writeHead(200, { "content-type": file.contentType ?? "image/png", "content-length": String(file.bytes.byteLength) })
      res.end(Buffer.from(file.bytes))
      return
    }

    if (path === "/app/getAppAccessToken") {
      if (method !== "POST") return reply(405, { code: 405, message: "method not allowed" })
      if (scripted("token", res, method, path, body)) return
      if (!(req.headers["content-type"] ?? "").includes("application/json") || typeof body !== "object" || body === null) {
        return reply(200, { code: 100007, message: "appid invalid" })
      }
      const given = body as Record<string, unknown>
      if (given["appId"] !== appId) return reply(200, { code: 100007, message: "appid invalid" })
      if (given["clientSecret"] !== secret) return reply(200, { code: 100016, message: "invalid appid or secret" })
      const token = `fakeqq-${++tokensIssued}-${randomUUID()}`
      tokens.set(token, Date.now() + ttl * 1000)
      return reply(200, { access_token: token, expires_in: String(ttl) })
    }

    if (!authorized(req)) return fail(new QqError(401, 11244, "token not exist or expire"))

    if (method === "GET" && (path === "/gateway" || path === "/gateway/bot")) {
      if (scripted("gateway", res, method, path, body)) return
      const ws = `ws://127.0.0.1:${port}/websocket`
      return reply(200, path === "/gateway" ? { url: ws } : { url: ws, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 } })
    }

    const target = /^\/v2\/(users|groups)\/([^/]+)\/messages$/.exec(path)
    if (method === "POST" && target !== null) {
      if (scripted("messages", res, method, path, body)) return
      try {
        const kind = target[1] === "users" ? "users" : "groups"
        const chat = decodeURIComponent(target[2] ?? "")
        const sent = postMessage(kind, chat, body)
        return reply(200, { id: sent.id, timestamp: Math.floor(Date.now() / 1000) })
      } catch (e) {
        if (e instanceof QqError) return fail(e)
        throw e
      }
    }
    const filesPath = /^\/v2\/(users|groups)\/([^/]+)\/files$/.exec(path)
    if (method === "POST" && filesPath !== null) {
      if (scripted("files", res, method, path, body)) return
      try {
        const kind = filesPath[1] === "users" ? "users" : "groups"
        const up = upload(kind, decodeURIComponent(filesPath[2] ?? ""), body)
        return reply(200, { file_uuid: up.fileUuid, file_info: up.fileInfo, ttl: FILE_TTL_SECONDS })
      } catch (e) {
        if (e instanceof QqError) return fail(e)
        throw e
      }
    }
    return reply(404, { code: 404, message: "not found" })
  }

  const isPngOrJpeg = (b: Uint8Array): boolean =>
    (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) || (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff)

  const upload = (kind: "users" | "groups", chat: string, body: unknown): Upload => {
    if (typeof body !== "object" || body === null) throw new QqError(400, 40034001, "invalid request body")
    const b = body as Record<string, unknown>
    const fileType = b["file_type"]
    if (typeof fileType !== "number" || ![1, 2, 3, 4].includes(fileType)) throw new QqError(400, 40034101, "file_type invalid")
    if (fileType === 4) throw new QqError(400, 40034102, "file_type 4 is not open")
    const srv = b["srv_send_msg"]
    if (typeof srv !== "boolean") throw new QqError(400, 40034103, "srv_send_msg invalid")
    const url = b["url"]
    const data = b["file_data"]
    if ((url === undefined) === (data === undefined)) throw new QqError(400, 40034104, "exactly one of url and file_data is required")
    if (url !== undefined) throw new QqError(400, 40034105, "fake QQ: uploads by url are not covered")
    if (typeof data !== "string" || data === "" || data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) {
      throw new QqError(400, 40034106, "file_data is not base64")
    }
    const bytes = new Uint8Array(Buffer.from(data, "base64"))
    if (bytes.byteLength > MAX_UPLOAD_BYTES) throw new QqError(400, 40034107, "file too large")
    if (fileType === 1 && !isPngOrJpeg(bytes)) throw new QqError(400, 40034108, "image format not supported (png/jpg)")
    if (uploadRefusal !== undefined) throw uploadRefusal
    if (srv && activeRefusal !== undefined) throw activeRefusal
    const up: Upload = { kind, chat, fileType, bytes, fileUuid: randomUUID(), fileInfo: `fakeqq-file-${randomUUID()}`, srvSendMsg: srv }
    uploads.push(up)
    if (srv) bot.push({ id: `BOT_${++counter}`, image: up, kind, chat, content: "", msgType: 7, msgId: undefined, msgSeq: undefined })
    return up
  }

  const postMessage = (kind: "users" | "groups", chat: string, body: unknown): BotMessage => {
    if (typeof body !== "object" || body === null) throw new QqError(400, 40034001, "invalid request body")
    const b = body as Record<string, unknown>
    const msgType = b["msg_type"]
    if (typeof msgType !== "number" || ![0, 2, 3, 4, 6, 7].includes(msgType)) throw new QqError(400, 40034002, "msg_type invalid")
    const content = b["content"]
    if (msgType === 0 && (typeof content !== "string" || content.trim() === "")) throw new QqError(400, 40034006, "content is empty")
    let image: Upload | undefined
    if (msgType === 7) {
      // QQ documents that msg_type 7 still needs a content (" " will do).
      if (typeof content !== "string" || content === "") throw new QqError(400, 40034006, "content is empty")
      const media = b["media"]
      const fileInfo = typeof media === "object" && media !== null ? (media as Record<string, unknown>)["file_info"] : undefined
      image = uploads.find((u) => u.fileInfo === fileInfo)
      if (image === undefined || image.kind !== kind) throw new QqError(400, 40034109, "media file_info invalid")
    }
    const msgId = b["msg_id"]
    const rawSeq = b["msg_seq"]
    if (msgId !== undefined && typeof msgId !== "string") throw new QqError(400, 40034001, "msg_id invalid")
    if (rawSeq !== undefined && (typeof rawSeq !== "number" || !Number.isInteger(rawSeq) || rawSeq < 1)) throw new QqError(400, 40034001, "msg_seq invalid")
    let msgSeq: number | undefined
    if (msgId === undefined && activeRefusal !== undefined) throw activeRefusal
    if (typeof msgId === "string") {
      const original = inbound.get(msgId)
      if (original === undefined || original.kind !== kind || original.chat !== chat) throw new QqError(400, 40034024, "msg_id not found in this chat")
      msgSeq = typeof rawSeq === "number" ? rawSeq : 1
      if (original.seqs.has(msgSeq)) throw new QqError(400, CODE_DUPLICATE_SEQ, "消息被去重，请检查请求msgseq")
      if (original.seqs.size >= MAX_PASSIVE_REPLIES) throw new QqError(400, 40034005, "reply count limit exceeded for this msg_id")
      original.seqs.add(msgSeq)
    }
    const message: BotMessage = {
      id: `BOT_${++counter}`,
      image,
      kind,
      chat,
      content: typeof content === "string" ? content : "",
      msgType,
      msgId: typeof msgId === "string" ? msgId : undefined,
      msgSeq
    }
    bot.push(message)
    return message
  }

  // ------------------------------------------------------------------------------------------
  // Gateway

  const dispatchFrame = (s: Session, t: string, d: unknown): string => {
    const s_ = s.nextS++
    const frame = JSON.stringify({ op: 0, s: s_, t, d, id: `${t}:${randomUUID()}` })
    s.log.push({ s: s_, frame })
    return frame
  }

  const sendRaw = (c: Connection | undefined, frame: string) => {
    if (c !== undefined && c.socket.readyState === WebSocket.OPEN) c.socket.send(frame)
  }

  const onConnection = (socket: WebSocket) => {
    const c: Connection = { socket, session: undefined, ready: false }
    // One gateway connection at a time: a new one replaces the old.
    if (connection !== undefined && connection.socket !== socket) connection.socket.terminate()
    connection = c
    socket.on("close", () => {
      if (connection === c) connection = undefined
      changed()
    })
    socket.on("message", (data) => onFrame(c, data.toString()))
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: heartbeatInterval } }))
    changed()
  }

  const tokenOk = (given: unknown): boolean => {
    const m = typeof given === "string" ? /^QQBot (\S+)$/.exec(given) : null
    const expires = m?.[1] === undefined ? undefined : tokens.get(m[1])
    return expires !== undefined && expires > Date.now()
  }

  const onFrame = (c: Connection, text: string) => {
    let frame: { op?: unknown; d?: unknown }
    try {
      frame = JSON.parse(text) as { op?: unknown; d?: unknown }
    } catch {
      c.socket.close(4002, "invalid payload")
      return
    }
    const d = (typeof frame.d === "object" && frame.d !== null ? frame.d : {}) as Record<string, unknown>
    switch (frame.op) {
      case 1:
        heartbeats.push(frame.d)
        if (acks) sendRaw(c, JSON.stringify({ op: 11 }))
        break
      case 2: {
        sessionsLog.push({ op: 2, d: frame.d })
        if (!tokenOk(d["token"])) {
          c.socket.close(4004, "invalid token")
          break
        }
        const intents = d["intents"]
        if (typeof intents !== "number" || (intents & INTENT_GROUP_AND_C2C) === 0) {
          c.socket.close(4014, "disallowed intents")
          break
        }
        const s: Session = { id: randomUUID(), nextS: 1, log: [] }
        session = s
        c.session = s
        sendRaw(c, dispatchFrame(s, "READY", { version: 1, session_id: s.id, user: { id: `bot-${appId}`, username: "anna-test-bot", bot: true }, shard: [0, 1] }))
        c.ready = true
        for (const p of pending.splice(0)) sendRaw(c, retag(s, p))
        break
      }
      case 6: {
        sessionsLog.push({ op: 6, d: frame.d })
        if (!tokenOk(d["token"])) {
          c.socket.close(4004, "invalid token")
          break
        }
        const seq = d["seq"]
        if (session === undefined || d["session_id"] !== session.id || typeof seq !== "number") {
          sendRaw(c, JSON.stringify({ op: 9, d: false }))
          break
        }
        c.session = session
        for (const entry of session.log) if (entry.s > seq) sendRaw(c, entry.frame)
        sendRaw(c, dispatchFrame(session, "RESUMED", ""))
        c.ready = true
        for (const p of pending.splice(0)) sendRaw(c, retag(session, p))
        break
      }
      default:
        c.socket.close(4001, "invalid opcode")
    }
    changed()
  }

  /** A pending dispatch (made without a session) given its place in `s`'s sequence. */
  const retag = (s: Session, pendingFrame: string): string => {
    const f = JSON.parse(pendingFrame) as { t: string; d: unknown }
    return dispatchFrame(s, f.t, f.d)
  }

  const deliver = (t: string, d: unknown) => {
    if (session === undefined) {
      pending.push(JSON.stringify({ t, d }))
      return
    }
    const frame = dispatchFrame(session, t, d)
    if (connection?.ready === true && connection.session === session) sendRaw(connection, frame)
  }

  const fake: FakeQq = {
    appId,
    secret,
    baseUrl: root,
    tokenUrl: `${root}/app/getAppAccessToken`,
    get calls() {
      return calls
    },
    get sessions() {
      return sessionsLog
    },
    get heartbeats() {
      return heartbeats
    },
    get tokensIssued() {
      return tokensIssued
    },
    get connected() {
      return connection?.ready === true
    },
    sendUserMessage(input) {
      const id = `ROBOT1.0_${++counter}_${randomUUID().slice(0, 8)}`
      const attachments = (input.attachments ?? []).map((a) => {
        const name = `${randomUUID()}${a.filename === undefined ? "" : `-${a.filename}`}`
        files.set(name, a)
        return {
          content_type: a.contentType ?? "image/png",
          filename: a.filename ?? `${name}.png`,
          size: a.bytes.byteLength,
          url: `${root}/files/${name}`
        }
      })
      const timestamp = new Date().toISOString()
      const delivered: Delivered = input.group === undefined
        ? { id, t: "C2C_MESSAGE_CREATE", d: { id, author: { user_openid: input.user }, content: input.content, timestamp, ...(attachments.length > 0 ? { attachments } : {}) } }
        : {
          id,
          t: "GROUP_AT_MESSAGE_CREATE",
          d: { id, author: { member_openid: input.user }, group_openid: input.group, content: input.content, timestamp, ...(attachments.length > 0 ? { attachments } : {}) }
        }
      inbound.set(id, { kind: input.group === undefined ? "users" : "groups", chat: input.group ?? input.user, delivered, seqs: new Set() })
      deliver(delivered.t, delivered.d)
      changed()
      return delivered
    },
    redeliver(messageId) {
      const m = inbound.get(messageId)
      if (m === undefined) throw new Error(`fake QQ: no message ${messageId}`)
      deliver(m.delivered.t, m.delivered.d)
      changed()
    },
    dropConnection() {
      connection?.socket.terminate()
      connection = undefined
      changed()
    },
    requestReconnect() {
      sendRaw(connection, JSON.stringify({ op: 7 }))
    },
    invalidateSession() {
      session = undefined
      if (connection !== undefined) {
        connection.ready = false
        sendRaw(connection, JSON.stringify({ op: 9, d: false }))
      }
      changed()
    },
    expireTokens() {
      for (const t of tokens.keys()) tokens.set(t, 0)
    },
    refuseActiveMessages(code, message) {
      activeRefusal = new QqError(400, code, message)
    },
    refuseUploads(code, message) {
      uploadRefusal = new QqError(400, code, message)
    },
    get uploads() {
      return uploads
    },
    stopAcks() {
      acks = false
    },
    dispatch(t, d) {
      deliver(t, d)
      changed()
    },
    failNext(route, spec) {
      const queue = failures.get(route) ?? []
      queue.push(spec)
      failures.set(route, queue)
    },
    messages(chat) {
      return bot.filter((m) => m.chat === chat)
    },
    get allMessages() {
      return bot
    },
    waitFor<T>(predicate: () => T | undefined | null | false, description: string, timeoutMs = 15_000): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const stop = () => {
          clearTimeout(timer)
          events.off("change", check)
          events.off("close", onClose)
        }
        const check = () => {
          let value: T | undefined | null | false
          try {
            value = predicate()
          } catch (e) {
            stop()
            reject(e)
            return
          }
          if (value === undefined || value === null || value === false) return
          stop()
          resolve(value)
        }
        const onClose = () => {
          stop()
          reject(new Error(`fake QQ closed while waiting for: ${description}`))
        }
        const timer = setTimeout(() => {
          stop()
          reject(new Error(`fake QQ: timed out after ${timeoutMs} ms waiting for: ${description}`))
        }, timeoutMs)
        if (closed) return onClose()
        events.on("change", check)
        events.on("close", onClose)
        check()
      })
    },
    async close() {
      if (closed) return
      closed = true
      events.emit("close")
      for (const client of wss.clients) client.terminate()
      wss.close()
      server.closeAllConnections()
      await new Promise<void>((done) => server.close(() => done()))
    }
  }
  return fake
}
