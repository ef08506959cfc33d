/** Why a skill could not be installed, found, used or removed; each message is one clear line. */
import { Schema } from "effect"

/** A SKILL.md or a skill folder that breaks the rules (front matter, name, limits, no skill at all). */
export class SkillInvalid extends Schema.TaggedError<SkillInvalid>()("SkillInvalid", {
  /** Where in the source (a path, or the source itself). */
  where: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid skill (${this.where}): ${this.reason}`
  }
}

/** An entry refused for safety: a path out of the folder, a link, a device or FIFO. Nothing was installed. */
export class SkillUnsafe extends Schema.TaggedError<SkillUnsafe>()("SkillUnsafe", {
  entry: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `refused, nothing installed: ${this.entry}: ${this.reason}`
  }
}

/** The source could not be read: a missing folder, a failed clone or download, a broken tarball. */
export class SkillSourceError extends Schema.TaggedError<SkillSourceError>()("SkillSourceError", {
  source: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot read ${this.source}: ${this.reason}`
  }
}

/** A skill of that name is already installed in that scope (install again with --force to replace it). */
export class SkillExists extends Schema.TaggedError<SkillExists>()("SkillExists", {
  name: Schema.String,
  scope: Schema.String
}) {
  override get message() {
    return `skill ${this.name} is already installed (${this.scope}); use --force to replace it`
  }
}

export class SkillNotFound extends Schema.TaggedError<SkillNotFound>()("SkillNotFound", {
  name: Schema.String,
  scope: Schema.String
}) {
  override get message() {
    return `no skill named ${this.name} (${this.scope})`
  }
}

/** Writing the skill's files failed (disk full, permissions); nothing half-installed is left. */
export class SkillWriteError extends Schema.TaggedError<SkillWriteError>()("SkillWriteError", {
  name: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot install skill ${this.name}: ${this.reason}`
  }
}

export type SkillError = SkillInvalid | SkillUnsafe | SkillSourceError | SkillExists | SkillNotFound | SkillWriteError
