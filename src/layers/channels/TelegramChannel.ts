/**
 * The Telegram channel (issue 12): a bot on the Bot API through grammy's `Api`, long polling.
 *
 * - Start: `getMe` (a refused token fails the start with what to do), `deleteWebhook` (polling and a
 *   webhook exclude each other), `setMyCommands` (the slash commands in Telegram's menu), then the
 *   replies a crash left unfinished are finished, then polling.
 * - Exactly-once: `getUpdates` resumes from the cursor kept in the ChannelLedger; each update is
 *   claimed there by its `update_id` before anything acts on it, and the cursor moves past it, so a
 *   redelivery after a reconnect or a restart is dropped. A reply's message ids are recorded as they
 *   are sent and the update is marked answered when the whole reply is out; on start, updates claimed
 *   but not answered in the last day are answered again into the same messages (telegram/reply.ts).
 * - Who: the sender is the anna user of identity (`telegram`, their Telegram id), created on first
 *   contact; the chat is `dm` in a private chat, the group's id otherwise; the Runtime routes to an
 *   agent (group binding → the user's default agent → the first enabled agent).
 * - Groups (`group_mode`): `mention` (default) answers an @mention of the bot, a reply to one of its
 *   messages and a command; `always` every message; `off` nothing. `allowed_users` limits who is
 *   answered anywhere (Telegram user ids).
 * - Commands (/new, /compact, /abort, /whoami, /model, /agent, /help, also as `/cmd@bot`) are the
 *   Runtime's, answered at once, even while a turn runs (so /abort works).
 * - A turn: "typing…" while it runs, the answer streamed into one message (telegram/reply.ts), tool
 *   activity never shown. Messages of one chat are answered in order.
 * - `notify`: to a user's Telegram identity (their private chat), or to a given chat.
 *
 * - Pickers: /model and /agent answer with their numbered list and an inline keyboard; a press is
 *   acknowledged, its keyboard removed, and `/model N` run as if typed.
 * - Photos: the largest size under 10 MiB is downloaded (getFile) and given to the model as an
 *   image with the caption; one that cannot be read is said so in the message to the model.
 * - Reactions (issue 15): 👍 and the like on the bot's answer are `/feedback good`, 👎 and the like
 *   `/feedback bad` (telegram/reactions.ts), run as that user's command in that chat and answered
 *   with nothing (the reaction is its own acknowledgement). In a group only reactions to the bot's
 *   own messages count (those it sent since it started), and Telegram sends them only to an admin bot.
 */
import { Duration, Effect, Layer, Option } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { Api, InputFile } from "grammy"
import type { Message, PhotoSize, Update } from "grammy/types"
import { ChannelError, ChannelStartFailed } from "../../domain/channels/errors.ts"
import { toPlainText } from "../../domain/channels/markdown.ts"
import { TELEGRAM_DEFAULT_BASE_URL, TelegramSettings } from "../../domain/config/channel.ts"
import type { ChatTarget } from "../../domain/runtime/types.ts"
import { Channel, type ChannelDefinition, type ChannelTarget, type OutboundMessage } from "../../services/Channel.ts"
import { ChannelLedger } from "../../services/ChannelLedger.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import type { Runtime } from "../../services/Runtime.ts"
import type { PlatformChannel } from "./platforms.ts"
import { download, imageBlock, MAX_IMAGE_BYTES, withImages } from "./shared/images.ts"
import { type Incoming, makeInbound, parseJson, type ReplyWriter } from "./shared/inbound.ts"
import { listenWebhook } from "./shared/webhook.ts"
import type { StorageError } from "../../domain/storage/errors.ts"
import { call, type TelegramCallError } from "./telegram/api.ts"
import { chatTargetOf, makeSentMessages, reactionFeedback } from "./telegram/reactions.ts"
import { makeReply, PICK_DATA } from "./telegram/reply.ts"

export const PLATFORM = "telegram"

/** Telegram's limit for a photo's caption (characters). */
const CAPTION_LIMIT = 1024
/** Seconds a `getUpdates` long poll waits for something to happen. */
const POLL_SECONDS = 25
/** How often "typing…" is renewed while a turn runs (Telegram shows it for about 5 s). */
const TYPING_EVERY = Duration.seconds(4)
/** The updates asked for (reactions are sent only to a bot that names them). */
export const ALLOWED_UPDATES = ["message", "callback_query", "message_reaction"] as const

