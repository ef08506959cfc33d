/**
 * The WeChat channel (issue 12): a bot on the iLink bot HTTP API (wechat/api.ts), logged in by
 * scanning a QR code with `anna channel login wechat` (src/programs/channelLogin.ts), which saves
 * the bot token in the channel's settings.
 *
 * - Inbound: `getupdates` long polling from the `get_updates_buf` cursor kept in the ChannelLedger;
 *   every message of a batch is claimed there by its `message_id` (shared/inbound.ts) before the
 *   cursor moves past it, so a redelivery (iLink sends a batch again from an older cursor, a
 *   restart) is dropped, and a message claimed but not answered before a crash is answered after.
 * - Who: the sender is the anna user of identity (`wechat`, their WeChat user id), created on first
 *   contact; iLink bots talk in direct chats only, so the chat is always `dm` (a message that names
 *   a group is ignored). `allowed_users` limits who is answered.
 * - What: text, a voice message's transcript, and images (AES-128-ECB on iLink's CDN, decrypted,
 *   at most 10 MiB: wechat/media.ts) as image blocks.
 * - Replies (wechat/reply.ts): `sendmessage` with the message's `context_token`; no edits, so no
 *   streaming: the whole answer as plain text in parts of at most 2,000 characters; "typing…"
 *   (`sendtyping` with the ticket `getconfig` gives for that user) while a turn runs.
 * - Session expired (iLink `ret`/`errcode` -14): polling stops and says loudly to run `anna channel
 *   login wechat`; `anna doctor` says the same (`check`). It never retries in a loop.
 * - `notify`: iLink needs a conversation's `context_token` to write to a user, so the latest one of
 *   every user who wrote is kept (in the ledger's cursor table, under `wechat/context/<user id>`);
 *   a user who never wrote cannot be reached. Pictures (the `notify` tool's) are uploaded to iLink's
 *   CDN AES-128-ECB encrypted (wechat/media.ts) and follow the text as messages of their own.
 *
 * Not yet: `notifystart`/`notifystop`.
 */
import { Clock, Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ChannelError, ChannelStartFailed } from "../../domain/channels/errors.ts"
import { WECHAT_DEFAULT_BASE_URL, WECHAT_DEFAULT_CDN_BASE_URL, WechatSettings } from "../../domain/config/channel.ts"
import type { ImageBlock } from "../../domain/message.ts"
import { Channel, type ChannelDefinition, type ChannelTarget, type OutboundMessage } from "../../services/Channel.ts"
import { ChannelLedger } from "../../services/ChannelLedger.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import type { Runtime } from "../../services/Runtime.ts"
import type { PlatformChannel } from "./platforms.ts"
import * as SqliteChannelLedger from "./SqliteChannelLedger.ts"
import type { PlatformCallError } from "./shared/calls.ts"
import { withImages } from "./shared/images.ts"
import { type Incoming, makeInbound, parseJson } from "./shared/inbound.ts"
import {
  botCall,
  decodeMessage,
  Empty,
  type Endpoint,
  GetConfigResponse,
  GetUpdatesResponse,
  LONG_POLL_MS,
  PLATFORM,
  sessionExpired,
  type WeixinMessage
} from "./wechat/api.ts"
import { downloadImage, uploadImage } from "./wechat/media.ts"
import { makeReply, sendImage } from "./wechat/reply.ts"

export { PLATFORM } from "./wechat/api.ts"

/** How often "typing…" is renewed while a turn runs. */
const TYPING_EVERY = Duration.seconds(5)
/** An empty poll answered faster than this is followed by a pause (no busy loop on a server that does not hold polls). */
const MIN_EMPTY_POLL_MS = 1_000
/** Typing tickets kept (one per user who wrote); the cache is emptied past this. */
const MAX_TICKETS = 1_000
/** Images read from one message at most. */
const MAX_IMAGES = 4

export const LOGIN_HINT = "run `anna channel login wechat` and scan the QR code with WeChat"
export const EXPIRED_TEXT = `the WeChat bot session expired (iLink error -14): polling stopped; ${LOGIN_HINT} (a running gateway restarts the channel with the new token)`

export interface WechatOptions {
  readonly endpoint: Endpoint
  readonly cdnBaseUrl: string
  readonly botId: string | undefined
  /** The WeChat user who scanned the login code (its `getconfig` checks the session). */
  readonly ownerId: string | undefined
  /** WeChat user ids answered; undefined = everyone. */
  readonly allowedUsers: ReadonlySet<string> | undefined
}

