/** The one failure every store shares (memory, configuration, usage): the database said no. */
import { Schema } from "effect"

/** The database refused or failed an operation (disk full, locked for too long, corrupt file). */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  operation: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `storage failed during ${this.operation}: ${this.reason}`
  }
}
