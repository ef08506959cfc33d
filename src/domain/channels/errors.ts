/** Channel failures a caller can act on. */
import { Schema } from "effect"

/** A message could not be delivered on a channel (the platform refused it, the channel cannot push, it is down). */
export class ChannelError extends Schema.TaggedError<ChannelError>()("ChannelError", {
  channel: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `channel ${this.channel}: ${this.reason}`
  }
}

/** An enabled channel could not start (bad settings, its port taken, its platform unreachable). */
export class ChannelStartFailed extends Schema.TaggedError<ChannelStartFailed>()("ChannelStartFailed", {
  channel: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `channel ${this.channel} could not start: ${this.reason}`
  }
}
