/**
 * Channels — the channels running in this gateway: which are up (or why one is not), and delivery
 * of an outbound message on one of them. The notification dispatcher and the scheduler deliver
 * through it; `anna doctor` and the admin API show its status.
 *
 * Owns the channels' lifetimes: each enabled channel is started with `Layer.launch` when the gateway
 * starts, restarted when its settings change, stopped when it is disabled (LiveConfig tells).
 *
 * Layers: `ChannelSupervisor.layer` (src/layers/channels/ChannelSupervisor.ts).
 */
import { Context, type Effect } from "effect"
import type { ChannelError } from "../domain/channels/errors.ts"
import type { ChannelTarget, OutboundMessage } from "./Channel.ts"

export interface ChannelStatus {
  readonly id: string
  readonly state: "starting" | "running" | "failed"
  /** When running: the channel's own description (e.g. where it listens). */
  readonly description?: string | undefined
  /** When running and it listens: the address it is bound to (the gateway publishes the HTTP channel's). */
  readonly address?: { readonly host: string; readonly port: number } | undefined
  /** When failed: why. */
  readonly error?: string | undefined
}

export class Channels extends Context.Service<Channels, {
  /** Every enabled channel the gateway knows, with its state. */
  readonly status: Effect.Effect<ReadonlyArray<ChannelStatus>>
  /** Delivers on the named channel; fails with ChannelError when it is not running or refuses. */
  readonly notify: (channelId: string, target: ChannelTarget, message: OutboundMessage) => Effect.Effect<void, ChannelError>
}>()("anna/Channels") {}
