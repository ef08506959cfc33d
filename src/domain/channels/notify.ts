/**
 * Where a notification goes: the channels that can push a message nobody asked for, and the choice
 * among a user's identities (the one they wrote from most recently, unless a channel is named).
 * Pure; `anna notify` and the agents' `notify` tool both use it.
 */
import type { User } from "../../services/ConfigStore.ts"

/** Channels that can deliver a message on their own (the HTTP channel only answers requests). */
export const PUSH_CHANNELS = ["telegram", "feishu", "qq", "wechat"] as const

export const canPush = (channel: string): boolean => (PUSH_CHANNELS as ReadonlyArray<string>).includes(channel)

/**
 * The channel to deliver on: `requested` if the user has an identity there and it is among
 * `available` (enabled, or running) and can push; else the user's most recently used identity
 * among those channels.
 */
export const pickChannel = (
  user: User,
  available: ReadonlyArray<string>,
  requested: string | undefined
): { readonly channel: string } | { readonly problem: string } => {
  const push = available.filter(canPush)
  if (requested !== undefined) {
    if (!canPush(requested)) return { problem: `channel ${requested} cannot deliver messages; channels that can: ${PUSH_CHANNELS.join(", ")}` }
    if (!push.includes(requested)) return { problem: `channel ${requested} is not enabled (anna channel enable ${requested})` }
    if (!user.identities.some((i) => i.platform === requested)) {
      return { problem: `user ${user.id} has never written on ${requested}, so it cannot write to them there` }
    }
    return { channel: requested }
  }
  const candidates = user.identities.filter((i) => push.includes(i.platform)).sort((a, b) => (b.lastSeenAt ?? 0) - (a.lastSeenAt ?? 0))
  const best = candidates[0]
  if (best !== undefined) return { channel: best.platform }
  return {
    problem: push.length === 0
      ? `no channel that can deliver is enabled (${PUSH_CHANNELS.join(", ")}); enable one with anna channel enable`
      : `user ${user.id} has never written on ${push.join(" or ")}, so there is nowhere to deliver`
  }
}
