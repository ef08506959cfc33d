/**
 * A fake Telegram Bot API on 127.0.0.1 (real HTTP, ephemeral port), faithful to the wire so a real
 * grammy `Bot` can talk to it: `new Bot(fake.token, { client: { apiRoot: fake.apiRoot } })`.
 *
 * Covered:
 * - Routes `/bot<token>/<method>` (GET or POST; JSON, urlencoded or multipart/form-data bodies and
 *   query strings; method names case-insensitive) and file downloads `GET /file/bot<token>/<path>`.
 *   Envelopes `{"ok":true,"result":…}` / `{"ok":false,"error_code":N,"description":…}` with HTTP
 *   status N; 401 "Unauthorized" for another token, 404 "Not Found" for an unknown method.
 * - getMe, deleteWebhook, getWebhookInfo, getUpdates (long polling: offset confirms and forgets
 *   every update below it, negative offsets, limit, timeout, allowed_updates — updates of other
 *   types are not queued; a newer getUpdates ends a pending one with 409 Conflict), sendMessage,
 *   editMessageText, editMessageReplyMarkup, deleteMessage, sendChatAction, answerCallbackQuery,
 *   setMyCommands / getMyCommands / deleteMyCommands, sendPhoto (upload, file_id, or an http(s) URL
 *   the fake fetches), getFile.
 * - Telegram's validation and error texts for those: unknown chats ("chat not found" — a chat exists
 *   once a user wrote in it), empty or too long text/captions (counted on the visible text, in UTF-16
 *   code units), parse_mode HTML / MarkdownV2 / Markdown (see markup.ts), reply targets, inline
 *   keyboards, "message is not modified", "message to edit not found", spent callback queries.
 * - Test controls: injected user messages (text, /commands, @mentions, photos, replies) and button
 *   presses, reactions (`react`: a `message_reaction` update with the user's previous reactions as
 *   `old_reaction`; queued only when allowed_updates names it, as Telegram never sends it by default;
 *   in a group only while the bot is an administrator there, `setBotAdmin`; none when nothing
 *   changed; anonymous ones carry `actor_chat` and no `user`), redelivery of a confirmed update, scripted failures (429 with retry_after, 500, and 502
 *   as the HTML page Telegram's nginx sends), dropped long-poll connections, and a record of every
 *   call, message, chat action and callback answer, with `waitFor` re-checked on every change.
 *
 * - Webhooks (as a local Bot API server, which allows http): setWebhook (url, secret_token,
 *   allowed_updates) / deleteWebhook / getWebhookInfo; while a webhook is set getUpdates answers 409
 *   and queued updates are POSTed to it one at a time, in order, with X-Telegram-Bot-Api-Secret-Token;
 *   an update is forgotten on a 2xx answer and delivered again (after WEBHOOK_RETRY_MS) otherwise.
 *
 * Not covered: channels and forum topics, inline mode, message_reaction_count (anonymous reaction
 * totals), a chat's list of allowed reactions (any emoji may be set), media other than photos (no
 * resizing either: every PhotoSize downloads the original bytes), media groups, message
 * forwarding/copying, privacy mode (every injected group message is delivered), flood limits
 * beyond what `failNext` scripts, entity detection in bot messages (only user messages get
 * bot_command and mention entities), and the rarer error texts, which are best-effort.
 */
import { EventEmitter } from "node:events"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import type {
  BotCommand,
  BotCommandScope,
  CallbackQuery,
  Chat,
  ForceReply,
  InlineKeyboardMarkup,
  Message,
  MessageEntity,
  MessageReactionUpdated,
  ParseMode,
  PhotoSize,
  ReactionType,
  ReplyKeyboardMarkup,
  ReplyKeyboardRemove,
  Update,
  User,
  UserFromGetMe
} from "grammy/types"
import { FileStore, sniffImage } from "./files.ts"
import { EntityParseError, detectEntities, type Formatted, format, isParseMode, normalize } from "./markup.ts"
import {
  ApiError,
  badRequest,
  isRecord,
  optBool,
  optInt,
  optJson,
  optString,
  type Params,
  parseParams,
  readBody,
  sendBadGateway,
  sendError,
  sendResult,
  UploadedFile
} from "./wire.ts"

export { UploadedFile } from "./wire.ts"
export type { Params } from "./wire.ts"

export interface FakeTelegramOptions {
  /** Default `123456789:AAFakeTokenForAnnaTests0123456789abc`; the part before `:` is the bot's id, as with real tokens. */
  readonly token?: string
  /** Default `anna_test_bot`. */
  readonly botUsername?: string
}

export type ChatType = "private" | "group" | "supergroup"

/** A Telegram user, as a test names one (`first_name` defaults to the username or "User <id>"). */
export interface FakeUser {
  readonly id: number
  readonly username?: string
  readonly first_name?: string
  readonly last_name?: string
  readonly language_code?: string
}

export interface UserMessageInput {
  /** A private chat's id is its user's id (Telegram's rule); group and supergroup ids are negative. */
  readonly chatId: number
  /** Default "private". */
  readonly chatType?: ChatType
  /** Title of a group or supergroup (default "Group <id>"). */
  readonly chatTitle?: string
  readonly from: FakeUser
  /** The text, or the caption of a photo. */
  readonly text?: string
  /** A photo, stored as a downloadable file with PhotoSize variants. */
  readonly photo?: { readonly bytes: Uint8Array; readonly mime?: string }
  /** Makes the message a reply to that bot message. */
  readonly replyToBotMessageId?: number
  /** Puts `@botUsername` in front of the text unless the text already has it. */
  readonly mentionBot?: boolean
}

export interface ButtonPress {
  readonly chatId: number
  readonly from: FakeUser
  /** A bot message in that chat (its keyboard is not checked for the data: a press may race an edit). */
  readonly messageId: number
  readonly data: string
}

export interface ReactionInput {
  readonly chatId: number
  /** Who reacts; undefined: an anonymous group admin (the update then names the group as `actor_chat`, and no user). */
  readonly from?: FakeUser | undefined
  /** A message of that chat (the bot's or a user's). */
  readonly messageId: number
  /** The user's reactions after the change, replacing theirs (as a client sets them); [] takes them back. Emoji or ReactionType. */
  readonly reaction: ReadonlyArray<string | ReactionType>
}

