/** Plugin configuration failures a caller can act on. */
import { Schema } from "effect"

export class PluginNotFound extends Schema.TaggedError<PluginNotFound>()("PluginNotFound", {
  id: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no plugin "${this.id}" (known: ${this.known.join(", ")})`
  }
}

/** A change that would break a rule, e.g. leave no memory plugin enabled. */
export class PluginRuleViolation extends Schema.TaggedError<PluginRuleViolation>()("PluginRuleViolation", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}
