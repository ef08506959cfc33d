/**
 * What the three provider layers share: turning HTTP failures into typed errors, bounded retries
 * with exponential backoff and jitter that honour retry-after, an AbortController tied to the
 * consumer's fiber (interrupting the stream aborts the request), a time-to-first-byte limit per
 * attempt and a budget for all attempts together (see TransportOptions). The SDKs' own retries are
 * off (`maxRetries: 0`) so that all three behave alike and the waits run on Effect's clock; the
 * retries are `Effect.retry` with a Schedule. Collecting a stream into one response is
 * `collectResponse` in domain/model/collect.ts.
 */
import { Clock, Duration, Effect, Random, Schedule, Stream } from "effect"
import {
  ContextOverflow,
  InvalidRequest,
  isRetryable,
  ProviderAuthError,
  type ProviderError,
  ProviderNetworkError,
  ProviderRateLimited,
  ProviderServerError
} from "../../domain/model/errors.ts"
import { type ChatEvent, DEFAULT_RETRY_BUDGET_MS, type TransportOptions } from "../../domain/model/types.ts"

/** Anything header-like: a Headers object or a plain record. */
export type HeaderSource = { get(name: string): string | null } | Readonly<Record<string, string | undefined>> | undefined

const header = (headers: HeaderSource, name: string): string | undefined => {
  if (headers === undefined) return undefined
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined
  }
  return (headers as Readonly<Record<string, string | undefined>>)[name]
}

