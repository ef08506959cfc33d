/**
 * ProviderRegistry from the ProviderStore: each call builds the client of the provider's type from
 * its current row, so a changed key or base URL applies to the next call without a restart.
 *
 * The SDK behind each type is imported on first use (a dynamic import, a chunk of its own in the
 * bundled CLI): commands that never call a model — memory, config — never load an SDK, and a
 * gateway with only OpenAI providers never loads Anthropic's.
 */
import { Effect, Layer } from "effect"
import { ProviderDisabled } from "../../domain/config/errors.ts"
import { DEFAULT_RETRY_BUDGET_MS, defaultTransport, type ProviderConfig, type TransportOptions } from "../../domain/model/types.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import { ProviderRegistry, type RetryLimits } from "../../services/ProviderRegistry.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"

/** The client of the provider's type (its SDK loaded on first use). */
export const clientFor = (config: ProviderConfig, transport: TransportOptions = defaultTransport): Effect.Effect<ChatModelClient> => {
  switch (config.type) {
    case "anthropic":
      return Effect.promise(() => import("./AnthropicMessages.ts")).pipe(Effect.map((m) => m.make(config, transport)))
    case "openai":
      return Effect.promise(() => import("./OpenAiChat.ts")).pipe(Effect.map((m) => m.make(config, transport)))
    case "openai-response":
      return Effect.promise(() => import("./OpenAiResponses.ts")).pipe(Effect.map((m) => m.make(config, transport)))
  }
}

/** `transport` with `limits` applied: each the smaller of the two. */
export const limited = (transport: TransportOptions, limits: RetryLimits): TransportOptions => ({
  ...transport,
  maxRetries: Math.min(transport.maxRetries, limits.maxRetries ?? transport.maxRetries),
  retryBudgetMs: Math.min(transport.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS, limits.retryBudgetMs ?? Number.POSITIVE_INFINITY)
})

export const make = (transport: TransportOptions = defaultTransport) =>
  Effect.gen(function*() {
    const store = yield* ProviderStore
    return ProviderRegistry.of({
      client: Effect.fn("ProviderRegistry.client")(function*(id: string, limits?: RetryLimits) {
        const config = yield* store.get(id)
        if (!config.enabled) return yield* new ProviderDisabled({ id })
        return yield* clientFor(config, limits === undefined ? transport : limited(transport, limits))
      })
    })
  })

/** Needs ProviderStore. */
export const layer = (transport: TransportOptions = defaultTransport) => Layer.effect(ProviderRegistry, make(transport))
