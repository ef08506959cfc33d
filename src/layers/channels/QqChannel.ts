/**
 * The QQ channel (issue 12): a bot of the official QQ Bot API (q.qq.com), on a small client of our
 * own (`ws` + `fetch`, qq/api.ts and qq/gateway.ts). `qq-official-bot` was judged and not used: it
 * pins axios 1.8.2 and forces log4js on its users.
 *
 * - Start: an access token from the AppID and AppSecret (refused credentials fail the start with
 *   what to do), the gateway's address, then the replies a crash left unfinished, then the gateway:
 *   identify (or resume the session saved before a restart) with the GROUP_AND_C2C_EVENT intent.
 * - Exactly-once: each C2C_MESSAGE_CREATE / GROUP_AT_MESSAGE_CREATE is claimed in the ChannelLedger
 *   by its message id before anything acts on it (shared/inbound.ts), so a duplicate push, a replay
 *   after a resume or a redelivery after a restart is dropped. The gateway's session and last `s`
 *   are kept as the channel's cursor, so a restart resumes the session (QQ replays what it missed).
 * - Who: C2C messages come from the user's user_openid, chat `dm`; group messages from the member's
 *   member_openid (QQ gives each member a different openid per group), chat = the group_openid.
 * - Groups (`group_mode`): QQ delivers only the messages that @mention the bot, so `mention` and
 *   `always` both answer those; `off` answers none. `allowed_users` limits who is answered anywhere
 *   (openids).
 * - Replies: passive (msg_id + msg_seq), plain text, sent when the turn is done (QQ cannot edit, so
 *   nothing streams), split at 2,000 characters, at most 5 messages (qq/reply.ts). No typing
 *   indicator (QQ documents none). Commands (/new, /model, …) are the Runtime's, answered at once.
 * - Images in: downloaded (at most 4 of 10 MiB each) and given to the model (qq/message.ts).
 * - `notify`: an active message to the user's openid (QQ limits active messages, and has stopped
 *   them for most bots since April 2025: a refusal is reported with QQ's reason). Pictures (PNG or
 *   JPEG, at most 10 MiB: what QQ takes inline) are uploaded first (rich media, `srv_send_msg` false,
 *   qq/api.ts), all before anything is sent, then sent one message each (msg_type 7, `media.file_info`);
 *   a text that fits one message rides as the last picture's `content`, a longer one follows as
 *   messages of its own. A picture QQ would not take is refused before anything is sent.
 */
import { Effect, Layer, Option, Schema } from "effect"
import { ChannelError, ChannelStartFailed } from "../../domain/channels/errors.ts"
import { QQ_DEFAULT_BASE_URL, QQ_DEFAULT_TOKEN_URL, QqSettings } from "../../domain/config/channel.ts"
import { Channel, type ChannelDefinition, type ChannelTarget, type OutboundImage, type OutboundMessage } from "../../services/Channel.ts"
import { ChannelLedger } from "../../services/ChannelLedger.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import type { Runtime } from "../../services/Runtime.ts"
import type { PlatformChannel } from "./platforms.ts"
import { makeQqApi, MAX_UPLOAD_BYTES, PLATFORM, type QqApi } from "./qq/api.ts"
import { type GatewaySession, INTENT_GROUP_AND_C2C, runGateway } from "./qq/gateway.ts"
import { decodeEvent, decodeMessage, encodeMessage, type QqMessage, userMessageOf } from "./qq/message.ts"
import { makeReply, qqParts } from "./qq/reply.ts"
import type { PlatformCallError } from "./shared/calls.ts"
import { sniffImage } from "./shared/images.ts"
import { type Incoming, makeInbound, type PlatformAdapter } from "./shared/inbound.ts"

export { PLATFORM } from "./qq/api.ts"

export interface QqOptions {
  readonly appId: string
  readonly secret: string
  readonly baseUrl: string
  readonly tokenUrl: string
  readonly groupMode: "mention" | "always" | "off"
  /** Openids answered; undefined = everyone. */
  readonly allowedUsers: ReadonlySet<string> | undefined
  /** Milliseconds before gateway reconnect number `attempt` (tests shorten it). */
  readonly reconnectDelayMs?: ((attempt: number) => number) | undefined
}

export const qqOptions = (s: QqSettings): QqOptions => ({
  appId: s.app_id.trim(),
  secret: s.app_secret.trim(),
  baseUrl: (s.base_url ?? QQ_DEFAULT_BASE_URL).trim().replace(/\/+$/, ""),
  tokenUrl: (s.token_url ?? QQ_DEFAULT_TOKEN_URL).trim(),
  groupMode: s.group_mode ?? "mention",
  allowedUsers: s.allowed_users === undefined ? undefined : new Set(s.allowed_users.split(",").map((id) => id.trim()).filter((id) => id !== ""))
})

const apiOf = (o: QqOptions): QqApi => makeQqApi({ appId: o.appId, secret: o.secret, baseUrl: o.baseUrl, tokenUrl: o.tokenUrl })

