/**
 * What Feishu/Lark delivers (issue 12), decoded by Schema, never cast:
 *
 * - `im.message.receive_v1` events (schema 2.0: `{schema, header: {event_id, event_type, token, …},
 *   event: {sender, message}}`; the SDK's WebSocket client hands them over flattened, header and
 *   event fields side by side) → `FeishuInbound`, the message as stored with its claim.
 * - A message's `content` (a JSON string): `text` (`{"text"}` with `@_user_N` placeholders for the
 *   mentions), `post` (rich text: paragraphs of `text` / `a` / `at` / `img` / `code_block` … nodes,
 *   with or without a locale wrapper), `image` (`{"image_key"}`).
 * - The event-callback (webhook) mode's envelope: `{"encrypt"}` decrypted with the Encrypt Key
 *   (AES-256-CBC, key = SHA-256 of the Encrypt Key, the first 16 bytes the IV), the request's
 *   signature (`X-Lark-Signature` = hex SHA-256 of timestamp + nonce + Encrypt Key + body), the
 *   `url_verification` challenge and the Verification Token.
 */
import { createDecipheriv, createHash, timingSafeEqual } from "node:crypto"
import { Schema } from "effect"

const Mention = Schema.Struct({
  key: Schema.String,
  id: Schema.Struct({ open_id: Schema.optionalKey(Schema.String) }),
  name: Schema.optionalKey(Schema.String)
})

/** An `im.message.receive_v1` event, flattened (header fields next to `sender` and `message`). */
const MessageEvent = Schema.Struct({
  event_id: Schema.optionalKey(Schema.String),
  event_type: Schema.optionalKey(Schema.String),
  sender: Schema.Struct({
    sender_id: Schema.Struct({ open_id: Schema.optionalKey(Schema.String) }),
    sender_type: Schema.optionalKey(Schema.String)
  }),
  message: Schema.Struct({
    message_id: Schema.String,
    chat_id: Schema.String,
    chat_type: Schema.String,
    message_type: Schema.String,
    content: Schema.String,
    parent_id: Schema.optionalKey(Schema.String),
    root_id: Schema.optionalKey(Schema.String),
    mentions: Schema.optionalKey(Schema.Array(Mention))
  })
})

/** An inbound message as the channel keeps it (and stores with its claim). */
export const FeishuInbound = Schema.Struct({
  messageId: Schema.String,
  chatId: Schema.String,
  isGroup: Schema.Boolean,
  senderOpenId: Schema.String,
  senderIsUser: Schema.Boolean,
  messageType: Schema.String,
  content: Schema.String,
  parentId: Schema.optionalKey(Schema.String),
  mentions: Schema.Array(Schema.Struct({ key: Schema.String, openId: Schema.optionalKey(Schema.String), name: Schema.optionalKey(Schema.String) })),
  /** A press of a picker button (`card.action.trigger`): the command it runs (`/model 2`); `messageId` is then the picker card. */
  pick: Schema.optionalKey(Schema.String),
  /** The claim key of a press (its event id): what the reply's idempotency keys derive from. */
  replyKey: Schema.optionalKey(Schema.String),
  /**
   * A reaction to one of the bot's answers (feishu/reactions.ts): the `/feedback` it gives, run
   * silently; `messageId` is then the answer reacted to.
   */
  feedback: Schema.optionalKey(Schema.Literals(["good", "bad"]))
})
export type FeishuInbound = typeof FeishuInbound.Type

const decodeEvent = Schema.decodeUnknownResult(MessageEvent)
const decodeInbound = Schema.decodeUnknownResult(FeishuInbound)

/** A flattened `im.message.receive_v1` event as a FeishuInbound, or undefined when it is not one. */
export const inboundOf = (flat: unknown): FeishuInbound | undefined => {
  const r = decodeEvent(flat)
  if (r._tag === "Failure") return undefined
  const { sender, message } = r.success
  const openId = sender.sender_id.open_id
  if (openId === undefined || message.message_id === "" || message.chat_id === "") return undefined
  return {
    messageId: message.message_id,
    chatId: message.chat_id,
    isGroup: message.chat_type !== "p2p",
    senderOpenId: openId,
    senderIsUser: sender.sender_type === undefined || sender.sender_type === "user",
    messageType: message.message_type,
    content: message.content,
    ...(message.parent_id === undefined || message.parent_id === "" ? {} : { parentId: message.parent_id }),
    mentions: (message.mentions ?? []).map((m) => ({
      key: m.key,
      ...(m.id.open_id === undefined ? {} : { openId: m.id.open_id }),
      ...(m.name === undefined ? {} : { name: m.name })
    }))
  }
}

