/**
 * Reading a running (or killed) gateway process's database from a test, read-only and beside it:
 * the restart tests watch what the other process recorded, where there is nothing to subscribe to.
 */
import { dirname } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { psqlStatement, homeDatabaseUrl } from "./suiteDatabase.ts"

/**
 * The rows of `sql` on the database file `db` (a home's `anna.db`), opened read-only for this one
 * query — or, when the suite runs on PostgreSQL (suiteDatabase.ts), on that home's database (`psql`,
 * the rows as JSON).
 */
export const readRows = (db: string, sql: string): Array<Record<string, unknown>> => {
  const url = homeDatabaseUrl(dirname(db))
  if (url !== undefined) return JSON.parse(psqlStatement(url, `SELECT coalesce(json_agg(r), '[]') FROM (${sql}) AS r`)) as Array<Record<string, unknown>>
  const sqlite = new DatabaseSync(db, { readOnly: true })
  try {
    return sqlite.prepare(sql).all() as Array<Record<string, unknown>>
  } finally {
    sqlite.close()
  }
}

/** Inbound messages of `channel` whose reply has a message on the platform on record. */
export const recordedReplies = (db: string, channel: string): number =>
  Number(readRows(db, `SELECT count(*) AS n FROM channel_inbound WHERE channel = '${channel.replaceAll("'", "''")}' AND reply != '[]'`)[0]?.["n"] ?? 0)

/** Re-checks `ok` every 20 ms until it holds, or fails naming `what` after `timeoutMs`. */
export const until = async (ok: () => boolean, what: string, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
