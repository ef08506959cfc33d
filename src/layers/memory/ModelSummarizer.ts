/**
 * The model-backed Summarizer: the session's agent's summary model (its cheaper tier when set, else
 * its main model; the default agent's for sessions of unknown agents; the first enabled provider's
 * default model when there are no agents), the prompts of domain/memory/summaryPrompts.ts, a
 * per-session spend guard checked before every call, and every call's usage recorded (failures too).
 * A failure carries its typed cause (the provider's error, its details scrubbed of the provider's
 * secrets; or the provider missing or disabled), so that compaction can tell what a retry could fix.
 *
 * Summary calls retry less than chat (`SUMMARY_LIMITS`), and each provider has a circuit breaker
 * (./summaryBreaker.ts): after a rate limit, server or network failure the provider gets no summary
 * call for a cooldown, and summarize fails at once with `SummarizerCircuitOpen`, which compaction
 * turns into a deterministic summary. A call not made is not a call: not recorded, not counted by
 * the spend guard (checked after the breaker, before every call).
 */
import { Clock, Effect, Exit, Layer, Option } from "effect"
import { type Agent, formatModelRef, type ModelRef, summaryModelOf } from "../../domain/config/agent.ts"
import { SpendGuardExceeded, type SummarizerCause, SummarizerCircuitOpen, SummarizerError } from "../../domain/memory/errors.ts"
import { sessionRefFromKey } from "../../domain/memory/session.ts"
import { summaryPrompt } from "../../domain/memory/summaryPrompts.ts"
import { collectResponse } from "../../domain/model/collect.ts"
import {
  ContextOverflow,
  InvalidRequest,
  ProviderAuthError,
  type ProviderError,
  ProviderNetworkError,
  ProviderRateLimited,
  ProviderServerError
} from "../../domain/model/errors.ts"
import { emptyUsage, providerSecrets, redactSecrets } from "../../domain/model/types.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import { ProviderRegistry, type RetryLimits } from "../../services/ProviderRegistry.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import * as Tracing from "../../domain/observability/tracing.ts"
import { Summarizer, type SummaryRequest } from "../../services/Summarizer.ts"
import { UsageLog } from "../../services/UsageLog.ts"
import * as Breaker from "./summaryBreaker.ts"

/**
 * The transport's limits for summary calls, tighter than chat's (3 retries, 150 s): compaction runs
 * before a turn and the turn waits for it. Two retries (backoff about 0.5 s and 1 s) still ride out a
 * blip, so that one 502 does not make summaries deterministic for a minute, while a provider that
 * fails fast costs the turn about 1.5 s instead of 3.5 s. 20 s bounds the wait for a first byte over
 * all attempts: a provider that hangs holds the turn 20 s instead of 150 s; a rate limit asking for
 * a longer wait fails at once (and the breaker waits that long instead). It happens once per outage.
 */
export const SUMMARY_LIMITS = { maxRetries: 2, retryBudgetMs: 20_000 } satisfies RetryLimits
/** The probe of an open breaker: one request; the breaker's cooldown is the backoff. */
export const PROBE_LIMITS = { maxRetries: 0, retryBudgetMs: 20_000 } satisfies RetryLimits

/** Spend guard when no agent says otherwise: 60 summarizer calls per session per hour. */
export const DEFAULT_MAX_CALLS = 60
export const DEFAULT_WINDOW_SECONDS = 3600

export interface SummaryTarget {
  readonly ref: ModelRef
  readonly agent: Agent | undefined
  /** Why this model, for people: "agent default's summary model", … */
  readonly why: string
}

