/** Configuration failures a caller can act on (providers, agents). */
import { Schema } from "effect"

export class ProviderNotFound extends Schema.TaggedError<ProviderNotFound>()("ProviderNotFound", {
  id: Schema.String
}) {
  override get message() {
    return `no provider "${this.id}" (see: anna provider list)`
  }
}

export class ProviderExists extends Schema.TaggedError<ProviderExists>()("ProviderExists", {
  id: Schema.String
}) {
  override get message() {
    return `a provider "${this.id}" already exists (remove it first, or pick another id)`
  }
}

export class ProviderInUse extends Schema.TaggedError<ProviderInUse>()("ProviderInUse", {
  id: Schema.String,
  agents: Schema.Array(Schema.String)
}) {
  override get message() {
    return `provider "${this.id}" is used by agent(s) ${this.agents.join(", ")}; point them at another provider first (anna agent set)`
  }
}

export class ProviderDisabled extends Schema.TaggedError<ProviderDisabled>()("ProviderDisabled", {
  id: Schema.String
}) {
  override get message() {
    return `provider "${this.id}" is disabled`
  }
}

export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()("AgentNotFound", {
  id: Schema.String
}) {
  override get message() {
    return `no agent "${this.id}" (see: anna agent list)`
  }
}

/** A configuration value that cannot be used as given; the reason says what to change. */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

export class PriceNotFound extends Schema.TaggedError<PriceNotFound>()("PriceNotFound", {
  providerId: Schema.String,
  model: Schema.String
}) {
  override get message() {
    return `no price is set for ${this.providerId}/${this.model} (see: anna provider prices ${this.providerId})`
  }
}

/**
 * A user was removed (they can no longer log in, chat or run anything), but part of their data could
 * not be moved or deleted yet — a playbook file with a mistake, a workspace that could not be deleted.
 * Running the removal again finishes it; until then their id cannot be given to a new user.
 */
export class RemovalUnfinished extends Schema.TaggedError<RemovalUnfinished>()("RemovalUnfinished", {
  userId: Schema.String,
  reasons: Schema.Array(Schema.String)
}) {
  override get message() {
    return `${this.userId} is removed, but ${this.reasons.join("; ")}: fix that and run anna user remove ${this.userId} again (until then the id cannot be given to a new user)`
  }
}
