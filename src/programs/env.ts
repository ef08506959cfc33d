/**
 * The environment, read once at the edge: `ANNA_HOME` (state folder, default ~/.anna) and
 * `ANNA_LOG_LEVEL`, as the AppConfig service (`layerFromEnv`). Nothing else in anna reads
 * `process.env`.
 *
 * `ANNA_DATABASE_URL` (or the gateway's `--database-url`) selects PostgreSQL instead of the SQLite
 * file: `database` below is the one place that chooses.
 *
 * `ANNA_HOME` holds provider keys and every conversation, so it is private to its owner: created
 * 0700, tightened at every start (with `workspaces/`, whose contents are the sandboxes' and are not
 * touched), and checked by `anna doctor`. `ANNA_WORKSPACES` and `ANNA_SKILLS` (absolute paths) put the
 * workspaces root and the global skills elsewhere — on a cluster, a volume every node mounts (issue 28).
 */
import { Cause, Config, Context, Data, Effect, Layer, type LogLevel, Redacted, Result } from "effect"
import { AppConfig, pathsAt } from "../services/AppConfig.ts"
import { existsSync, mkdirSync, statSync } from "node:fs"
import { homedir, hostname } from "node:os"
import { isAbsolute, join, parse, resolve } from "node:path"
import type { SqlClient } from "effect/sql"
import type { MigrationError } from "effect/sql/Migrator"
import type { SqlError } from "effect/sql/SqlError"
import * as Postgres from "../layers/sql/Postgres.ts"
import * as Sqlite from "../layers/sql/Sqlite.ts"
import { type OtlpSettings, otlpSettings, otlpVariables } from "../domain/observability/otlp.ts"
import { type ClusterSettings, clusterSettings, clusterVariables } from "../domain/cluster/settings.ts"

export const annaHome = Config.String("ANNA_HOME").pipe(Config.withDefault(join(homedir(), ".anna")))

/** The folders anna's state may keep outside `$ANNA_HOME` (on a cluster: storage every node mounts, issue 28). */
const FOLDER_VARIABLES = {
  ANNA_WORKSPACES: "the folder of agents' folders and users' workspaces",
  ANNA_SKILLS: "the folder of the global skills"
} as const

/** Why `value` cannot be the folder `name` names, or undefined. */
export const folderProblem = (name: keyof typeof FOLDER_VARIABLES, value: string): string | undefined =>
  !isAbsolute(value)
    ? `${name}=${JSON.stringify(value)} must be an absolute path (${FOLDER_VARIABLES[name]})`
    : value.includes("\0") || /[\r\n]/.test(value)
    ? `${name} must be a plain path (no NUL or line break)`
    : undefined

const folderSetting = (name: keyof typeof FOLDER_VARIABLES): Effect.Effect<string | undefined, InvalidEnvironment> =>
  Effect.gen(function*() {
    const raw = yield* Effect.orDie(optionalString(name))
    if (raw === undefined) return undefined
    const problem = folderProblem(name, raw)
    return problem === undefined ? resolve(raw) : yield* new InvalidEnvironment({ message: problem })
  })

/**
 * `ANNA_WORKSPACES` (where agents' folders and users' workspaces are; default `$ANNA_HOME/workspaces`)
 * and `ANNA_SKILLS` (the global skills; default `$ANNA_HOME/skills`), undefined when unset.
 */
export const folderSettings = Effect.all({ workspaces: folderSetting("ANNA_WORKSPACES"), skills: folderSetting("ANNA_SKILLS") })

const LEVELS = ["All", "Trace", "Debug", "Info", "Warn", "Error", "Fatal", "None"] as const

/** An environment variable anna cannot use; the CLI reports it like a usage error (exit 2). */
export class InvalidEnvironment extends Data.TaggedError("InvalidEnvironment")<{ readonly message: string }> {}

