/**
 * `anna db copy --to postgres://…` (issue 26): moves a home's SQLite database (`$ANNA_HOME/anna.db`,
 * or `--from PATH`) into an empty PostgreSQL database, all or nothing, verified before it commits
 * (src/layers/sql/copy.ts says what is copied and what "empty" means). Progress goes to stderr;
 * stdout has the summary (`--json`: tables, rows per table, seconds, verified).
 *
 * The target URL holds a password: it is printed masked (`postgres://user:***@host/db`), and any
 * message that would carry it (a driver's error) has it replaced, whatever the failure.
 */
import { Cause, Console, Context, Effect, Layer, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { SqlClient } from "effect/sql"
import { existsSync } from "node:fs"
import { CopyFailed, CopyRefused } from "../domain/database/errors.ts"
import { type CopyEvent, copyDatabase, sqlDetail } from "../layers/sql/copy.ts"
import * as Postgres from "../layers/sql/Postgres.ts"
import * as Sqlite from "../layers/sql/Sqlite.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { AppConfigLive } from "./layers.ts"
import { printJson, progress, table, usageError } from "./output.ts"

/** `url` without its password (`postgres://user:***@host/db`); something unparsable is hidden whole. */
export const maskUrl = (url: string): string => {
  try {
    const u = new URL(url)
    if (u.password !== "") u.password = "***"
    for (const key of [...u.searchParams.keys()]) if (/pass/i.test(key)) u.searchParams.set(key, "***")
    return u.toString().replaceAll("%2A%2A%2A", "***")
  } catch {
    return "postgres://***"
  }
}

/** `text` with every form of `url`'s password (and the URL itself) masked. */
export const withoutSecret = (text: string, url: string): string => {
  // As written (the URL parser re-encodes some characters), parsed, and decoded.
  const raw = /^[a-z]+:\/\/[^:@/]*:([^@/]*)@/i.exec(url)?.[1]
  const secrets: Array<string> = raw === undefined ? [] : [raw]
  try {
    const u = new URL(url)
    secrets.push(u.password, decodeURIComponent(u.password))
    for (const [key, value] of u.searchParams) if (/pass/i.test(key)) secrets.push(value, encodeURIComponent(value))
  } catch {
    // Not a URL: only the whole text is known to be secret.
  }
  let out = text.replaceAll(url, maskUrl(url))
  for (const secret of new Set(secrets)) if (secret !== "") out = out.replaceAll(secret, "***")
  return out
}

const isPostgresUrl = (url: string): boolean => {
  try {
    const u = new URL(url)
    return (u.protocol === "postgres:" || u.protocol === "postgresql:") && u.hostname !== ""
  } catch {
    return false
  }
}

/** Progress on stderr, one counter per table and one for the index. */
const reporter = () => {
  let current: { readonly key: string; readonly bar: ReturnType<typeof progress> } | undefined
  return (e: CopyEvent): Effect.Effect<void> =>
    Effect.gen(function*() {
      const key = e._tag === "Table" ? `copy ${e.table}` : e._tag === "Index" ? "search index" : "verify"
      if (current?.key !== key) {
        if (current !== undefined) yield* current.bar.finish
        current = { key, bar: progress(key, e._tag === "Verify" ? 0 : e.total) }
      }
      if (e._tag === "Verify") return yield* Effect.sync(() => process.stderr.write("verify: memory verify and row counts on the target\n"))
      yield* current.bar.update(e.done)
    })
}

const PATH = ["anna", "db", "copy"]

const copy = Command.make("copy", {
  to: Flag.String("to").pipe(Flag.withDescription(
    "The PostgreSQL database to copy into, postgres://user:password@host:port/db: migrated first, and it must be empty"
  )),
  from: Flag.String("from").pipe(Flag.withDescription("The SQLite database to copy (default: $ANNA_HOME/anna.db)"), Flag.optional),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print the summary as JSON"), Flag.withDefault(false))
}, (f) =>
  Effect.gen(function*() {
    if (!isPostgresUrl(f.to)) return yield* usageError(PATH, `--to must be a postgres:// URL, got ${maskUrl(f.to)}`)
    const file = Option.isSome(f.from) ? f.from.value : (yield* AppConfig).databasePath
    if (!existsSync(file)) return yield* new CopyRefused({ reason: `there is no database at ${file}` })
    const shown = maskUrl(f.to)
    yield* Effect.sync(() => process.stderr.write(`Copying ${file} to ${shown}\n`))
    const summary = yield* Effect.scoped(Effect.gen(function*() {
      const source = Context.get(yield* Layer.build(Sqlite.layer(file)), SqlClient.SqlClient)
      const target = Context.get(yield* Layer.build(Postgres.layer(f.to, { maxConnections: 2 })), SqlClient.SqlClient)
      return yield* copyDatabase(source, target, reporter())
    }))
    if (f.json) return yield* printJson({ from: file, to: shown, ...summary })
    yield* Console.log(table(["TABLE", "ROWS"], summary.tables.filter((t) => t.rows > 0).map((t) => [t.table, String(t.rows)])))
    yield* Console.log(
      `Copied ${summary.rows} rows in ${summary.tables.length} tables to ${shown} in ${summary.seconds.toFixed(1)} s` +
        `${summary.indexed > 0 ? `, ${summary.indexed} rows indexed for search` : ""}; verified: row counts equal, ` +
        `memory verify OK on ${summary.sessions} session(s).`
    )
  }).pipe(
    // Whatever fails, the password does not reach the terminal.
    Effect.catchCause((cause) => {
      const failure = cause.reasons.find(Cause.isFailReason)?.error
      if (Cause.hasInterruptsOnly(cause) || (failure instanceof Error && "_tag" in failure && failure._tag === "ShowHelp")) {
        return Effect.failCause(cause)
      }
      if (failure instanceof CopyRefused) return Effect.fail(new CopyRefused({ reason: withoutSecret(failure.reason, f.to) }))
      if (failure instanceof CopyFailed) return Effect.fail(new CopyFailed({ reason: withoutSecret(failure.reason, f.to) }))
      const text = failure === undefined ? Cause.pretty(cause).split("\n")[0] ?? "unknown" : sqlDetail(failure)
      return Effect.fail(new CopyFailed({ reason: withoutSecret(text, f.to) }))
    })
  )).pipe(Command.withDescription(
    "Copy this home's SQLite database into an empty PostgreSQL database (every table, ids and times kept, search index rebuilt), all or nothing, verified"
  ))

export const dbCommand = Command.make("db").pipe(
  Command.withDescription("The database itself: copy a home's SQLite database to PostgreSQL"),
  Command.withSubcommands([copy]),
  Command.provide(AppConfigLive)
)
