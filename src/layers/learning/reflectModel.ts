/**
 * Asking the agent's summary model for a reflection (issue 15): the same model, retry limits and
 * per-session spend guard as summaries (reflection is background work of the summary model, so its
 * calls are recorded with purpose "summary" and count against the same guard), the prompt of
 * domain/learning/reflectionPrompt.ts, and one more request when the reply does not decode (the
 * error quoted). Never fails: when no usable answer comes (no provider, the guard reached, the
 * provider failing, two bad replies) it says why, and the caller writes the heuristic entry.
 */
import { Clock, Effect, Option, Result } from "effect"
import { formatModelRef } from "../../domain/config/agent.ts"
import * as Tracing from "../../domain/observability/tracing.ts"
import { parseReflection, type Reflection, reflectionPrompt, retryMessage } from "../../domain/learning/reflectionPrompt.ts"
import { collectResponse } from "../../domain/model/collect.ts"
import type { Message } from "../../domain/message.ts"
import { emptyUsage } from "../../domain/model/types.ts"
import { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import { UsageLog } from "../../services/UsageLog.ts"
import { DEFAULT_MAX_CALLS, DEFAULT_WINDOW_SECONDS, resolveSummaryTarget, SUMMARY_LIMITS } from "../memory/ModelSummarizer.ts"

/** What the model gave: the reflection, or why there is none (logged; the heuristic takes over). */
export type ModelReflection =
  | { readonly _tag: "Answered"; readonly reflection: Reflection; readonly requests: number }
  | { readonly _tag: "NoAnswer"; readonly reason: string; readonly requests: number }

const textOf = (message: Message): string =>
  typeof message.content === "string"
    ? message.content
    : message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")

/** One reflection of `burst` (the session's messages) by the session's summary model. */
export const reflectWithModel = Effect.fn("Learning.reflectWithModel")(function*(sessionKey: string, burst: ReadonlyArray<Message>) {
  const registry = yield* ProviderRegistry
  const usage = yield* UsageLog
  const noAnswer = (reason: string, requests: number): ModelReflection => ({ _tag: "NoAnswer", reason, requests })

  const resolved = yield* Effect.result(resolveSummaryTarget(sessionKey))
  if (Result.isFailure(resolved)) return noAnswer(`the summary model could not be chosen: ${resolved.failure.message}`, 0)
  if (Option.isNone(resolved.success)) return noAnswer("no model provider is configured", 0)
  const { ref, agent } = resolved.success.value
  const client = yield* registry.client(ref.providerId, SUMMARY_LIMITS).pipe(Effect.result)
  if (Result.isFailure(client)) return noAnswer(client.failure.message, 0)
  const model = ref.model === "" ? client.success.defaultModel : ref.model
  const maxCalls = agent?.summaryMaxCalls ?? DEFAULT_MAX_CALLS
  const windowSeconds = agent?.summaryWindowSeconds ?? DEFAULT_WINDOW_SECONDS
  const prompt = reflectionPrompt(burst)
  const entry = { providerId: ref.providerId, model, purpose: "summary" as const, sessionKey, agentId: agent?.id ?? "" }

  /** One request with the spend guard checked first; the reply's text, or why there is none. */
  const ask = (messages: ReadonlyArray<Message>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const calls = yield* usage.summaryCallsSince(sessionKey, now - windowSeconds * 1000).pipe(Effect.orElseSucceed(() => 0))
      if (calls >= maxCalls) return Result.fail(`spend guard: ${calls} summary calls for this session in ${windowSeconds} s`)
      const result = yield* Effect.result(collectResponse(client.success.stream({
        model,
        system: prompt.system,
        messages,
        maxTokens: prompt.maxTokens,
        temperature: 0.2
      })).pipe(Tracing.tracedChat(client.success, model, prompt.maxTokens, { "anna.purpose": "reflection" })))
      if (Result.isFailure(result)) {
        yield* usage.record({ ...entry, usage: emptyUsage, error: result.failure.message }).pipe(Effect.ignore)
        return Result.fail(`${formatModelRef({ providerId: ref.providerId, model })}: ${result.failure.message}`)
      }
      yield* usage.record({ ...entry, usage: result.success.usage }).pipe(Effect.ignore)
      return Result.succeed(textOf(result.success.message))
    })

  const first: ReadonlyArray<Message> = [{ role: "user", content: prompt.user }]
  const reply = yield* ask(first)
  if (Result.isFailure(reply)) return noAnswer(reply.failure, 1)
  const parsed = parseReflection(reply.success)
  if (Result.isSuccess(parsed)) return { _tag: "Answered", reflection: parsed.success, requests: 1 } satisfies ModelReflection
  yield* Effect.logDebug(`reflection of ${sessionKey}: the answer did not decode, asking once more`, parsed.failure)
  const again = yield* ask([...first, { role: "assistant", content: reply.success }, { role: "user", content: retryMessage(parsed.failure) }])
  if (Result.isFailure(again)) return noAnswer(again.failure, 2)
  const reparsed = parseReflection(again.success)
  return Result.isSuccess(reparsed)
    ? { _tag: "Answered", reflection: reparsed.success, requests: 2 } satisfies ModelReflection
    : noAnswer(`the model's answer did not decode twice: ${reparsed.failure}`, 2)
})