/** A log level's name (case-insensitive; empty means the default, info), or undefined. */
export const parseLogLevel = (s: string): LogLevel.LogLevel | undefined =>
  s.trim() === "" ? "Info" : LEVELS.find((l) => l.toLowerCase() === s.trim().toLowerCase())

const rawLogLevel = Config.String("ANNA_LOG_LEVEL").pipe(Config.withDefault(""))

/** `ANNA_LOG_LEVEL` (trace, debug, info, warn, error, fatal, none, all; default info), case-insensitive. */
export const logLevel = rawLogLevel.pipe(Config.map((s): LogLevel.LogLevel => parseLogLevel(s) ?? "Info"))

/** `ANNA_LOG_LEVEL`, failing with one line that names the allowed values when it is not one. */
export const logLevelSetting: Effect.Effect<LogLevel.LogLevel, InvalidEnvironment> = Effect.gen(function*() {
  const s = yield* Effect.orDie(rawLogLevel)
  const level = parseLogLevel(s)
  if (level !== undefined) return level
  return yield* new InvalidEnvironment({
    message: `ANNA_LOG_LEVEL=${JSON.stringify(s)} is not a log level; use one of ${LEVELS.map((l) => l.toLowerCase()).join(", ")}`
  })
})

/** How log lines are written: `text` (one readable line per event, the default) or `json` (one JSON object per line). */
export type LogFormat = "text" | "json"

/** `ANNA_LOG_FORMAT` (text or json, any case; empty means text), failing with one line when it is neither. */
export const logFormatSetting: Effect.Effect<LogFormat, InvalidEnvironment> = Effect.gen(function*() {
  const raw = yield* Effect.orDie(Config.String("ANNA_LOG_FORMAT").pipe(Config.withDefault("")))
  const s = raw.trim().toLowerCase()
  if (s === "" || s === "text") return "text"
  if (s === "json") return "json"
  return yield* new InvalidEnvironment({ message: `ANNA_LOG_FORMAT=${JSON.stringify(raw)} is not a log format; use text or json` })
})

/**
 * The standard `OTEL_*` variables (domain/observability/otlp.ts lists those honoured): the gateway's
 * OTLP export, or undefined when they ask for none (no endpoint, or `OTEL_SDK_DISABLED=true`). A
 * value anna cannot use fails in one line naming the variable (the CLI exits 2).
 */
export const otlpSetting = (defaults: { readonly serviceName: string; readonly serviceVersion: string }): Effect.Effect<OtlpSettings | undefined, InvalidEnvironment> =>
  Effect.gen(function*() {
    const values = new Map<string, string>()
    for (const name of otlpVariables) {
      const value = yield* Effect.orDie(optionalString(name))
      if (value !== undefined) values.set(name, value)
    }
    return yield* Result.match(otlpSettings((name) => values.get(name), defaults), {
      onSuccess: (settings) => Effect.succeed(settings),
      onFailure: (message) => Effect.fail(new InvalidEnvironment({ message }))
    })
  })

/**
 * The cluster settings (`ANNA_RUNNER_ADDRESS` and the rest: domain/cluster/settings.ts), or undefined
 * when this gateway is not a node of a cluster. A value anna cannot use fails in one line (exit 2).
 */
export const clusterSetting: Effect.Effect<ClusterSettings | undefined, InvalidEnvironment> = Effect.gen(function*() {
  const values = new Map<string, string>()
  for (const name of clusterVariables) {
    const value = yield* Effect.orDie(optionalString(name))
    if (value !== undefined) values.set(name, value)
  }
  return yield* Result.match(clusterSettings((name) => values.get(name), hostname()), {
    onSuccess: (settings) => Effect.succeed(settings),
    onFailure: (message) => Effect.fail(new InvalidEnvironment({ message }))
  })
})

