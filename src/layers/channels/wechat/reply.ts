/**
 * One reply in a WeChat chat (the shared reply writer, shared/reply.ts, with WeChat's parts):
 * iLink cannot edit a sent message, so nothing streams — the whole answer is sent when the turn is
 * done, as plain text (WeChat shows Markdown as typed), split at 2,000 characters on paragraph or
 * code-fence boundaries (domain/channels). Each part is a `sendmessage` carrying the inbound
 * message's `context_token` (iLink ties a bot's message to the conversation by it); its id is the
 * `client_id` anna gives it, so a reply resumed after a restart does not send its parts again.
 * A picture is a message of its own (one item per message, as iLink's own client sends them).
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { toPlainText } from "../../../domain/channels/markdown.ts"
import { splitForPlatform } from "../../../domain/channels/split.ts"
import type { PlatformCallError } from "../shared/calls.ts"
import type { ReplyWriter } from "../shared/inbound.ts"
import { makeReplyWriter, type ReplyPart } from "../shared/reply.ts"
import { botCall, type Endpoint, SendMessageResponse } from "./api.ts"
import type { UploadedImage } from "./media.ts"

/** The most characters anna puts in one WeChat message. */
export const WECHAT_LIMIT = 2000

/** An answer as WeChat messages: plain text, cut where each part fits 2,000 UTF-16 units. */
export const wechatParts = (md: string): ReadonlyArray<ReplyPart> =>
  splitForPlatform(md, WECHAT_LIMIT, toPlainText).map((plain) => ({ rich: undefined, plain }))

/** Sends one message of one item to `to` in the conversation of `contextToken`; its client id. */
const sendItem = (o: Endpoint, to: string, contextToken: string, item: Readonly<Record<string, unknown>>): Effect.Effect<string, PlatformCallError> => {
  const clientId = `anna-${randomUUID()}`
  return botCall(o, "sendmessage", {
    msg: {
      from_user_id: "",
      to_user_id: to,
      client_id: clientId,
      message_type: 2,
      message_state: 2,
      item_list: [item],
      context_token: contextToken
    }
  }, SendMessageResponse).pipe(Effect.as(clientId))
}

/** Sends one text message to `to` in the conversation of `contextToken`; its client id. */
export const sendText = (o: Endpoint, to: string, contextToken: string, text: string): Effect.Effect<string, PlatformCallError> =>
  sendItem(o, to, contextToken, { type: 1, text_item: { text } })

/** Sends a picture already on the CDN (media.ts `uploadImage`) as a message of its own; its client id. */
export const sendImage = (o: Endpoint, to: string, contextToken: string, image: UploadedImage): Effect.Effect<string, PlatformCallError> =>
  sendItem(o, to, contextToken, { type: 2, image_item: { media: image.media, mid_size: image.mid_size } })

export interface ReplyTarget {
  readonly endpoint: Endpoint
  /** The WeChat user answered. */
  readonly to: string
  readonly contextToken: string
  readonly existing: ReadonlyArray<string>
  readonly onMessages: (ids: ReadonlyArray<string>) => Effect.Effect<void>
}

export const makeReply = (t: ReplyTarget): Effect.Effect<ReplyWriter> =>
  makeReplyWriter({
    platform: "wechat",
    limit: WECHAT_LIMIT,
    parts: wechatParts,
    existing: t.existing,
    onMessages: t.onMessages,
    send: (text) => sendText(t.endpoint, t.to, t.contextToken, text)
  })