/** The reply to a reaction: nothing in the chat (a bot message per reaction would be noise). */
const SILENT: ReplyWriter = { event: () => Effect.void, finish: Effect.void }

const COMMANDS = [
  { command: "new", description: "Start a fresh conversation" },
  { command: "compact", description: "Compact this conversation now" },
  { command: "abort", description: "Stop the running turn" },
  { command: "whoami", description: "Who and where you are" },
  { command: "model", description: "Show or pick the model" },
  { command: "agent", description: "List agents or talk to another one" },
  { command: "feedback", description: "Say how it went: /feedback good or bad" },
  { command: "reflect", description: "Write the diary entry of this conversation now" },
  { command: "help", description: "The commands" }
]

export interface TelegramOptions {
  readonly token: string
  readonly baseUrl: string
  readonly groupMode: "mention" | "always" | "off"
  /** Telegram user ids answered; undefined = everyone. */
  readonly allowedUsers: ReadonlySet<string> | undefined
  /** Webhook mode; undefined = long polling. */
  readonly webhook?: TelegramWebhook | undefined
}

export interface TelegramWebhook {
  /** The public URL Telegram POSTs to. */
  readonly url: string
  readonly secret: string
  /** Where the listener binds (a reverse proxy forwards `url` to it). */
  readonly host: string
  readonly port: number
  /** The path it answers: the URL's. */
  readonly path: string
}

export const WEBHOOK_DEFAULT_HOST = "127.0.0.1"
export const WEBHOOK_DEFAULT_PORT = 8443

/** The secret Telegram sends with each webhook call when none is set: derived from the token, stable across restarts. */
const derivedSecret = (token: string): string => createHash("sha256").update(`anna-telegram-webhook:${token}`).digest("hex").slice(0, 48)

const webhookOf = (s: TelegramSettings): TelegramWebhook | undefined => {
  const url = s.webhook_url?.trim()
  if (url === undefined || url === "") return undefined
  return {
    url,
    secret: s.webhook_secret?.trim() ?? derivedSecret(s.token.trim()),
    host: s.webhook_host?.trim() ?? WEBHOOK_DEFAULT_HOST,
    port: s.webhook_port ?? WEBHOOK_DEFAULT_PORT,
    path: new URL(url).pathname
  }
}

export const telegramOptions = (s: TelegramSettings): TelegramOptions => ({
  token: s.token.trim(),
  baseUrl: (s.base_url ?? TELEGRAM_DEFAULT_BASE_URL).trim().replace(/\/+$/, ""),
  groupMode: s.group_mode ?? "mention",
  allowedUsers: s.allowed_users === undefined ? undefined : new Set(s.allowed_users.split(",").map((id) => id.trim())),
  webhook: webhookOf(s)
})

/** What a message says to the bot, with a leading @mention of it and a `/cmd@bot` suffix taken off. */
export const addressedText = (text: string, botUsername: string): string => {
  const mention = new RegExp(`@${botUsername.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b[,:]?`, "gi")
  const command = /^\/([a-z]+)@\S+/i.exec(text.trim())
  const t = command === null ? text : text.trim().replace(/^\/([a-z]+)@\S+/i, `/${command[1] ?? ""}`)
  return t.replace(mention, "").replace(/\s{2,}/g, " ").trim()
}

/** Whether a group message is for the bot under `mode`. */
export const forTheBot = (m: Message, botId: number, botUsername: string, mode: TelegramOptions["groupMode"]): boolean => {
  if (m.chat.type === "private") return true
  if (mode === "off") return false
  if (mode === "always") return true
  const text = m.text ?? m.caption ?? ""
  if (m.reply_to_message?.from?.id === botId) return true
  if (/^\/[a-z]+(@\S+)?(\s|$)/i.test(text)) {
    const target = /^\/[a-z]+@(\S+)/i.exec(text)?.[1]
    return target === undefined || target.toLowerCase() === botUsername.toLowerCase()
  }
  const entities = m.entities ?? m.caption_entities ?? []
  return entities.some((e) =>
    (e.type === "mention" && text.slice(e.offset, e.offset + e.length).toLowerCase() === `@${botUsername.toLowerCase()}`) ||
    (e.type === "text_mention" && e.user.id === botId)
  )
}

const startFailed = (reason: string) => new ChannelStartFailed({ channel: PLATFORM, reason })

