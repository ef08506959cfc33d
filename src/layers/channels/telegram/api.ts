/**
 * Telegram Bot API calls (through grammy's `Api`) as Effects that retry what Telegram says to retry:
 * 429 after its `retry_after`, 5xx and network failures with exponential backoff (0.5 s doubling,
 * at most 30 s, MAX_ATTEMPTS in all); a call that still fails is logged as an error and fails with
 * the reason, never silently. 4xx answers other than 429 are not retried: the caller decides (a
 * formatting error falls back to plain text, "message is not modified" is success).
 *
 * Waits use Effect's Clock (TestClock in tests).
 */
import { Data, Duration, Effect, Schedule } from "effect"
import { type Api, GrammyError, HttpError } from "grammy"

export const MAX_ATTEMPTS = 6
const BASE_BACKOFF_MS = 500
const MAX_BACKOFF_MS = 30_000

/** A failed call: `retry` (429, 5xx, network), `format` (entities Telegram cannot parse), `unchanged` (an edit to the same text), `refused` (any other 4xx). */
export class TelegramCallError extends Data.TaggedError("TelegramCallError")<{
  readonly method: string
  readonly kind: "retry" | "format" | "unchanged" | "refused"
  readonly status: number | undefined
  readonly description: string
  readonly retryAfterMs: number | undefined
}> {
  override get message() {
    return `telegram ${this.method}: ${this.status === undefined ? "" : `${this.status} `}${this.description}`
  }
}

/** What a thrown error from grammy means for us. */
export const classify = (method: string, e: unknown): TelegramCallError => {
  if (e instanceof GrammyError) {
    const status = e.error_code
    const description = e.description
    const retryAfter = e.parameters.retry_after
    const kind = status === 429 || status >= 500
      ? "retry"
      : /can't parse entities|can't find end of the entity|unsupported start tag|entity/i.test(description)
      ? "format"
      : /message is not modified/i.test(description)
      ? "unchanged"
      : "refused"
    return new TelegramCallError({
      method,
      kind,
      status,
      description,
      retryAfterMs: typeof retryAfter === "number" ? retryAfter * 1000 : undefined
    })
  }
  const description = e instanceof HttpError ? `network: ${describe(e.error)}` : describe(e)
  return new TelegramCallError({ method, kind: "retry", status: undefined, description, retryAfterMs: undefined })
}

const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Telegram's retry hint, else base × 2^attempt, capped. */
const delayFor = (e: TelegramCallError, attempt: number): Duration.Duration =>
  Duration.millis(e.retryAfterMs ?? Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** attempt))

const retrying = Schedule.identity<TelegramCallError>().pipe(
  Schedule.while(({ attempt, input }) => input.kind === "retry" && attempt < MAX_ATTEMPTS),
  Schedule.modifyDelay(({ attempt, input }) => Effect.succeed(delayFor(input, attempt - 1)))
)

/** The abort signal grammy's methods take (typed by its own AbortController polyfill; Node's is the same at run time). */
export type GrammySignal = NonNullable<Parameters<Api["getMe"]>[0]>

/** One Bot API call, retried as Telegram asks; `signal` aborts an in-flight request when the fiber is interrupted. */
export const call = <A>(method: string, f: (signal: GrammySignal) => Promise<A>): Effect.Effect<A, TelegramCallError> =>
  Effect.tryPromise({ try: (signal) => f(signal as unknown as GrammySignal), catch: (e) => classify(method, e) }).pipe(
    Effect.retry(retrying),
    Effect.tapError((e) =>
      e.kind === "retry"
        ? Effect.logError(`telegram: ${method} failed ${MAX_ATTEMPTS} times, giving up: ${e.description}`)
        : Effect.void
    )
  )
