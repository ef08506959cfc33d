/**
 * The Feishu/Lark channel (issue 12): a custom app's bot through `@larksuiteoapi/node-sdk`, on the
 * Feishu (`https://open.feishu.cn`) or the Lark international (`https://open.larksuite.com`)
 * open platform, or any address (`base_url`).
 *
 * - Start: the tenant access token and `/open-apis/bot/v3/info` (the bot's open_id; wrong
 *   credentials fail the start with what to do), then the replies a crash left unfinished, then the
 *   inbound connection:
 *   - `mode=websocket` (default): the SDK's `WSClient` long connection (no public URL needed; it
 *     asks `{domain}/callback/ws/endpoint` where to connect, speaks protobuf frames, pings,
 *     reconnects by itself and acknowledges an event once our handler returns);
 *   - `mode=webhook`: event callbacks POSTed to `webhook_path` on the shared webhook listener
 *     (shared/webhook.ts: POST only, 1 MiB bodies; `webhook_host`, default 127.0.0.1 behind your
 *     reverse proxy; `webhook_port`, default 8788): the `url_verification` challenge, the
 *     Verification Token, encrypted bodies and their signature with the Encrypt Key. The platform
 *     retries a callback until it gets a 200, which is given once the message is claimed.
 * - Exactly-once: each `im.message.receive_v1` is claimed in the ChannelLedger by its message_id
 *   before it is acknowledged (shared/inbound.ts), so a redelivery (a reconnect, a retried
 *   callback, a restart) is dropped; a reply's card ids are recorded as they are sent and replies a
 *   crash interrupted are finished into the same cards. Sends carry an idempotency uuid.
 * - Who: the anna user of identity (`feishu`, their open_id), created on first contact; the chat is
 *   `dm` in a p2p chat, the group's chat_id otherwise.
 * - Groups (`group_mode`): `mention` (default) answers an @mention of the bot (the `@_user_N`
 *   placeholders are taken out of the text) and a reply to one of its cards (known from this run,
 *   else asked of the platform: `GET /open-apis/im/v1/messages/:id`); `always` every message;
 *   `off` nothing. `allowed_users` limits who is answered anywhere (open_ids).
 * - A turn: a "thinking…" card at once (Feishu has no typing indicator), updated with the answer as
 *   it streams and finally written as card Markdown split into cards (feishu/reply.ts). Text, post
 *   (rich text) and image messages are read; images (at most 10 MiB each) go to the model as image
 *   blocks.
 * - `notify`: to a user's open_id (their Feishu identity), or to a given chat_id; pictures (PNG,
 *   JPEG, GIF, WebP up to 10 MB) are uploaded and sent as image messages before the text.
 * - Pickers: `/model` and `/agent` answer with their numbered list, and buttons (one per option,
 *   "✓ " on the current) are added to that card; a press (`card.action.trigger`, over the long
 *   connection or the callback URL) is answered at once with a toast, claimed by its event id (a
 *   redelivered press runs once), checked (our command, `allowed_users`), then its buttons are
 *   taken off and `/model N` runs as if the presser had typed it. (A card pressed after a restart
 *   is not known by content any more: it is replaced by the command picked.)
 * - Reactions (issue 15, `im.message.reaction.created_v1`, which the app subscribes to in the
 *   developer console): a user's 👍 (`THUMBSUP`) and the like on one of the bot's answers is
 *   `/feedback good`, 👎 (`ThumbsDown`) and the like `/feedback bad` (feishu/reactions.ts), claimed by
 *   its event id and run as that user's command in that chat with nothing written back (no card).
 *   The event does not name the chat: only answers sent in this run count.
 */