/** What is wrong with the bot's token or address, in terms of what to do. */
const tokenProblem = (o: TelegramOptions, e: TelegramCallError): string =>
  redact(o, tokenProblemText(o, e))

/** Never print the token, whatever an error message carries. */
const redact = (o: TelegramOptions, text: string): string => (o.token === "" ? text : text.replaceAll(o.token, "<token>"))

const tokenProblemText = (o: TelegramOptions, e: TelegramCallError): string =>
  e.status === 401 || e.status === 404
    ? `Telegram refused the bot token (${e.status} ${e.description}); set the one @BotFather gave with \`anna channel set telegram --config token=…\``
    : `cannot reach the Telegram Bot API at ${o.baseUrl}: ${e.description}`

/** `anna doctor`'s check: the bot's @username, or what is wrong with the token or the address. */
export const checkBot = (o: TelegramOptions): Effect.Effect<string, string> =>
  call("getMe", (signal) => new Api(o.token, { apiRoot: o.baseUrl }).getMe(signal)).pipe(
    Effect.map((me) => me.username),
    Effect.mapError((e) => tokenProblem(o, e))
  )

/**
 * Delivery to a user (their Telegram identity's private chat) or to a given chat: the message's
 * Markdown rendered and split as a reply is, with the same retries. Needs no polling, so `anna
 * notify` uses it without starting the bot.
 */
const makeNotify = (api: Api, sentIn: (chatId: number, ids: ReadonlyArray<string | number>) => void = () => undefined) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    const identityOf = (userId: string) =>
      config.getUser(userId).pipe(
        Effect.mapError((e) => new ChannelError({ channel: PLATFORM, reason: e.message })),
        Effect.flatMap((user) => {
          const id = Option.flatMap(user, (u) => Option.fromNullishOr(u.identities.find((i) => i.platform === PLATFORM)?.externalId))
          return Option.match(id, {
            onNone: () =>
              Effect.fail(new ChannelError({ channel: PLATFORM, reason: `user ${userId} has never written to the bot on Telegram, so it cannot write to them` })),
            onSome: Effect.succeed
          })
        })
      )
    return (target: ChannelTarget, message: OutboundMessage): Effect.Effect<void, ChannelError> =>
      Effect.gen(function*() {
        const chatId = Number(target.chatId ?? (yield* identityOf(target.userId)))
        const images = message.images ?? []
        // A short text rides as the (last) photo's caption; a longer one is sent as a message of its own.
        const plain = toPlainText(message.text).trim()
        const caption = images.length > 0 && plain.length <= CAPTION_LIMIT ? plain : ""
        for (const [i, image] of images.entries()) {
          const last = i === images.length - 1
          const sent = yield* call("sendPhoto", (signal) =>
            api.sendPhoto(chatId, new InputFile(image.bytes, image.name), last && caption !== "" ? { caption } : {}, signal))
          sentIn(chatId, [sent.message_id])
        }
        if (caption !== "" || message.text.trim() === "") return
        const reply = yield* makeReply({ api, chatId, existing: [], onMessages: (ids) => Effect.sync(() => sentIn(chatId, ids)) })
        yield* reply.event({ type: "text", text: message.text })
        yield* reply.finish
      }).pipe(
        Effect.mapError((e) => (e instanceof ChannelError ? e : new ChannelError({ channel: PLATFORM, reason: e.message })))
      )
  })

/** The bot as a sender only (no polling, no command menu): for delivering from outside the gateway. */
export const sender = (o: TelegramOptions) =>
  Effect.map(makeNotify(new Api(o.token, { apiRoot: o.baseUrl })), (notify) =>
    Channel.of({ id: PLATFORM, description: `Telegram bot (sending through ${o.baseUrl})`, notify }))

