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

export class ProviderRegistry extends Context.Service<ProviderRegistry, {
  readonly client: (providerId: string) => Effect.Effect<ChatModelClient, ProviderNotFound | ProviderDisabled | StorageError>
}>()("anna/ProviderRegistry") {}