import * as Lark from "@larksuiteoapi/node-sdk"
import { type Context, Deferred, Effect, Layer, Option } from "effect"
import { ChannelError, ChannelStartFailed } from "../../domain/channels/errors.ts"
import { FeishuSettings } from "../../domain/config/channel.ts"
import type { ContentBlock } from "../../domain/message.ts"
import type { UserMessage } from "../../domain/runtime/types.ts"
import { Channel, type ChannelDefinition, type ChannelTarget, type OutboundImage, type OutboundMessage } from "../../services/Channel.ts"
import type { ChannelLedger } from "../../services/ChannelLedger.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import type { Runtime } from "../../services/Runtime.ts"
import type { PlatformChannel } from "./platforms.ts"
import {
  botInfo,
  CREDENTIAL_CODES,
  type Destination,
  domainOf,
  downloadImage,
  type FeishuClient,
  makeClient,
  MAX_UPLOAD_BYTES,
  patchCard,
  PLATFORM,
  redact,
  sendMessage,
  sentByApp,
  uploadImage
} from "./feishu/api.ts"
import { bodyOf, cardPressOf, decodeStored, type FeishuInbound, inboundOf, mentionsBot, PICK_DATA, readCallback, signatureOk } from "./feishu/events.ts"
import { makeSentCards, reactionFeedback, reactionOf } from "./feishu/reactions.ts"
import { card, makeReply, uuidFor } from "./feishu/reply.ts"
import type { PlatformCallError } from "./shared/calls.ts"
import { sniffImage } from "./shared/images.ts"
import { listenWebhook, type WebhookAnswer, type WebhookRequest } from "./shared/webhook.ts"
import { type Incoming, makeInbound, type ReplyWriter } from "./shared/inbound.ts"

export { PLATFORM } from "./feishu/api.ts"

export const WEBHOOK_DEFAULT_PATH = "/feishu/events"
export const WEBHOOK_DEFAULT_HOST = "127.0.0.1"
export const WEBHOOK_DEFAULT_PORT = 8788
/** How long the start waits for the long connection before going on (it keeps trying). */
const CONNECT_WAIT = "20 seconds"
/** How long after the SDK gives up on the long connection it is started again. */
const RESTART_AFTER_MS = 30_000
/** Ids of the bot's recent cards kept to recognise a reply to one of them. */
const RECENT_CARDS = 4_096
/** The reply to a reaction: nothing in the chat (no "thinking…" card; a card per reaction would be noise). */
const SILENT: ReplyWriter = { event: () => Effect.void, finish: Effect.void }

export interface FeishuOptions {
  readonly appId: string
  readonly appSecret: string
  /** The open-platform domain, e.g. https://open.feishu.cn. */
  readonly domain: string
  readonly mode: "websocket" | "webhook"
  readonly verificationToken: string | undefined
  readonly encryptKey: string | undefined
  readonly webhookPath: string
  readonly webhookHost: string
  readonly webhookPort: number
  readonly groupMode: "mention" | "always" | "off"
  /** open_ids answered; undefined = everyone. */
  readonly allowedUsers: ReadonlySet<string> | undefined
}

export const feishuOptions = (s: FeishuSettings): FeishuOptions => ({
  appId: s.app_id.trim(),
  appSecret: s.app_secret.trim(),
  domain: domainOf(s.base_url),
  mode: s.mode ?? "websocket",
  verificationToken: s.verification_token?.trim(),
  encryptKey: s.encrypt_key?.trim(),
  webhookPath: s.webhook_path?.trim() ?? WEBHOOK_DEFAULT_PATH,
  webhookHost: s.webhook_host?.trim() ?? WEBHOOK_DEFAULT_HOST,
  webhookPort: s.webhook_port ?? WEBHOOK_DEFAULT_PORT,
  groupMode: s.group_mode ?? "mention",
  allowedUsers: s.allowed_users === undefined ? undefined : new Set(s.allowed_users.split(",").map((id) => id.trim()))
})

const startFailed = (reason: string) => new ChannelStartFailed({ channel: PLATFORM, reason })

