/**
 * SessionHash from the home's secret: 32 random bytes generated the first time a gateway (or any
 * process running turns) starts on the home, kept in the database's settings table under
 * `telemetry.session_hash_key` (not a setting `anna settings` lists or changes; it travels with the
 * database, as the home's other state does), and read once when the layer is built.
 */
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { sessionHasher } from "../../domain/observability/tracing.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { SessionHash } from "../../services/SessionHash.ts"

/** Where the secret is kept (the settings table). */
export const SESSION_HASH_KEY = "telemetry.session_hash_key"

export const layer = Layer.effect(
  SessionHash,
  Effect.gen(function*() {
    const secret = yield* (yield* ConfigStore).settingOnce(SESSION_HASH_KEY, () => randomBytes(32).toString("base64url"))
    return SessionHash.of({ of: sessionHasher(secret) })
  })
)
