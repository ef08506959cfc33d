/**
 * Telegram Bot API calls (through grammy's `Api`) as Effects, retried as Telegram says
 * (shared/calls.ts: 429 after its `retry_after`, 5xx and network failures with backoff, loud when
 * it gives up). What a grammy error means: `format` for entities Telegram cannot parse (the reply
 * falls back to plain text), `unchanged` for an edit to the same text (success for us).
 */
import type { Effect } from "effect"
import { type Api, GrammyError, HttpError } from "grammy"
import { kindOfStatus, networkError, PlatformCallError, platformCall } from "../shared/calls.ts"

export { MAX_ATTEMPTS } from "../shared/calls.ts"

/** A failed Telegram call (the shared platform call error). */
export type TelegramCallError = PlatformCallError

const PLATFORM = "telegram"

/** What a thrown error from grammy means for us. */
export const classify = (method: string, e: unknown): PlatformCallError => {
  if (e instanceof GrammyError) {
    const status = e.error_code
    const description = e.description
    const retryAfter = e.parameters.retry_after
    const kind = status === 429 || status >= 500
      ? kindOfStatus(status)
      : /can't parse entities|can't find end of the entity|unsupported start tag|entity/i.test(description)
      ? "format"
      : /message is not modified/i.test(description)
      ? "unchanged"
      : "refused"
    return new PlatformCallError({
      platform: PLATFORM,
      method,
      kind,
      status,
      description,
      retryAfterMs: typeof retryAfter === "number" ? retryAfter * 1000 : undefined
    })
  }
  return networkError(PLATFORM, method, e instanceof HttpError ? e.error : e)
}

/** The abort signal grammy's methods take (typed by its own AbortController polyfill; Node's is the same at run time). */
export type GrammySignal = NonNullable<Parameters<Api["getMe"]>[0]>

/** One Bot API call, retried as Telegram asks; `signal` aborts an in-flight request when the fiber is interrupted. */
export const call = <A>(method: string, f: (signal: GrammySignal) => Promise<A>): Effect.Effect<A, PlatformCallError> =>
  platformCall(PLATFORM, method, (signal) => f(signal as unknown as GrammySignal), classify)
