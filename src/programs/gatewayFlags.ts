/**
 * The gateway's flags, shared by `anna gateway` and `anna` alone (which runs the gateway too, so
 * `anna --port P` and `npm start -- --port P` work as `anna gateway --port P`). Kept apart from
 * gateway.ts so the root command has them without loading the gateway.
 */
import { Flag } from "effect/cli"

export const host = Flag.String("host").pipe(Flag.withDescription("HTTP channel address (default: the channel's setting, 127.0.0.1)"), Flag.optional)
export const port = Flag.Int("port").pipe(Flag.withDescription("HTTP channel port, 0 for any free one (default: the channel's setting, 8787)"), Flag.optional)

/** PostgreSQL for the gateway's state (wins over ANNA_DATABASE_URL); a secret, so Redacted. */
export const databaseUrl = Flag.Redacted("database-url").pipe(
  Flag.withDescription("PostgreSQL database for anna's state, postgres://USER:PASSWORD@HOST:5432/DATABASE (default: ANNA_DATABASE_URL, else $ANNA_HOME/anna.db)"),
  Flag.optional
)

/** The root's flags, as a command line may give them before anything else. */
export const FLAG_NAMES = ["--host", "--port", "--database-url"] as const