const url = (s: string | undefined, fallback: string) => (s ?? fallback).trim().replace(/\/+$/, "")

export const wechatOptions = (s: WechatSettings): WechatOptions => ({
  endpoint: { baseUrl: url(s.base_url, WECHAT_DEFAULT_BASE_URL), token: s.token?.trim() },
  cdnBaseUrl: url(s.cdn_base_url, WECHAT_DEFAULT_CDN_BASE_URL),
  botId: s.bot_id?.trim(),
  ownerId: s.owner_id?.trim(),
  allowedUsers: s.allowed_users === undefined ? undefined : new Set(s.allowed_users.split(",").map((id) => id.trim()))
})

/** Where the latest `context_token` of a WeChat user is kept (in the ledger's cursor table). */
export const contextKey = (wechatUserId: string) => `${PLATFORM}/context/${wechatUserId}`

/** The ledger key of a message: iLink's id for it, or what identifies it when it has none. */
export const keyOf = (m: WeixinMessage): string =>
  m.message_id !== undefined && String(m.message_id) !== ""
    ? String(m.message_id)
    : `${m.from_user_id ?? ""}:${m.create_time_ms ?? ""}:${m.seq ?? ""}:${m.client_id ?? ""}`

/** What is wrong with the session or the address, in terms of what to do. */
export const problem = (o: WechatOptions, e: PlatformCallError): string =>
  sessionExpired(e) || e.status === 401 || e.status === 403
    ? `WeChat refused the bot session (${e.description}): ${LOGIN_HINT}`
    : `cannot reach the WeChat iLink API at ${o.endpoint.baseUrl}: ${e.description}`

const notLoggedIn = `the WeChat bot is not logged in: ${LOGIN_HINT}`

/** `anna doctor`'s check: asks iLink for the owner's config, which fails when the session expired. */
export const checkSession = (o: WechatOptions): Effect.Effect<string, string> =>
  o.endpoint.token === undefined
    ? Effect.fail(notLoggedIn)
    : botCall(o.endpoint, "getconfig", { ilink_user_id: o.ownerId ?? "" }, GetConfigResponse).pipe(
      Effect.map(() => `bot ${o.botId ?? "(id unknown)"} (${o.endpoint.baseUrl})`),
      Effect.mapError((e) => problem(o, e))
    )

type Ledger = ChannelLedger["Service"]

/**
 * Delivery to a user (their WeChat identity) in the conversation of the latest message they sent:
 * the text as plain parts of at most 2,000 characters, with the same retries as a reply; pictures
 * (at most 10 MiB each) uploaded encrypted to iLink's CDN first, then sent after the text, one
 * message each.
 */
const makeNotify = (o: WechatOptions, ledger: Option.Option<Ledger>) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    const failure = (reason: string) => new ChannelError({ channel: PLATFORM, reason })
    const identityOf = (userId: string) =>
      config.getUser(userId).pipe(
        Effect.mapError((e) => failure(e.message)),
        Effect.flatMap((user) =>
          Option.match(Option.flatMap(user, (u) => Option.fromNullishOr(u.identities.find((i) => i.platform === PLATFORM)?.externalId)), {
            onNone: () => Effect.fail(failure(`user ${userId} has never written to the bot on WeChat, so it cannot write to them`)),
            onSome: Effect.succeed
          })
        )
      )
    return (target: ChannelTarget, message: OutboundMessage): Effect.Effect<void, ChannelError> =>
      Effect.gen(function*() {
        const to = target.chatId ?? (yield* identityOf(target.userId))
        const l = yield* Option.match(ledger, {
          onNone: () => Effect.fail(failure("the WeChat conversations are not at hand here (no channel ledger)")),
          onSome: Effect.succeed
        })
        const token = yield* l.cursor(contextKey(to)).pipe(Effect.mapError((e) => failure(e.message)))
        if (Option.isNone(token)) {
          return yield* Effect.fail(failure(`WeChat user ${to} has not written to the bot yet; iLink only lets a bot write into a conversation the user started`))
        }
        const images = message.images ?? []
        const platformFailure = (e: PlatformCallError) => failure(sessionExpired(e) ? EXPIRED_TEXT : e.message)
        // Every picture is on the CDN before anything is sent: a refused one sends nothing.
        const uploaded = yield* Effect.forEach(images, (image) => uploadImage(o.endpoint, o.cdnBaseUrl, to, image.bytes)).pipe(
          Effect.mapError(platformFailure)
        )
        // The text first (as iLink's own client sends a caption), then each picture as a message of its own.
        if (images.length === 0 || message.text.trim() !== "") {
          const reply = yield* makeReply({ endpoint: o.endpoint, to, contextToken: token.value, existing: [], onMessages: () => Effect.void })
          yield* reply.event({ type: "text", text: message.text }).pipe(Effect.andThen(reply.finish), Effect.mapError(platformFailure))
        }
        for (const image of uploaded) yield* sendImage(o.endpoint, to, token.value, image).pipe(Effect.mapError(platformFailure))
      })
  })

