/**
 * A Feishu/Lark reaction as feedback (issue 15, item 5): a user who adds 👍 (`THUMBSUP`) or 👎
 * (`ThumbsDown`) to one of the bot's answers says how it went, as `/feedback good|bad` would.
 * Pure: which reactions mean what, what an `im.message.reaction.created_v1` event (schema 2.0,
 * flattened as the SDK's dispatcher hands it over: `event_id` … next to `message_id`,
 * `reaction_type: {emoji_type}`, `operator_type` "user" | "app", `user_id: {open_id, union_id,
 * user_id}`, `action_time`) asks of the bot, and the bot's answers remembered by chat.
 *
 * The event does not name the chat, so only a reaction to a card the bot sent as an answer (in this
 * run) counts: the bot knows that card's chat. Platforms send reactions to every message of a chat
 * the bot is in, and in a group people react to each other's messages too. Reactions taken back
 * (`im.message.reaction.deleted_v1`) are not subscribed to: feedback given stays given.
 */
import { Schema } from "effect"
import type { Outcome } from "../../../domain/learning/confidence.ts"
import type { FeishuInbound } from "./events.ts"
import { makeRecent } from "../shared/recent.ts"

/**
 * Reactions that say the answer was good, by `emoji_type` exactly as the open platform's list
 * ("表情文案说明", emojis-introduce) spells them: the keys are case-sensitive (`Fire`, not `FIRE`).
 */
export const GOOD_REACTIONS: ReadonlySet<string> = new Set([
  "THUMBSUP",
  "JIAYI",
  "OK",
  "DONE",
  "CheckMark",
  "LGTM",
  "HEART",
  "FINGERHEART",
  "Fire",
  "Hundred",
  "CLAP",
  "APPLAUSE",
  "PARTY",
  "MUSCLE",
  "Trophy",
  "THANKS"
])
/** Reactions that say it was bad. Every other emoji means nothing here. */
export const BAD_REACTIONS: ReadonlySet<string> = new Set([
  "ThumbsDown",
  "MinusOne",
  "CrossMark",
  "No",
  "POOP",
  "PUKE",
  "ANGRY",
  "CRY",
  "SOB",
  "Sigh",
  "FACEPALM",
  "HEARTBROKEN",
  "ERROR"
])

/** What one `emoji_type` says, or undefined when it says nothing we read. */
export const outcomeOfEmoji = (emojiType: string): Outcome | undefined =>
  GOOD_REACTIONS.has(emojiType) ? "success" : BAD_REACTIONS.has(emojiType) ? "failure" : undefined

/** An `im.message.reaction.created_v1` event, flattened (header fields next to the event's). */
const ReactionEvent = Schema.Struct({
  event_id: Schema.String,
  message_id: Schema.String,
  reaction_type: Schema.Struct({ emoji_type: Schema.String }),
  operator_type: Schema.String,
  user_id: Schema.optionalKey(Schema.Struct({ open_id: Schema.optionalKey(Schema.String) }))
})
const decodeReaction = Schema.decodeUnknownResult(ReactionEvent)

/** A reaction added to a message: who (a user's open_id, or none for an app), which emoji, on what. */
export interface Reaction {
  /** The claim key (the event's id). */
  readonly key: string
  readonly messageId: string
  readonly emojiType: string
  /** The reacting user's open_id; undefined when an app (a bot) reacted. */
  readonly userOpenId: string | undefined
}

/** A flattened `im.message.reaction.created_v1` event as a Reaction, or undefined when it is not one. */
export const reactionOf = (flat: unknown): Reaction | undefined => {
  const r = decodeReaction(flat)
  if (r._tag === "Failure") return undefined
  const e = r.success
  if (e.event_id === "" || e.message_id === "") return undefined
  const openId = e.user_id?.open_id
  return {
    key: `reaction:${e.event_id}`,
    messageId: e.message_id,
    emojiType: e.reaction_type.emoji_type,
    userOpenId: e.operator_type === "user" && openId !== undefined && openId !== "" ? openId : undefined
  }
}

/** Where one of the bot's answers went. */
export interface SentCard {
  readonly chatId: string
  readonly isGroup: boolean
}

export interface ReactionPolicy {
  readonly groupMode: "mention" | "always" | "off"
  /** open_ids heard; undefined = everyone. */
  readonly allowedUsers: ReadonlySet<string> | undefined
  /** The chat of one of the bot's answers, or undefined for any other message. */
  readonly sentIn: (messageId: string) => SentCard | undefined
}

/**
 * The feedback a reaction stands for, as an inbound message of that user in that chat (stored with
 * its claim, so a restart that finishes it needs nothing remembered); undefined when it is none: an
 * app's reaction, an emoji that says nothing, a message that is not one of the bot's answers, a user
 * the channel does not hear, a group while groups are off.
 */
export const reactionFeedback = (r: Reaction, policy: ReactionPolicy): FeishuInbound | undefined => {
  const user = r.userOpenId
  if (user === undefined) return undefined
  const outcome = outcomeOfEmoji(r.emojiType)
  if (outcome === undefined) return undefined
  if (policy.allowedUsers !== undefined && !policy.allowedUsers.has(user)) return undefined
  const card = policy.sentIn(r.messageId)
  if (card === undefined || (card.isGroup && policy.groupMode === "off")) return undefined
  return {
    messageId: r.messageId,
    chatId: card.chatId,
    isGroup: card.isGroup,
    senderOpenId: user,
    senderIsUser: true,
    messageType: "reaction",
    content: JSON.stringify({ emoji_type: r.emojiType }),
    mentions: [],
    feedback: outcome === "success" ? "good" : "bad",
    replyKey: r.key
  }
}

/** How many of the bot's answer cards are remembered (per channel run). */
export const SENT_REMEMBERED = 10_000

/** The bot's recent answer cards and their chats, the oldest forgotten past `limit`. */
export const makeSentCards = (limit: number = SENT_REMEMBERED) => {
  const sent = makeRecent<SentCard>(limit)
  return {
    add: (card: SentCard, messageIds: ReadonlyArray<string>): void => {
      for (const id of messageIds) sent.set(id, card)
    },
    get: sent.get
  }
}
