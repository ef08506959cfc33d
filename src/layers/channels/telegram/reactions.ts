/**
 * A Telegram reaction as feedback (issue 15, item 5): a user who reacts to the bot's answer with 👍
 * or 👎 says how it went, as `/feedback good|bad` would. Pure: which reactions mean what, and what a
 * `message_reaction` update asks of the bot (the channel sends it through its normal inbound path,
 * so routing, access policies and the exactly-once ledger apply, and answers nothing in the chat).
 */
import type { Chat, MessageReactionUpdated, ReactionType, User } from "grammy/types"
import type { Outcome } from "../../../domain/learning/confidence.ts"
import type { ChatTarget } from "../../../domain/runtime/types.ts"
import { makeRecent } from "../shared/recent.ts"

/** Reactions that say the answer was good (compared without emoji variation selectors). */
export const GOOD_REACTIONS: ReadonlySet<string> = new Set(["👍", "❤", "🔥", "🎉", "👏", "😍", "🥰", "💯", "⚡", "🏆"])
/** Reactions that say it was bad. Every other emoji, custom emoji and paid star means nothing here. */
export const BAD_REACTIONS: ReadonlySet<string> = new Set(["👎", "💩", "🤮", "😡", "🤬", "😢", "🥱"])

/** Emoji presentation selector (U+FE0F): "❤️" and "❤" are the same reaction. */
const VARIATION_SELECTOR = /\uFE0F/g

/** What one emoji says, or undefined when it says nothing we read. */
export const outcomeOfEmoji = (emoji: string): Outcome | undefined => {
  const bare = emoji.replace(VARIATION_SELECTOR, "")
  return GOOD_REACTIONS.has(bare) ? "success" : BAD_REACTIONS.has(bare) ? "failure" : undefined
}

const emojiOf = (r: ReactionType): string | undefined => (r.type === "emoji" ? r.emoji.replace(VARIATION_SELECTOR, "") : undefined)

/**
 * The outcome a reaction change gives: only emoji newly added count (a removal takes nothing back:
 * the feedback already given stays given). Good and bad added at once (a premium user may set three)
 * contradict each other and count as nothing.
 */
export const reactionOutcome = (old: ReadonlyArray<ReactionType>, next: ReadonlyArray<ReactionType>): Outcome | undefined => {
  const before = new Set(old.flatMap((r) => emojiOf(r) ?? []))
  const outcomes = new Set(next.flatMap((r) => {
    const emoji = emojiOf(r)
    return emoji === undefined || before.has(emoji) ? [] : outcomeOfEmoji(emoji) ?? []
  }))
  return outcomes.size === 1 ? [...outcomes][0] : undefined
}

/** Who wrote, and where: `dm` in a private chat, the group's id otherwise (the same session as their messages there). */
export const chatTargetOf = (platform: string, from: User, chat: Chat): ChatTarget => {
  const isGroup = chat.type !== "private"
  return {
    platform,
    externalUserId: String(from.id),
    userName: from.username ?? [from.first_name, from.last_name ?? ""].join(" ").trim(),
    chatId: isGroup ? String(chat.id) : "dm",
    isGroup
  }
}

export interface ReactionPolicy {
  readonly groupMode: "mention" | "always" | "off"
  /** Telegram user ids heard; undefined = everyone. */
  readonly allowedUsers: ReadonlySet<string> | undefined
  /**
   * Whether the bot sent that message. In a group people react to each other's messages too; only a
   * reaction to the bot's own answer is about the bot. (In a private chat every message is.)
   */
  readonly sentByBot: (chatId: number, messageId: number) => boolean
}

/** The feedback command a reaction stands for, and for whom; undefined when it is none. */
export const reactionFeedback = (
  platform: string,
  r: MessageReactionUpdated,
  policy: ReactionPolicy
): { readonly target: ChatTarget; readonly command: string } | undefined => {
  const from = r.user
  // Anonymous reactions (on behalf of a chat) have no user to credit; Telegram sends none for bots.
  if (from === undefined || from.is_bot) return undefined
  if (policy.allowedUsers !== undefined && !policy.allowedUsers.has(String(from.id))) return undefined
  if (r.chat.type !== "private" && (policy.groupMode === "off" || !policy.sentByBot(r.chat.id, r.message_id))) return undefined
  const outcome = reactionOutcome(r.old_reaction, r.new_reaction)
  if (outcome === undefined) return undefined
  return { target: chatTargetOf(platform, from, r.chat), command: `/feedback ${outcome === "success" ? "good" : "bad"}` }
}

/** How many of the bot's sent messages are remembered (per channel run) for telling its answers apart in groups. */
export const SENT_REMEMBERED = 10_000

/** The bot's recent messages by chat, the oldest forgotten past SENT_REMEMBERED. */
export const makeSentMessages = (limit: number = SENT_REMEMBERED) => {
  const sent = makeRecent<true>(limit)
  const key = (chatId: number, messageId: number) => `${chatId}:${messageId}`
  return {
    add: (chatId: number, messageIds: ReadonlyArray<string | number>): void => {
      for (const id of messageIds) sent.set(key(chatId, Number(id)), true)
    },
    has: (chatId: number, messageId: number): boolean => sent.get(key(chatId, messageId)) === true
  }
}