export const make = (o: TelegramOptions) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const api = new Api(o.token, { apiRoot: o.baseUrl })

    const me = yield* call("getMe", (signal) => api.getMe(signal)).pipe(Effect.mapError((e) => startFailed(tokenProblem(o, e))))
    const botUsername = me.username
    yield* call("setMyCommands", (signal) => api.setMyCommands(COMMANDS, {}, signal)).pipe(
      Effect.catch((e) => Effect.logWarning(`telegram: could not set the command menu: ${e.description}`))
    )

    const targetOf = (m: Message): ChatTarget | undefined =>
      m.from === undefined || m.from.is_bot ? undefined : chatTargetOf(PLATFORM, m.from, m.chat)
    /** The bot's messages (a reaction in a group counts only on one of them). */
    const sent = makeSentMessages()

    /** A photo's largest size that fits the cap, downloaded; or why it could not be. */
    const photoOf = (m: Message) =>
      Effect.gen(function*() {
        const sizes = (m.photo ?? []).filter((p) => (p.file_size ?? 0) <= MAX_IMAGE_BYTES)
        const best = sizes.reduce<PhotoSize | undefined>((a, b) => (a === undefined || b.width * b.height > a.width * a.height ? b : a), undefined)
        if (best === undefined) return m.photo === undefined ? undefined : "the photo is too large"
        const file = yield* call("getFile", (signal) => api.getFile(best.file_id, signal))
        if (file.file_path === undefined) return "Telegram did not give the photo's path"
        const bytes = yield* download(PLATFORM, `${o.baseUrl}/file/bot${o.token}/${file.file_path}`)
        return imageBlock(bytes)
      }).pipe(Effect.catch((e) => Effect.succeed(redact(o, e.description))))

    /** A button of one of our pickers: acknowledged (Telegram shows a spinner until then), its keyboard removed, its command run. */
    const pressed = (u: Update): Effect.Effect<Incoming | undefined> =>
      Effect.gen(function*() {
        const q = u.callback_query
        const m = q?.message
        if (q === undefined) return undefined
        yield* call("answerCallbackQuery", (signal) => api.answerCallbackQuery(q.id, {}, signal)).pipe(Effect.ignore)
        const data = q.data ?? ""
        if (m === undefined || !PICK_DATA.test(data) || q.from.is_bot) return undefined
        if (o.allowedUsers !== undefined && !o.allowedUsers.has(String(q.from.id))) return undefined
        yield* call("editMessageReplyMarkup", (signal) => api.editMessageReplyMarkup(m.chat.id, m.message_id, {}, signal)).pipe(Effect.ignore)
        return { target: chatTargetOf(PLATFORM, q.from, m.chat), chatKey: String(m.chat.id), message: data }
      })

    const inbound = yield* makeInbound<Update>({
      platform: PLATFORM,
      decode: parseUpdate,
      read: (u) =>
        Effect.gen(function*() {
          if (u.callback_query !== undefined) return yield* pressed(u)
          const r = u.message_reaction
          if (r !== undefined) {
            const feedback = reactionFeedback(PLATFORM, r, { groupMode: o.groupMode, allowedUsers: o.allowedUsers, sentByBot: sent.has })
            return feedback === undefined ? undefined : { target: feedback.target, chatKey: String(r.chat.id), message: feedback.command }
          }
          const m = u.message
          if (m === undefined) return undefined
          const target = targetOf(m)
          const raw = m.text ?? m.caption ?? ""
          if (target === undefined || (raw.trim() === "" && m.photo === undefined)) return undefined
          if (o.allowedUsers !== undefined && !o.allowedUsers.has(target.externalUserId)) return undefined
          if (!forTheBot(m, me.id, botUsername, o.groupMode)) return undefined
          const text = addressedText(raw, botUsername)
          const photo = yield* photoOf(m)
          const message = photo === undefined
            ? text || "/help"
            : typeof photo === "string"
            ? withImages(text, [], [photo])
            : withImages(text, [photo])
          const incoming: Incoming = { target, chatKey: String(m.chat.id), message }
          return incoming
        }),
      reply: (u, existing, onMessages) => {
        if (u.message_reaction !== undefined) return Effect.succeed(SILENT)
        const m = u.message ?? u.callback_query?.message
        const chatId = m?.chat.id ?? 0
        sent.add(chatId, existing)
        return makeReply({
          api,
          chatId,
          replyTo: m === undefined || m.chat.type === "private" ? undefined : m.message_id,
          existing,
          onMessages: (ids) => Effect.sync(() => sent.add(chatId, ids)).pipe(Effect.andThen(onMessages(ids)))
        })
      },
      typing: (u) => {
        const chatId = u.message?.chat.id
        return chatId === undefined ? Effect.void : call("sendChatAction", (signal) => api.sendChatAction(chatId, "typing", {}, signal))
      },
      typingEvery: TYPING_EVERY
    })

    // Replies a crash left unfinished: answered again, into the messages already sent.
    yield* inbound.resume.pipe(Effect.mapError((e) => startFailed(e.message)))

    if (o.webhook === undefined) {
      // Polling and a webhook exclude each other.
      yield* call("deleteWebhook", (signal) => api.deleteWebhook({}, signal)).pipe(Effect.mapError((e) => startFailed(e.message)))
      yield* Effect.forkIn(poll(api, inbound.accept), scope)
    } else {
      yield* serveWebhook(o.webhook, api, inbound.accept)
    }

    const notify = yield* makeNotify(api, sent.add)

    return Channel.of({
      id: PLATFORM,
      description: `Telegram bot @${botUsername} (${o.webhook === undefined ? "long polling" : `webhook ${o.webhook.url}`}, ${o.baseUrl})`,
      notify
    })
  })