/**
 * The bot as a sender only (no polling): `anna notify`. The conversations' context tokens are in the
 * ChannelLedger: the one in context, else one on the database in context (the CLI's stores).
 */
export const sender = (o: WechatOptions) =>
  Effect.gen(function*() {
    const inContext = yield* Effect.serviceOption(ChannelLedger)
    const sql = yield* Effect.serviceOption(SqlClient)
    const ledger = Option.isSome(inContext) || Option.isNone(sql)
      ? inContext
      : Option.some(yield* SqliteChannelLedger.make.pipe(Effect.provideService(SqlClient, sql.value)))
    const notify = yield* makeNotify(o, ledger)
    return Channel.of({ id: PLATFORM, description: `WeChat bot (sending through ${o.endpoint.baseUrl})`, notify })
  })

/** The text of a message for the model (text items and voice transcripts, in order). */
const textOf = (m: WeixinMessage): string =>
  (m.item_list ?? []).flatMap((i) =>
    i.type === 1 && i.text_item?.text !== undefined
      ? [i.text_item.text]
      : i.type === 3 && i.voice_item?.text !== undefined && i.voice_item.text.trim() !== ""
      ? [`[voice] ${i.voice_item.text}`]
      : []
  ).join("\n").trim()

export const make = (o: WechatOptions) =>
  Effect.gen(function*() {
    const ledger = yield* ChannelLedger
    const scope = yield* Effect.scope
    const startFailed = (reason: string) => new ChannelStartFailed({ channel: PLATFORM, reason })
    if (o.endpoint.token === undefined) return yield* startFailed(notLoggedIn)
    yield* checkSession(o).pipe(Effect.mapError(startFailed))

    /** What `m` asks, or undefined when it is not for the bot (a bot's own message, a group, a stranger, empty). */
    const read = (m: WeixinMessage): Effect.Effect<Incoming | undefined> =>
      Effect.gen(function*() {
        const from = m.from_user_id
        if (from === undefined || from === "" || m.message_type === 2) return undefined
        if (m.group_id !== undefined && m.group_id !== "") return undefined
        if (m.context_token === undefined || m.context_token === "") {
          yield* Effect.logWarning(`wechat: message ${keyOf(m)} has no context_token; it cannot be answered`)
          return undefined
        }
        if (o.allowedUsers !== undefined && !o.allowedUsers.has(from)) return undefined
        const text = textOf(m)
        const images = (m.item_list ?? []).flatMap((i) => (i.type === 2 && i.image_item !== undefined ? [i.image_item] : []))
        const blocks: Array<ImageBlock> = []
        const unread: Array<string> = []
        for (const item of images.slice(0, MAX_IMAGES)) {
          const got = yield* Effect.result(downloadImage(item, o.cdnBaseUrl))
          if (got._tag === "Success") blocks.push(got.success)
          else {
            yield* Effect.logWarning(`wechat: an image of message ${keyOf(m)} was not read: ${got.failure.description}`)
            unread.push(got.failure.description)
          }
        }
        if (images.length > MAX_IMAGES) unread.push(`${images.length - MAX_IMAGES} more images were left out`)
        if (text === "" && blocks.length === 0 && unread.length === 0) return undefined
        const target = { platform: PLATFORM, externalUserId: from, chatId: "dm", isGroup: false }
        const message = withImages(text, blocks, unread)
        return { target, chatKey: from, message }
      })

    const tickets = new Map<string, string>()
    const typing = (m: WeixinMessage) =>
      Effect.gen(function*() {
        const to = m.from_user_id ?? ""
        let ticket = tickets.get(to)
        if (ticket === undefined) {
          const config = yield* botCall(o.endpoint, "getconfig", { ilink_user_id: to, context_token: m.context_token ?? "" }, GetConfigResponse)
          ticket = config.typing_ticket
          if (ticket === undefined || ticket === "") return
          if (tickets.size >= MAX_TICKETS) tickets.clear()
          tickets.set(to, ticket)
        }
        yield* botCall(o.endpoint, "sendtyping", { ilink_user_id: to, typing_ticket: ticket, status: 1 }, Empty).pipe(
          Effect.tapError(() => Effect.sync(() => tickets.delete(to)))
        )
      })

    const inbound = yield* makeInbound<WeixinMessage>({
      platform: PLATFORM,
      decode: (payload) => decodeMessage(parseJson(payload)),
      read,
      reply: (m, existing, onMessages) =>
        makeReply({ endpoint: o.endpoint, to: m.from_user_id ?? "", contextToken: m.context_token ?? "", existing, onMessages }),
      typing,
      typingEvery: TYPING_EVERY
    })

    // Replies a crash left unfinished: finished without sending their parts again.
    yield* inbound.resume.pipe(Effect.mapError((e) => startFailed(e.message)))

    const poll = Effect.gen(function*() {
      const startedAt = yield* Clock.currentTimeMillis
      const buf = Option.getOrElse(yield* ledger.cursor(PLATFORM), () => "")
      const res = yield* botCall(o.endpoint, "getupdates", { get_updates_buf: buf }, GetUpdatesResponse, {
        timeoutMs: LONG_POLL_MS,
        onTimeout: { msgs: [], get_updates_buf: buf }
      })
      for (const raw of res.msgs ?? []) {
        const m = decodeMessage(raw)
        if (m === undefined) {
          yield* Effect.logWarning("wechat: skipped a malformed message from getupdates")
          continue
        }
        // The conversation's latest token, for writing to this user later (notify).
        const from = m.from_user_id
        const direct = m.group_id === undefined || m.group_id === ""
        const allowed = from !== undefined && (o.allowedUsers === undefined || o.allowedUsers.has(from))
        if (from !== undefined && from !== "" && direct && allowed && m.message_type !== 2 && m.context_token !== undefined && m.context_token !== "") {
          yield* ledger.setCursor(contextKey(from), m.context_token)
        }
        yield* inbound.accept(keyOf(m), m)
      }
      // Every message of the batch is claimed before the cursor moves past it.
      if (res.get_updates_buf !== undefined && res.get_updates_buf !== buf) yield* ledger.setCursor(PLATFORM, res.get_updates_buf)
      // A server that answers an empty poll at once (not holding it) is not asked again at once.
      const took = (yield* Clock.currentTimeMillis) - startedAt
      if ((res.msgs ?? []).length === 0 && took < MIN_EMPTY_POLL_MS) yield* Effect.sleep(Duration.millis(MIN_EMPTY_POLL_MS - took))
    })

    const polling = Effect.gen(function*() {
      for (;;) {
        const r = yield* Effect.result(poll)
        if (r._tag === "Success") continue
        const e = r.failure
        if (e._tag === "PlatformCallError" && sessionExpired(e)) return yield* Effect.logError(`wechat: ${EXPIRED_TEXT}`)
        yield* Effect.logWarning(`wechat: polling: ${e.message}; trying again`)
        yield* Effect.sleep("2 seconds")
      }
    })
    yield* Effect.forkIn(polling, scope)

    const notify = yield* makeNotify(o, Option.some(ledger))
    return Channel.of({
      id: PLATFORM,
      description: `WeChat bot ${o.botId ?? ""} (long polling ${o.endpoint.baseUrl})`.replace("  ", " "),
      notify
    })
  })

/** The WeChat channel as the gateway runs it. */
export const definition: ChannelDefinition<WechatSettings, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger> = {
  id: PLATFORM,
  settings: WechatSettings,
  layer: (settings) => Layer.effect(Channel, make(wechatOptions(settings)))
}

/** WeChat in the platform table (gateway, `anna doctor`, `anna notify`). */
export const platformChannel: PlatformChannel<WechatSettings> = {
  definition,
  check: (s) => checkSession(wechatOptions(s)),
  fix: "anna channel login wechat (scan the QR code with WeChat; the bot token is saved in the channel's settings)",
  sender: (s) => sender(wechatOptions(s))
}
