/**
 * Reading a running (or killed) gateway process's database from a test, read-only and beside it:
 * the restart tests watch what the other process recorded, where there is nothing to subscribe to.
 * And a home's database opened by a test to seed or damage it (`openHomeDb`). Both synchronous, on
 * the home's SQLite file or — when the suite runs on PostgreSQL (suiteDatabase.ts) — its database.
 */
import { dirname, join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { psqlStatement, homeDatabaseUrl } from "./suiteDatabase.ts"

/**
 * The rows of `sql` on the database file `db` (a home's `anna.db`), opened read-only for this one
 * query — or, when the suite runs on PostgreSQL (suiteDatabase.ts), on that home's database (`psql`,
 * the rows as JSON).
 */
export const readRows = (db: string, sql: string): Array<Record<string, unknown>> => {
  const home = openHomeDb(dirname(db), { readOnly: true })
  try {
    return home.all(sql)
  } finally {
    home.close()
  }
}

/** A home's database as a test reads and changes it directly (synchronously). */
export interface HomeDb {
  /** The rows of `sql`, its `?` bound to `params` in order. */
  readonly all: (sql: string, ...params: ReadonlyArray<string | number>) => Array<Record<string, unknown>>
  /** The first row of `sql`. */
  readonly get: (sql: string, ...params: ReadonlyArray<string | number>) => Record<string, unknown> | undefined
  /** Runs `sql` (one or more statements); throws with the database's message. */
  readonly exec: (sql: string) => void
  readonly close: () => void
}

/** `sql` with each `?` outside a quoted string replaced by `params`' next value as a literal. */
const bindLiterals = (sql: string, params: ReadonlyArray<string | number>): string => {
  let out = ""
  let quoted = false
  let k = 0
  for (const ch of sql) {
    if (ch === "'") quoted = !quoted
    if (ch !== "?" || quoted) {
      out += ch
      continue
    }
    const v = params[k++]
    if (v === undefined) throw new Error(`openHomeDb: fewer parameters than placeholders in ${sql}`)
    out += typeof v === "number" ? String(v) : `'${v.replaceAll("'", "''")}'`
  }
  return out
}

/** The database of the `anna` home `home`, for a test to read or change beside the processes on it. */
export const openHomeDb = (home: string, options: { readonly readOnly?: boolean } = {}): HomeDb => {
  const url = homeDatabaseUrl(home)
  if (url !== undefined) {
    const all = (sql: string, ...params: ReadonlyArray<string | number>) =>
      JSON.parse(psqlStatement(url, `SELECT coalesce(json_agg(r), '[]') FROM (${bindLiterals(sql, params)}) AS r`)) as Array<Record<string, unknown>>
    return {
      all,
      get: (sql, ...params) => all(sql, ...params)[0],
      exec: (sql) => void psqlStatement(url, sql),
      close: () => undefined
    }
  }
  const db = new DatabaseSync(join(home, "anna.db"), { readOnly: options.readOnly === true })
  return {
    all: (sql, ...params) => db.prepare(sql).all(...params) as Array<Record<string, unknown>>,
    get: (sql, ...params) => db.prepare(sql).get(...params) as Record<string, unknown> | undefined,
    exec: (sql) => db.exec(sql),
    close: () => db.close()
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
