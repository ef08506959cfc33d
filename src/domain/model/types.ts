/**
 * The provider port's data: one streaming chat request with tools, the events a model streams back,
 * and the collected response. Messages use the same shape memory stores (`domain/message.ts`), so a
 * conversation goes from memory to any provider without a conversion layer of its own.
 */
import type { Message } from "../message.ts"
import type { ToolDefinition } from "../tool.ts"

export type ProviderType = "anthropic" | "openai" | "openai-response"
export const PROVIDER_TYPES: ReadonlyArray<ProviderType> = ["anthropic", "openai", "openai-response"]

export interface ChatRequest {
  readonly model: string
  readonly system?: string | undefined
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  /** Output cap (default 4,096). */
  readonly maxTokens?: number | undefined
  readonly temperature?: number | undefined
}

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "refusal" | "other"

export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  /** Prompt tokens read from the provider's cache (counted within or besides inputTokens, as the provider reports). */
  readonly cacheReadTokens: number
  readonly cacheWriteTokens: number
}

export const emptyUsage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }

export const addUsage = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
  cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens
})

/**
 * What a model streams. Tool calls are indexed in the order they start; their arguments arrive as
 * JSON text deltas and are parsed once at `tool_call_end`. `usage` may come more than once (e.g. input
 * at the start, output at the end): the values are cumulative, the last one wins per field.
 */
export type ChatEvent =
  | { readonly type: "text_delta"; readonly text: string }
  | { readonly type: "tool_call_start"; readonly index: number; readonly id: string; readonly name: string }
  | { readonly type: "tool_call_delta"; readonly index: number; readonly argumentsDelta: string }
  | {
    readonly type: "tool_call_end"
    readonly index: number
    readonly id: string
    readonly name: string
    readonly input: unknown
  }
  | { readonly type: "usage"; readonly usage: Partial<Usage> }
  | { readonly type: "stop"; readonly reason: StopReason }

export interface ChatResponse {
  /** The assistant message: text and tool_use blocks in the order they were produced. */
  readonly message: Message
  readonly usage: Usage
  readonly stopReason: StopReason
}

export interface ModelInfo {
  readonly id: string
  readonly displayName?: string | undefined
  readonly createdAt?: number | undefined
}

export interface ProviderConfig {
  readonly id: string
  readonly type: ProviderType
  /** Empty for the provider's public endpoint. */
  readonly baseUrl: string
  readonly apiKey: string
  /** Models the user declared (in addition to what listing returns). */
  readonly models: ReadonlyArray<string>
  readonly defaultModel: string
  readonly headers: Readonly<Record<string, string>>
  readonly enabled: boolean
}

/** How a layer talks HTTP: per-request timeout and bounded retries. */
export interface TransportOptions {
  readonly timeoutMs: number
  readonly maxRetries: number
  /** First backoff; doubles each retry, with ±50 % jitter, capped at `maxBackoffMs`. */
  readonly baseBackoffMs: number
  readonly maxBackoffMs: number
}

export const defaultTransport: TransportOptions = {
  timeoutMs: 120_000,
  maxRetries: 3,
  baseBackoffMs: 500,
  maxBackoffMs: 30_000
}

/** Shows a key as `sk-…abcd`: enough to tell keys apart, never enough to use one. */
export const maskKey = (key: string): string =>
  key.length === 0 ? "(none)" : key.length <= 8 ? "…" + key.slice(-2) : `${key.slice(0, 3)}…${key.slice(-4)}`