type Accept = (key: string, u: Update) => Effect.Effect<boolean, StorageError>

/** Long polling: `getUpdates` from the cursor in the ledger; each update claimed, then the cursor moved past it. */
const poll = (api: Api, accept: Accept) =>
  Effect.gen(function*() {
    const ledger = yield* ChannelLedger
    const cursor = yield* ledger.cursor(PLATFORM)
    const offset = Option.map(cursor, Number).pipe(Option.filter(Number.isInteger), Option.getOrUndefined)
    const updates = yield* call("getUpdates", (signal) =>
      api.getUpdates({ ...(offset === undefined ? {} : { offset }), timeout: POLL_SECONDS, allowed_updates: ALLOWED_UPDATES }, signal))
    // Each update is claimed before the cursor passes it; the cursor moves once per batch (a crash
    // in between fetches the rest of the batch again, and their claims drop them).
    for (const u of updates) yield* accept(String(u.update_id), u)
    const last = updates.at(-1)
    if (last !== undefined) yield* ledger.setCursor(PLATFORM, String(last.update_id + 1))
  }).pipe(
    Effect.catch((e) => Effect.logWarning(`telegram: polling: ${e.message}; trying again`).pipe(Effect.andThen(Effect.sleep("2 seconds")))),
    Effect.forever
  )

/**
 * Webhook mode: `setWebhook` with the secret, then a listener that claims each update before it
 * answers 200 (Telegram delivers again until it gets one, so a crash in between loses nothing and
 * the claim drops the second delivery). A request without the secret is refused.
 */
const serveWebhook = (w: TelegramWebhook, api: Api, accept: Accept) =>
  Effect.gen(function*() {
    const secret = Buffer.from(w.secret)
    yield* listenWebhook({
      platform: PLATFORM,
      host: w.host,
      port: w.port,
      path: w.path,
      handle: (req) =>
        Effect.gen(function*() {
          const given = Buffer.from(String(req.headers["x-telegram-bot-api-secret-token"] ?? ""))
          if (given.length !== secret.length || !timingSafeEqual(given, secret)) return { status: 401, body: { error: "wrong secret" } }
          const update = parseUpdate(req.body.toString("utf8"))
          if (update === undefined) return { status: 400, body: { error: "not an update" } }
          const claimed = yield* Effect.result(accept(String(update.update_id), update))
          // Not claimed (the database failed): Telegram is told to deliver it again.
          return claimed._tag === "Failure" ? { status: 503 } : { status: 200 }
        })
    })
    yield* call("setWebhook", (signal) =>
      api.setWebhook(w.url, { secret_token: w.secret, allowed_updates: ALLOWED_UPDATES }, signal)).pipe(
        Effect.mapError((e) => startFailed(`Telegram refused the webhook ${w.url}: ${e.description}`))
      )
  })

const parseUpdate = (payload: string): Update | undefined => {
  const v = parseJson(payload)
  return typeof v === "object" && v !== null && "update_id" in v ? (v as Update) : undefined
}

/** The Telegram channel as the gateway runs it. */
export const definition: ChannelDefinition<TelegramSettings, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger> = {
  id: PLATFORM,
  settings: TelegramSettings,
  layer: (settings) => Layer.effect(Channel, make(telegramOptions(settings)))
}

/** Telegram in the platform table (gateway, `anna doctor`, `anna notify`). */
export const platformChannel: PlatformChannel<TelegramSettings> = {
  definition,
  check: (s) => {
    const o = telegramOptions(s)
    return checkBot(o).pipe(Effect.map((username) => `bot @${username} (${o.baseUrl})`))
  },
  fix: "anna channel set telegram --config token=TOKEN (from @BotFather), or base_url=… for a local Bot API server",
  sender: (s) => sender(telegramOptions(s))
}
