/**
 * A circuit breaker per summary provider (issue 10). Without it, a summary provider answering 5xx,
 * 429 or nothing made every compaction — so every turn of every long session — wait for the
 * transport's retries again. After a call whose retries are spent on such a failure, the provider is
 * open: no summary call goes to it for a cooldown (60 s, doubling while it keeps failing, at most
 * 10 min; a rate limit's longer retry-after wins), and compaction writes deterministic summaries
 * instead. Once the cooldown has passed one call at a time probes the provider (concurrent ones stay
 * deterministic); an answer closes the breaker, a failure opens it again for twice as long. One
 * warning when it opens, one info line when it closes, debug lines in between.
 *
 * The state lives in the ModelSummarizer layer (one per process, as the layer is built once):
 * only summary calls go through it, so it needs no contract of its own. Chat calls are not
 * affected: a turn reports its own provider failures. Times come from Effect's Clock.
 */
import { Clock, Effect, Ref } from "effect"
import * as Metrics from "../../domain/observability/metrics.ts"

export const FIRST_COOLDOWN_MS = 60_000
export const MAX_COOLDOWN_MS = 600_000

/** An open breaker: no summary call to its provider before `until`, then one probe at a time. */
export interface Open {
  readonly until: number
  /** This opening's own cooldown (before a retry-after stretched `until`); the next one doubles it. */
  readonly cooldownMs: number
  /** The failure that opened it, for people. */
  readonly reason: string
  /** A probe is under way: other summaries stay deterministic until it settles. */
  readonly probing: boolean
}

/** Whether a summary may call the provider: as usual, as the probe of an open breaker, or not at all. */
export type Admission =
  | { readonly _tag: "Call" }
  | { readonly _tag: "Probe" }
  | { readonly _tag: "Skip"; readonly open: Open }

/**
 * How a call ended, for the breaker: the provider answered (a summary, or a refusal such as bad
 * credentials: it is up), it is out (rate limit, server or network error, retries spent), or
 * nothing tells (no request was made, the session's spend guard stopped it, it was interrupted).
 */
export type Outcome =
  | { readonly _tag: "Answered" }
  | { readonly _tag: "Outage"; readonly reason: string; readonly retryAfterMs?: number | undefined }
  | { readonly _tag: "Unknown" }

export type Transition = "opened" | "reopened" | "closed" | "none"

export const admit = (open: Open | undefined, now: number): readonly [Admission, Open | undefined] => {
  if (open === undefined) return [{ _tag: "Call" }, undefined]
  if (open.probing || now < open.until) return [{ _tag: "Skip", open }, open]
  return [{ _tag: "Probe" }, { ...open, probing: true }]
}

const opening = (cooldownMs: number, reason: string, now: number, retryAfterMs: number | undefined): Open => ({
  until: now + Math.max(cooldownMs, retryAfterMs ?? 0),
  cooldownMs,
  reason,
  probing: false
})

export const settle = (
  open: Open | undefined,
  admission: Admission,
  outcome: Outcome,
  now: number
): readonly [Transition, Open | undefined] => {
  const probe = admission._tag === "Probe"
  switch (outcome._tag) {
    case "Unknown":
      return ["none", open !== undefined && probe ? { ...open, probing: false } : open]
    case "Answered":
      return open === undefined ? ["none", undefined] : ["closed", undefined]
    case "Outage":
      if (open === undefined) return ["opened", opening(FIRST_COOLDOWN_MS, outcome.reason, now, outcome.retryAfterMs)]
      if (probe) {
        return ["reopened", opening(Math.min(MAX_COOLDOWN_MS, open.cooldownMs * 2), outcome.reason, now, outcome.retryAfterMs)]
      }
      // A call that began before the breaker opened: it changes nothing but a longer retry-after.
      return ["none", { ...open, until: Math.max(open.until, now + (outcome.retryAfterMs ?? 0)) }]
  }
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`

export interface SummaryBreaker {
  readonly admit: (provider: string) => Effect.Effect<Admission>
  readonly settle: (provider: string, admission: Admission, outcome: Outcome) => Effect.Effect<void>
}

export const make: Effect.Effect<SummaryBreaker> = Effect.gen(function*() {
  const state = yield* Ref.make<ReadonlyMap<string, Open>>(new Map())
  const put = (map: ReadonlyMap<string, Open>, provider: string, open: Open | undefined) => {
    const next = new Map(map)
    if (open === undefined) next.delete(provider)
    else next.set(provider, open)
    return next
  }
  return {
    admit: (provider) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.modify(state, (map) => {
          const [admission, open] = admit(map.get(provider), now)
          return [admission, open === map.get(provider) ? map : put(map, provider, open)]
        })),
    settle: (provider, admission, outcome) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const [transition, open] = yield* Ref.modify(state, (map) => {
          const [t, next] = settle(map.get(provider), admission, outcome, now)
          return [[t, next] as const, put(map, provider, next)]
        })
        if (transition !== "none") yield* Metrics.summarizerBreaker(provider, open !== undefined)
        const wait = open === undefined ? "" : seconds(open.until - now)
        switch (transition) {
          case "opened":
            return yield* Effect.logWarning(
              `summarizer: ${open?.reason ?? "failed"}; no summary calls to provider ${provider} for ${wait} ` +
                `(deterministic summaries, mode truncated), then one call to see whether it is back`
            )
          case "reopened":
            return yield* Effect.logDebug(`summarizer: provider ${provider} still failing (${open?.reason ?? ""}); next try in ${wait}`)
          case "closed":
            return yield* Effect.logInfo(`summarizer: provider ${provider} answers again; summaries come from its model again`)
          case "none":
            return
        }
      })
  }
})
