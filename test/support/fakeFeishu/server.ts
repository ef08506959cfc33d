/**
 * A fake Feishu/Lark open platform on 127.0.0.1 (real HTTP and WebSocket, ephemeral port), faithful
 * to the wire so the real `@larksuiteoapi/node-sdk` talks to it: `new Client({ appId, appSecret,
 * domain: fake.baseUrl })`, `new WSClient({ …, domain: fake.baseUrl })`.
 *
 * Covered:
 * - `POST /open-apis/auth/v3/tenant_access_token/internal` (`{code, msg, tenant_access_token,
 *   expire}`; code 10003 for an unknown app id, 10014 for a wrong secret); every other API needs
 *   `Authorization: Bearer <a token it issued>` (else 99991663), and `revokeTokens()` expires them.
 * - `GET /open-apis/bot/v3/info`, `POST /open-apis/im/v1/messages?receive_id_type=open_id|chat_id`,
 *   `POST /open-apis/im/v1/messages/:id/reply`, `GET /open-apis/im/v1/messages/:id` (its sender),
 *   `PATCH /open-apis/im/v1/messages/:id` (cards sent
 *   with `update_multi` only; 5 updates a second per message, else 230020), `GET
 *   /open-apis/im/v1/messages/:id/resources/:key?type=image`. Envelopes `{code, msg, data}`; a
 *   `uuid` sends one message per uuid; cards are checked (JSON, `elements`, 30 KB) and 230099 /
 *   230025 answered as Feishu does.
 * - The long connection: `POST /callback/ws/endpoint` (`{code, data: {URL, ClientConfig}}`), then
 *   a WebSocket speaking `pbbp2.Frame` protobuf frames (frames.ts): events pushed as data frames
 *   (queued while no client listens), the client's acks recorded, events a dropped connection left
 *   unacknowledged pushed again on the next one, pings answered with pongs carrying the config.
 * - `POST /open-apis/im/v1/images` (multipart/form-data: `image_type` message|avatar, `image` the
 *   file), checked as Feishu documents it: at most 10 MB (234006), not empty (234010), a format it
 *   takes by its bytes (JPG, PNG, WEBP, GIF, BMP, ICO, TIFF, HEIC; else 234011), a form that is not
 *   one or lacks a field 234001; answers `{code: 0, data: {image_key}}`. Image messages
 *   (`msg_type: "image"`, content `{"image_key"}`) must name a key this app uploaded for messages;
 *   `uploaded(key)` gives the bytes back.
 * - Event callbacks: `callback(url, …)` POSTs an event or a `url_verification` challenge to a
 *   channel's webhook, plain or encrypted (AES-256-CBC with the Encrypt Key) and signed.
 * - Card callbacks (`card.action.trigger`, schema 2.0: `{header: {event_id, event_type, token, …},
 *   event: {operator: {open_id, …}, token, action: {value, tag}, host, context: {open_message_id,
 *   open_chat_id}}}`): `pressButton` pushes one over the long connection (the answer the client
 *   puts in its ack, base64 JSON `data`, is kept in `actionAnswers`), `cardActionFor` builds one to
 *   POST with `callback`; `buttons(id)` reads a card's buttons (`action` elements, checked when sent).
 * - Reactions (`im.message.reaction.created_v1` / `deleted_v1`, schema 2.0: `{header: {event_id,
 *   event_type, create_time, token, app_id, tenant_key}, event: {message_id, reaction_type:
 *   {emoji_type}, operator_type: "user" | "app", user_id: {open_id, union_id, user_id}, action_time}}`
 *   (an app's reaction names its `app_id` and no user), no chat id): `react` / `unreact` push one
 *   over the long connection, for any message of a chat the bot is in (its own or a user's), only
 *   when the app subscribed to that event (`events`, as set in the developer console); a user adds
 *   an emoji to a message once. `reactionFor` builds one to POST with `callback`.
 * - Test controls: user messages (text, post, image, mentions, replies, p2p or group), redelivery,
 *   scripted failures (429 with `x-ogw-ratelimit-reset` and code 99991400, 5xx, any code),
 *   rejected cards, dropped connections, a record of every call and every version of every bot
 *   message, and `waitFor` re-checked on every change.
 *
 * Not covered: other message types out (post, files, audio), the pixel-size limits of an upload
 * (GIF 2000×2000, others 12000×12000: the code Feishu answers is not documented), message recall, chat info and
 * membership (any chat a user wrote in exists), card callbacks of the older (1.0) kind, delayed card updates by token, fragmented event frames, ISV apps.
 */
import { createCipheriv, createHash, randomBytes, randomUUID } from "node:crypto"
import { EventEmitter } from "node:events"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { type WebSocket, WebSocketServer } from "ws"
import { decodeFrame, encodeFrame, FRAME_CONTROL, FRAME_DATA, type Frame, headerOf } from "./frames.ts"

export interface FakeFeishuOptions {
  /** Default `cli_a1b2c3d4e5f60718` (the SDK's WSClient wants `cli_` and 16 hex digits). */
  readonly appId?: string
  readonly appSecret?: string
  readonly botOpenId?: string
  readonly botName?: string
  /** Used for callbacks (`callback`). */
  readonly encryptKey?: string
  readonly verificationToken?: string
  /** Seconds the SDK waits between reconnects (ClientConfig.ReconnectInterval); default 1. */
  readonly reconnectIntervalSeconds?: number
  /**
   * The events the app subscribed to in the developer console (only these are pushed over the long
   * connection); default all the fake sends: SUBSCRIBABLE.
   */
  readonly events?: ReadonlyArray<string>
}

/** The events the fake can push (card callbacks are configured apart, and always go). */
export const SUBSCRIBABLE = ["im.message.receive_v1", "im.message.reaction.created_v1", "im.message.reaction.deleted_v1"] as const

