/**
 * Channel — what a chat channel is (seed 001, "Channel Interface"): an id, a scoped start, and
 * `notify` for messages nobody asked for (a scheduled job's result, a notification). A channel is a
 * layer that provides this service: building the layer starts it (a server listens, a bot connects)
 * and closing its scope stops it. Its inbound side talks to the Runtime; its settings are decoded by
 * its own Schema (src/domain/config/channel.ts), so bad settings fail with the key named.
 *
 * A `ChannelDefinition` is how the gateway knows a kind of channel: its id, the Schema of its stored
 * settings and the layer for given settings. The gateway runs the enabled ones (ChannelSupervisor,
 * with `Layer.launch`) and restarts one whose settings change; adding a channel to anna is writing a
 * definition and naming it in the composition root.
 *
 * Layers: `HttpChannel.definition` (src/layers/channels/HttpChannel.ts; cannot push, notify refuses),
 * `TerminalChannel.layer` (src/layers/channels/TerminalChannel.ts, `anna chat`).
 */
import { Context, type Effect, type Layer, type Schema } from "effect"
import type { ChannelError } from "../domain/channels/errors.ts"

/** Whom an outbound message is for, on one channel. */
export interface ChannelTarget {
  /** The anna user; the channel finds their identity on its platform. */
  readonly userId: string
  /** A particular chat (a group) on the platform; default: the user's direct chat. */
  readonly chatId?: string | undefined
}

/** A picture to send (checked to be a PNG, JPEG, GIF or WebP by its bytes). */
export interface OutboundImage {
  readonly mediaType: string
  readonly bytes: Uint8Array
  /** A file name for platforms that want one. */
  readonly name: string
}

export interface OutboundMessage {
  /** Markdown; with images, their caption. */
  readonly text: string
  /** Pictures; a channel that cannot send them fails (never drops them silently). */
  readonly images?: ReadonlyArray<OutboundImage> | undefined
}

export class Channel extends Context.Service<Channel, {
  readonly id: string
  /** One line for people: what runs and where (e.g. the address an HTTP channel listens on). */
  readonly description: string
  /** For a channel that listens (the HTTP channel): the address it is bound to now. */
  readonly address?: { readonly host: string; readonly port: number } | undefined
  /** Delivers a message; fails with ChannelError when it cannot (never silently). */
  readonly notify: (target: ChannelTarget, message: OutboundMessage) => Effect.Effect<void, ChannelError>
}>()("anna/Channel") {}

/** A kind of channel the gateway can run. */
export interface ChannelDefinition<Settings = unknown, E = unknown, R = never> {
  readonly id: string
  /** Decodes the stored settings (a JSON object; CLI values arrive as text). */
  readonly settings: Schema.Codec<Settings, unknown>
  /** The channel for these settings; built = started, scope closed = stopped. */
  readonly layer: (settings: Settings) => Layer.Layer<Channel, E, R>
}
