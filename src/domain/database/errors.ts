/** Failures of `anna db copy` a person can act on (issue 26). */
import { Schema } from "effect"

/**
 * The copy did not start: the source is missing, the target is not empty, or a table or column of
 * the source has no place on the target. Nothing was written to the target.
 */
export class CopyRefused extends Schema.TaggedError<CopyRefused>()("CopyRefused", {
  reason: Schema.String
}) {
  override get message() {
    return `db copy refused: ${this.reason}`
  }
}

/** The copy failed part-way (a row the target refused, a check after the copy); the target was rolled back. */
export class CopyFailed extends Schema.TaggedError<CopyFailed>()("CopyFailed", {
  reason: Schema.String
}) {
  override get message() {
    return `db copy failed, nothing was kept on the target: ${this.reason}`
  }
}
