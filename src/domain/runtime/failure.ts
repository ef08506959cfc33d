/**
 * A turn's failure as the `TurnError` a channel reports (pure). The runtime calls `errorOf` on
 * whatever stopped a turn — a provider error, the turn's deadline, a missing agent or model, a
 * sandbox that is down — and puts the result on the `done` event, so the HTTP channel can answer
 * 429 / 504 / 400 / 502 / 503 instead of a 200 that clients would not back off from.
 *
 * It reads the `_tag` (and the fields) of our tagged errors rather than importing their classes,
 * so any subsystem's errors map without this module depending on them; anything unknown is
 * "unavailable" (the safe answer: the client may retry later).
 */
import type { TurnError } from "./types.ts"

const field = (value: object, key: string): unknown => (value as Record<string, unknown>)[key]

export const errorOf = (failure: unknown): TurnError => {
  if (typeof failure !== "object" || failure === null) return { kind: "unavailable" }
  switch (field(failure, "_tag")) {
    case "ProviderRateLimited": {
      const ms = field(failure, "retryAfterMs")
      return typeof ms === "number" && Number.isFinite(ms)
        ? { kind: "rate_limit", retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)) }
        : { kind: "rate_limit" }
    }
    case "ProviderNetworkError":
      return { kind: field(failure, "timeout") === true ? "timeout" : "unavailable" }
    case "TurnDeadline":
      return { kind: "timeout" }
    case "ContextOverflow":
      return { kind: "too_large" }
    case "ProviderAuthError":
      return { kind: "auth" }
    case "InvalidRequest":
      return { kind: "invalid" }
    // ProviderServerError, NoModel, NoAgent, ProviderDisabled, ProviderNotFound, DockerUnavailable,
    // SandboxFailure, …: nothing the client did; it may try again later.
    default:
      return { kind: "unavailable" }
  }
}