/** What is wrong with the credentials or the address, in terms of what to do. */
export const credentialProblem = (o: FeishuOptions, e: PlatformCallError): string =>
  redact(
    o.appSecret,
    e.kind !== "retry" && e.status !== undefined && (CREDENTIAL_CODES.has(e.status) || /tenant_access_token|app secret|app_id|app id/i.test(e.description))
      ? `Feishu/Lark refused the app credentials (code ${e.status}: ${e.description}); set the App ID and App Secret from the developer console (Credentials & Basic Info) with \`anna channel set feishu --config app_id=cli_… --config app_secret=…\`, and base_url=lark for a Lark (international) app`
      : e.kind !== "retry" && /tenant_access_token/.test(e.description)
      ? `Feishu/Lark refused the app credentials (${e.description}); set app_id and app_secret with \`anna channel set feishu --config app_id=cli_… --config app_secret=…\``
      : `cannot use the Feishu/Lark open platform at ${o.domain}: ${e.description}`
  )

const logTo = (context: Context.Context<never>) =>
  (level: "warn" | "error", text: string) => {
    // The SDK's own chatter about events we do not subscribe to.
    if (/^no .* (event )?handle$/i.test(text.trim())) return
    Effect.runForkWith(context)(level === "error" ? Effect.logError(`feishu: ${text}`) : Effect.logWarning(`feishu: ${text}`))
  }

const clientFor = (o: FeishuOptions) =>
  Effect.map(Effect.context<never>(), (context) => makeClient(o.appId, o.appSecret, o.domain, logTo(context)))

/** `anna doctor`'s check: a tenant token and the bot's name, or what is wrong. */
export const checkApp = (o: FeishuOptions): Effect.Effect<string, string> =>
  Effect.flatMap(clientFor(o), (client) =>
    botInfo(client).pipe(
      Effect.map((bot) => `bot ${bot.name === "" ? bot.openId : `"${bot.name}"`} (${o.domain}, ${o.mode})`),
      Effect.mapError((e) => credentialProblem(o, e))
    ))

/** The largest side of a GIF Feishu takes, and of any other image (pixels). */
const GIF_MAX_SIDE = 2_000
const IMAGE_MAX_SIDE = 12_000

/** Width and height of a PNG or GIF from its header (others: undefined; Feishu checks them itself). */
const dimensionsOf = (b: Uint8Array, type: string): { readonly width: number; readonly height: number } | undefined => {
  const at = (i: number) => b[i] ?? 0
  if (type === "image/png" && b.length >= 24) {
    return { width: ((at(16) << 24) | (at(17) << 16) | (at(18) << 8) | at(19)) >>> 0, height: ((at(20) << 24) | (at(21) << 16) | (at(22) << 8) | at(23)) >>> 0 }
  }
  if (type === "image/gif" && b.length >= 10) return { width: at(6) | (at(7) << 8), height: at(8) | (at(9) << 8) }
  return undefined
}

/**
 * Why Feishu would not take this picture as an image message, or undefined. It takes PNG, JPEG,
 * GIF and WebP (also BMP, ICO, TIFF, HEIC, which the notify tool does not send) of at most 10 MB,
 * not empty, a GIF at most 2000×2000 pixels and any other at most 12000×12000. Nothing is converted.
 */
export const imageProblem = (image: OutboundImage): string | undefined => {
  const name = image.name === "" ? "the picture" : `picture ${image.name}`
  if (image.bytes.length === 0) return `${name} is empty`
  if (image.bytes.length > MAX_UPLOAD_BYTES) {
    return `${name} is ${(image.bytes.length / 1024 / 1024).toFixed(1)} MB; Feishu/Lark takes images of at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MB`
  }
  const type = sniffImage(image.bytes)
  if (type === undefined) return `${name} is not a PNG, JPEG, GIF or WebP image (${image.mediaType} given)`
  const size = dimensionsOf(image.bytes, type)
  const max = type === "image/gif" ? GIF_MAX_SIDE : IMAGE_MAX_SIDE
  if (size !== undefined && (size.width > max || size.height > max)) {
    return `${name} is ${size.width}×${size.height} pixels; Feishu/Lark takes ${type === "image/gif" ? "a GIF" : "an image"} of at most ${max}×${max}`
  }
  return undefined
}