/** `retry-after-ms`, else `retry-after` in seconds or as an HTTP date; undefined when absent or unreadable. */
export const retryAfterMs = (headers: HeaderSource, now: number = Date.now()): number | undefined => {
  const ms = header(headers, "retry-after-ms")
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.max(0, Number(ms))
  const ra = header(headers, "retry-after")
  if (ra === undefined || ra.trim() === "") return undefined
  const seconds = Number(ra)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(ra)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const OVERFLOW = /context[_ ]length|context window|prompt is too long|too many tokens|maximum context|exceeds? the (model'?s? )?(maximum|context)|input is too long|reduce the length/i

/** What an SDK error says about the HTTP exchange, in SDK-neutral terms. */
export interface HttpFailure {
  readonly status?: number | undefined
  readonly headers?: HeaderSource
  readonly detail: string
  readonly timeout?: boolean | undefined
  readonly code?: string | undefined
}

export const classify = (provider: string, f: HttpFailure): ProviderError => {
  const detail = f.detail.slice(0, 500)
  const status = f.status
  if (status === undefined) return new ProviderNetworkError({ provider, timeout: f.timeout === true, detail })
  if (status === 401 || status === 403) return new ProviderAuthError({ provider, status, detail })
  if (status === 429) {
    const after = retryAfterMs(f.headers)
    return new ProviderRateLimited(after === undefined ? { provider, detail } : { provider, detail, retryAfterMs: after })
  }
  if (status === 413 || ((status === 400 || status === 422) && (f.code === "context_length_exceeded" || OVERFLOW.test(detail)))) {
    return new ContextOverflow({ provider, detail })
  }
  if (status === 408) return new ProviderNetworkError({ provider, timeout: true, detail })
  if (status >= 500 || status === 529) return new ProviderServerError({ provider, status, detail })
  return new InvalidRequest({ provider, status, detail })
}

/** The wait the provider asked for (a rate limit's retry-after), if any. */
const askedWait = (e: ProviderError): number | undefined => (e._tag === "ProviderRateLimited" ? e.retryAfterMs : undefined)

/**
 * The retry policy of `retrying`, stepped with each failure: its delay is the wait before the next
 * attempt. `start` is when the first attempt began (the budget counts from there, not from the first
 * failure, which is where a schedule's own `elapsed` starts).
 */
const retryPolicy = (
  transport: TransportOptions,
  start: number
): Schedule.Schedule<Duration.Duration, ProviderError> => {
  const budget = transport.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS
  return Schedule.exponential(transport.baseBackoffMs).pipe(
    Schedule.setInputType<ProviderError>(),
    // Whether to retry at all: a retryable failure, retries left, and no retry-after beyond our cap.
    Schedule.while(({ attempt, input }) => {
      const asked = askedWait(input)
      return isRetryable(input) && attempt <= transport.maxRetries && !(asked !== undefined && asked > transport.maxBackoffMs)
    }),
    // How long: the provider's retry-after, else base × 2^n with ±50 % jitter, capped.
    Schedule.modifyDelay(({ duration, input }) =>
      Effect.map(Random.next, (r) =>
        askedWait(input) ?? Math.min(transport.maxBackoffMs, Duration.toMillis(duration) * (0.5 + r)))
    ),
    // And only while the wait ends within the budget.
    Schedule.while(({ attempt, duration, input, now }) => {
      const wait = Duration.toMillis(duration)
      return now - start + wait >= budget
        ? Effect.as(
          Effect.logDebug(`provider ${input.provider}: ${input._tag}, retry budget of ${Math.round(budget / 1000)} s spent, giving up`),
          false
        )
        : Effect.as(Effect.logDebug(`provider ${input.provider}: ${input._tag}, retry ${attempt} in ${Math.round(wait)} ms`), true)
    })
  )
}

/**
 * Runs an attempt again on retryable failures, at most `maxRetries` times: after the provider's
 * retry-after when it gave one (giving up at once if that is longer than `maxBackoffMs`), else after
 * base × 2^attempt with ±50 % jitter, capped. No retry starts once the wait would end past
 * `retryBudgetMs` after the first attempt began; each attempt is told how much of the budget is left.
 * Waits and jitter come from Effect's Clock and Random (TestClock and a fixed Random in tests).
 */
export const retrying = <A, R>(
  transport: TransportOptions,
  attempt: (remainingMs: number) => Effect.Effect<A, ProviderError, R>
): Effect.Effect<A, ProviderError, R> =>
  Effect.gen(function*() {
    const budget = transport.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS
    const start = yield* Clock.currentTimeMillis
    const once = Effect.flatMap(Clock.currentTimeMillis, (now) => attempt(Math.max(1, budget - (now - start))))
    return yield* Effect.retry(once, retryPolicy(transport, start))
  })

/** `retrying` for an attempt that needs no deadline of its own (listing models). */
export const withRetries = <A, R>(
  transport: TransportOptions,
  effect: Effect.Effect<A, ProviderError, R>
): Effect.Effect<A, ProviderError, R> => retrying(transport, () => effect)

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`

/** What the SDK's own timeout (the wait for response headers) must be so that ours fire first. */
export const sdkTimeoutMs = (transport: TransportOptions): number =>
  Math.max(transport.timeoutMs, transport.firstByteTimeoutMs ?? 0) + 1_000

/**
 * A provider stream: `open` starts the request with the given AbortSignal and resolves once the
 * response has started; `events` turns the SDK's chunks into ChatEvents.
 *
 * Each attempt must deliver its first chunk (not only the headers: a server can send 200 and then
 * nothing) within `firstByteTimeoutMs`, bounded by what is left of the retry budget; a late attempt
 * is aborted and retried as a timeout. After the first chunk, a stream silent for longer than
 * `timeoutMs` fails with a timeout (that part is not retried: events were already delivered). The
 * controller is aborted when the stream ends for any reason, which cancels an unfinished request.
 */
export const providerStream = <Chunk>(options: {
  readonly provider: string
  readonly transport: TransportOptions
  readonly open: (signal: AbortSignal) => Promise<AsyncIterable<Chunk>>
  readonly toError: (cause: unknown) => ProviderError
  readonly events: (chunks: Stream.Stream<Chunk, ProviderError>) => Stream.Stream<ChatEvent, ProviderError>
}): Stream.Stream<ChatEvent, ProviderError> =>
  Stream.unwrap(
    Effect.gen(function*() {
      const { provider, transport } = options
      const controller = yield* Effect.acquireRelease(
        Effect.sync(() => new AbortController()),
        (c) => Effect.sync(() => c.abort())
      )
      const firstByteMs = transport.firstByteTimeoutMs ?? transport.timeoutMs
      const started = yield* retrying(transport, (remainingMs) => {
        const limit = Math.min(firstByteMs, remainingMs)
        return Effect.tryPromise({
          // `attempt` is aborted when this attempt is interrupted (its first-byte limit passed).
          try: async (attempt) => {
            const iterator = (await options.open(AbortSignal.any([controller.signal, attempt])))[Symbol.asyncIterator]()
            return { iterator, first: await iterator.next() }
          },
          catch: options.toError
        }).pipe(
          Effect.timeoutOrElse({
            duration: limit,
            orElse: () =>
              Effect.fail(new ProviderNetworkError({ provider, timeout: true, detail: `no response within ${seconds(limit)} (first-byte timeout)` }))
          })
        )
      })
      const { iterator, first } = started
      const rest: AsyncIterable<Chunk> = { [Symbol.asyncIterator]: () => iterator }
      // The SDKs' timeout covers the wait for the response headers only; a body that stalls would
      // hang until Node's own 5-minute limit, so silence longer than the timeout fails the stream.
      const chunks = first.done === true ? Stream.empty : Stream.concat(
        Stream.succeed(first.value),
        Stream.fromAsyncIterable(rest, options.toError).pipe(
          Stream.timeoutOrElse({
            duration: transport.timeoutMs,
            orElse: () =>
              Stream.fail(
                new ProviderNetworkError({
                  provider,
                  timeout: true,
                  detail: `the response stream was silent for ${Math.round(transport.timeoutMs / 1000)} s`
                })
              )
          })
        )
      )
      return options.events(chunks)
    })
  )