const startFailed = (reason: string) => new ChannelStartFailed({ channel: PLATFORM, reason })

export const FIX = "set the bot's AppID and AppSecret from q.qq.com (开发 → 开发设置) with `anna channel set qq --config app_id=… app_secret=…`"

/** What is wrong with the credentials or the addresses, in terms of what to do. */
export const credentialsProblem = (o: QqOptions, e: PlatformCallError): string =>
  e.method === "getAppAccessToken" && e.kind === "refused"
    ? `QQ refused app_id ${o.appId} with its app_secret (${e.description}); ${FIX}`
    : e.kind === "refused" && (e.status === 401 || e.status === 403)
    ? `QQ refused the bot's access token (${e.description}); ${FIX}`
    : `cannot reach the QQ Bot API (${e.method === "getAppAccessToken" ? o.tokenUrl : o.baseUrl}): ${e.description}`

/** `anna doctor`'s check: an access token and the gateway's address, or what is wrong. */
export const checkBot = (o: QqOptions): Effect.Effect<string, string> => {
  const api = apiOf(o)
  return api.token.pipe(
    Effect.andThen(api.gatewayUrl),
    Effect.map((url) => `app ${o.appId}, gateway ${url} (${o.baseUrl})`),
    Effect.mapError((e) => credentialsProblem(o, e))
  )
}

const SavedSession = Schema.fromJsonString(Schema.Struct({ session_id: Schema.String, seq: Schema.Number }))

const savedSession = (cursor: Option.Option<string>): GatewaySession | undefined =>
  Option.flatMap(cursor, Schema.decodeUnknownOption(SavedSession)).pipe(
    Option.map((s) => ({ sessionId: s.session_id, seq: s.seq })),
    Option.getOrUndefined
  )

/** The picture types QQ documents for rich media (`file_type` 1). */
const QQ_IMAGE_TYPES: ReadonlyArray<string> = ["image/png", "image/jpeg"]

/** Why QQ would not take these pictures, or undefined when it would. */
export const picturesProblem = (images: ReadonlyArray<OutboundImage>): string | undefined => {
  for (const image of images) {
    const type = sniffImage(image.bytes)
    if (type === undefined || !QQ_IMAGE_TYPES.includes(type)) {
      return `QQ takes PNG and JPEG pictures only; ${image.name} is ${type ?? "not a picture"}`
    }
    if (image.bytes.byteLength > MAX_UPLOAD_BYTES) {
      return `${image.name} is larger than the ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB QQ takes`
    }
  }
  return undefined
}

type Destination = { readonly kind: "users" | "groups"; readonly openid: string }

const destinationOf = (m: QqMessage) =>
  m.kind === "group" && m.group !== undefined ? { kind: "groups" as const, openid: m.group } : { kind: "users" as const, openid: m.sender }

/**
 * Delivery to a user (as an active message to their openid) or to a given group: the Markdown as
 * plain-text parts, with the same retries. Needs no gateway, so `anna notify` uses it alone.
 */
const makeNotify = (api: QqApi) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    const refused = (reason: string) => new ChannelError({ channel: PLATFORM, reason })
    const openidsOf = (userId: string) =>
      config.getUser(userId).pipe(
        Effect.mapError((e) => refused(e.message)),
        Effect.flatMap((user) => {
          const ids = Option.match(user, {
            onNone: () => [],
            onSome: (u) => u.identities.filter((i) => i.platform === PLATFORM).map((i) => i.externalId)
          })
          return ids.length === 0
            ? Effect.fail(refused(`user ${userId} has never written to the bot on QQ, so it cannot write to them`))
            : Effect.succeed(ids)
        })
      )
    const deliver = (to: Destination, message: OutboundMessage) =>
      Effect.gen(function*() {
        const images = message.images ?? []
        const parts = qqParts(message.text).filter((p) => p.plain.trim() !== "")
        // A text of one message rides as the last picture's content; QQ wants some content with msg_type 7.
        const caption = images.length > 0 && parts.length === 1 ? parts[0]?.plain : undefined
        const files = yield* Effect.forEach(images, (image) => api.uploadImage(to, image.bytes))
        for (const [i, fileInfo] of files.entries()) {
          const content = i === files.length - 1 && caption !== undefined ? caption : " "
          yield* api.sendMessage(to, { content, msg_type: 7, media: { file_info: fileInfo } })
        }
        if (caption !== undefined) return
        yield* Effect.forEach(parts, (part) => api.sendMessage(to, { content: part.plain, msg_type: 0 }), { discard: true })
      })
    return (target: ChannelTarget, message: OutboundMessage): Effect.Effect<void, ChannelError> =>
      Effect.gen(function*() {
        const problem = picturesProblem(message.images ?? [])
        if (problem !== undefined) return yield* refused(problem)
        if (target.chatId !== undefined && target.chatId !== "dm") {
          return yield* deliver({ kind: "groups", openid: target.chatId }, message).pipe(
            Effect.mapError((e) => refused(activeRefusal(e)))
          )
        }
        // Group members have other openids than in C2C: the first identity QQ takes wins.
        let last: PlatformCallError | undefined
        for (const openid of yield* openidsOf(target.userId)) {
          const sent = yield* Effect.result(deliver({ kind: "users", openid }, message))
          if (sent._tag === "Success") return
          last = sent.failure
        }
        return yield* Effect.fail(refused(last === undefined ? "no QQ identity took the message" : activeRefusal(last)))
      })
  })

