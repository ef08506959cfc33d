/**
 * ProviderRegistry from the ProviderStore: each call builds the client of the provider's type from
 * its current row, so a changed key or base URL applies to the next call without a restart.
 */
import { Effect, Layer } from "effect"
import { ProviderDisabled } from "../../domain/config/errors.ts"
import { defaultTransport, type ProviderConfig, type TransportOptions } from "../../domain/model/types.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import { ProviderStore } from "../../services/ProviderStore.ts"
import * as AnthropicMessages from "./AnthropicMessages.ts"
import * as OpenAiChat from "./OpenAiChat.ts"
import * as OpenAiResponses from "./OpenAiResponses.ts"

export const clientFor = (config: ProviderConfig, transport: TransportOptions = defaultTransport): ChatModelClient => {
  switch (config.type) {
    case "anthropic":
      return AnthropicMessages.make(config, transport)
    case "openai":
      return OpenAiChat.make(config, transport)
    case "openai-response":
      return OpenAiResponses.make(config, transport)
  }
}

export const make = (transport: TransportOptions = defaultTransport) =>
  Effect.gen(function*() {
    const store = yield* ProviderStore
    return ProviderRegistry.of({
      client: (id) =>
        store.get(id).pipe(
          Effect.flatMap((config) =>
            config.enabled ? Effect.succeed(clientFor(config, transport)) : Effect.fail(new ProviderDisabled({ id }))
          )
        )
    })
  })

/** Needs ProviderStore. */
export const layer = (transport: TransportOptions = defaultTransport) => Layer.effect(ProviderRegistry, make(transport))
