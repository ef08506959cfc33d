/**
 * The environment, read once at the edge: `ANNA_HOME` (state folder, default ~/.anna) and
 * `ANNA_LOG_LEVEL`, as the AppConfig service (`layerFromEnv`). Nothing else in anna reads
 * `process.env`.
 *
 * `ANNA_HOME` holds provider keys and every conversation, so it is private to its owner: created
 * 0700, tightened at every start (with `workspaces/`, whose contents are the sandboxes' and are not
 * touched), and checked by `anna doctor`.
 */
import { Config, Data, Effect, Layer, type LogLevel } from "effect"
import { AppConfig, pathsAt } from "../services/AppConfig.ts"
import { existsSync, mkdirSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { join, parse, resolve } from "node:path"
import * as Sqlite from "../layers/sql/Sqlite.ts"

export const annaHome = Config.String("ANNA_HOME").pipe(Config.withDefault(join(homedir(), ".anna")))

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

/**
 * `ANNA_DATABASE_URL` (issue 26): PostgreSQL for anna's state. Being built store by store (the
 * usage log runs on it so far, tested on both databases), so until every store does, a set URL is
 * refused at start rather than silently ignored (the state would go to the SQLite file instead).
 * The URL is a secret: never printed.
 */
export const databaseUrlSetting: Effect.Effect<void, InvalidEnvironment> = Effect.gen(function*() {
  const url = yield* Effect.orDie(optionalString("ANNA_DATABASE_URL"))
  if (url === undefined) return
  return yield* new InvalidEnvironment({
    message: "ANNA_DATABASE_URL is set, but this version of anna keeps its state in SQLite only (PostgreSQL is being built: " +
      "see README, \"Running on PostgreSQL\"); unset ANNA_DATABASE_URL to use $ANNA_HOME/anna.db"
  })
})

/** A folder others share (sticky, like /tmp) or the filesystem root: chmod-ing it would break other users. */
const sharedFolder = (dir: string): boolean => {
  const full = resolve(dir)
  return full === parse(full).root || (statSync(full).mode & 0o1000) !== 0
}

/** `anna chat`'s input history: what the user typed, as private as the conversations. */
export const chatHistoryFile = (home: string): string => join(home, "chat_history")

/**
 * Creates `$ANNA_HOME` (0700) if missing and removes group and other permissions from it, from
 * `workspaces/` and from the chat history. Nothing inside workspaces: that belongs to the sandboxes,
 * which mount their own sub-folders. A shared folder used as ANNA_HOME is left alone (doctor says so).
 */
export const secureHome = (home: string) =>
  Effect.gen(function*() {
    mkdirSync(home, { recursive: true, mode: 0o700 })
    if (sharedFolder(home)) {
      return yield* Effect.logWarning(`ANNA_HOME ${home} is a shared folder: provider keys and conversations there may be readable by others (see anna doctor)`)
    }
    for (const path of [home, join(home, "workspaces"), chatHistoryFile(home)]) {
      const problem = Sqlite.tighten(path)
      if (problem !== undefined) yield* Effect.logWarning(`${path} stays open to others: ${problem} (see anna doctor)`)
    }
  })

/** AppConfig from `ANNA_HOME` and `ANNA_LOG_LEVEL`. */
export const layerFromEnv = Layer.effect(AppConfig, Effect.map(Config.all({ home: annaHome, level: logLevel }), ({ home, level }) => pathsAt(home, level)))

/** The migrated database at AppConfig's path, with the home folder made private first. */
export const database = Layer.unwrap(Effect.gen(function*() {
  const app = yield* AppConfig
  yield* secureHome(app.home)
  return Sqlite.layer(app.databasePath)
}))

/** A path of anna's state that group or others can reach, and the mode it should have. */
export interface LoosePath {
  readonly path: string
  /** The current permission bits. */
  readonly mode: number
  readonly want: 0o700 | 0o600
}

/** `$ANNA_HOME`, `workspaces/`, the database files and the chat history, where they exist and group or others have any access. */
export const loosePermissions = (home: string): ReadonlyArray<LoosePath> => {
  const wanted: ReadonlyArray<readonly [string, 0o700 | 0o600]> = [
    [home, 0o700],
    [join(home, "workspaces"), 0o700],
    ...Sqlite.databaseFiles(join(home, "anna.db")).map((f) => [f, 0o600] as const),
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