const activeRefusal = (e: PlatformCallError): string =>
  e.method.startsWith("upload")
    ? `QQ did not take the picture (${e.description})`
    : `QQ did not deliver the message (${e.description}); QQ limits messages a bot sends on its own (active messages) and has stopped them for most bots since April 2025`

/** The bot as a sender only (no gateway): for delivering from outside the gateway. */
export const sender = (o: QqOptions) =>
  Effect.map(makeNotify(apiOf(o)), (notify) =>
    Channel.of({ id: PLATFORM, description: `QQ bot ${o.appId} (sending through ${o.baseUrl})`, notify }))

/** What a QQ message asks, or undefined when it is not for the bot. */
const readMessage = (o: QqOptions, api: QqApi) => (m: QqMessage): Effect.Effect<Incoming | undefined, PlatformCallError> =>
  Effect.gen(function*() {
    if (o.allowedUsers !== undefined && !o.allowedUsers.has(m.sender)) return undefined
    const isGroup = m.kind === "group"
    if (isGroup && o.groupMode === "off") return undefined
    const message = yield* userMessageOf(api, m)
    if (typeof message === "string" ? message === "" : message.length === 0) return undefined
    return {
      target: { platform: PLATFORM, externalUserId: m.sender, chatId: isGroup ? m.group ?? "dm" : "dm", isGroup },
      chatKey: isGroup ? `group:${m.group ?? ""}` : `c2c:${m.sender}`,
      message
    }
  })

export const make = (o: QqOptions) =>
  Effect.gen(function*() {
    const ledger = yield* ChannelLedger
    const scope = yield* Effect.scope
    const api = apiOf(o)

    yield* api.token.pipe(Effect.mapError((e) => startFailed(credentialsProblem(o, e))))
    const gatewayUrl = yield* api.gatewayUrl.pipe(Effect.mapError((e) => startFailed(credentialsProblem(o, e))))

    const adapter: PlatformAdapter<QqMessage> = {
      platform: PLATFORM,
      decode: decodeMessage,
      read: readMessage(o, api),
      reply: (m, existing, onMessages) => makeReply({ api, to: destinationOf(m), msgId: m.id, existing, onMessages })
    }
    const inbound = yield* makeInbound(adapter)
    yield* inbound.resume.pipe(Effect.mapError((e) => startFailed(e.message)))

    const saved = savedSession(yield* ledger.cursor(PLATFORM).pipe(Effect.orElseSucceed(() => Option.none<string>())))
    const gateway = runGateway({
      api,
      intents: INTENT_GROUP_AND_C2C,
      saved,
      reconnectDelayMs: o.reconnectDelayMs,
      onDispatch: (event) =>
        Effect.gen(function*() {
          const m = decodeEvent(event.t, event.d)
          if (m === undefined) {
            if (event.t === "C2C_MESSAGE_CREATE" || event.t === "GROUP_AT_MESSAGE_CREATE") {
              yield* Effect.logWarning(`qq: a malformed ${event.t} was skipped`)
            }
            return
          }
          yield* inbound.accept(m.id, m, encodeMessage(m))
        }).pipe(Effect.catch((e) => Effect.logError(`qq: could not claim a message: ${e.message}`))),
      onSeq: (s) =>
        ledger.setCursor(PLATFORM, JSON.stringify({ session_id: s.sessionId, seq: s.seq })).pipe(
          Effect.catch((e) => Effect.logWarning(`qq: could not save the gateway position: ${e.message}`))
        )
    })
    yield* Effect.forkIn(gateway, scope)

    const notify = yield* makeNotify(api)
    return Channel.of({
      id: PLATFORM,
      description: `QQ bot ${o.appId} (gateway ${gatewayUrl})`,
      notify
    })
  })

/** The QQ channel as the gateway runs it. */
export const definition: ChannelDefinition<QqSettings, ChannelStartFailed, Runtime | ConfigStore | ChannelLedger> = {
  id: PLATFORM,
  settings: QqSettings,
  layer: (settings) => Layer.effect(Channel, make(qqOptions(settings)))
}

export const platformChannel: PlatformChannel<QqSettings> = {
  definition,
  check: (settings) => checkBot(qqOptions(settings)),
  fix: `anna channel set qq --config app_id=<AppID> app_secret=<AppSecret> (from q.qq.com → 开发设置)`,
  sender: (settings) => sender(qqOptions(settings))
}