export interface FailureSpec {
  readonly status: 429 | 500 | 502
  /** Seconds, for 429 (default 1). */
  readonly retryAfter?: number
  /** How many of the next calls fail (default 1). */
  readonly times?: number
}

/** One call of a Bot API method, as the fake received it. */
export interface ApiCall {
  /** The method's canonical name (as given when the fake does not know it). */
  readonly method: string
  /** Parameters: JSON values, form strings, UploadedFile for uploads. */
  readonly params: Params
  /** `Date.now()` when the request arrived. */
  readonly at: number
  /** HTTP status answered; undefined while the call is pending (a held getUpdates). */
  readonly status: number | undefined
  /** The connection closed before an answer (client abort, or `dropPolls`). */
  readonly aborted: boolean
}

export type ReplyMarkup = InlineKeyboardMarkup | ReplyKeyboardMarkup | ReplyKeyboardRemove | ForceReply

/** One version of a bot message's content (the text is the caption for a photo). */
export interface MessageVersion {
  /** The visible text: markup parsed away, entities apart. */
  readonly text: string
  /** The text as sent, with its markup. */
  readonly raw: string
  readonly parseMode: ParseMode | undefined
  readonly entities: ReadonlyArray<MessageEntity>
  readonly replyMarkup: ReplyMarkup | undefined
  /** `Date.now()` when this version was sent or edited in. */
  readonly at: number
}

/** A message the bot sent: its current version, and every version it had. */
export interface BotMessage extends MessageVersion {
  readonly chatId: number
  readonly messageId: number
  readonly kind: "text" | "photo"
  readonly photo: ReadonlyArray<PhotoSize> | undefined
  readonly replyToMessageId: number | undefined
  readonly deleted: boolean
  /** Oldest first; the last is the current version. */
  readonly history: ReadonlyArray<MessageVersion>
  /** The message as the Bot API last returned it. */
  readonly wire: Message
}

export interface AnsweredCallback {
  readonly callbackQueryId: string
  readonly text: string | undefined
  readonly showAlert: boolean
  readonly url: string | undefined
  readonly cacheTime: number | undefined
  readonly at: number
}

export interface FakeTelegram {
  /** `http://127.0.0.1:PORT`, grammy's `client.apiRoot`. */
  readonly apiRoot: string
  readonly token: string
  /** What getMe answers. */
  readonly me: UserFromGetMe
  /** Injects a user's message as an update; returns it. The chat becomes known to the bot. */
  sendUserMessage(input: UserMessageInput): Update
  /** Injects a callback_query update for an inline button of a bot message; returns it. */
  pressButton(press: ButtonPress): Update
  /**
   * A user changes their reactions to a message: the `message_reaction` update, or undefined when
   * Telegram would send none (nothing changed; a group where the bot is no administrator). Whether
   * it is queued follows allowed_updates, as for every update.
   */
  react(input: ReactionInput): Update | undefined
  /** Makes the bot an administrator of a group (or no longer one): Telegram sends a group's reactions only to an admin bot. */
  setBotAdmin(chatId: number, admin?: boolean): void
  /** Puts an already confirmed update back in the queue: the next getUpdates delivers it again, whatever its offset. */
  redeliver(updateId: number): void
  /** The next `times` calls of `method` fail as Telegram fails them, without effect. */
  failNext(method: string, failure: FailureSpec): void
  /** Destroys the connections of pending getUpdates requests (a network drop); returns how many. */
  dropPolls(): number
  /** Every API call, in order of arrival. */
  readonly calls: ReadonlyArray<ApiCall>
  callsTo(method: string): ReadonlyArray<ApiCall>
  /** Bot messages in a chat, oldest first (deleted ones included, flagged). */
  messages(chatId: number): ReadonlyArray<BotMessage>
  /** sendChatAction actions in a chat, in order. */
  chatActions(chatId: number): ReadonlyArray<string>
  readonly answeredCallbacks: ReadonlyArray<AnsweredCallback>
  /** Commands set by setMyCommands for a scope (default: the default scope) and language. */
  commands(scope?: BotCommandScope, languageCode?: string): ReadonlyArray<BotCommand>
  /** Paths downloaded from /file/bot<token>/…, in order. */
  readonly downloads: ReadonlyArray<string>
  /** getUpdates requests being held open. */
  readonly pendingPolls: number
  /** The webhook set by setWebhook, if any. */
  readonly webhook: { readonly url: string; readonly secret: string | undefined } | undefined
  /** Every webhook delivery attempt: the update, the HTTP status answered (0: no answer). */
  readonly webhookDeliveries: ReadonlyArray<{ readonly updateId: number; readonly status: number }>
  /** Updates queued and not yet confirmed, in delivery order. */
  readonly pendingUpdates: ReadonlyArray<Update>
  /**
   * Resolves with the predicate's value once it is neither undefined, null nor false; re-checked now
   * and on every change of the fake's state (no polling). Rejects after `timeoutMs` with the
   * description, or when the fake closes.
   */
  waitFor<T>(predicate: () => T | undefined | null | false, description: string, timeoutMs?: number): Promise<T>
  /** Ends all pending requests and connections, and the server. */
  close(): Promise<void>
}

export const startFakeTelegram = async (options: FakeTelegramOptions = {}): Promise<FakeTelegram> => {
  const fake = new FakeTelegramServer(
    options.token ?? "123456789:AAFakeTokenForAnnaTests0123456789abc",
    options.botUsername ?? "anna_test_bot"
  )
  await fake.listen()
  return fake
}

// -------------------------------------------------------------------------------------- internals

type WireMessage = Message & Update.NonChannel
type KnownChat = Chat.PrivateChat | Chat.GroupChat | Chat.SupergroupChat

interface ChatState {
  readonly chat: KnownChat
  nextMessageId: number
  readonly messages: Map<number, StoredMessage>
  readonly actions: Array<string>
  /** Current reactions by `messageId:actorId`. */
  readonly reactions: Map<string, ReadonlyArray<ReactionType>>
  botIsAdmin: boolean
}

