/** Runtime failures a channel shows its user. */
import { Schema } from "effect"

/** No enabled agent can take the message, or the named one is disabled or missing. */
export class NoAgent extends Schema.TaggedError<NoAgent>()("NoAgent", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** The user may not use the agent (its access policy, issue 13): a polite refusal on a channel, 403 over HTTP. */
export class AccessDenied extends Schema.TaggedError<AccessDenied>()("AccessDenied", {
  agentId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** The agent has no usable model (no provider, provider disabled or missing). */
export class NoModel extends Schema.TaggedError<NoModel>()("NoModel", {
  agentId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `agent ${this.agentId} has no usable model: ${this.reason} (anna onboard --from-env, or anna agent set ${this.agentId} --model PROVIDER/MODEL)`
  }
}

/** An HTTP token or identity that does not match a user. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** A turn ran past its agent's overall deadline (`anna agent set ID --turn-timeout SECONDS`) and was stopped. */
export class TurnDeadline extends Schema.TaggedError<TurnDeadline>()("TurnDeadline", {
  seconds: Schema.Number
}) {
  override get message() {
    return `it ran longer than its ${this.seconds} s limit and was stopped (operator: anna agent set <id> --turn-timeout SECONDS)`
  }
}
