/**
 * ProviderRegistry — a ChatModelClient for each configured provider, built from its row by type
 * (anthropic → AnthropicMessages, openai → OpenAiChat, openai-response → OpenAiResponses).
 *
 * Layers: `SdkProviderRegistry.layer` (src/layers/providers/SdkProviderRegistry.ts).
 */
import { Context, type Effect } from "effect"
import type { ProviderDisabled, ProviderNotFound } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { ChatModelClient } from "./ChatModel.ts"

/**
 * Tighter retries for one caller than the registry's transport (each limit is the smaller of the
 * two): a summary made before a turn should not hold the turn for the whole chat retry budget.
 */
export interface RetryLimits {
  readonly maxRetries?: number | undefined
  readonly retryBudgetMs?: number | undefined
}

export class ProviderRegistry extends Context.Service<ProviderRegistry, {
  readonly client: (
    providerId: string,
    limits?: RetryLimits
  ) => Effect.Effect<ChatModelClient, ProviderNotFound | ProviderDisabled | StorageError>
}>()("anna/ProviderRegistry") {}
