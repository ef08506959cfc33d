/**
 * SessionHash — the home's stand-in for a session key in telemetry (`anna.session.hash` on a turn's
 * span, issue 27): an HMAC of the key with a secret the home generates once and keeps, so the
 * hash is the same across restarts of one home, differs between homes, and cannot be guessed back
 * from the agent, platform and user.
 *
 * Layers: `SessionHash.layer` (src/layers/config/SessionHash.ts).
 */
import { Context } from "effect"

export class SessionHash extends Context.Service<SessionHash, {
  /** 16 hex digits standing for `sessionKey`. */
  readonly of: (sessionKey: string) => string
}>()("anna/SessionHash") {}