/** Which model summarizes a session; None when no provider is configured. */
export const resolveSummaryTarget = Effect.fn("ModelSummarizer.resolve")(function*(sessionKey: string) {
  const agents = yield* AgentStore
  const providers = yield* ProviderStore
  const memory = yield* MemoryStore
  const conversation = yield* memory.findConversation(sessionKey)
  const agentId = Option.match(conversation, {
    onNone: () => sessionRefFromKey(sessionKey).agentId,
    onSome: (c) => c.agentId
  })
  const own = agentId === "" ? undefined : yield* agents.get(agentId).pipe(Effect.option, Effect.map(Option.getOrUndefined))
  const agent = own ?? Option.getOrUndefined(yield* agents.defaultAgent)
  const named = agent === undefined ? undefined : summaryModelOf(agent)
  const all = yield* providers.list
  // '' means the provider's default model: name it, so people see which model will run.
  const concrete = (ref: ModelRef): ModelRef =>
    ref.model !== "" ? ref : { ...ref, model: all.find((p) => p.id === ref.providerId)?.defaultModel ?? "" }
  if (agent !== undefined && named !== undefined) {
    const tier = agent.summaryProviderId !== null ? "summary model" : "main model, no summary model set"
    return Option.some<SummaryTarget>({
      ref: concrete(named),
      agent,
      why: `${own === undefined ? "default agent" : "agent"} ${agent.id}'s ${tier}`
    })
  }
  const first = all.find((p) => p.enabled)
  return first === undefined
    ? Option.none<SummaryTarget>()
    : Option.some<SummaryTarget>({
      ref: { providerId: first.id, model: first.defaultModel },
      agent,
      why: `first provider ${first.id}, no agent names a model`
    })
})

/** `e` with its detail scrubbed of `secrets`, so that it can be logged, stored and shown. */
const scrubbed = (e: ProviderError, secrets: ReadonlyArray<string>): ProviderError => {
  const detail = redactSecrets(e.detail, secrets)
  if (detail === e.detail) return e
  switch (e._tag) {
    case "ProviderAuthError":
      return new ProviderAuthError({ provider: e.provider, status: e.status, detail })
    case "ProviderRateLimited":
      return new ProviderRateLimited(
        e.retryAfterMs === undefined ? { provider: e.provider, detail } : { provider: e.provider, retryAfterMs: e.retryAfterMs, detail }
      )
    case "ContextOverflow":
      return new ContextOverflow({ provider: e.provider, detail })
    case "InvalidRequest":
      return new InvalidRequest({ provider: e.provider, status: e.status, detail })
    case "ProviderServerError":
      return new ProviderServerError({ provider: e.provider, status: e.status, detail })
    case "ProviderNetworkError":
      return new ProviderNetworkError({ provider: e.provider, timeout: e.timeout, detail })
  }
}

/** What a finished summary call tells the provider's breaker. */
const outcomeOf = (exit: Exit.Exit<string, SummarizerError | SpendGuardExceeded>): Breaker.Outcome => {
  if (Exit.isSuccess(exit)) return { _tag: "Answered" }
  const error = Option.getOrUndefined(Exit.findErrorOption(exit))
  const cause = error?._tag === "SummarizerError" ? error.cause : undefined
  switch (cause?._tag) {
    case "ProviderRateLimited":
      return { _tag: "Outage", reason: cause.message, retryAfterMs: cause.retryAfterMs }
    case "ProviderServerError":
    case "ProviderNetworkError":
      return { _tag: "Outage", reason: cause.message }
    case "ProviderAuthError":
    case "InvalidRequest":
    case "ContextOverflow":
      return { _tag: "Answered" }
    default:
      return { _tag: "Unknown" }
  }
}