export interface ReactionInput {
  /** The user (open_id) who reacts; undefined: an app (another bot) does. */
  readonly from?: string | undefined
  /** A message of a chat the bot is in: one of the bot's or a user's. */
  readonly messageId: string
  /** The emoji's key as Feishu names it (`THUMBSUP`, `ThumbsDown`, …). */
  readonly emojiType: string
}

export interface UserMessageInput {
  readonly from: string
  /** A group's chat_id; absent: the user's p2p chat with the bot. */
  readonly groupId?: string
  readonly text?: string
  /** Mention the bot (an `@_user_N` placeholder before the text and a mention entry). */
  readonly mentionBot?: boolean
  /** Send as a post (rich text) rather than text. */
  readonly post?: boolean
  /** An image message (bytes served by the resource API). */
  readonly image?: Uint8Array
  readonly imageMime?: string
  /** A reply to this message id. */
  readonly parentId?: string
}

export interface ApiCall {
  readonly method: string
  readonly path: string
  readonly body: unknown
  readonly status: number
  readonly code: number
  readonly at: number
}

export interface MessageVersion {
  readonly content: string
  readonly text: string
  readonly rich: boolean
  readonly at: number
}

export interface BotMessage {
  readonly messageId: string
  readonly chatId: string
  readonly msgType: string
  /** An image message's image_key. */
  readonly imageKey: string | undefined
  readonly parentId: string | undefined
  readonly uuid: string | undefined
  /** The visible text of the latest version. */
  readonly text: string
  /** Whether the latest version is a Markdown card. */
  readonly rich: boolean
  readonly history: ReadonlyArray<MessageVersion>
}

export interface Upload {
  readonly imageKey: string
  readonly imageType: string
  /** The file part's name and type as sent. */
  readonly fileName: string
  readonly contentType: string
  readonly bytes: Uint8Array
}

export interface FailureSpec {
  /** A substring of `METHOD /path` the failure applies to (e.g. "POST /open-apis/im/v1/messages"). */
  readonly match: string
  readonly status: number
  readonly code: number
  readonly msg?: string
  /** `x-ogw-ratelimit-reset` seconds. */
  readonly resetSeconds?: number
  readonly times?: number
}

export interface Ack {
  readonly frameMessageId: string
  readonly code: number
}

export interface SentEvent {
  readonly messageId: string
  readonly eventId: string
  readonly chatId: string
  readonly envelope: Record<string, unknown>
}

export interface Button {
  readonly label: string
  readonly value: unknown
}

export interface PressInput {
  readonly from: string
  /** The card pressed (a bot message). */
  readonly messageId: string
  /** The button's value as the card has it. */
  readonly value: unknown
}

export interface ActionAnswer {
  readonly eventId: string
  /** The ack's code and the answer (`data`, decoded), or undefined when it had none. */
  readonly code: number
  readonly body: unknown
}

export interface FakeFeishu {
  readonly baseUrl: string
  readonly appId: string
  readonly appSecret: string
  readonly botOpenId: string
  /** Every API call (token, bot info, messages), in order. */
  readonly calls: ReadonlyArray<ApiCall>
  /** The User-Agent of every HTTP request, in order (the SDK names itself and its version there). */
  readonly userAgents: ReadonlyArray<string>
  /** Images uploaded (`POST /open-apis/im/v1/images`), in order. */
  readonly uploads: ReadonlyArray<Upload>
  /** The upload with this image_key (what an image message shows). */
  uploaded(imageKey: string): Upload | undefined
  /** The bot's messages in a chat, in order. */
  messages(chatId: string): ReadonlyArray<BotMessage>
  /** The p2p chat of a user with the bot. */
  dmChat(openId: string): string
  /** A user's message: pushed over the long connection (queued until a client connects). */
  sendUserMessage(input: UserMessageInput): SentEvent
  /** Pushes an event again (same event_id and message). */
  redeliver(messageId: string): void
  /** The buttons on a bot card's latest version, in order. */
  buttons(messageId: string): ReadonlyArray<Button>
  /** A press of a card's button: pushed over the long connection. */
  pressButton(input: PressInput): SentEvent
  /** The `card.action.trigger` callback body for a press (not pushed). */
  cardActionFor(input: PressInput): SentEvent
  /** Pushes a card action again (same event_id). */
  redeliverAction(eventId: string): void
  /** A reaction added: `im.message.reaction.created_v1` pushed (when subscribed); the event either way. */
  react(input: ReactionInput): SentEvent
  /** A reaction taken back: `im.message.reaction.deleted_v1` pushed (when subscribed); the event either way. */
  unreact(input: ReactionInput): SentEvent
  /** The `im.message.reaction.created_v1` callback body for a reaction added (recorded, not pushed). */
  reactionFor(input: ReactionInput): SentEvent
  /** Pushes a reaction event again (same event_id). */
  redeliverReaction(eventId: string): void
  /** Answers to card actions pushed over the long connection, as the client acked them. */
  readonly actionAnswers: ReadonlyArray<ActionAnswer>
  /** The event-callback request body for a user message (not pushed). */
  eventFor(input: UserMessageInput): SentEvent
  /** POSTs to a channel's webhook as Feishu would; `encrypt` with the Encrypt Key (and signs). */
  callback(url: string, body: Record<string, unknown>, options?: { readonly encrypt?: boolean; readonly badSignature?: boolean }): Promise<{ status: number; body: unknown }>
  /** The next matching calls fail as given. */
  failNext(spec: FailureSpec): void
  /** The next `times` cards with a markdown element are refused with 230099. */
  rejectCards(times: number): void
  /** Expires every issued tenant token (the next call gets 99991663). */
  revokeTokens(): void
  /** Drops every long connection (the client reconnects). */
  disconnect(): void
  /** Long connections opened so far, and open now. */
  readonly connectionsOpened: number
  readonly openConnections: number
  readonly acks: ReadonlyArray<Ack>
  readonly pings: number
  waitFor<T>(predicate: () => T | undefined | null | false, description: string, timeoutMs?: number): Promise<T>
  close(): Promise<void>
}