/** What a picker button of ours carries (`value` of the button) and runs when pressed. */
export const PICK_VALUE = "anna_pick"
/** The chat kind a picker button carries (`p2p` or `group`; the callback does not say). */
export const PICK_CHAT = "anna_chat"
/** Commands our picker buttons run. */
export const PICK_DATA = /^\/(model|agent) \d{1,4}$/

/** A `card.action.trigger` callback (schema 2.0), flattened: header fields next to operator, action, context. */
const CardActionEvent = Schema.Struct({
  event_id: Schema.optionalKey(Schema.String),
  token: Schema.optionalKey(Schema.String),
  operator: Schema.Struct({ open_id: Schema.String }),
  action: Schema.Struct({ value: Schema.optionalKey(Schema.Unknown), tag: Schema.optionalKey(Schema.String) }),
  context: Schema.Struct({ open_message_id: Schema.String, open_chat_id: Schema.String })
})
const decodeCardAction = Schema.decodeUnknownResult(CardActionEvent)

/** A press of a picker button: who, on which card in which chat, and the command (checked against PICK_DATA). */
export interface CardPress {
  /** The claim key (the event's id). */
  readonly key: string
  readonly operatorOpenId: string
  readonly messageId: string
  readonly chatId: string
  readonly isGroup: boolean
  readonly command: string
}

/**
 * A flattened `card.action.trigger` event as a press of one of our picker buttons, or undefined
 * (not a card action, or a value no picker of ours sends).
 */
export const cardPressOf = (flat: unknown): CardPress | undefined => {
  const r = decodeCardAction(flat)
  if (r._tag === "Failure") return undefined
  const { event_id, operator, action, context } = r.success
  const value = action.value
  if (!isRecord(value)) return undefined
  const command = value[PICK_VALUE]
  if (typeof command !== "string" || !PICK_DATA.test(command)) return undefined
  if (event_id === undefined || event_id === "" || operator.open_id === "" || context.open_message_id === "" || context.open_chat_id === "") return undefined
  return {
    key: `action:${event_id}`,
    operatorOpenId: operator.open_id,
    messageId: context.open_message_id,
    chatId: context.open_chat_id,
    isGroup: value[PICK_CHAT] !== "p2p",
    command
  }
}

/** A stored claim's payload back, or undefined. */
export const decodeStored = (payload: string): FeishuInbound | undefined => {
  let v: unknown
  try {
    v = JSON.parse(payload)
  } catch {
    return undefined
  }
  const r = decodeInbound(v)
  return r._tag === "Success" ? r.success : undefined
}

/** A schema 2.0 envelope `{header, event}` flattened as the SDK's dispatcher does; undefined for anything else. */
export const flatten = (body: unknown): Record<string, unknown> | undefined => {
  if (!isRecord(body) || !isRecord(body.header) || !isRecord(body.event)) return undefined
  return { ...body.header, ...body.event }
}

/** What a message says: its text (mention placeholders replaced) and its images' keys. */
export interface MessageBody {
  readonly text: string
  readonly imageKeys: ReadonlyArray<string>
}