/** Where anna's state is: the SQLite file under `$ANNA_HOME`, or a PostgreSQL database. */
export type DatabaseLocation =
  | { readonly _tag: "Sqlite"; readonly path: string }
  | ({ readonly _tag: "Postgres" } & PostgresUrl)

/** A PostgreSQL URL anna accepted: the secret itself, and what may be printed of it. */
export interface PostgresUrl {
  readonly url: Redacted.Redacted<string>
  /** The URL with its password masked (`postgres://anna:***@db.example:5432/anna`). */
  readonly masked: string
  /** `host:port` (the driver's defaults, localhost and 5432, when the URL leaves them out). */
  readonly address: string
}

/** Query parameters of a libpq URL that carry a secret. */
const SECRET_PARAMS = new Set(["password", "sslpassword"])

/** `raw` (a postgres:// URL) with its password masked; a URL that does not parse is masked whole. */
export const maskDatabaseUrl = (raw: string): string => {
  if (!URL.canParse(raw)) return "***"
  const url = new URL(raw)
  if (url.password !== "") url.password = "***"
  for (const key of [...url.searchParams.keys()]) if (SECRET_PARAMS.has(key.toLowerCase())) url.searchParams.set(key, "***")
  // URL escapes the mask in a query (%2A is not needed for *, but be exact about what is printed).
  return url.toString().replaceAll("%2A%2A%2A", "***")
}

/**
 * Checks a PostgreSQL URL as `where` gives it (`ANNA_DATABASE_URL`, `--database-url`): the
 * postgres:// or postgresql:// scheme and a URL that parses. The problem says what was expected
 * and never repeats the value (it may hold a password).
 */
export const parseDatabaseUrl = (raw: string, where: string): Result.Result<PostgresUrl, string> => {
  const expected = "expected postgres://USER:PASSWORD@HOST:5432/DATABASE (or postgresql://…)"
  if (!URL.canParse(raw.trim())) return Result.fail(`${where} is not a URL: ${expected}`)
  const url = new URL(raw.trim())
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    return Result.fail(`${where} has the scheme ${JSON.stringify(url.protocol.replace(/:$/, ""))}: ${expected}`)
  }
  const param = (name: string) => url.searchParams.get(name) ?? undefined
  const host = param("host") ?? (url.hostname === "" ? "localhost" : url.hostname)
  const port = param("port") ?? (url.port === "" ? "5432" : url.port)
  const n = Number(port)
  if (!Number.isInteger(n) || n < 1 || n > 65535) return Result.fail(`${where} has the port ${JSON.stringify(port)}: ${expected}`)
  return Result.succeed({ url: Redacted.make(raw.trim()), masked: maskDatabaseUrl(raw.trim()), address: `${host}:${port}` })
}

/**
 * `ANNA_DATABASE_URL` (issue 26): PostgreSQL for everything the SQLite file holds; unset or empty,
 * the SQLite file `$ANNA_HOME/anna.db`. A value that is not a postgres:// URL fails in one line
 * (the CLI exits 2). The URL is a secret: kept Redacted, printed masked.
 */
export const databaseUrlSetting: Effect.Effect<PostgresUrl | undefined, InvalidEnvironment> = Effect.gen(function*() {
  const raw = yield* Effect.orDie(optionalString("ANNA_DATABASE_URL"))
  if (raw === undefined) return undefined
  return yield* Result.match(parseDatabaseUrl(raw, "ANNA_DATABASE_URL"), {
    onSuccess: (url) => Effect.succeed(url),
    onFailure: (message) => Effect.fail(new InvalidEnvironment({ message }))
  })
})

/**
 * The PostgreSQL URL of the command line (`anna gateway --database-url`), which wins over
 * `ANNA_DATABASE_URL`; the gateway provides it around everything it builds.
 */
export const DatabaseUrlFlag = Context.Reference<PostgresUrl | undefined>("anna/DatabaseUrlFlag", { defaultValue: () => undefined })

