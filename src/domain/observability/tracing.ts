/**
 * The attributes of a turn's trace (issue 27), named here once. A turn is one trace (or part of a
 * caller's, through the HTTP channel's `traceparent`):
 *
 *   turn                          gen_ai.operation.name=invoke_agent, anna.channel, gen_ai.agent.id,
 *   │                             anna.session.hash, anna.turn.outcome
 *   ├─ turn.compaction            anna.compaction.outcome, tokens before and after
 *   ├─ turn.assemble              anna.context.budget, anna.context.messages (each model call's context)
 *   ├─ chat {model}               the OpenTelemetry GenAI conventions: gen_ai.operation.name=chat,
 *   │                             gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.*_tokens,
 *   │                             gen_ai.response.finish_reasons
 *   └─ execute_tool {tool}        gen_ai.operation.name=execute_tool, gen_ai.tool.name,
 *      └─ …                       gen_ai.tool.call.id, anna.tool.outcome (the tool's own spans:
 *                                 memory search, sandbox exec, …)
 *
 * What an attribute may hold: ids and names from the configuration, counts, outcomes. Never message
 * text, tool arguments or output, a user id or a session key (its hash stands for it, so one
 * session's turns can be found together: keyed with the home's secret, see `sessionHasher`), nor a
 * name the model made up (`unknown`).
 */
import { Effect, Option } from "effect"
import { createHmac } from "node:crypto"
import type { ProviderType } from "../model/types.ts"

/**
 * A session key's stand-in, keyed with the home's secret (`secret`, SessionHash): the first 16 hex
 * digits of its HMAC-SHA256. Unkeyed, a session key (agent, platform, user id, chat) could be
 * guessed back from its hash; keyed, the hash only finds one session's turns together, and differs
 * between homes.
 */
export const sessionHasher = (secret: string) => (sessionKey: string): string =>
  createHmac("sha256", secret).update(sessionKey, "utf8").digest("hex").slice(0, 16)

/** `gen_ai.provider.name` of a provider type (the conventions' well-known names). */
const genAiProvider = (type: ProviderType): string => (type === "anthropic" ? "anthropic" : "openai")

/** The turn span's attributes, known when it starts; `sessionHash` is the home's (`sessionHasher`). */
export const turnAttributes = (
  chat: { readonly platform: string; readonly agentId: string; readonly sessionKey: string },
  sessionHash: (sessionKey: string) => string
) => ({
  "gen_ai.operation.name": "invoke_agent",
  "gen_ai.agent.id": chat.agentId,
  "anna.channel": chat.platform,
  "anna.session.hash": sessionHash(chat.sessionKey)
})

/** The span the caller runs in, for a turn to continue (`SendOptions.parentSpan`); undefined outside any. */
export const currentSpan = Effect.map(Effect.option(Effect.currentParentSpan), Option.getOrUndefined)

/** A model call's span name and the attributes known before it answers (kind client). */
const chatSpan = (client: { readonly type: ProviderType; readonly provider: string }, model: string, maxTokens: number) => ({
  name: `chat ${model}`,
  attributes: {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": genAiProvider(client.type),
    "gen_ai.request.model": model,
    "gen_ai.request.max_tokens": maxTokens,
    "anna.provider.id": client.provider
  }
})

/** What a model call's span learns from its answer. */
const chatResult = (response: { readonly stopReason: string; readonly usage: { readonly inputTokens: number; readonly outputTokens: number } }) => ({
  "gen_ai.usage.input_tokens": response.usage.inputTokens,
  "gen_ai.usage.output_tokens": response.usage.outputTokens,
  "gen_ai.response.finish_reasons": [response.stopReason]
})

/** A tool call's span name and attributes; `tool` is the name when the agent has that tool, else `unknown`. */
export const toolSpan = (tool: string, callId: string) => ({
  name: `execute_tool ${tool}`,
  attributes: {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": tool,
    // The model writes the id: kept only when it looks like one.
    "gen_ai.tool.call.id": /^[\w.:-]{1,128}$/.test(callId) ? callId : "unknown"
  }
})

/**
 * A model call (`call`, collecting one response) as its span: `chat {model}`, kind client, the GenAI
 * attributes known before it and those its answer tells; `extra` adds anna's own (`anna.purpose`,
 * the loop and round). The turns' loop, the summarizer and reflection use it alike.
 */
export const tracedChat = (
  client: { readonly type: ProviderType; readonly provider: string },
  model: string,
  maxTokens: number,
  extra: Readonly<Record<string, string | number>>
) =>
<A extends Parameters<typeof chatResult>[0], E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const span = chatSpan(client, model, maxTokens)
  return call.pipe(
    Effect.tap((r) => Effect.annotateCurrentSpan(chatResult(r))),
    Effect.withSpan(span.name, { kind: "client", attributes: { ...span.attributes, ...extra } })
  )
}