const parse = (content: string): unknown => {
  try {
    return JSON.parse(content)
  } catch {
    return undefined
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** The paragraphs of a post, with or without a locale wrapper (`{"zh_cn": {title, content}}`). */
const postOf = (v: unknown): { title: string; content: ReadonlyArray<unknown> } | undefined => {
  if (!isRecord(v)) return undefined
  if (Array.isArray(v.content)) return { title: typeof v.title === "string" ? v.title : "", content: v.content }
  for (const inner of Object.values(v)) {
    if (isRecord(inner) && Array.isArray(inner.content)) return { title: typeof inner.title === "string" ? inner.title : "", content: inner.content }
  }
  return undefined
}

/** At most this many images of one message are downloaded. */
const MAX_IMAGES = 4

/**
 * The text and images of a message. `mentions` replace their placeholders: the bot's own
 * (`botOpenId`) is dropped, others become `@name`.
 */
export const bodyOf = (m: FeishuInbound, botOpenId: string): MessageBody => {
  const v = parse(m.content)
  const names = new Map(m.mentions.map((x) => [x.key, x.openId === botOpenId ? "" : `@${x.name ?? "someone"}`]))
  const unmention = (t: string) =>
    t.replace(/@_user_\d+|@_all/g, (k) => names.get(k) ?? (k === "@_all" ? "@all" : "")).replace(/[ \t]{2,}/g, " ").trim()
  switch (m.messageType) {
    case "text":
      return { text: isRecord(v) && typeof v.text === "string" ? unmention(v.text) : "", imageKeys: [] }
    case "image":
      return { text: "", imageKeys: isRecord(v) && typeof v.image_key === "string" ? [v.image_key] : [] }
    case "post": {
      const post = postOf(v)
      if (post === undefined) return { text: "", imageKeys: [] }
      const images: Array<string> = []
      const lines: Array<string> = post.title.trim() === "" ? [] : [post.title.trim()]
      for (const paragraph of post.content) {
        if (!Array.isArray(paragraph)) continue
        let line = ""
        for (const node of paragraph) {
          if (!isRecord(node)) continue
          const tag = node.tag
          if ((tag === "text" || tag === "md") && typeof node.text === "string") line += node.text
          else if (tag === "a" && typeof node.text === "string") line += typeof node.href === "string" ? `[${node.text}](${node.href})` : node.text
          else if (tag === "at") {
            const key = typeof node.user_id === "string" ? node.user_id : ""
            const openId = m.mentions.find((x) => x.key === key)?.openId
            if (openId !== botOpenId) line += `@${typeof node.user_name === "string" ? node.user_name : names.get(key)?.slice(1) ?? "someone"}`
          } else if (tag === "img" && typeof node.image_key === "string" && images.length < MAX_IMAGES) images.push(node.image_key)
          else if (tag === "code_block" && typeof node.text === "string") line += `\n\`\`\`${typeof node.language === "string" ? node.language.toLowerCase() : ""}\n${node.text}\n\`\`\`\n`
          else if (tag === "emotion" && typeof node.emoji_type === "string") line += `:${node.emoji_type}:`
        }
        lines.push(unmention(line))
      }
      return { text: lines.join("\n").trim(), imageKeys: images }
    }
    default:
      return { text: "", imageKeys: [] }
  }
}

/** Whether the message @mentions the bot. */
export const mentionsBot = (m: FeishuInbound, botOpenId: string): boolean => m.mentions.some((x) => x.openId === botOpenId)

// ---- event callbacks (webhook mode) ----

/** Decrypts an `encrypt` field with the Encrypt Key; undefined when it cannot be. */
export const decrypt = (encrypt: string, encryptKey: string): string | undefined => {
  try {
    const key = createHash("sha256").update(encryptKey).digest()
    const raw = Buffer.from(encrypt, "base64")
    if (raw.length < 32) return undefined
    const decipher = createDecipheriv("aes-256-cbc", key, raw.subarray(0, 16))
    return Buffer.concat([decipher.update(raw.subarray(16)), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}

/** Whether `X-Lark-Signature` is right for this request. */
export const signatureOk = (timestamp: string, nonce: string, encryptKey: string, rawBody: string, signature: string): boolean => {
  const expected = createHash("sha256").update(timestamp + nonce + encryptKey + rawBody).digest("hex")
  const a = Buffer.from(expected)
  const b = Buffer.from(signature.toLowerCase())
  return a.length === b.length && timingSafeEqual(a, b)
}

/** What a callback request is, once decrypted. */
export type Callback =
  | { readonly kind: "challenge"; readonly challenge: string; readonly token: string | undefined }
  | { readonly kind: "event"; readonly eventType: string | undefined; readonly token: string | undefined; readonly flat: Record<string, unknown> }
  | { readonly kind: "invalid"; readonly reason: string }

/** A callback body (plain or `{"encrypt"}`) as what it asks. */
export const readCallback = (body: unknown, encryptKey: string | undefined): Callback => {
  let v = body
  if (isRecord(body) && typeof body.encrypt === "string") {
    if (encryptKey === undefined) return { kind: "invalid", reason: "an encrypted callback, but no encrypt_key is set" }
    const plain = decrypt(body.encrypt, encryptKey)
    v = plain === undefined ? undefined : parse(plain)
    if (v === undefined) return { kind: "invalid", reason: "a callback that does not decrypt with the encrypt_key" }
  }
  if (!isRecord(v)) return { kind: "invalid", reason: "not a JSON object" }
  if (v.type === "url_verification" && typeof v.challenge === "string") {
    return { kind: "challenge", challenge: v.challenge, token: typeof v.token === "string" ? v.token : undefined }
  }
  const flat = flatten(v)
  if (flat === undefined || !isRecord(v.header)) return { kind: "invalid", reason: "not a schema 2.0 event" }
  // The Verification Token is the header's (a card action's event has a `token` of its own).
  const token = v.header.token
  return {
    kind: "event",
    eventType: typeof flat.event_type === "string" ? flat.event_type : undefined,
    token: typeof token === "string" ? token : undefined,
    flat
  }
}