/**
 * Delivery to a user (their Feishu identity's open_id) or a given chat_id: the pictures first, each
 * uploaded (`im.image.create`) and sent as an image message, then the Markdown rendered and split
 * into cards as a reply is, with the same retries. A picture that cannot go (refused here or by
 * the platform) does not hold back the text: the text is delivered, then the notify fails saying
 * why the picture did not go. Needs no connection.
 */
const makeNotify = (client: FeishuClient) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    const identityOf = (userId: string) =>
      config.getUser(userId).pipe(
        Effect.mapError((e) => new ChannelError({ channel: PLATFORM, reason: e.message })),
        Effect.flatMap((user) => {
          const id = Option.flatMap(user, (u) => Option.fromNullishOr(u.identities.find((i) => i.platform === PLATFORM)?.externalId))
          return Option.match(id, {
            onNone: () =>
              Effect.fail(new ChannelError({ channel: PLATFORM, reason: `user ${userId} has never written to the bot on Feishu/Lark, so it cannot write to them` })),
            onSome: Effect.succeed
          })
        })
      )

    /** Every picture checked first (none goes if one cannot), then each uploaded and sent. */
    const sendImages = (to: Destination, key: string, images: ReadonlyArray<OutboundImage>): Effect.Effect<void, string> =>
      Effect.gen(function*() {
        const problems = images.flatMap((image) => {
          const p = imageProblem(image)
          return p === undefined ? [] : [p]
        })
        if (problems.length > 0) return yield* Effect.fail(problems.join("; "))
        for (const [i, image] of images.entries()) {
          yield* uploadImage(client, image.bytes).pipe(
            Effect.flatMap((imageKey) => sendMessage(client, to, "image", JSON.stringify({ image_key: imageKey }), uuidFor(`${key}:image`, i))),
            Effect.mapError((e) => `${image.name === "" ? "a picture" : `picture ${image.name}`} was not sent: ${e.message}`)
          )
        }
      })

    let sent = 0
    return (target: ChannelTarget, message: OutboundMessage): Effect.Effect<void, ChannelError> =>
      Effect.gen(function*() {
        const to: Destination = target.chatId === undefined
          ? { kind: "user", openId: yield* identityOf(target.userId) }
          : { kind: "chat", chatId: target.chatId }
        const key = `notify:${Date.now()}:${++sent}:${Math.random()}`
        const images = message.images ?? []
        const pictures = images.length === 0 ? undefined : yield* Effect.result(sendImages(to, key, images))
        if (message.text.trim() !== "" || images.length === 0) {
          const reply = yield* makeReply({ client, first: to, rest: to, key, existing: [], onMessages: () => Effect.void, thinking: false })
          yield* reply.event({ type: "text", text: message.text })
          yield* reply.finish
        }
        if (pictures !== undefined && pictures._tag === "Failure") {
          const delivered = message.text.trim() === "" ? "" : " (the text was delivered)"
          return yield* new ChannelError({ channel: PLATFORM, reason: redact(client.appSecret, `${pictures.failure}${delivered}`) })
        }
      }).pipe(
        Effect.mapError((e) => (e instanceof ChannelError ? e : new ChannelError({ channel: PLATFORM, reason: e.message })))
      )
  })

/** The bot as a sender only (no connection): for delivering from outside the gateway. */
export const sender = (o: FeishuOptions) =>
  Effect.gen(function*() {
    const client = yield* clientFor(o)
    const notify = yield* makeNotify(client)
    return Channel.of({ id: PLATFORM, description: `Feishu/Lark bot (sending through ${o.domain})`, notify })
  })