interface StoredMessage {
  readonly byBot: boolean
  readonly kind: "text" | "photo"
  message: WireMessage
  deleted: boolean
  /** Bot messages: every version, oldest first. */
  readonly versions: Array<MessageVersion>
}

interface CallRecord {
  method: string
  params: Params
  at: number
  status: number | undefined
  aborted: boolean
}

interface Poll {
  readonly call: CallRecord
  readonly res: ServerResponse
  readonly socket: Socket
  readonly limit: number
  timer: ReturnType<typeof setTimeout> | undefined
}

interface Failure {
  readonly spec: FailureSpec
  remaining: number
}

/** A handler's answer when it keeps the response open (a held getUpdates). */
const HELD = Symbol("held")

type Handler = (params: Params, req: IncomingMessage, res: ServerResponse, call: CallRecord) => unknown

const CHAT_ACTIONS = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note"
])

/** Update types delivered when allowed_updates is empty or was never given. */
const NOT_BY_DEFAULT = new Set(["chat_member", "message_reaction", "message_reaction_count"])

const INLINE_BUTTON_ACTIONS = [
  "callback_data",
  "url",
  "web_app",
  "login_url",
  "switch_inline_query",
  "switch_inline_query_current_chat",
  "switch_inline_query_chosen_chat",
  "copy_text",
  "callback_game",
  "pay"
]

const NOT_MODIFIED =
  "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"

const MAX_TEXT = 4096
const MAX_CAPTION = 1024

const unixNow = () => Math.floor(Date.now() / 1000)
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)
/**
 * A message as `reply_to_message` of another: without its own `reply_to_message`, as Telegram sends it.
 * (grammy's ReplyMessage type demands that key be present and undefined, which exactOptionalPropertyTypes
 * cannot express, hence the cast.)
 */
const asReplied = (message: Message): NonNullable<Message["reply_to_message"]> => {
  const { reply_to_message: _nested, ...rest } = message
  return rest as NonNullable<Message["reply_to_message"]>
}
const safeDecode = (path: string) => {
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}
const updateType = (u: Update) => Object.keys(u).find((k) => k !== "update_id") ?? ""

/** How long the fake waits before delivering an update again to a webhook that did not answer 2xx. */
export const WEBHOOK_RETRY_MS = 50

class FakeTelegramServer implements FakeTelegram {
  readonly token: string
  readonly me: UserFromGetMe
  readonly #botUser: User
  readonly #server = createServer((req, res) => void this.#handle(req, res))
  readonly #events = new EventEmitter()
  readonly #calls: Array<CallRecord> = []
  readonly #chats = new Map<number, ChatState>()
  readonly #files = new FileStore()
  readonly #history = new Map<number, Update>()
  /** Unconfirmed updates; `forced` ones (redelivered) survive the next offset until delivered. */
  readonly #queue = new Map<number, { readonly update: Update; forced: boolean }>()
  readonly #polls = new Set<Poll>()
  readonly #failures = new Map<string, Array<Failure>>()
  readonly #queries = new Map<string, { answered: boolean }>()
  readonly #callbackAnswers: Array<AnsweredCallback> = []
  readonly #commands = new Map<string, ReadonlyArray<BotCommand>>()
  readonly #downloads: Array<string> = []
  readonly #handlers: ReadonlyMap<string, { readonly name: string; readonly handle: Handler }>
  #allowedUpdates: ReadonlySet<string> | undefined
  #webhook: { readonly url: string; readonly secret: string | undefined } | undefined
  readonly #webhookDeliveries: Array<{ readonly updateId: number; readonly status: number }> = []
  #pumping = false
  #nextUpdateId = 100_000_001
  #nextQueryId = 1
  #closed = false
  #port = 0

  constructor(token: string, botUsername: string) {
    const id = /^(\d+):[\w-]+$/.exec(token)?.[1]
    if (id === undefined) throw new Error(`fake Telegram: a bot token looks like "123456:ABC-def", not "${token}"`)
    this.token = token
    this.#botUser = { id: Number(id), is_bot: true, first_name: "Anna", username: botUsername }
    this.me = {
      id: Number(id),
      is_bot: true,
      first_name: "Anna",
      username: botUsername,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
      has_topics_enabled: false,
      allows_users_to_create_topics: false,
      can_manage_bots: false,
      supports_join_request_queries: false
    }
    this.#events.setMaxListeners(0)
    const handlers: Record<string, Handler> = {
      getMe: () => this.me,
      deleteWebhook: (p) => {
        if (optBool(p, "drop_pending_updates") === true) this.#queue.clear()
        this.#webhook = undefined
        this.#changed()
        return true
      },
      setWebhook: (p) => this.#setWebhook(p),
      getWebhookInfo: () => ({ url: this.#webhook?.url ?? "", has_custom_certificate: false, pending_update_count: this.#queue.size }),
      getUpdates: (p, req, res, call) => this.#getUpdates(p, req, res, call),
      sendMessage: (p) => this.#sendMessage(p),
      editMessageText: (p) => this.#editMessageText(p),
      editMessageReplyMarkup: (p) => this.#editMessageReplyMarkup(p),
      deleteMessage: (p) => this.#deleteMessage(p),
      sendChatAction: (p) => this.#sendChatAction(p),
      answerCallbackQuery: (p) => this.#answerCallbackQuery(p),
      setMyCommands: (p) => this.#setMyCommands(p),
      getMyCommands: (p) => this.#commands.get(this.#commandsKey(p)) ?? [],
      deleteMyCommands: (p) => {
        this.#commands.delete(this.#commandsKey(p))
        return true
      },
      sendPhoto: (p) => this.#sendPhoto(p),
      getFile: (p) => this.#files.getFile(optString(p, "file_id") ?? "")
    }
    this.#handlers = new Map(Object.entries(handlers).map(([name, handle]) => [name.toLowerCase(), { name, handle }]))
  }

  listen(): Promise<void> {
    return new Promise((done, fail) => {
      this.#server.once("error", fail)
      this.#server.listen(0, "127.0.0.1", () => {
        this.#port = (this.#server.address() as AddressInfo).port
        done()
      })
    })
  }

  get apiRoot(): string {
    return `http://127.0.0.1:${this.#port}`
  }

