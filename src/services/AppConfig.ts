/**
 * AppConfig — where anna's state lives and how much it logs, read once at the edge (the
 * environment: `ANNA_HOME`, `ANNA_LOG_LEVEL`) into a typed service, so layers ask for it instead of
 * receiving a `home` string through their factories. It owns the paths derived from the home
 * folder; it does not own what is stored there (the database's configuration is ConfigStore's).
 *
 * Layers: `layerFromEnv` (src/programs/env.ts, the CLI and gateway), `AppConfig.at(home)` (tests
 * and custom deployments that choose their own folder).
 */
import { Context, Layer, type LogLevel } from "effect"
import { join } from "node:path"

export interface AppPaths {
  /** `$ANNA_HOME` (default ~/.anna): private to its owner. */
  readonly home: string
  /** The SQLite database, `$ANNA_HOME/anna.db`. */
  readonly databasePath: string
  /**
   * Agents' operator folders and the sandboxes' workspaces: `ANNA_WORKSPACES`, default
   * `$ANNA_HOME/workspaces`. On a cluster (issue 28) it is storage every node mounts at the same path.
   */
  readonly workspaces: string
  /** The global skills: `ANNA_SKILLS`, default `$ANNA_HOME/skills` (on a cluster, on the shared storage too). */
  readonly skills: string
  /** `anna chat`'s input history. */
  readonly chatHistory: string
  readonly logLevel: LogLevel.LogLevel
}

export interface PathOverrides {
  readonly workspaces?: string | undefined
  readonly skills?: string | undefined
}

export const pathsAt = (home: string, logLevel: LogLevel.LogLevel = "Info", overrides: PathOverrides = {}): AppPaths => ({
  home,
  databasePath: join(home, "anna.db"),
  workspaces: overrides.workspaces ?? join(home, "workspaces"),
  skills: overrides.skills ?? join(home, "skills"),
  chatHistory: join(home, "chat_history"),
  logLevel
})

export class AppConfig extends Context.Service<AppConfig, AppPaths>()("anna/AppConfig") {
  /** The configuration of a home folder chosen by the caller. */
  static readonly at = (home: string, logLevel?: LogLevel.LogLevel, overrides?: PathOverrides) => Layer.succeed(AppConfig, pathsAt(home, logLevel, overrides))
}