export const make = (o: FeishuOptions) =>
  Effect.gen(function*() {
    if (o.mode === "webhook" && o.verificationToken === undefined) {
      return yield* startFailed(
        "mode=webhook needs the Verification Token (developer console → Events and Callbacks → Encryption Strategy): `anna channel set feishu --config verification_token=…` (and encrypt_key=… if you set one there)"
      )
    }
    const context = yield* Effect.context<never>()
    const client = yield* clientFor(o)
    const bot = yield* botInfo(client).pipe(Effect.mapError((e) => startFailed(credentialProblem(o, e))))

    // The bot's recent cards (a reply to one is for the bot, in any group mode but off).
    const recent = new Set<string>()
    const remember = (ids: ReadonlyArray<string>) => {
      for (const id of ids) {
        recent.delete(id)
        recent.add(id)
      }
      while (recent.size > RECENT_CARDS) {
        const oldest = recent.values().next()
        if (oldest.done === true) break
        recent.delete(oldest.value)
      }
    }

    /** Whether a reply is to one of the bot's messages (remembered, or asked of the platform). */
    const repliesToBot = (parentId: string | undefined): Effect.Effect<boolean> =>
      parentId === undefined
        ? Effect.succeed(false)
        : recent.has(parentId)
        ? Effect.succeed(true)
        : sentByApp(client, parentId).pipe(
          Effect.tap((mine) => Effect.sync(() => (mine ? remember([parentId]) : undefined))),
          Effect.catch((e) => Effect.logWarning(`feishu: cannot tell who sent message ${parentId}: ${e.description}`).pipe(Effect.as(false)))
        )

    const forTheBot = (m: FeishuInbound): Effect.Effect<boolean> => {
      if (!m.isGroup) return Effect.succeed(true)
      if (o.groupMode === "off") return Effect.succeed(false)
      if (o.groupMode === "always" || mentionsBot(m, bot.openId)) return Effect.succeed(true)
      return repliesToBot(m.parentId)
    }

    /** The images of a message as image blocks (one that fails to download is skipped, and said so). */
    const imagesOf = (m: FeishuInbound, keys: ReadonlyArray<string>) =>
      Effect.forEach(keys, (key) =>
        downloadImage(client, m.messageId, key).pipe(
          Effect.map(({ bytes, contentType }): ContentBlock | undefined => {
            const mediaType = sniffImage(bytes) ?? (contentType !== undefined && /^image\/(png|jpeg|gif|webp)$/.test(contentType) ? contentType : undefined)
            return mediaType === undefined ? undefined : { type: "image", source: { type: "base64", media_type: mediaType, data: bytes.toString("base64") } }
          }),
          Effect.catch((e) => Effect.logWarning(`feishu: image ${key} of message ${m.messageId} not downloaded: ${e.description}`).pipe(Effect.as(undefined)))
        ))

    /** The bot's answer cards of this run and their chats (a reaction counts only on one of them). */
    const sent = makeSentCards()

    // Picker cards of this run: their content without the buttons (put back when one is pressed),
    // and those pressed already.
    const pickers = new Map<string, string>()
    const pickedCards = new Set<string>()
    const shown = (id: string, content: string) => {
      pickers.set(id, content)
      if (pickers.size > RECENT_CARDS) {
        const oldest = pickers.keys().next()
        if (oldest.done !== true) pickers.delete(oldest.value)
      }
    }

    /** A press of a picker button (claimed): its buttons taken off (once), its command run as the presser's. */
    const pressed = (m: FeishuInbound, command: string): Effect.Effect<Incoming | undefined> =>
      Effect.gen(function*() {
        if (!PICK_DATA.test(command)) return undefined
        if (o.allowedUsers !== undefined && !o.allowedUsers.has(m.senderOpenId)) return undefined
        const content = pickers.get(m.messageId)
        // A second press of the same card in this run does not run (its buttons are going away).
        if (content === undefined && pickedCards.has(m.messageId)) return undefined
        pickedCards.add(m.messageId)
        if (pickedCards.size > RECENT_CARDS) {
          const oldest = pickedCards.values().next()
          if (oldest.done !== true) pickedCards.delete(oldest.value)
        }
        pickers.delete(m.messageId)
        yield* patchCard(client, m.messageId, content ?? card(`${command}`, false)).pipe(
          Effect.catch((e) => Effect.logWarning(`feishu: picker buttons of ${m.messageId} not removed: ${e.description}`))
        )
        return {
          target: { platform: PLATFORM, externalUserId: m.senderOpenId, userName: m.senderOpenId, chatId: m.isGroup ? m.chatId : "dm", isGroup: m.isGroup },
          chatKey: m.chatId,
          message: command
        }
      })

    const read = (m: FeishuInbound): Effect.Effect<Incoming | undefined, PlatformCallError> =>
      Effect.gen(function*() {
        if (m.pick !== undefined) return yield* pressed(m, m.pick)
        if (m.feedback !== undefined) {
          return {
            target: { platform: PLATFORM, externalUserId: m.senderOpenId, userName: m.senderOpenId, chatId: m.isGroup ? m.chatId : "dm", isGroup: m.isGroup },
            chatKey: m.chatId,
            message: `/feedback ${m.feedback}`
          }
        }
        if (!m.senderIsUser || m.senderOpenId === bot.openId) return undefined
        if (o.allowedUsers !== undefined && !o.allowedUsers.has(m.senderOpenId)) return undefined
        if (!(yield* forTheBot(m))) return undefined
        const body = bodyOf(m, bot.openId)
        const images = (yield* imagesOf(m, body.imageKeys)).filter((b): b is ContentBlock => b !== undefined)
        const missing = body.imageKeys.length - images.length
        const text = [body.text, missing > 0 ? `[${missing} image${missing === 1 ? "" : "s"} could not be downloaded]` : ""].filter((t) => t !== "").join("\n")
        // A bare @mention of the bot asks what it can do; anything else empty (a sticker, a file) is not for it.
        if (text === "" && images.length === 0 && !(m.isGroup && mentionsBot(m, bot.openId))) return undefined
        const message: UserMessage = images.length === 0 ? text || "/help" : [...(text === "" ? [] : [{ type: "text" as const, text }]), ...images]
        return {
          target: {
            platform: PLATFORM,
            externalUserId: m.senderOpenId,
            userName: m.senderOpenId,
            chatId: m.isGroup ? m.chatId : "dm",
            isGroup: m.isGroup
          },
          chatKey: m.chatId,
          message
        }
      })

    const inbound = yield* makeInbound<FeishuInbound>({
      platform: PLATFORM,
      decode: decodeStored,
      read,
      reply: (m, existing, onMessages) => {
        if (m.feedback !== undefined) return Effect.succeed(SILENT)
        const chat = { chatId: m.chatId, isGroup: m.isGroup }
        remember(existing)
        sent.add(chat, existing)
        return makeReply({
          client,
          first: m.isGroup ? { kind: "reply", messageId: m.messageId } : { kind: "chat", chatId: m.chatId },
          rest: { kind: "chat", chatId: m.chatId },
          key: m.replyKey ?? m.messageId,
          existing,
          onMessages: (ids) =>
            Effect.sync(() => {
              remember(ids)
              sent.add(chat, ids)
            }).pipe(Effect.andThen(onMessages(ids))),
          thinking: true,
          picker: { isGroup: m.isGroup, shown }
        })
      }
    })

    // Replies a crash left unfinished: answered again, into the cards already sent.
    yield* inbound.resume.pipe(Effect.mapError((e) => startFailed(e.message)))

    /** One delivered event (flattened): claimed, then answered in the background. Fails only when the claim could not be stored. */
    const onEvent = (flat: unknown) =>
      Effect.gen(function*() {
        const m = inboundOf(flat)
        if (m === undefined) return yield* Effect.logWarning("feishu: an im.message.receive_v1 event that does not read as a message; ignored")
        yield* inbound.accept(m.messageId, m)
      })

    /**
     * One delivered `im.message.reaction.created_v1` (flattened): feedback (claimed by its event id,
     * then run silently) when it is a user's telling emoji on one of the bot's answers; else nothing.
     * Fails only when the claim could not be stored.
     */
    const onReaction = (flat: unknown) =>
      Effect.gen(function*() {
        const r = reactionOf(flat)
        if (r === undefined) return yield* Effect.logWarning("feishu: an im.message.reaction.created_v1 event that does not read as a reaction; ignored")
        const m = reactionFeedback(r, { groupMode: o.groupMode, allowedUsers: o.allowedUsers, sentIn: sent.get })
        if (m !== undefined) yield* inbound.accept(r.key, m)
      })

    /**
     * One delivered `card.action.trigger` (flattened): a press of a picker button is claimed by its
     * event id and answered at once (Feishu waits 3 s) with a toast; the rest gets an empty answer.
     * Fails only when the claim could not be stored.
     */
    const onCardAction = (flat: unknown) =>
      Effect.gen(function*() {
        const press = cardPressOf(flat)
        if (press === undefined) return {}
        if (o.allowedUsers !== undefined && !o.allowedUsers.has(press.operatorOpenId)) return {}
        const m: FeishuInbound = {
          messageId: press.messageId,
          chatId: press.chatId,
          isGroup: press.isGroup,
          senderOpenId: press.operatorOpenId,
          senderIsUser: true,
          messageType: "text",
          content: JSON.stringify({ text: press.command }),
          mentions: [],
          pick: press.command,
          replyKey: press.key
        }
        yield* inbound.accept(press.key, m)
        return { toast: { type: "info", content: press.command } }
      })

    let where: string
    if (o.mode === "websocket") {
      const ready = yield* Deferred.make<void, string>()
      const run = Effect.runForkWith(context)
      // After the start, a long connection the SDK gives up on (its retries spent) is started again.
      let starting = true
      let closed = false
      let restart: ReturnType<typeof setTimeout> | undefined
      const dispatcher = new Lark.EventDispatcher({ logger: client.client.logger, loggerLevel: Lark.LoggerLevel.warn }).register({
        "im.message.receive_v1": (data: unknown) => Effect.runPromiseWith(context)(onEvent(data)),
        "card.action.trigger": (data: unknown) => Effect.runPromiseWith(context)(onCardAction(data)),
        "im.message.reaction.created_v1": (data: unknown) => Effect.runPromiseWith(context)(onReaction(data))
      })
      const ws: Lark.WSClient = new Lark.WSClient({
        appId: o.appId,
        appSecret: o.appSecret,
        domain: o.domain,
        httpInstance: client.client.httpInstance,
        logger: client.client.logger,
        loggerLevel: Lark.LoggerLevel.warn,
        autoReconnect: true,
        onReady: () => {
          run(Deferred.succeed(ready, undefined))
        },
        onError: (e) => {
          const reason = redact(o.appSecret, e.message)
          if (starting) {
            run(Deferred.fail(ready, reason))
            return
          }
          if (closed) return
          run(Effect.logError(`feishu: the long connection gave up (${reason}); starting it again in ${RESTART_AFTER_MS / 1000} s`))
          clearTimeout(restart)
          restart = setTimeout(() => {
            if (!closed) ws.start({ eventDispatcher: dispatcher }).catch(() => undefined)
          }, RESTART_AFTER_MS)
        },
        onReconnected: () => {
          run(Effect.logInfo("feishu: long connection back"))
        }
      })
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          closed = true
          clearTimeout(restart)
          ws.close({ force: true })
        })
      )
      yield* Effect.promise(() => ws.start({ eventDispatcher: dispatcher }))
      const connected = yield* Deferred.await(ready).pipe(
        Effect.timeoutOption(CONNECT_WAIT),
        Effect.mapError((reason) => startFailed(`the long connection was refused: ${reason}`)),
        Effect.ensuring(Effect.sync(() => {
          starting = false
        }))
      )
      if (Option.isNone(connected)) yield* Effect.logWarning(`feishu: no long connection to ${o.domain} yet; still trying`)
      where = `long connection to ${o.domain}`
    } else {
      const handle = (request: WebhookRequest): Effect.Effect<WebhookAnswer> =>
        Effect.gen(function*() {
          const answer = (status: number, body: unknown): WebhookAnswer => ({ status, body })
          const header = (name: string): string | undefined => {
            const v = request.headers[name]
            return typeof v === "string" ? v : undefined
          }
          const raw = request.body.toString("utf8")
          let body: unknown
          try {
            body = JSON.parse(raw)
          } catch {
            return answer(400, { msg: "not JSON" })
          }
          const signature = header("x-lark-signature")
          if (o.encryptKey !== undefined && signature !== undefined) {
            const ok = signatureOk(header("x-lark-request-timestamp") ?? "", header("x-lark-request-nonce") ?? "", o.encryptKey, raw, signature)
            if (!ok) return answer(401, { msg: "bad signature" })
          }
          const callback = readCallback(body, o.encryptKey)
          if (callback.kind === "invalid") return answer(400, { msg: callback.reason })
          if (o.verificationToken !== undefined && callback.token !== o.verificationToken) return answer(401, { msg: "bad verification token" })
          if (callback.kind === "challenge") return answer(200, { challenge: callback.challenge })
          // Events are signed when an Encrypt Key is set (the challenge is not).
          if (o.encryptKey !== undefined && signature === undefined) return answer(401, { msg: "unsigned event" })
          if (callback.eventType === "card.action.trigger") {
            const pressed = yield* Effect.exit(onCardAction(callback.flat))
            return pressed._tag === "Success" ? answer(200, pressed.value) : answer(500, { msg: "not stored; send it again" })
          }
          const handler = callback.eventType === "im.message.receive_v1"
            ? onEvent
            : callback.eventType === "im.message.reaction.created_v1"
            ? onReaction
            : undefined
          if (handler === undefined) return answer(200, {})
          const exit = yield* Effect.exit(handler(callback.flat))
          return exit._tag === "Success" ? answer(200, {}) : answer(500, { msg: "not stored; send it again" })
        })
      const address = yield* listenWebhook({ platform: PLATFORM, host: o.webhookHost, port: o.webhookPort, path: o.webhookPath, handle })
      where = `event callbacks on http://${address.host}:${address.port}${o.webhookPath}`
    }

    const notify = yield* makeNotify(client)
    return Channel.of({
      id: PLATFORM,
      description: `Feishu/Lark bot ${bot.name === "" ? bot.openId : `"${bot.name}"`} (${where})`,
      notify
    })
  })

/** The Feishu/Lark channel as the gateway runs it. */
export const definition: ChannelDefinition<FeishuSettings, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger> = {
  id: PLATFORM,
  settings: FeishuSettings,
  layer: (settings) => Layer.effect(Channel, make(feishuOptions(settings)))
}

/** Feishu/Lark in the platform table (gateway, `anna doctor`, `anna notify`). */
export const platformChannel: PlatformChannel<FeishuSettings> = {
  definition,
  check: (s) => checkApp(feishuOptions(s)),
  fix: "anna channel set feishu --config app_id=cli_… --config app_secret=… (developer console → Credentials & Basic Info), base_url=lark for Lark",
  sender: (s) => sender(feishuOptions(s))
}