  // ------------------------------------------------------------------------------------ HTTP

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname)
    if (download !== null) return this.#download(res, download[1] ?? "", safeDecode(download[2] ?? ""))
    const route = /^\/bot([^/]*)\/([^/]*)$/.exec(url.pathname)
    if (route === null) return sendError(res, new ApiError(404, "Not Found"))
    const handler = this.#handlers.get((route[2] ?? "").toLowerCase())
    const call: CallRecord = { method: handler?.name ?? route[2] ?? "", params: {}, at: Date.now(), status: undefined, aborted: false }
    this.#calls.push(call)
    res.on("finish", () => {
      call.status = res.statusCode
      this.#changed()
    })
    res.on("close", () => {
      if (res.writableFinished) return
      call.aborted = true
      this.#changed()
    })
    this.#changed()
    try {
      const body = await readBody(req)
      call.params = parseParams(req.headers["content-type"], body, url.searchParams)
      if (route[1] !== this.token) throw new ApiError(401, "Unauthorized")
      if (handler === undefined) throw new ApiError(404, "Not Found")
      if (!this.#failScripted(handler.name, res)) {
        const result = await handler.handle(call.params, req, res, call)
        if (result !== HELD) sendResult(res, result)
      }
    } catch (e) {
      // A bug of the fake answers 400, not 500, so that clients fail fast instead of retrying.
      const error = e instanceof ApiError ? e : badRequest(`the fake Telegram failed: ${e instanceof Error ? e.message : String(e)}`)
      sendError(res, error)
    }
    this.#answered(call, res)
  }

  /** Records the status of an answered call (the `finish` listener would record it a tick later). */
  #answered(call: CallRecord, res: ServerResponse): void {
    if (res.headersSent) call.status = res.statusCode
    this.#changed()
  }

  #download(res: ServerResponse, token: string, filePath: string): void {
    const file = this.#files.byPath(filePath)
    if (token !== this.token || file === undefined) {
      sendError(res, token === this.token ? new ApiError(404, "Not Found") : new ApiError(401, "Unauthorized"))
      return
    }
    this.#downloads.push(filePath)
    res.writeHead(200, { "content-type": file.mime, "content-length": file.bytes.length })
    res.end(file.bytes)
    this.#changed()
  }

  /** Answers with a scripted failure if one is due for this method. */
  #failScripted(method: string, res: ServerResponse): boolean {
    const queue = this.#failures.get(method.toLowerCase())
    const failure = queue?.[0]
    if (queue === undefined || failure === undefined) return false
    failure.remaining--
    if (failure.remaining <= 0) queue.shift()
    const { status, retryAfter = 1 } = failure.spec
    if (status === 429) {
      sendError(res, new ApiError(429, `Too Many Requests: retry after ${retryAfter}`, { retry_after: retryAfter }))
    } else if (status === 500) sendError(res, new ApiError(500, "Internal Server Error"))
    else sendBadGateway(res)
    return true
  }

  #changed(): void {
    this.#events.emit("change")
  }

  // ------------------------------------------------------------------------------ long polling

  #setWebhook(p: Params): true {
    const url = optString(p, "url") ?? ""
    if (url === "") {
      this.#webhook = undefined
      return true
    }
    if (!/^https?:\/\/\S+$/.test(url)) throw badRequest("Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
    const secret = optString(p, "secret_token")
    if (secret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secret)) throw badRequest("Bad Request: secret token contains unallowed characters")
    const allowed = optJson(p, "allowed_updates", "can't parse allowed updates JSON array")
    if (Array.isArray(allowed)) this.#allowedUpdates = allowed.length === 0 ? undefined : new Set(allowed.filter((t) => typeof t === "string"))
    this.#webhook = { url, secret }
    this.#changed()
    void this.#pump()
    return true
  }

  get webhook() {
    return this.#webhook
  }

  get webhookDeliveries() {
    return [...this.#webhookDeliveries]
  }

  /** Delivers queued updates to the webhook, oldest first, one at a time, until the queue is empty or the webhook is gone. */
  async #pump(): Promise<void> {
    if (this.#pumping) return
    this.#pumping = true
    try {
      while (!this.#closed && this.#webhook !== undefined) {
        const next = [...this.#queue.values()].sort((a, b) => a.update.update_id - b.update.update_id)[0]
        if (next === undefined) break
        const hook = this.#webhook
        let status = 0
        try {
          const response = await fetch(hook.url, {
            method: "POST",
            headers: { "content-type": "application/json", ...(hook.secret === undefined ? {} : { "x-telegram-bot-api-secret-token": hook.secret }) },
            body: JSON.stringify(next.update),
            signal: AbortSignal.timeout(10_000)
          })
          status = response.status
          await response.body?.cancel()
        } catch {
          status = 0
        }
        this.#webhookDeliveries.push({ updateId: next.update.update_id, status })
        if (status >= 200 && status < 300) this.#queue.delete(next.update.update_id)
        this.#changed()
        if (status < 200 || status >= 300) await new Promise((resolve) => setTimeout(resolve, WEBHOOK_RETRY_MS))
      }
    } finally {
      this.#pumping = false
    }
  }

  #getUpdates(p: Params, req: IncomingMessage, res: ServerResponse, call: CallRecord): unknown {
    if (this.#webhook !== undefined) {
      throw new ApiError(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first")
    }
    const offset = optInt(p, "offset")
    const limit = Math.min(100, Math.max(1, optInt(p, "limit") ?? 100))
    const timeout = Math.max(0, optInt(p, "timeout") ?? 0)
    const allowed = optJson(p, "allowed_updates", "can't parse allowed updates JSON array")
    if (allowed !== undefined) {
      if (!Array.isArray(allowed)) throw badRequest("allowed_updates must be an Array")
      this.#allowedUpdates = allowed.length === 0 ? undefined : new Set(allowed.filter((t) => typeof t === "string"))
    }
    for (const older of [...this.#polls]) {
      this.#endPoll(older)
      sendError(
        older.res,
        new ApiError(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
      )
      this.#answered(older.call, older.res)
    }
    if (offset !== undefined) this.#confirm(offset)
    const batch = this.#batch(limit)
    if (batch.length > 0 || timeout === 0) return batch
    const poll: Poll = { call, res, socket: req.socket, limit, timer: undefined }
    poll.timer = setTimeout(() => this.#answerPoll(poll, []), Math.min(timeout * 1000, 2_147_483_647))
    res.on("close", () => {
      if (this.#polls.has(poll)) this.#endPoll(poll)
    })
    this.#polls.add(poll)
    return HELD
  }

  /** Forgets every update below `offset` (or all but the last -offset ones). */
  #confirm(offset: number): void {
    if (offset < 0) {
      const ids = [...this.#queue.keys()].sort((a, b) => a - b)
      for (const id of ids.slice(0, Math.max(0, ids.length + offset))) this.#queue.delete(id)
      return
    }
    for (const [id, entry] of this.#queue) if (id < offset && !entry.forced) this.#queue.delete(id)
  }

  #batch(limit: number): Array<Update> {
    const entries = [...this.#queue.values()].sort((a, b) => a.update.update_id - b.update.update_id).slice(0, limit)
    for (const e of entries) e.forced = false
    return entries.map((e) => e.update)
  }

  #endPoll(poll: Poll): void {
    this.#polls.delete(poll)
    if (poll.timer !== undefined) clearTimeout(poll.timer)
  }

  #answerPoll(poll: Poll, updates: ReadonlyArray<Update>): void {
    this.#endPoll(poll)
    sendResult(poll.res, updates)
    this.#answered(poll.call, poll.res)
  }

  #flushPolls(): void {
    for (const poll of [...this.#polls]) {
      const batch = this.#batch(poll.limit)
      if (batch.length > 0) this.#answerPoll(poll, batch)
    }
  }

  #enqueue(update: Update): Update {
    this.#history.set(update.update_id, update)
    const type = updateType(update)
    const allowed = this.#allowedUpdates === undefined ? !NOT_BY_DEFAULT.has(type) : this.#allowedUpdates.has(type)
    if (allowed) this.#queue.set(update.update_id, { update, forced: false })
    this.#flushPolls()
    void this.#pump()
    this.#changed()
    return update
  }

  // ----------------------------------------------------------------------------------- messages

  #chat(p: Params): ChatState {
    const raw = p["chat_id"]
    if (raw === undefined || raw === null || raw === "") throw badRequest("chat_id is empty")
    const id = typeof raw === "number" ? raw : typeof raw === "string" && /^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN
    const chat = this.#chats.get(id)
    if (chat === undefined) throw badRequest("chat not found")
    return chat
  }

  #parseMode(p: Params): ParseMode | undefined {
    const mode = optString(p, "parse_mode")
    if (mode === undefined || mode === "") return undefined
    if (!isParseMode(mode)) throw badRequest("unsupported parse_mode")
    return mode
  }

  /** Visible text and entities of a text or caption parameter, or Telegram's refusal. */
  #format(p: Params, key: "text" | "caption", parseMode: ParseMode | undefined): Formatted {
    const raw = optString(p, key) ?? ""
    const given = optJson(p, key === "text" ? "entities" : "caption_entities", "can't parse entities JSON object")
    if (Array.isArray(given)) return normalize({ text: raw, entities: given as Array<MessageEntity> })
    try {
      return format(raw, parseMode)
    } catch (e) {
      if (e instanceof EntityParseError) throw badRequest(`can't parse entities: ${e.message}`)
      throw e
    }
  }

  #text(p: Params): { readonly raw: string; readonly parseMode: ParseMode | undefined; readonly formatted: Formatted } {
    const raw = optString(p, "text") ?? ""
    if (raw.trim() === "") throw badRequest("message text is empty")
    const parseMode = this.#parseMode(p)
    const formatted = this.#format(p, "text", parseMode)
    if (formatted.text.trim() === "") throw badRequest("message text is empty")
    if (formatted.text.length > MAX_TEXT) throw badRequest("message is too long")
    return { raw, parseMode, formatted }
  }

  #replyMarkup(p: Params): ReplyMarkup | undefined {
    const invalid = "can't parse reply keyboard markup JSON object"
    const markup = optJson(p, "reply_markup", invalid)
    if (markup === undefined) return undefined
    if (!isRecord(markup)) throw badRequest(invalid)
    if ("inline_keyboard" in markup) {
      const rows = markup["inline_keyboard"]
      if (!Array.isArray(rows) || !rows.every(Array.isArray)) {
        throw badRequest("field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array of Arrays")
      }
      for (const row of rows as ReadonlyArray<ReadonlyArray<unknown>>) for (const button of row) checkInlineButton(button)
      return markup as unknown as InlineKeyboardMarkup
    }
    if ("keyboard" in markup || "remove_keyboard" in markup || "force_reply" in markup) return markup as unknown as ReplyMarkup
    throw badRequest(invalid)
  }

  #replyTarget(chat: ChatState, p: Params): StoredMessage | undefined {
    const parameters = optJson(p, "reply_parameters", "can't parse reply parameters JSON object")
    let id = optInt(p, "reply_to_message_id")
    let allowWithout = optBool(p, "allow_sending_without_reply") ?? false
    if (isRecord(parameters)) {
      id = optInt(parameters, "message_id")
      allowWithout = optBool(parameters, "allow_sending_without_reply") ?? false
    }
    if (id === undefined) return undefined
    const target = chat.messages.get(id)
    if (target !== undefined && !target.deleted) return target
    if (allowWithout) return undefined
    throw badRequest("message to be replied not found")
  }

  #store(chat: ChatState, stored: StoredMessage): StoredMessage {
    chat.messages.set(stored.message.message_id, stored)
    return stored
  }

  #botBase(chat: ChatState, markup: ReplyMarkup | undefined, replyTo: StoredMessage | undefined) {
    return {
      message_id: chat.nextMessageId++,
      date: unixNow(),
      chat: chat.chat,
      from: this.#botUser,
      ...(markup !== undefined && "inline_keyboard" in markup ? { reply_markup: markup } : {}),
      ...(replyTo === undefined ? {} : { reply_to_message: asReplied(replyTo.message) })
    }
  }

  #sendMessage(p: Params): Message {
    const chat = this.#chat(p)
    const { raw, parseMode, formatted } = this.#text(p)
    const replyTo = this.#replyTarget(chat, p)
    const markup = this.#replyMarkup(p)
    const message: WireMessage = {
      ...this.#botBase(chat, markup, replyTo),
      text: formatted.text,
      ...(formatted.entities.length > 0 ? { entities: [...formatted.entities] } : {})
    }
    const version = { text: formatted.text, raw: raw, parseMode, entities: formatted.entities, replyMarkup: markup, at: Date.now() }
    return this.#store(chat, { byBot: true, kind: "text", message, deleted: false, versions: [version] }).message
  }

  #botMessageToEdit(p: Params): StoredMessage {
    if (optString(p, "inline_message_id") !== undefined) throw badRequest("inline messages are not covered by the fake")
    const chat = this.#chat(p)
    const id = optInt(p, "message_id")
    if (id === undefined) throw badRequest("message identifier is not specified")
    const stored = chat.messages.get(id)
    if (stored === undefined || stored.deleted) throw badRequest("message to edit not found")
    if (!stored.byBot) throw badRequest("message can't be edited")
    return stored
  }

  #inlineMarkup(p: Params): InlineKeyboardMarkup | undefined {
    const markup = this.#replyMarkup(p)
    if (markup !== undefined && !("inline_keyboard" in markup)) throw badRequest("inline keyboard expected")
    return markup
  }

  #editMessageText(p: Params): Message {
    const stored = this.#botMessageToEdit(p)
    const { raw, parseMode, formatted } = this.#text(p)
    const markup = this.#inlineMarkup(p)
    if (stored.kind !== "text") throw badRequest("there is no text in the message to edit")
    const current = stored.message
    if (current.text === formatted.text && sameJson(current.entities ?? [], formatted.entities) && sameJson(current.reply_markup, markup)) {
      throw badRequest(NOT_MODIFIED)
    }
    const { entities: _entities, reply_markup: _markup, ...rest } = current
    stored.message = {
      ...rest,
      text: formatted.text,
      ...(formatted.entities.length > 0 ? { entities: [...formatted.entities] } : {}),
      ...(markup === undefined ? {} : { reply_markup: markup }),
      edit_date: unixNow()
    }
    stored.versions.push({ text: formatted.text, raw: raw, parseMode, entities: formatted.entities, replyMarkup: markup, at: Date.now() })
    return stored.message
  }

  #editMessageReplyMarkup(p: Params): Message {
    const stored = this.#botMessageToEdit(p)
    const markup = this.#inlineMarkup(p)
    if (sameJson(stored.message.reply_markup, markup)) throw badRequest(NOT_MODIFIED)
    const { reply_markup: _markup, ...rest } = stored.message
    stored.message = { ...rest, ...(markup === undefined ? {} : { reply_markup: markup }), edit_date: unixNow() }
    const last = stored.versions.at(-1)
    if (last !== undefined) stored.versions.push({ ...last, replyMarkup: markup, at: Date.now() })
    return stored.message
  }

  #deleteMessage(p: Params): true {
    const chat = this.#chat(p)
    const stored = chat.messages.get(optInt(p, "message_id") ?? Number.NaN)
    if (stored === undefined || stored.deleted) throw badRequest("message to delete not found")
    stored.deleted = true
    return true
  }

  #sendChatAction(p: Params): true {
    const chat = this.#chat(p)
    const action = optString(p, "action") ?? ""
    if (!CHAT_ACTIONS.has(action)) throw badRequest("wrong parameter action in request")
    chat.actions.push(action)
    return true
  }

  async #sendPhoto(p: Params): Promise<Message> {
    const chat = this.#chat(p)
    const parseMode = this.#parseMode(p)
    const caption = this.#format(p, "caption", parseMode)
    if (caption.text.length > MAX_CAPTION) throw badRequest("message caption is too long")
    const replyTo = this.#replyTarget(chat, p)
    const markup = this.#replyMarkup(p)
    const photo = p["photo"]
    let sizes: ReadonlyArray<PhotoSize>
    if (photo instanceof UploadedFile) sizes = this.#files.addPhoto(photo.bytes, { fromUser: false })
    else if (typeof photo === "string" && /^https?:\/\//i.test(photo)) sizes = this.#files.addPhoto(await fetchImage(photo), { fromUser: false })
    else if (typeof photo === "string" && photo !== "") {
      sizes = this.#files.photo(photo) ?? []
      if (sizes.length === 0) throw badRequest("wrong file identifier/HTTP URL specified")
    } else throw badRequest("there is no photo in the request")
    const message: WireMessage = {
      ...this.#botBase(chat, markup, replyTo),
      photo: [...sizes],
      ...(caption.text === "" ? {} : { caption: caption.text }),
      ...(caption.entities.length > 0 ? { caption_entities: [...caption.entities] } : {})
    }
    const version = {
      text: caption.text,
      raw: optString(p, "caption") ?? "",
      parseMode,
      entities: caption.entities,
      replyMarkup: markup,
      at: Date.now()
    }
    return this.#store(chat, { byBot: true, kind: "photo", message, deleted: false, versions: [version] }).message
  }

  #answerCallbackQuery(p: Params): true {
    const id = optString(p, "callback_query_id") ?? ""
    const query = this.#queries.get(id)
    if (query === undefined || query.answered) {
      throw badRequest("query is too old and response timeout expired or query ID is invalid")
    }
    query.answered = true
    this.#callbackAnswers.push({
      callbackQueryId: id,
      text: optString(p, "text"),
      showAlert: optBool(p, "show_alert") ?? false,
      url: optString(p, "url"),
      cacheTime: optInt(p, "cache_time"),
      at: Date.now()
    })
    return true
  }

  #commandsKey(p: Params): string {
    const scope = optJson(p, "scope", "can't parse BotCommandScope JSON object")
    const language = optString(p, "language_code") ?? ""
    if (scope === undefined) return `default||${language}`
    if (!isRecord(scope)) throw badRequest("can't parse BotCommandScope JSON object")
    return `${String(scope["type"])}|${String(scope["chat_id"] ?? "")}:${String(scope["user_id"] ?? "")}|${language}`
  }

  #setMyCommands(p: Params): true {
    const commands = optJson(p, "commands", "can't parse commands JSON object")
    if (!Array.isArray(commands)) throw badRequest("can't parse commands JSON object")
    if (commands.length > 100) throw badRequest("too many commands")
    const checked = commands.map((c): BotCommand => {
      const command = isRecord(c) ? c["command"] : undefined
      const description = isRecord(c) ? c["description"] : undefined
      if (typeof command !== "string" || !/^[a-z0-9_]{1,32}$/.test(command)) throw badRequest("BOT_COMMAND_INVALID")
      if (typeof description !== "string" || description.length < 1 || description.length > 256) {
        throw badRequest("BOT_COMMAND_DESCRIPTION_INVALID")
      }
      return { command, description }
    })
    this.#commands.set(this.#commandsKey(p), checked)
    return true
  }

  // ------------------------------------------------------------------------------ test controls

  #chatFor(input: UserMessageInput): ChatState {
    const type = input.chatType ?? "private"
    const existing = this.#chats.get(input.chatId)
    if (existing !== undefined) {
      if (existing.chat.type !== type) throw new Error(`fake Telegram: chat ${input.chatId} is a ${existing.chat.type} chat, not ${type}`)
      return existing
    }
    let chat: KnownChat
    if (type === "private") {
      if (input.chatId !== input.from.id) throw new Error(`fake Telegram: a private chat's id is its user's id (${input.from.id}), not ${input.chatId}`)
      const user = this.#user(input.from)
      chat = {
        id: input.chatId,
        type,
        first_name: user.first_name,
        ...(user.last_name === undefined ? {} : { last_name: user.last_name }),
        ...(user.username === undefined ? {} : { username: user.username })
      }
    } else {
      if (input.chatId >= 0) throw new Error(`fake Telegram: ${type} ids are negative, not ${input.chatId}`)
      chat = { id: input.chatId, type, title: input.chatTitle ?? `Group ${-input.chatId}` }
    }
    const state: ChatState = { chat, nextMessageId: 1, messages: new Map(), actions: [], reactions: new Map(), botIsAdmin: false }
    this.#chats.set(input.chatId, state)
    return state
  }

  #user(ref: FakeUser): User {
    return {
      id: ref.id,
      is_bot: false,
      first_name: ref.first_name ?? ref.username ?? `User ${ref.id}`,
      ...(ref.last_name === undefined ? {} : { last_name: ref.last_name }),
      ...(ref.username === undefined ? {} : { username: ref.username }),
      ...(ref.language_code === undefined ? {} : { language_code: ref.language_code })
    }
  }

  sendUserMessage(input: UserMessageInput): Update {
    const chat = this.#chatFor(input)
    const mention = `@${this.#botUser.username ?? ""}`
    const text = input.mentionBot === true && !(input.text ?? "").includes(mention)
      ? input.text === undefined || input.text === "" ? mention : `${mention} ${input.text}`
      : input.text
    if ((text === undefined || text === "") && input.photo === undefined) {
      throw new Error("fake Telegram: a user message needs a text, a photo, or both")
    }
    let replyTo: StoredMessage | undefined
    if (input.replyToBotMessageId !== undefined) {
      replyTo = chat.messages.get(input.replyToBotMessageId)
      if (replyTo === undefined || !replyTo.byBot || replyTo.deleted) {
        throw new Error(`fake Telegram: no bot message ${input.replyToBotMessageId} in chat ${input.chatId} to reply to`)
      }
    }
    const entities = text === undefined ? [] : detectEntities(text)
    const base = {
      message_id: chat.nextMessageId++,
      date: unixNow(),
      chat: chat.chat,
      from: this.#user(input.from),
      ...(replyTo === undefined ? {} : { reply_to_message: asReplied(replyTo.message) })
    }
    const message: WireMessage = input.photo === undefined
      ? { ...base, text: text ?? "", ...(entities.length > 0 ? { entities } : {}) }
      : {
        ...base,
        photo: [...this.#files.addPhoto(input.photo.bytes, { fromUser: true, mime: input.photo.mime })],
        ...(text === undefined || text === "" ? {} : { caption: text }),
        ...(entities.length > 0 ? { caption_entities: entities } : {})
      }
    this.#store(chat, { byBot: false, kind: input.photo === undefined ? "text" : "photo", message, deleted: false, versions: [] })
    return this.#enqueue({ update_id: this.#nextUpdateId++, message })
  }

  pressButton(press: ButtonPress): Update {
    const chat = this.#chats.get(press.chatId)
    const stored = chat?.messages.get(press.messageId)
    if (chat === undefined || stored === undefined || !stored.byBot) {
      throw new Error(`fake Telegram: no bot message ${press.messageId} in chat ${press.chatId} to press a button of`)
    }
    const id = `${4_000_000_000 + this.#nextQueryId++}${String(Math.abs(press.from.id)).padStart(9, "0")}`
    this.#queries.set(id, { answered: false })
    const callbackQuery: CallbackQuery = {
      id,
      from: this.#user(press.from),
      message: stored.deleted ? { chat: chat.chat, message_id: press.messageId, date: 0 } : stored.message,
      chat_instance: String(-(Math.abs(press.chatId) * 7919 + 13)),
      data: press.data
    }
    return this.#enqueue({ update_id: this.#nextUpdateId++, callback_query: callbackQuery })
  }

  react(input: ReactionInput): Update | undefined {
    const chat = this.#chats.get(input.chatId)
    const stored = chat?.messages.get(input.messageId)
    if (chat === undefined || stored === undefined || stored.deleted) {
      throw new Error(`fake Telegram: no message ${input.messageId} in chat ${input.chatId} to react to`)
    }
    if (input.from === undefined && chat.chat.type === "private") throw new Error("fake Telegram: anonymous reactions exist only in groups")
    const next: Array<ReactionType> = input.reaction.map((r) => (typeof r === "string" ? { type: "emoji", emoji: r } : r) as ReactionType)
    // Telegram's limits: three reactions per user (premium), each once.
    if (next.length > 3) throw new Error("fake Telegram: REACTIONS_TOO_MANY (a user sets at most 3 reactions)")
    if (new Set(next.map((r) => JSON.stringify(r))).size !== next.length) throw new Error("fake Telegram: the same reaction twice")
    const actorId = input.from?.id ?? chat.chat.id
    const key = `${input.messageId}:${actorId}`
    const old = chat.reactions.get(key) ?? []
    if (sameJson(old, next)) return undefined
    if (next.length === 0) chat.reactions.delete(key)
    else chat.reactions.set(key, next)
    this.#changed()
    if (chat.chat.type !== "private" && !chat.botIsAdmin) return undefined
    const reaction: MessageReactionUpdated = {
      chat: chat.chat,
      message_id: input.messageId,
      ...(input.from === undefined ? { actor_chat: chat.chat } : { user: this.#user(input.from) }),
      date: unixNow(),
      old_reaction: [...old],
      new_reaction: next
    }
    return this.#enqueue({ update_id: this.#nextUpdateId++, message_reaction: reaction })
  }

  setBotAdmin(chatId: number, admin = true): void {
    const chat = this.#chats.get(chatId)
    if (chat === undefined || chat.chat.type === "private") throw new Error(`fake Telegram: no group ${chatId} to make the bot an administrator of`)
    chat.botIsAdmin = admin
    this.#changed()
  }

  redeliver(updateId: number): void {
    const update = this.#history.get(updateId)
    if (update === undefined) throw new Error(`fake Telegram: no update ${updateId} was ever injected`)
    if (this.#queue.has(updateId)) throw new Error(`fake Telegram: update ${updateId} is still pending, not confirmed`)
    this.#queue.set(updateId, { update, forced: true })
    this.#flushPolls()
    void this.#pump()
    this.#changed()
  }

  failNext(method: string, failure: FailureSpec): void {
    const key = method.toLowerCase()
    if (!this.#handlers.has(key)) throw new Error(`fake Telegram: no method "${method}" to fail`)
    const queue = this.#failures.get(key) ?? []
    queue.push({ spec: failure, remaining: failure.times ?? 1 })
    this.#failures.set(key, queue)
  }

  dropPolls(): number {
    const polls = [...this.#polls]
    for (const poll of polls) {
      this.#endPoll(poll)
      poll.call.aborted = true
      poll.socket.destroy()
    }
    this.#changed()
    return polls.length
  }

  get calls(): ReadonlyArray<ApiCall> {
    return this.#calls
  }

  callsTo(method: string): ReadonlyArray<ApiCall> {
    const key = method.toLowerCase()
    return this.#calls.filter((c) => c.method.toLowerCase() === key)
  }

  messages(chatId: number): ReadonlyArray<BotMessage> {
    const chat = this.#chats.get(chatId)
    if (chat === undefined) return []
    const out: Array<BotMessage> = []
    for (const stored of chat.messages.values()) {
      const current = stored.versions.at(-1)
      if (!stored.byBot || current === undefined) continue
      out.push({
        ...current,
        chatId,
        messageId: stored.message.message_id,
        kind: stored.kind,
        photo: stored.message.photo,
        replyToMessageId: stored.message.reply_to_message?.message_id,
        deleted: stored.deleted,
        history: [...stored.versions],
        wire: stored.message
      })
    }
    return out
  }

  chatActions(chatId: number): ReadonlyArray<string> {
    return [...(this.#chats.get(chatId)?.actions ?? [])]
  }

  get answeredCallbacks(): ReadonlyArray<AnsweredCallback> {
    return this.#callbackAnswers
  }

  commands(scope?: BotCommandScope, languageCode?: string): ReadonlyArray<BotCommand> {
    const params: Record<string, unknown> = {}
    if (scope !== undefined) params["scope"] = scope
    if (languageCode !== undefined) params["language_code"] = languageCode
    return this.#commands.get(this.#commandsKey(params)) ?? []
  }

  get downloads(): ReadonlyArray<string> {
    return this.#downloads
  }

  get pendingPolls(): number {
    return this.#polls.size
  }

  get pendingUpdates(): ReadonlyArray<Update> {
    return [...this.#queue.values()].map((e) => e.update).sort((a, b) => a.update_id - b.update_id)
  }

  waitFor<T>(predicate: () => T | undefined | null | false, description: string, timeoutMs = 10_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const stop = () => {
        clearTimeout(timer)
        this.#events.off("change", check)
        this.#events.off("close", closed)
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
      const closed = () => {
        stop()
        reject(new Error(`fake Telegram closed while waiting for: ${description}`))
      }
      const timer = setTimeout(() => {
        stop()
        reject(new Error(`fake Telegram: timed out after ${timeoutMs} ms waiting for: ${description}`))
      }, timeoutMs)
      if (this.#closed) return closed()
      this.#events.on("change", check)
      this.#events.on("close", closed)
      check()
    })
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const poll of [...this.#polls]) this.#endPoll(poll)
    this.#events.emit("close")
    this.#server.closeAllConnections()
    await new Promise<void>((done) => this.#server.close(() => done()))
  }
}

const checkInlineButton = (button: unknown): void => {
  if (!isRecord(button) || typeof button["text"] !== "string") {
    throw badRequest("can't parse inline keyboard button: Field \"text\" must be of type String")
  }
  if (!INLINE_BUTTON_ACTIONS.some((action) => action in button)) {
    throw badRequest("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard")
  }
  const data = button["callback_data"]
  if (data !== undefined) {
    const bytes = typeof data === "string" ? Buffer.byteLength(data) : 0
    if (bytes < 1 || bytes > 64) throw badRequest("BUTTON_DATA_INVALID")
  }
  const url = button["url"]
  if (url !== undefined && (typeof url !== "string" || !/^(https?|tg):\/\/\S+$/i.test(url))) throw badRequest("BUTTON_URL_INVALID")
}

/** Telegram downloads a photo given by URL; so does the fake (5 s at most). */
const fetchImage = async (url: string): Promise<Uint8Array> => {
  let bytes: Uint8Array
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) })
    if (!response.ok) throw new Error(`HTTP ${response.status}`)
    bytes = new Uint8Array(await response.arrayBuffer())
  } catch {
    throw badRequest("wrong file identifier/HTTP URL specified")
  }
  if (sniffImage(bytes) === undefined) throw badRequest("wrong type of the web page content")
  return bytes
}