export const make = (options: { readonly maxCallsOverride?: number | undefined } = {}) =>
  Effect.gen(function*() {
    const registry = yield* ProviderRegistry
    const usage = yield* UsageLog
    const breaker = yield* Breaker.make
    const context = yield* Effect.context<AgentStore | ProviderStore | MemoryStore>()
    const fail = (reason: string, cause?: SummarizerCause) =>
      new SummarizerError(cause === undefined ? { reason } : { reason, cause })
    /** The provider's secrets, to scrub its errors of them (an SDK error can quote a request). */
    const secretsOf = (providerId: string) =>
      ProviderStore.use((store) => store.get(providerId)).pipe(
        Effect.provide(context),
        Effect.map(providerSecrets),
        Effect.orElseSucceed((): ReadonlyArray<string> => [])
      )

    /** One summary call to the target's model: the spend guard, the call, its usage recorded. */
    const call = Effect.fn("Summarizer.call")(function*(request: SummaryRequest, { ref, agent }: SummaryTarget, limits: RetryLimits) {
      const maxCalls = options.maxCallsOverride ?? agent?.summaryMaxCalls ?? DEFAULT_MAX_CALLS
      const windowSeconds = agent?.summaryWindowSeconds ?? DEFAULT_WINDOW_SECONDS
      const now = yield* Clock.currentTimeMillis
      const calls = yield* usage.summaryCallsSince(request.sessionKey, now - windowSeconds * 1000).pipe(
        Effect.mapError((e) => fail(e.message))
      )
      if (calls >= maxCalls) {
        return yield* new SpendGuardExceeded({
          sessionKey: request.sessionKey,
          calls,
          windowSeconds,
          limit: maxCalls,
          setBy: options.maxCallsOverride !== undefined ? "run" : agent !== undefined ? "agent" : "default",
          agentId: agent?.id ?? ""
        })
      }
      const client = yield* registry.client(ref.providerId, limits).pipe(
        Effect.mapError((e) => (e._tag === "StorageError" ? fail(e.message) : fail(e.message, e)))
      )
      const model = ref.model === "" ? client.defaultModel : ref.model
      const prompt = summaryPrompt(request)
      const result = yield* Effect.result(collectResponse(client.stream({
        model,
        system: prompt.system,
        messages: [{ role: "user", content: prompt.user }],
        maxTokens: prompt.maxTokens,
        temperature: 0.2
      })).pipe(Tracing.tracedChat(client, model, prompt.maxTokens, { "anna.purpose": "summary" })))
      const entry = {
        providerId: ref.providerId,
        model,
        purpose: "summary" as const,
        sessionKey: request.sessionKey,
        agentId: agent?.id ?? ""
      }
      if (result._tag === "Failure") {
        const cause = scrubbed(result.failure, yield* secretsOf(ref.providerId))
        yield* usage.record({ ...entry, usage: emptyUsage, error: cause.message }).pipe(Effect.ignore)
        return yield* fail(`${formatModelRef({ providerId: ref.providerId, model })}: ${cause.message}`, cause)
      }
      yield* usage.record({ ...entry, usage: result.success.usage }).pipe(Effect.ignore)
      const content = result.success.message.content
      const text = typeof content === "string"
        ? content
        : content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")
      return text
    })

    return Summarizer.of({
      summarize: Effect.fn("Summarizer.summarize")(function*(request: SummaryRequest) {
        const target = yield* resolveSummaryTarget(request.sessionKey).pipe(
          Effect.provide(context),
          Effect.mapError((e) => fail(e.message))
        )
        if (Option.isNone(target)) return yield* fail("no model provider is configured (anna provider add, or anna onboard --from-env)")
        const provider = target.value.ref.providerId
        // Admission and settling cannot be separated by an interruption: a probe left unsettled
        // would keep the breaker open for good.
        return yield* Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(breaker.admit(provider), (admission) =>
            admission._tag === "Skip"
              ? Effect.fail(fail(
                `provider ${provider} is failing, no summary call for now`,
                new SummarizerCircuitOpen({ provider, retryAtMs: admission.open.until, reason: admission.open.reason })
              ))
              : restore(call(request, target.value, admission._tag === "Probe" ? PROBE_LIMITS : SUMMARY_LIMITS)).pipe(
                Effect.onExit((exit) => breaker.settle(provider, admission, outcomeOf(exit)))
              ))
        )
      })
    })
  })

/** Needs ProviderRegistry, UsageLog, AgentStore, ProviderStore and MemoryStore. */
export const layer = (options: { readonly maxCallsOverride?: number | undefined } = {}) =>
  Layer.effect(Summarizer, make(options))