const CARD_MAX_BYTES = 30 * 1024
/** The largest image upload (10 MB). */
const IMAGE_MAX_BYTES = 10 * 1024 * 1024

/** Whether Feishu takes these bytes as an image (JPG, PNG, WEBP, GIF, BMP, ICO, TIFF, HEIC), by their signature. */
const takenImage = (b: Uint8Array): boolean => {
  const at = (i: number) => b[i] ?? -1
  const ascii = (from: number, text: string) => [...text].every((c, i) => at(from + i) === c.charCodeAt(0))
  return (at(0) === 0xff && at(1) === 0xd8 && at(2) === 0xff) ||
    (at(0) === 0x89 && ascii(1, "PNG")) ||
    ascii(0, "GIF8") ||
    (ascii(0, "RIFF") && ascii(8, "WEBP")) ||
    ascii(0, "BM") ||
    (at(0) === 0 && at(1) === 0 && at(2) === 1 && at(3) === 0) ||
    ascii(0, "II*\0") || ascii(0, "MM\0*") ||
    (ascii(4, "ftyp") && /^(heic|heix|mif1|msf1)$/.test(String.fromCharCode(at(8), at(9), at(10), at(11))))
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

/** The visible text of a card (markdown / plain_text elements) or a text message. */
const visible = (msgType: string, content: string): { text: string; rich: boolean } => {
  try {
    const v: unknown = JSON.parse(content)
    if (msgType === "text") return { text: isRecord(v) && typeof v.text === "string" ? v.text : "", rich: false }
    const elements = isRecord(v) && Array.isArray(v.elements) ? v.elements : []
    let rich = false
    const texts = elements.flatMap((e: unknown) => {
      if (!isRecord(e)) return []
      if (e.tag === "markdown" && typeof e.content === "string") {
        rich = true
        return [e.content]
      }
      if (e.tag === "div" && isRecord(e.text) && typeof e.text.content === "string") {
        if (e.text.tag === "lark_md") rich = true
        return [e.text.content]
      }
      return []
    })
    return { text: texts.join("\n"), rich }
  } catch {
    return { text: "", rich: false }
  }
}

class FakeFeishuServer implements FakeFeishu {
  baseUrl = ""
  readonly appId: string
  readonly appSecret: string
  readonly botOpenId: string
  readonly botName: string
  readonly encryptKey: string | undefined
  readonly verificationToken: string | undefined
  readonly reconnectInterval: number
  readonly subscribed: ReadonlySet<string>
  readonly calls: Array<ApiCall> = []
  readonly userAgents: Array<string> = []
  readonly uploads: Array<Upload> = []
  readonly acks: Array<Ack> = []
  pings = 0
  connectionsOpened = 0
  private readonly server = createServer((req, res) => {
    this.route(req, res).catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" })
      res.end(JSON.stringify({ code: 1, msg: String(e) }))
    })
  })
  private readonly wss = new WebSocketServer({ noServer: true })
  private readonly sockets = new Set<Socket>()
  private readonly clients = new Set<WebSocket>()
  private readonly listening = new WeakSet<WebSocket>()
  /** Events pushed on a connection and not acknowledged yet (by frame message_id). */
  private readonly unacked = new Map<WebSocket, Map<string, Record<string, unknown>>>()
  private readonly changes = new EventEmitter()
  private readonly tokens = new Set<string>()
  private readonly devices = new Set<string>()
  private readonly bot = new Map<string, BotMessage>()
  private readonly order: Array<string> = []
  private readonly byUuid = new Map<string, string>()
  private readonly events = new Map<string, SentEvent>()
  private readonly cardActions = new Map<string, SentEvent>()
  private readonly reactionEvents = new Map<string, SentEvent>()
  /** Reactions on messages now, as `messageId|actor|emojiType`. */
  private readonly reactions = new Set<string>()
  readonly actionAnswers: Array<ActionAnswer> = []
  private readonly chatOfUserMessage = new Map<string, string>()
  private readonly images = new Map<string, { bytes: Uint8Array; mime: string }>()
  private readonly patchTimes = new Map<string, Array<number>>()
  private readonly pending: Array<Record<string, unknown>> = []
  private failures: Array<FailureSpec & { left: number }> = []
  private cardRejections = 0
  private seq = 0
  private readonly serviceId = 7

  constructor(o: FakeFeishuOptions) {
    this.appId = o.appId ?? "cli_a1b2c3d4e5f60718"
    this.appSecret = o.appSecret ?? "fakeAppSecretForAnnaTests0123456"
    this.botOpenId = o.botOpenId ?? "ou_bot0000000000000000000000000001"
    this.botName = o.botName ?? "anna test bot"
    this.encryptKey = o.encryptKey
    this.verificationToken = o.verificationToken
    this.reconnectInterval = o.reconnectIntervalSeconds ?? 1
    this.subscribed = new Set(o.events ?? SUBSCRIBABLE)
    this.changes.setMaxListeners(0)
    this.server.on("connection", (s) => {
      this.sockets.add(s)
      s.on("close", () => this.sockets.delete(s))
    })
    this.server.on("upgrade", (req, socket, head) => {
      const url = new URL(req.url ?? "/", "http://x")
      if (url.pathname !== "/ws" || !this.devices.has(url.searchParams.get("device_id") ?? "")) {
        socket.end("HTTP/1.1 403 Forbidden\r\n\r\n")
        return
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onClient(ws))
    })
  }

  async listen() {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve))
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  get openConnections() {
    return this.clients.size
  }

  private changed() {
    this.changes.emit("change")
  }

  // ---- the long connection ----

  private onClient(ws: WebSocket) {
    this.clients.add(ws)
    this.connectionsOpened++
    this.changed()
    ws.on("message", (data: Buffer) => {
      let f: Frame
      try {
        f = decodeFrame(new Uint8Array(data))
      } catch {
        return
      }
      const type = headerOf(f, "type")
      if (f.method === FRAME_CONTROL && type === "ping") {
        this.pings++
        // A client listens once it has spoken (its first ping, sent as it opens): queued events go then.
        if (!this.listening.has(ws)) {
          this.listening.add(ws)
          queueMicrotask(() => {
            for (const e of this.pending.splice(0)) this.push(e)
          })
        }
        this.sendFrame(ws, {
          SeqID: 0,
          LogID: 0,
          service: this.serviceId,
          method: FRAME_CONTROL,
          headers: [{ key: "type", value: "pong" }],
          payload: new TextEncoder().encode(JSON.stringify(this.clientConfig()))
        })
      } else if (f.method === FRAME_DATA && type === "event") {
        let code = 0
        let data: unknown
        try {
          const v: unknown = JSON.parse(new TextDecoder().decode(f.payload ?? new Uint8Array()))
          code = isRecord(v) && typeof v.code === "number" ? v.code : 0
          data = isRecord(v) && typeof v.data === "string" ? JSON.parse(Buffer.from(v.data, "base64").toString("utf8")) : undefined
        } catch {
          code = -1
        }
        const frameId = headerOf(f, "message_id") ?? ""
        this.acks.push({ frameMessageId: frameId, code })
        const envelope = this.unacked.get(ws)?.get(frameId)
        const header = isRecord(envelope?.header) ? envelope.header : undefined
        if (header?.event_type === "card.action.trigger") this.actionAnswers.push({ eventId: String(header.event_id), code, body: data })
        if (code === 200) this.unacked.get(ws)?.delete(frameId)
      }
      this.changed()
    })
    ws.on("close", () => {
      this.clients.delete(ws)
      // The platform pushes what was not acknowledged again, on the next connection.
      const left = [...(this.unacked.get(ws)?.values() ?? [])]
      this.unacked.delete(ws)
      for (const e of left) this.push(e)
      this.changed()
    })
    ws.on("error", () => undefined)
  }

  private clientConfig() {
    return { PingInterval: 120, ReconnectCount: -1, ReconnectInterval: this.reconnectInterval, ReconnectNonce: 0 }
  }

  private sendFrame(ws: WebSocket, f: Frame) {
    ws.send(encodeFrame(f))
  }

  /** Pushes an event envelope to one connected client (queued when none is). */
  private push(envelope: Record<string, unknown>) {
    const ws = [...this.clients].find((c) => c.readyState === c.OPEN && this.listening.has(c))
    if (ws === undefined) {
      this.pending.push(envelope)
      return
    }
    const frameId = randomUUID()
    const unacked = this.unacked.get(ws) ?? new Map<string, Record<string, unknown>>()
    unacked.set(frameId, envelope)
    this.unacked.set(ws, unacked)
    this.sendFrame(ws, {
      SeqID: 0,
      LogID: 0,
      service: this.serviceId,
      method: FRAME_DATA,
      headers: [
        { key: "type", value: "event" },
        { key: "message_id", value: frameId },
        { key: "sum", value: "1" },
        { key: "seq", value: "0" },
        { key: "trace_id", value: randomUUID() }
      ],
      payload: new TextEncoder().encode(JSON.stringify(envelope))
    })
  }

  disconnect() {
    for (const c of this.clients) c.terminate()
  }

  // ---- user messages ----

  dmChat(openId: string) {
    return `oc_dm_${openId.replace(/^ou_/, "")}`
  }

  eventFor(input: UserMessageInput): SentEvent {
    const n = ++this.seq
    const messageId = `om_user_${n}_${randomBytes(4).toString("hex")}`
    const eventId = randomBytes(16).toString("hex")
    const chatId = input.groupId ?? this.dmChat(input.from)
    const mentions = input.mentionBot === true
      ? [{ key: "@_user_1", id: { open_id: this.botOpenId, union_id: "on_bot", user_id: "" }, name: this.botName, tenant_key: "tenant" }]
      : []
    const at = input.mentionBot === true ? "@_user_1 " : ""
    let messageType = "text"
    let content = JSON.stringify({ text: `${at}${input.text ?? ""}` })
    if (input.image !== undefined) {
      const key = `img_v3_${randomBytes(6).toString("hex")}`
      this.images.set(key, { bytes: input.image, mime: input.imageMime ?? "image/png" })
      if (input.text === undefined && input.mentionBot !== true) {
        messageType = "image"
        content = JSON.stringify({ image_key: key })
      } else {
        messageType = "post"
        const line: Array<Record<string, unknown>> = []
        if (input.mentionBot === true) line.push({ tag: "at", user_id: "@_user_1", user_name: this.botName })
        if (input.text !== undefined) line.push({ tag: "text", text: ` ${input.text}` })
        content = JSON.stringify({ title: "", content: [line, [{ tag: "img", image_key: key, width: 1, height: 1 }]] })
      }
    } else if (input.post === true) {
      messageType = "post"
      const line: Array<Record<string, unknown>> = []
      if (input.mentionBot === true) line.push({ tag: "at", user_id: "@_user_1", user_name: this.botName })
      line.push({ tag: "text", text: ` ${input.text ?? ""}` })
      content = JSON.stringify({ title: "", content: [line] })
    }
    const now = String(Date.now())
    const envelope = {
      schema: "2.0",
      header: {
        event_id: eventId,
        event_type: "im.message.receive_v1",
        create_time: now,
        token: this.verificationToken ?? "",
        app_id: this.appId,
        tenant_key: "tenant"
      },
      event: {
        sender: { sender_id: { open_id: input.from, union_id: `on_${input.from}`, user_id: "" }, sender_type: "user", tenant_key: "tenant" },
        message: {
          message_id: messageId,
          ...(input.parentId === undefined ? {} : { root_id: input.parentId, parent_id: input.parentId }),
          create_time: now,
          update_time: now,
          chat_id: chatId,
          chat_type: input.groupId === undefined ? "p2p" : "group",
          message_type: messageType,
          content,
          ...(mentions.length === 0 ? {} : { mentions })
        }
      }
    }
    const sent = { messageId, eventId, chatId, envelope }
    this.events.set(messageId, sent)
    this.chatOfUserMessage.set(messageId, chatId)
    return sent
  }

  sendUserMessage(input: UserMessageInput): SentEvent {
    const sent = this.eventFor(input)
    if (this.subscribed.has("im.message.receive_v1")) this.push(sent.envelope)
    return sent
  }

  redeliver(messageId: string) {
    const sent = this.events.get(messageId)
    if (sent === undefined) throw new Error(`no event for ${messageId}`)
    this.push(sent.envelope)
  }

  // ---- card callbacks ----

  buttons(messageId: string): ReadonlyArray<Button> {
    const content = this.bot.get(messageId)?.history.at(-1)?.content ?? ""
    let v: unknown
    try {
      v = JSON.parse(content)
    } catch {
      return []
    }
    const elements = isRecord(v) && Array.isArray(v.elements) ? v.elements : []
    return elements.flatMap((e: unknown) =>
      isRecord(e) && e.tag === "action" && Array.isArray(e.actions)
        ? e.actions.flatMap((b: unknown) =>
          isRecord(b) && b.tag === "button" && isRecord(b.text) && typeof b.text.content === "string" ? [{ label: b.text.content, value: b.value }] : []
        )
        : []
    )
  }

  cardActionFor(input: PressInput): SentEvent {
    const m = this.bot.get(input.messageId)
    if (m === undefined) throw new Error(`no bot message ${input.messageId}`)
    const eventId = randomBytes(16).toString("hex")
    const envelope = {
      schema: "2.0",
      header: {
        event_id: eventId,
        token: this.verificationToken ?? "",
        create_time: String(Date.now() * 1000),
        event_type: "card.action.trigger",
        tenant_key: "tenant",
        app_id: this.appId
      },
      event: {
        operator: { tenant_key: "tenant", user_id: "", open_id: input.from, union_id: `on_${input.from}` },
        token: `c-${randomBytes(12).toString("hex")}`,
        action: { value: input.value, tag: "button" },
        host: "im_message",
        context: { open_message_id: m.messageId, open_chat_id: m.chatId }
      }
    }
    const sent = { messageId: m.messageId, eventId, chatId: m.chatId, envelope }
    this.cardActions.set(eventId, sent)
    return sent
  }

  pressButton(input: PressInput): SentEvent {
    const sent = this.cardActionFor(input)
    this.push(sent.envelope)
    return sent
  }

  redeliverAction(eventId: string) {
    const sent = this.cardActions.get(eventId)
    if (sent === undefined) throw new Error(`no card action ${eventId}`)
    this.push(sent.envelope)
  }

  // ---- reactions ----

  /** A reaction event (added or taken back), recorded and the reactions of the message changed. */
  private reactionEvent(input: ReactionInput, added: boolean): SentEvent {
    const chatId = this.bot.get(input.messageId)?.chatId ?? this.chatOfUserMessage.get(input.messageId)
    if (chatId === undefined) throw new Error(`fake Feishu: no message ${input.messageId} in a chat the bot is in`)
    if (input.emojiType === "") throw new Error("fake Feishu: an emoji_type is needed")
    const reactor = input.from ?? "app:cli_other0000000000"
    const key = `${input.messageId}|${reactor}|${input.emojiType}`
    if (added && this.reactions.has(key)) throw new Error(`fake Feishu: ${reactor} already reacted ${input.emojiType} to ${input.messageId}`)
    if (!added && !this.reactions.has(key)) throw new Error(`fake Feishu: ${reactor} has no ${input.emojiType} reaction on ${input.messageId} to take back`)
    if (added) this.reactions.add(key)
    else this.reactions.delete(key)
    const eventId = randomBytes(16).toString("hex")
    const now = String(Date.now())
    const envelope = {
      schema: "2.0",
      header: {
        event_id: eventId,
        event_type: added ? "im.message.reaction.created_v1" : "im.message.reaction.deleted_v1",
        create_time: now,
        token: this.verificationToken ?? "",
        app_id: this.appId,
        tenant_key: "tenant"
      },
      event: {
        message_id: input.messageId,
        reaction_type: { emoji_type: input.emojiType },
        ...(input.from === undefined
          ? { operator_type: "app", app_id: "cli_other0000000000" }
          : { operator_type: "user", user_id: { open_id: input.from, union_id: `on_${input.from}`, user_id: "" } }),
        action_time: now
      }
    }
    const sent = { messageId: input.messageId, eventId, chatId, envelope }
    this.reactionEvents.set(eventId, sent)
    this.changed()
    return sent
  }

  reactionFor(input: ReactionInput): SentEvent {
    return this.reactionEvent(input, true)
  }

  react(input: ReactionInput): SentEvent {
    const sent = this.reactionEvent(input, true)
    if (this.subscribed.has("im.message.reaction.created_v1")) this.push(sent.envelope)
    return sent
  }

  unreact(input: ReactionInput): SentEvent {
    const sent = this.reactionEvent(input, false)
    if (this.subscribed.has("im.message.reaction.deleted_v1")) this.push(sent.envelope)
    return sent
  }

  redeliverReaction(eventId: string) {
    const sent = this.reactionEvents.get(eventId)
    if (sent === undefined) throw new Error(`no reaction event ${eventId}`)
    this.push(sent.envelope)
  }

  async callback(url: string, body: Record<string, unknown>, options: { readonly encrypt?: boolean; readonly badSignature?: boolean } = {}) {
    let raw = JSON.stringify(body)
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (options.encrypt === true) {
      const encryptKey = this.encryptKey
      if (encryptKey === undefined) throw new Error("no encryptKey")
      const iv = randomBytes(16)
      const cipher = createCipheriv("aes-256-cbc", createHash("sha256").update(encryptKey).digest(), iv)
      const encrypted = Buffer.concat([iv, cipher.update(raw, "utf8"), cipher.final()]).toString("base64")
      raw = JSON.stringify({ encrypt: encrypted })
    }
    if (this.encryptKey !== undefined && body.type !== "url_verification") {
      const timestamp = String(Math.floor(Date.now() / 1000))
      const nonce = randomBytes(8).toString("hex")
      const signature = createHash("sha256").update(timestamp + nonce + this.encryptKey + raw).digest("hex")
      headers["x-lark-request-timestamp"] = timestamp
      headers["x-lark-request-nonce"] = nonce
      headers["x-lark-signature"] = options.badSignature === true ? signature.replace(/^./, (c) => (c === "0" ? "1" : "0")) : signature
    }
    const res = await fetch(url, { method: "POST", headers, body: raw })
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed }
  }

  // ---- bot messages ----

  messages(chatId: string): ReadonlyArray<BotMessage> {
    return this.order.flatMap((id) => {
      const m = this.bot.get(id)
      return m !== undefined && m.chatId === chatId ? [m] : []
    })
  }

  failNext(spec: FailureSpec) {
    this.failures.push({ ...spec, left: spec.times ?? 1 })
  }

  rejectCards(times: number) {
    this.cardRejections += times
  }

  revokeTokens() {
    this.tokens.clear()
  }

  // ---- HTTP ----

  private async route(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://x")
    const method = req.method ?? "GET"
    this.userAgents.push(req.headers["user-agent"] ?? "")
    const bytes = await readBody(req)
    const contentType = req.headers["content-type"] ?? ""
    const multipart = /^multipart\/form-data/i.test(contentType)
    const raw = multipart ? "" : bytes.toString("utf8")
    let body: unknown = {}
    let form: FormData | undefined
    if (multipart) {
      try {
        form = await new Request("http://fake/", { method: "POST", headers: { "content-type": contentType }, body: bytes }).formData()
      } catch {
        form = undefined
      }
      body = form === undefined ? {} : Object.fromEntries([...form.entries()].map(([k, v]) => [k, typeof v === "string" ? v : { name: v.name, type: v.type, size: v.size }]))
    } else if (raw !== "") {
      try {
        body = JSON.parse(raw)
      } catch {
        return this.answer(res, method, url.pathname, body, 400, { code: 9499, msg: "Bad Request" })
      }
    }
    const line = `${method} ${url.pathname}`
    const failure = this.failures.find((f) => f.left > 0 && line.includes(f.match))
    if (failure !== undefined) {
      failure.left--
      this.failures = this.failures.filter((f) => f.left > 0)
      const headers: Record<string, string> = failure.resetSeconds === undefined ? {} : {
        "x-ogw-ratelimit-limit": "50",
        "x-ogw-ratelimit-reset": String(failure.resetSeconds)
      }
      const out = { code: failure.code, msg: failure.msg ?? "injected failure", ...(url.pathname === "/callback/ws/endpoint" ? { data: {} } : {}) }
      return this.answer(res, method, url.pathname, body, failure.status, out, headers)
    }
    if (method === "POST" && url.pathname === "/open-apis/auth/v3/tenant_access_token/internal") return this.token(res, body)
    if (method === "POST" && url.pathname === "/callback/ws/endpoint") return this.endpoint(res, body)
    if (url.pathname.startsWith("/open-apis/")) {
      const auth = req.headers.authorization ?? ""
      const token = /^Bearer (.+)$/.exec(auth)?.[1]
      if (token === undefined || !this.tokens.has(token)) {
        return this.answer(res, method, url.pathname, body, 400, { code: 99991663, msg: "Invalid access token for authorization. Please make a request with token attached." })
      }
      if (method === "GET" && url.pathname === "/open-apis/bot/v3/info") {
        return this.answer(res, method, url.pathname, body, 200, {
          code: 0,
          msg: "ok",
          bot: { activate_status: 2, app_name: this.botName, avatar_url: "", ip_white_list: [], open_id: this.botOpenId }
        })
      }
      if (method === "POST" && url.pathname === "/open-apis/im/v1/messages") return this.create(res, url, body)
      if (method === "POST" && url.pathname === "/open-apis/im/v1/images") return this.upload(res, url.pathname, body, form)
      const reply = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(url.pathname)
      if (method === "POST" && reply?.[1] !== undefined) return this.reply(res, url.pathname, reply[1], body)
      const resource = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/resources\/([^/]+)$/.exec(url.pathname)
      if (method === "GET" && resource?.[1] !== undefined && resource[2] !== undefined) return this.resource(res, url, resource[1], resource[2])
      const patch = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/.exec(url.pathname)
      if (method === "PATCH" && patch?.[1] !== undefined) return this.patch(res, url.pathname, patch[1], body)
      if (method === "GET" && patch?.[1] !== undefined) return this.getMessage(res, url.pathname, patch[1])
    }
    return this.answer(res, method, url.pathname, body, 404, { code: 404, msg: "404 page not found" })
  }

  private answer(res: ServerResponse, method: string, path: string, body: unknown, status: number, out: Record<string, unknown>, headers: Record<string, string> = {}) {
    this.calls.push({ method, path, body, status, code: typeof out.code === "number" ? out.code : 0, at: Date.now() })
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers })
    res.end(JSON.stringify(out))
    this.changed()
  }

  private token(res: ServerResponse, body: unknown) {
    const path = "/open-apis/auth/v3/tenant_access_token/internal"
    if (!isRecord(body) || body.app_id !== this.appId) return this.answer(res, "POST", path, body, 400, { code: 10003, msg: "invalid param" })
    if (body.app_secret !== this.appSecret) return this.answer(res, "POST", path, body, 400, { code: 10014, msg: "app secret invalid" })
    const token = `t-${randomBytes(20).toString("hex")}`
    this.tokens.add(token)
    return this.answer(res, "POST", path, body, 200, { code: 0, msg: "ok", tenant_access_token: token, expire: 7200 })
  }

  private endpoint(res: ServerResponse, body: unknown) {
    const path = "/callback/ws/endpoint"
    if (!isRecord(body) || body.AppID !== this.appId || body.AppSecret !== this.appSecret) {
      return this.answer(res, "POST", path, body, 200, { code: 514, msg: "auth failed", data: {} })
    }
    const device = randomBytes(8).toString("hex")
    this.devices.add(device)
    const wsUrl = `${this.baseUrl.replace(/^http/, "ws")}/ws?device_id=${device}&service_id=${this.serviceId}`
    return this.answer(res, "POST", path, body, 200, { code: 0, msg: "ok", data: { URL: wsUrl, ClientConfig: this.clientConfig() } })
  }

  uploaded(imageKey: string): Upload | undefined {
    return this.uploads.find((u) => u.imageKey === imageKey)
  }

  /** `POST /open-apis/im/v1/images`: the image checked as Feishu does, kept under a new image_key. */
  private async upload(res: ServerResponse, path: string, body: unknown, form: FormData | undefined) {
    const refuse = (code: number, msg: string) => this.answer(res, "POST", path, body, 400, { code, msg })
    const imageType = form?.get("image_type")
    const file = form?.get("image")
    if (form === undefined || (imageType !== "message" && imageType !== "avatar") || file === null || file === undefined || typeof file === "string") {
      return refuse(234001, "Invalid request param.")
    }
    if (file.size === 0) return refuse(234010, "File's size can't be 0.")
    if (file.size > IMAGE_MAX_BYTES) return refuse(234006, "The file size exceed the max value.")
    const bytes = new Uint8Array(await file.arrayBuffer())
    if (!takenImage(bytes)) return refuse(234011, "Can't regonnize the image format.")
    const imageKey = `img_v3_${randomBytes(8).toString("hex")}`
    this.uploads.push({ imageKey, imageType, fileName: file.name, contentType: file.type, bytes })
    return this.answer(res, "POST", path, body, 200, { code: 0, msg: "success", data: { image_key: imageKey } })
  }

  /** The checks Feishu makes of a message's content; the refusal, if any. */
  private checkContent(msgType: unknown, content: unknown): { code: number; msg: string } | undefined {
    if (msgType === "image") {
      let v: unknown
      try {
        v = typeof content === "string" ? JSON.parse(content) : undefined
      } catch {
        return { code: 230001, msg: "content is not a valid JSON" }
      }
      const key = isRecord(v) && typeof v.image_key === "string" ? v.image_key : undefined
      const upload = key === undefined ? undefined : this.uploaded(key)
      return upload !== undefined && upload.imageType === "message" ? undefined : { code: 230001, msg: "invalid image_key" }
    }
    if (msgType !== "text" && msgType !== "interactive") return { code: 230001, msg: "invalid msg_type" }
    if (typeof content !== "string") return { code: 230001, msg: "content is required" }
    let v: unknown
    try {
      v = JSON.parse(content)
    } catch {
      return { code: 230001, msg: "content is not a valid JSON" }
    }
    if (msgType === "text") return isRecord(v) && typeof v.text === "string" && v.text !== "" ? undefined : { code: 230001, msg: "text is empty" }
    if (Buffer.byteLength(JSON.stringify({ msg_type: msgType, content })) > CARD_MAX_BYTES) {
      return { code: 230025, msg: "The length of the message content reaches its limit." }
    }
    if (!isRecord(v) || !Array.isArray(v.elements) || v.elements.length === 0) return { code: 230099, msg: "Failed to create card content, ext=ErrCode: 11310; ErrMsg: card has no elements" }
    // Buttons: `action` elements of buttons, each with a plain_text label.
    const badAction = v.elements.some((e: unknown) =>
      isRecord(e) && e.tag === "action" &&
      (!Array.isArray(e.actions) || e.actions.length === 0 ||
        e.actions.some((b: unknown) => !isRecord(b) || b.tag !== "button" || !isRecord(b.text) || typeof b.text.content !== "string" || b.text.content === ""))
    )
    if (badAction) return { code: 230099, msg: "Failed to create card content, ext=ErrCode: 11310; ErrMsg: invalid action element" }
    const hasMarkdown = v.elements.some((e: unknown) => isRecord(e) && e.tag === "markdown")
    if (hasMarkdown && this.cardRejections > 0) {
      this.cardRejections--
      return { code: 230099, msg: "Failed to create card content, ext=ErrCode: 200570; ErrMsg: markdown content invalid" }
    }
    return undefined
  }

  private store(chatId: string, msgType: string, content: string, parentId: string | undefined, uuid: string | undefined): BotMessage {
    const messageId = `om_bot_${++this.seq}_${randomBytes(4).toString("hex")}`
    const v = visible(msgType, content)
    const imageKey = (() => {
      if (msgType !== "image") return undefined
      const parsed: unknown = JSON.parse(content)
      return isRecord(parsed) && typeof parsed.image_key === "string" ? parsed.image_key : undefined
    })()
    const m: BotMessage = { messageId, chatId, msgType, imageKey, parentId, uuid, text: v.text, rich: v.rich, history: [{ content, ...v, at: Date.now() }] }
    this.bot.set(messageId, m)
    this.order.push(messageId)
    if (uuid !== undefined) this.byUuid.set(uuid, messageId)
    return m
  }

  private sendLike(res: ServerResponse, method: string, path: string, body: unknown, chatId: string | undefined, parentId: string | undefined) {
    if (!isRecord(body)) return this.answer(res, method, path, body, 400, { code: 230001, msg: "invalid request" })
    const uuid = typeof body.uuid === "string" ? body.uuid : undefined
    const earlier = uuid === undefined ? undefined : this.byUuid.get(uuid)
    if (earlier !== undefined) {
      const m = this.bot.get(earlier)
      return this.answer(res, method, path, body, 200, { code: 0, msg: "success", data: { message_id: earlier, chat_id: m?.chatId } })
    }
    if (chatId === undefined) return this.answer(res, method, path, body, 400, { code: 230001, msg: "invalid receive_id" })
    const problem = this.checkContent(body.msg_type, body.content)
    if (problem !== undefined) return this.answer(res, method, path, body, 400, problem)
    const m = this.store(chatId, String(body.msg_type), String(body.content), parentId, uuid)
    return this.answer(res, method, path, body, 200, {
      code: 0,
      msg: "success",
      data: { message_id: m.messageId, chat_id: chatId, msg_type: m.msgType, create_time: String(Date.now()), sender: { id: this.appId, id_type: "app_id", sender_type: "app" } }
    })
  }

  private create(res: ServerResponse, url: URL, body: unknown) {
    const type = url.searchParams.get("receive_id_type")
    const receive = isRecord(body) && typeof body.receive_id === "string" ? body.receive_id : ""
    const known = new Set(this.chatOfUserMessage.values())
    const chatId = type === "open_id" && receive.startsWith("ou_")
      ? this.dmChat(receive)
      : type === "chat_id" && (known.has(receive) || this.order.some((id) => this.bot.get(id)?.chatId === receive))
      ? receive
      : undefined
    return this.sendLike(res, "POST", url.pathname, body, chatId, undefined)
  }

  private reply(res: ServerResponse, path: string, parentId: string, body: unknown) {
    const chatId = this.chatOfUserMessage.get(parentId) ?? this.bot.get(parentId)?.chatId
    if (chatId === undefined) return this.answer(res, "POST", path, body, 400, { code: 230011, msg: "The message is not found." })
    return this.sendLike(res, "POST", path, body, chatId, parentId)
  }

  private patch(res: ServerResponse, path: string, messageId: string, body: unknown) {
    const m = this.bot.get(messageId)
    if (m === undefined) return this.answer(res, "PATCH", path, body, 400, { code: 230001, msg: "message not found" })
    if (m.msgType !== "interactive") return this.answer(res, "PATCH", path, body, 400, { code: 230001, msg: "only cards can be updated" })
    const lastContent = m.history.at(-1)?.content ?? ""
    const shared = (() => {
      try {
        const v: unknown = JSON.parse(lastContent)
        return isRecord(v) && isRecord(v.config) && v.config.update_multi === true
      } catch {
        return false
      }
    })()
    if (!shared) return this.answer(res, "PATCH", path, body, 400, { code: 230001, msg: "card is not update_multi" })
    const now = Date.now()
    const times = (this.patchTimes.get(messageId) ?? []).filter((t) => now - t < 1000)
    if (times.length >= 5) return this.answer(res, "PATCH", path, body, 400, { code: 230020, msg: "This operation triggers the frequency limit." })
    this.patchTimes.set(messageId, [...times, now])
    const content = isRecord(body) ? body.content : undefined
    const problem = this.checkContent("interactive", content)
    if (problem !== undefined) return this.answer(res, "PATCH", path, body, 400, problem)
    const v = visible("interactive", String(content))
    this.bot.set(messageId, { ...m, text: v.text, rich: v.rich, history: [...m.history, { content: String(content), ...v, at: now }] })
    return this.answer(res, "PATCH", path, body, 200, { code: 0, msg: "success", data: {} })
  }

  private getMessage(res: ServerResponse, path: string, messageId: string) {
    const mine = this.bot.get(messageId)
    const theirs = this.events.get(messageId)
    if (mine === undefined && theirs === undefined) return this.answer(res, "GET", path, {}, 400, { code: 230001, msg: "message not found" })
    const sender = mine !== undefined
      ? { id: this.appId, id_type: "app_id", sender_type: "app", tenant_key: "tenant" }
      : { id: (theirs?.envelope.event as { sender?: { sender_id?: { open_id?: string } } } | undefined)?.sender?.sender_id?.open_id ?? "", id_type: "open_id", sender_type: "user", tenant_key: "tenant" }
    const item = {
      message_id: messageId,
      chat_id: mine?.chatId ?? theirs?.chatId,
      msg_type: mine?.msgType ?? "text",
      sender,
      body: { content: mine?.history.at(-1)?.content ?? "" }
    }
    return this.answer(res, "GET", path, {}, 200, { code: 0, msg: "success", data: { items: [item] } })
  }

  private resource(res: ServerResponse, url: URL, messageId: string, key: string) {
    const image = this.images.get(key)
    if (!this.events.has(messageId) || image === undefined || url.searchParams.get("type") !== "image") {
      return this.answer(res, "GET", url.pathname, {}, 400, { code: 234003, msg: "File not in msg." })
    }
    this.calls.push({ method: "GET", path: url.pathname, body: {}, status: 200, code: 0, at: Date.now() })
    res.writeHead(200, { "content-type": image.mime, "content-length": String(image.bytes.length) })
    res.end(Buffer.from(image.bytes))
    this.changed()
  }

  waitFor<T>(predicate: () => T | undefined | null | false, description: string, timeoutMs = 20_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const v = predicate()
        if (v !== undefined && v !== null && v !== false) {
          cleanup()
          resolve(v)
        }
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`timed out waiting for ${description}`))
      }, timeoutMs)
      const poll = setInterval(check, 50)
      const cleanup = () => {
        clearTimeout(timer)
        clearInterval(poll)
        this.changes.off("change", check)
      }
      this.changes.on("change", check)
      check()
    })
  }

  async close() {
    for (const c of this.clients) c.terminate()
    this.wss.close()
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

export const startFakeFeishu = async (options: FakeFeishuOptions = {}): Promise<FakeFeishu> => {
  const fake = new FakeFeishuServer(options)
  await fake.listen()
  return fake
}
