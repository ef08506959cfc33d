/**
 * ChatModel — the provider port: streaming chat with tools against one configured provider, and
 * model listing. Layers: AnthropicMessages, OpenAiChat, OpenAiResponses, each on the official SDK.
 *
 * Why our own port and not `effect/ai`'s LanguageModel: anna's conversation model is the one memory
 * stores (Anthropic-style blocks, `domain/message.ts`) and its tools are runtime JSON-schema tools
 * (the memory tool generated from capabilities, MCP tools discovered at run time), while
 * `effect/ai` (marked unstable in effect 4.1) centres on Schema-typed Toolkits and its own Prompt
 * parts. A thin port keeps each provider's mapping in one file and our stored shape as the lingua
 * franca; an adapter exposing a ChatModel as an `effect/ai` LanguageModel can come later.
 */
import { Context, type Effect, type Stream } from "effect"
import type { ProviderError } from "../domain/model/errors.ts"
import type { ChatEvent, ChatRequest, ModelInfo, ProviderType } from "../domain/model/types.ts"

export interface ChatModelClient {
  /** Provider id (the `providers` row), e.g. `openai`. */
  readonly provider: string
  readonly type: ProviderType
  readonly defaultModel: string
  /**
   * Streams one response. Failures before the first event (429, 5xx, network) are retried with
   * backoff; after that they end the stream. Interrupting the consumer aborts the HTTP request.
   */
  readonly stream: (request: ChatRequest) => Stream.Stream<ChatEvent, ProviderError>
  readonly listModels: Effect.Effect<ReadonlyArray<ModelInfo>, ProviderError>
}

/** A single provider as a service (tests, one-provider deployments). */
export class ChatModel extends Context.Service<ChatModel, ChatModelClient>()("anna/ChatModel") {}
