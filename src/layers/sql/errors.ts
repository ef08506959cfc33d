/**
 * SQL and row-decoding failures as the StorageError every SQLite store reports, with SQLite's own
 * words: the SqlError's message is generic ("Failed to execute statement"); what SQLite said
 * (locked, disk full, no such table…) is in the native cause, and is what the user needs to act on.
 */
import type { Schema } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { StorageError } from "../../domain/storage/errors.ts"

const errorDetail = (e: SqlError | Schema.SchemaError): string => {
  if (e._tag !== "SqlError") return e.message
  const cause: unknown = e.reason.cause
  const detail = cause instanceof Error ? cause.message : cause === undefined || cause === null ? "" : String(cause)
  return detail === "" || e.message.includes(detail) ? e.message : `${e.message}: ${detail}`
}

export const storageError = (operation: string) => (e: SqlError | Schema.SchemaError): StorageError =>
  new StorageError({ operation, reason: errorDetail(e) })
