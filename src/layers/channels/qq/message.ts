/**
 * What QQ delivers (C2C_MESSAGE_CREATE, GROUP_AT_MESSAGE_CREATE), decoded by Schema into one
 * message shape the channel claims, stores and answers; and what such a message asks of the bot:
 * its text (the @mention QQ leaves in a group message taken off) and its images, downloaded (at most
 * MAX_IMAGES of at most MAX_IMAGE_BYTES each, checked to be images by their first bytes) and given
 * to the model as image blocks. An image that cannot be had becomes a line of text saying so.
 */
import { Effect, Option, Schema } from "effect"
import type { ContentBlock } from "../../../domain/message.ts"
import type { UserMessage } from "../../../domain/runtime/types.ts"
import { sniffImage } from "../shared/images.ts"
import type { QqApi } from "./api.ts"

export const MAX_IMAGE_BYTES = 10 * 1024 * 1024
export const MAX_IMAGES = 4
/** Text longer than this is cut (a hostile user can send anything). */
const MAX_TEXT = 16_000

const OpenId = Schema.String.check(Schema.isNonEmpty(), Schema.isMaxLength(256))

const Attachment = Schema.Struct({
  content_type: Schema.optional(Schema.NullOr(Schema.String)),
  url: Schema.optional(Schema.NullOr(Schema.String)),
  filename: Schema.optional(Schema.NullOr(Schema.String)),
  size: Schema.optional(Schema.NullOr(Schema.Number))
})

const C2cEvent = Schema.Struct({
  id: OpenId,
  content: Schema.optional(Schema.NullOr(Schema.String)),
  author: Schema.Struct({ user_openid: OpenId }),
  attachments: Schema.optional(Schema.NullOr(Schema.Array(Attachment)))
})

const GroupEvent = Schema.Struct({
  id: OpenId,
  content: Schema.optional(Schema.NullOr(Schema.String)),
  group_openid: OpenId,
  author: Schema.Struct({ member_openid: OpenId }),
  attachments: Schema.optional(Schema.NullOr(Schema.Array(Attachment)))
})

/** A message to the bot, as claimed and stored. */
export const QqMessage = Schema.Struct({
  kind: Schema.Literals(["c2c", "group"]),
  /** QQ's message id: the claim key, and `msg_id` of every passive reply. */
  id: OpenId,
  /** The sender: user_openid (C2C) or member_openid (group). */
  sender: OpenId,
  /** The group's group_openid (groups only). */
  group: Schema.optional(OpenId),
  content: Schema.String,
  images: Schema.Array(Schema.Struct({ url: Schema.String, contentType: Schema.String }))
})
export type QqMessage = typeof QqMessage.Type

const StoredMessage = Schema.fromJsonString(QqMessage)

export const MESSAGE_EVENTS = ["C2C_MESSAGE_CREATE", "GROUP_AT_MESSAGE_CREATE"] as const

const imagesOf = (attachments: ReadonlyArray<typeof Attachment.Type> | null | undefined) =>
  (attachments ?? []).flatMap((a) => {
    const type = (a.content_type ?? "").toLowerCase()
    return type.startsWith("image/") && typeof a.url === "string" && a.url !== "" ? [{ url: a.url, contentType: type }] : []
  })

/** A dispatch as a message to the bot, or undefined (another event, or a malformed one). */
export const decodeEvent = (t: string, d: unknown): QqMessage | undefined => {
  if (t === "C2C_MESSAGE_CREATE") {
    const e = Schema.decodeUnknownOption(C2cEvent)(d)
    return Option.match(e, {
      onNone: () => undefined,
      onSome: (m) => ({ kind: "c2c", id: m.id, sender: m.author.user_openid, content: (m.content ?? "").slice(0, MAX_TEXT), images: imagesOf(m.attachments) })
    })
  }
  if (t === "GROUP_AT_MESSAGE_CREATE") {
    const e = Schema.decodeUnknownOption(GroupEvent)(d)
    return Option.match(e, {
      onNone: () => undefined,
      onSome: (m) => ({
        kind: "group",
        id: m.id,
        sender: m.author.member_openid,
        group: m.group_openid,
        content: (m.content ?? "").slice(0, MAX_TEXT),
        images: imagesOf(m.attachments)
      })
    })
  }
  return undefined
}

export const encodeMessage = (m: QqMessage): string => JSON.stringify(m)

export const decodeMessage = (payload: string): QqMessage | undefined => Option.getOrUndefined(Schema.decodeUnknownOption(StoredMessage)(payload))

/** The text of a message with QQ's mention markup (`<@!id>`, `<@id>`) taken off. */
export const textOf = (m: QqMessage): string => m.content.replace(/<@!?[A-Za-z0-9_-]*>/g, " ").replace(/[ \t]{2,}/g, " ").trim()

export { sniffImage } from "../shared/images.ts"

/** The message for the model: text alone, or text and image blocks. */
export const userMessageOf = (api: QqApi, m: QqMessage): Effect.Effect<UserMessage> =>
  Effect.gen(function*() {
    const text = textOf(m)
    if (m.images.length === 0) return text
    const blocks: Array<ContentBlock> = []
    const notes: Array<string> = []
    for (const [i, image] of m.images.entries()) {
      if (i >= MAX_IMAGES) {
        notes.push(`[${m.images.length - MAX_IMAGES} more image(s) not read: at most ${MAX_IMAGES} per message]`)
        break
      }
      const got = yield* Effect.result(api.download(image.url, MAX_IMAGE_BYTES))
      if (got._tag === "Failure") {
        yield* Effect.logWarning(`qq: could not download an image of message ${m.id}: ${got.failure.description}`)
        notes.push(`[an image could not be downloaded: ${got.failure.description}]`)
        continue
      }
      const mediaType = sniffImage(got.success.bytes)
      if (mediaType === undefined) {
        notes.push("[an attachment said to be an image is not one]")
        continue
      }
      blocks.push({ type: "image", source: { type: "base64", media_type: mediaType, data: Buffer.from(got.success.bytes).toString("base64") } })
    }
    const said = [text, ...notes].filter((s) => s !== "").join("\n")
    return said === "" ? blocks : [{ type: "text", text: said }, ...blocks]
  })
