/**
 * The environment, read once at the edge: `ANNA_HOME` (state folder, default ~/.anna) and
 * `ANNA_LOG_LEVEL`. Nothing else in anna reads `process.env`.
 */
import { Config, Effect, Layer, type LogLevel, References } from "effect"
import { homedir } from "node:os"
import { join } from "node:path"
import * as Sqlite from "../layers/Sqlite.ts"

export const annaHome = Config.String("ANNA_HOME").pipe(Config.withDefault(join(homedir(), ".anna")))

export const dbPath = Effect.map(annaHome, (home) => join(home, "anna.db"))

const LEVELS = ["All", "Trace", "Debug", "Info", "Warn", "Error", "Fatal", "None"] as const

/** `ANNA_LOG_LEVEL` (trace, debug, info, warn, error, none; default info), case-insensitive. */
export const logLevel = Config.String("ANNA_LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.map((s): LogLevel.LogLevel => LEVELS.find((l) => l.toLowerCase() === s.trim().toLowerCase()) ?? "Info")
)

export const withLogLevel = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.flatMap(logLevel, (level) => Effect.provideService(self, References.MinimumLogLevel, level))

/** The migrated database at `$ANNA_HOME/anna.db`. */
export const database = Layer.unwrap(Effect.map(dbPath, Sqlite.layer))

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
