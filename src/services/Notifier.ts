/**
 * Notifier — the notification dispatcher (issue 12): delivers a message to an anna user on a chat
 * platform where they have an identity — the one they wrote from most recently among the running
 * channels that can push, unless a channel is named. The agents' `notify` tool and the scheduler
 * deliver through it. Every user gets at most NOTIFY_LIMIT notifications per NOTIFY_WINDOW, so an
 * agent talked into a loop cannot flood anyone.
 *
 * Layers: `Notifier.layer` (src/layers/channels/Notifier.ts), over Channels and ConfigStore.
 */
import { Context, type Effect } from "effect"
import type { ChannelError } from "../domain/channels/errors.ts"
import type { OutboundMessage } from "./Channel.ts"

export interface NotifyOptions {
  /** Deliver on this channel (the user must have written there). */
  readonly channel?: string | undefined
}

export class Notifier extends Context.Service<Notifier, {
  /** Delivers to `userId`; the channel used, or a ChannelError saying why not (never silently). */
  readonly notify: (userId: string, message: OutboundMessage, options?: NotifyOptions) => Effect.Effect<string, ChannelError>
  /** The running channels that can deliver now. */
  readonly channels: Effect.Effect<ReadonlyArray<string>>
}>()("anna/Notifier") {}
