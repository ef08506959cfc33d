/** Failures of the self-improving memory a caller can act on; each message is one clear line. */
import { Schema } from "effect"

/**
 * A playbook file that cannot be used as it is (a YAML mistake, a rule that breaks the format): it
 * is reported with its line and never overwritten.
 */
export class PlaybookInvalid extends Schema.TaggedError<PlaybookInvalid>()("PlaybookInvalid", {
  path: Schema.String,
  /** 1-based; 0 when the whole file is at fault. */
  line: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    // On PostgreSQL the path names the table and scope (src/layers/learning/pgPlaybookRules.ts).
    const left = this.path.startsWith("table ")
      ? "the rules were left as they are; fix them with anna playbook export and import"
      : "the file was left as it is; fix it and try again"
    return `${this.path}${this.line > 0 ? `:${this.line}` : ""}: ${this.reason} (${left})`
  }
}

/** A playbook file could not be written (disk full, permissions); the old file is intact. */
export class PlaybookWriteFailed extends Schema.TaggedError<PlaybookWriteFailed>()("PlaybookWriteFailed", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not write ${this.path}: ${this.reason} (the previous ${this.path.startsWith("table ") ? "rules are" : "file is"} intact)`
  }
}

export class RuleNotFound extends Schema.TaggedError<RuleNotFound>()("RuleNotFound", {
  id: Schema.String,
  where: Schema.String
}) {
  override get message() {
    return `no playbook rule "${this.id}" in ${this.where}`
  }
}

/** A rule that cannot be added or changed as asked (empty or too long text, a bad id, a bad tag). */
export class RuleRejected extends Schema.TaggedError<RuleRejected>()("RuleRejected", {
  reason: Schema.String
}) {
  override get message() {
    return `rule refused: ${this.reason}`
  }
}

export class DiaryEntryNotFound extends Schema.TaggedError<DiaryEntryNotFound>()("DiaryEntryNotFound", {
  id: Schema.String
}) {
  override get message() {
    return `no diary entry "${this.id}"`
  }
}

/** Reflection could not run for a session (unknown session, nothing new since the last entry, learning off). */
export class ReflectionSkipped extends Schema.TaggedError<ReflectionSkipped>()("ReflectionSkipped", {
  sessionKey: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `no reflection for ${this.sessionKey}: ${this.reason}`
  }
}

export type PlaybookError = PlaybookInvalid | PlaybookWriteFailed
