/**
 * Calls to a chat platform's API as Effects that retry what the platform says to retry (issue 12,
 * shared by every platform): 429 after the platform's retry hint, 5xx and network failures with
 * exponential backoff (0.5 s doubling, at most 30 s, MAX_ATTEMPTS in all); a call that still fails
 * is logged as an error and fails with the reason, never silently. Other refusals are not retried:
 * the caller decides (a formatting error falls back to plain text, "not modified" is success).
 *
 * A platform supplies `classify` (what a thrown error or an error answer means). Waits use Effect's
 * Clock (TestClock in tests).
 */
import { Data, Duration, Effect, Schedule } from "effect"

export const MAX_ATTEMPTS = 6
const BASE_BACKOFF_MS = 500
const MAX_BACKOFF_MS = 30_000

/** What a failure means: `retry` (429, 5xx, network), `format` (markup the platform cannot parse), `unchanged` (an edit to the same content), `refused` (anything else). */
export type CallErrorKind = "retry" | "format" | "unchanged" | "refused"

/** A failed platform call. */
export class PlatformCallError extends Data.TaggedError("PlatformCallError")<{
  readonly platform: string
  readonly method: string
  readonly kind: CallErrorKind
  /** The HTTP status or the platform's error code. */
  readonly status: number | undefined
  readonly description: string
  readonly retryAfterMs: number | undefined
}> {
  override get message() {
    return `${this.platform} ${this.method}: ${this.status === undefined ? "" : `${this.status} `}${this.description}`
  }
}

/** Base × 2^attempt capped, or the platform's hint. */
export const backoffFor = (e: { readonly retryAfterMs: number | undefined }, attempt: number): Duration.Duration =>
  Duration.millis(e.retryAfterMs ?? Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** attempt))

/** The schedule of a platform call: retries `retry` failures, MAX_ATTEMPTS calls in all. */
export const retrying = <E extends { readonly kind: CallErrorKind; readonly retryAfterMs: number | undefined }>() =>
  Schedule.identity<E>().pipe(
    Schedule.while(({ attempt, input }) => input.kind === "retry" && attempt < MAX_ATTEMPTS),
    Schedule.modifyDelay(({ attempt, input }) => Effect.succeed(backoffFor(input, attempt - 1)))
  )

/** Logs a call that gave up after every retry (the caller still gets the failure). */
export const loudly = <A, E extends { readonly kind: CallErrorKind; readonly description: string }, R>(
  platform: string,
  method: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  effect.pipe(
    Effect.tapError((e) =>
      e.kind === "retry"
        ? Effect.logError(`${platform}: ${method} failed ${MAX_ATTEMPTS} times, giving up: ${e.description}`)
        : Effect.void
    )
  )

/**
 * One platform call, retried as the platform asks; `signal` aborts an in-flight request when the
 * fiber is interrupted. `classify` turns whatever `f` throws into a PlatformCallError.
 */
export const platformCall = <A>(
  platform: string,
  method: string,
  f: (signal: AbortSignal) => Promise<A>,
  classify: (method: string, e: unknown) => PlatformCallError
): Effect.Effect<A, PlatformCallError> =>
  loudly(
    platform,
    method,
    Effect.tryPromise({ try: f, catch: (e) => classify(method, e) }).pipe(Effect.retry(retrying<PlatformCallError>()))
  )

/** A failure of `fetch` itself (no answer): retried. */
export const networkError = (platform: string, method: string, e: unknown): PlatformCallError =>
  new PlatformCallError({
    platform,
    method,
    kind: "retry",
    status: undefined,
    description: `network: ${e instanceof Error ? (e.cause instanceof Error ? `${e.message} (${e.cause.message})` : e.message) : String(e)}`,
    retryAfterMs: undefined
  })

/** An HTTP answer's status as a kind: 429 and 5xx are retried, the rest refused. */
export const kindOfStatus = (status: number): CallErrorKind => (status === 429 || status >= 500 ? "retry" : "refused")

/** The `Retry-After` header in ms (seconds or an HTTP date), if any. */
export const retryAfterHeader = (headers: Headers, now: number): number | undefined => {
  const v = headers.get("retry-after")
  if (v === null) return undefined
  const seconds = Number(v)
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds, 3_600) * 1000
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.min(at - now, 3_600_000))
}
