/**
 * Embedder over the providers' rows: each call reads the provider's current row (a changed key or
 * base URL applies to the next call) and goes through OpenAiEmbeddings, whose SDK is imported on
 * first use (a chunk of its own in the bundled CLI: commands that never embed never load it).
 *
 * The spend guard: an agent may make `summaryMaxCalls` embedding calls per `summaryWindowSeconds`
 * (its summary limit, default 60 per hour; a call embeds up to 64 texts), counted from the
 * UsageLog, where every call is recorded (purpose `embedding`), failures too.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { embeddingModelOf, formatModelRef } from "../../domain/config/agent.ts"
import { EmbeddingError, EmbeddingGuardExceeded } from "../../domain/memory/errors.ts"
import type { DenseQuery } from "../../domain/memory/types.ts"
import { isRetryable } from "../../domain/model/errors.ts"
import { emptyUsage, providerSecrets, redactSecrets } from "../../domain/model/types.ts"
import { embeddingText } from "../../domain/search/dense.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { type EmbedRequest, Embedder } from "../../services/Embedder.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import { UsageLog } from "../../services/UsageLog.ts"

/** The summarizer's defaults (ModelSummarizer), for an agent that is gone. */
const DEFAULT_MAX_CALLS = 60
const DEFAULT_WINDOW_SECONDS = 3600

export const make = Effect.gen(function*() {
  const providers = yield* ProviderStore
  const agents = yield* AgentStore
  const usage = yield* UsageLog
  const store = yield* MemoryStore

  const embed = Effect.fn("Embedder.embed")(function*(request: EmbedRequest) {
    const label = formatModelRef(request.model)
    const fail = (reason: string, retryable: boolean) => new EmbeddingError({ model: label, reason, retryable })
    const agent = Option.getOrUndefined(yield* agents.get(request.agentId).pipe(Effect.option))
    const limit = agent?.summaryMaxCalls ?? DEFAULT_MAX_CALLS
    const windowSeconds = agent?.summaryWindowSeconds ?? DEFAULT_WINDOW_SECONDS
    const now = yield* Clock.currentTimeMillis
    const calls = yield* usage.embeddingCallsSince(request.agentId, now - windowSeconds * 1000).pipe(
      Effect.mapError((e) => fail(e.message, true))
    )
    if (calls >= limit) return yield* new EmbeddingGuardExceeded({ agentId: request.agentId, calls, limit, windowSeconds })
    const config = yield* providers.get(request.model.providerId).pipe(Effect.mapError((e) => fail(e.message, false)))
    if (!config.enabled) return yield* fail(`provider ${config.id} is disabled`, false)
    if (config.type === "anthropic") return yield* fail(`provider ${config.id} is an Anthropic provider, which has no embeddings API`, false)
    const { make: client } = yield* Effect.promise(() => import("./OpenAiEmbeddings.ts"))
    const result = yield* Effect.result(client(config).embed(request.model.model, request.texts))
    const entry = {
      providerId: config.id,
      model: request.model.model,
      purpose: "embedding" as const,
      sessionKey: request.sessionKey,
      agentId: request.agentId,
      userId: request.userId ?? ""
    }
    if (result._tag === "Failure") {
      const reason = redactSecrets(result.failure.message, providerSecrets(config))
      yield* usage.record({ ...entry, usage: emptyUsage, error: reason }).pipe(Effect.ignore)
      const input = result.failure._tag === "InvalidRequest" || result.failure._tag === "ContextOverflow"
      return yield* new EmbeddingError({ model: label, reason, retryable: isRetryable(result.failure), input })
    }
    yield* usage.record({ ...entry, usage: { ...emptyUsage, inputTokens: result.success.inputTokens } }).pipe(Effect.ignore)
    return result.success.vectors
  })

  const queryVector = Effect.fn("Embedder.queryVector")(function*(
    agentId: string,
    query: string,
    who?: { readonly sessionKey?: string | undefined; readonly userId?: string | undefined }
  ) {
    const agent = Option.getOrUndefined(yield* agents.get(agentId).pipe(Effect.option))
    const ref = agent === undefined ? undefined : embeddingModelOf(agent)
    const text = embeddingText(query)
    if (ref === undefined || text === "") return undefined
    const model = formatModelRef(ref)
    // No vector of the model yet (the worker has not run): no call, the search is lexical.
    if (!(yield* store.hasVectors(model).pipe(Effect.orElseSucceed(() => false)))) return undefined
    const result = yield* Effect.result(embed({ agentId, sessionKey: who?.sessionKey ?? "", userId: who?.userId, model: ref, texts: [text] }))
    if (result._tag === "Failure") {
      yield* Effect.logWarning(`memory search: could not embed the query (${result.failure.message}); lexical results only`)
      return undefined
    }
    const vector = result.success[0]
    return vector === undefined ? undefined : ({ model, vector } satisfies DenseQuery)
  })

  return Embedder.of({ embed, queryVector })
})

/** Needs ProviderStore, AgentStore, UsageLog and MemoryStore. */
export const layer = Layer.effect(Embedder, make)