/** Where this command's state is: the flag's URL, else ANNA_DATABASE_URL's, else the SQLite file. */
export const databaseLocation: Effect.Effect<DatabaseLocation, InvalidEnvironment, AppConfig> = Effect.gen(function*() {
  const url = (yield* DatabaseUrlFlag) ?? (yield* databaseUrlSetting)
  return url === undefined ? { _tag: "Sqlite", path: (yield* AppConfig).databasePath } : { _tag: "Postgres", ...url }
})

/** The database as a person reads it: the file's path, or the masked URL. */
export const databaseLabel = (where: DatabaseLocation): string => (where._tag === "Sqlite" ? where.path : `PostgreSQL ${where.masked}`)

/** PostgreSQL could not be reached or refused anna (one line naming host:port, never the password). */
export class DatabaseUnavailable extends Data.TaggedError("DatabaseUnavailable")<{ readonly message: string }> {}

/** A folder others share (sticky, like /tmp) or the filesystem root: chmod-ing it would break other users. */
const sharedFolder = (dir: string): boolean => {
  const full = resolve(dir)
  return full === parse(full).root || (statSync(full).mode & 0o1000) !== 0
}

/** `anna chat`'s input history: what the user typed, as private as the conversations. */
export const chatHistoryFile = (home: string): string => join(home, "chat_history")

/**
 * Creates `$ANNA_HOME` (0700) if missing and removes group and other permissions from it, from the
 * workspaces root (`workspaces`, default `$ANNA_HOME/workspaces`; created too) and from the chat
 * history. Nothing inside workspaces: that belongs to the sandboxes, which mount their own
 * sub-folders. A shared folder used as ANNA_HOME is left alone (doctor says so).
 */
export const secureHome = (home: string, workspaces: string = join(home, "workspaces")) =>
  Effect.gen(function*() {
    mkdirSync(home, { recursive: true, mode: 0o700 })
    if (sharedFolder(home)) {
      return yield* Effect.logWarning(`ANNA_HOME ${home} is a shared folder: provider keys and conversations there may be readable by others (see anna doctor)`)
    }
    const own = workspaces === join(home, "workspaces")
    if (!own) {
      mkdirSync(workspaces, { recursive: true, mode: 0o700 })
      if (sharedFolder(workspaces)) {
        return yield* Effect.logWarning(`ANNA_WORKSPACES ${workspaces} is a shared folder: use a folder of anna's own on it, so users' files stay private`)
      }
    }
    for (const path of [home, workspaces, chatHistoryFile(home)]) {
      const problem = Sqlite.tighten(path)
      if (problem !== undefined) yield* Effect.logWarning(`${path} stays open to others: ${problem} (see anna doctor)`)
    }
  })

/** AppConfig from `ANNA_HOME`, `ANNA_LOG_LEVEL`, `ANNA_WORKSPACES` and `ANNA_SKILLS` (the CLI checks them first: folderSettings). */
export const layerFromEnv = Layer.effect(
  AppConfig,
  Effect.gen(function*() {
    const { home, level } = yield* Config.all({ home: annaHome, level: logLevel })
    return pathsAt(home, level, yield* Effect.orDie(folderSettings))
  })
)

/**
 * The migrated database: PostgreSQL when a URL selects it (the flag's, else ANNA_DATABASE_URL's),
 * else the SQLite file at AppConfig's path. The home folder is made private first either way (it
 * holds workspaces and the chat history). A server that cannot be reached or refuses the
 * connection is DatabaseUnavailable, naming host:port, never the password.
 */
export const database: Layer.Layer<SqlClient.SqlClient, InvalidEnvironment | DatabaseUnavailable | SqlError | MigrationError, AppConfig> = Layer.unwrap(Effect.gen(function*() {
  const app = yield* AppConfig
  yield* secureHome(app.home, app.workspaces)
  const where = yield* databaseLocation
  if (where._tag === "Sqlite") return Sqlite.layer(where.path) as Layer.Layer<SqlClient.SqlClient, SqlError | MigrationError | DatabaseUnavailable>
  return Postgres.layer(where.url).pipe(
    // The fallback provides what the pool would have (it never does: it fails with the reason).
    Layer.catchCause((cause) => Layer.effectContext<SqlClient.SqlClient, DatabaseUnavailable, never>(Effect.fail(unavailable(where, cause))))
  )
}))

/**
 * What the driver said, deepest cause first (`connect ECONNREFUSED 127.0.0.1:1`, `database "x" does
 * not exist`), on one line, with the URL's secrets removed.
 */
const driverReason = (where: PostgresUrl, cause: Cause.Cause<unknown>): string => {
  const messages: Array<string> = []
  let e: unknown = cause.reasons.find(Cause.isFailReason)?.error ?? cause.reasons.find(Cause.isDieReason)?.defect
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const text = e instanceof Error ? e.message : typeof e === "object" && "message" in e ? String(e.message) : String(e)
    if (text !== "" && !messages.some((m) => m.includes(text))) messages.push(text.split("\n")[0] ?? text)
    e = typeof e === "object" && "cause" in e ? e.cause : undefined
  }
  const raw = Redacted.value(where.url)
  const password = URL.canParse(raw) ? decodeURIComponent(new URL(raw).password) : ""
  const line = (messages.reverse()[0] ?? "no reason given").replaceAll(raw, where.masked)
  return password === "" ? line : line.replaceAll(password, "***")
}

export const unavailable = (where: PostgresUrl, cause: Cause.Cause<unknown>): DatabaseUnavailable =>
  new DatabaseUnavailable({ message: `could not open the PostgreSQL database at ${where.address} (${where.masked}): ${driverReason(where, cause)}` })

/** A path of anna's state that group or others can reach, and the mode it should have. */
export interface LoosePath {
  readonly path: string
  /** The current permission bits. */
  readonly mode: number
  readonly want: 0o700 | 0o600
}

/**
 * `$ANNA_HOME`, the workspaces root (`workspaces`), the SQLite database files (not when the state is on PostgreSQL:
 * `sqliteFiles` false) and the chat history, where they exist and group or others have any access.
 */
export const loosePermissions = (home: string, sqliteFiles = true, workspaces: string = join(home, "workspaces")): ReadonlyArray<LoosePath> => {
  const wanted: ReadonlyArray<readonly [string, 0o700 | 0o600]> = [
    [home, 0o700],
    [workspaces, 0o700],
    ...(sqliteFiles ? Sqlite.databaseFiles(join(home, "anna.db")).map((f) => [f, 0o600] as const) : []),
    [chatHistoryFile(home), 0o600]
  ]
  return wanted.flatMap(([path, want]) => {
    if (!existsSync(path)) return []
    const mode = statSync(path).mode & 0o7777
    return (mode & Sqlite.GROUP_OTHER) === 0 ? [] : [{ path, mode, want }]
  })
}

/** The providers' own variables, read only by onboarding (`anna onboard --from-env`, first start). */
export interface ProviderEnv {
  readonly anthropicKey: string | undefined
  readonly anthropicBaseUrl: string | undefined
  readonly openAiKey: string | undefined
  readonly openAiBaseUrl: string | undefined
}

const optionalString = (name: string) =>
  Config.String(name).pipe(
    Config.option,
    Config.map((o) => (o._tag === "Some" && o.value.trim() !== "" ? o.value.trim() : undefined))
  )

export const providerEnv: Config.Config<ProviderEnv> = Config.all({
  anthropicKey: optionalString("ANTHROPIC_API_KEY"),
  anthropicBaseUrl: optionalString("ANTHROPIC_BASE_URL"),
  openAiKey: optionalString("OPENAI_API_KEY"),
  openAiBaseUrl: optionalString("OPENAI_BASE_URL")
})
