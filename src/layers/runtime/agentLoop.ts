/**
 * The agent loop (seed 001, "Agent loop"), one for the session turn and for the `agent` tool's
 * children: call the model with the conversation and the tools, stream its text out, run the tool
 * calls of its answer (several at once), add their results, and go on until the model stops calling
 * tools or `maxTurns` model calls were made. Every model call's usage is recorded as it completes.
 *
 * What differs between a turn and a child is only where the conversation lives, the `history`:
 * a turn reads its context from memory (assembled within the budget each round) and stores every
 * message; a child keeps its messages in memory and drops them when it ends. If the loop is
 * interrupted (/abort, a deadline) while tool calls are pending, their "aborted" results are added
 * to the history, so a stored conversation never holds a tool_use without its result.
 */
import { Effect } from "effect"
import type { ContentBlock, Message, ToolResultBlock, ToolUseBlock } from "../../domain/message.ts"
import { collectResponse } from "../../domain/model/collect.ts"
import type { ProviderError } from "../../domain/model/errors.ts"
import { addUsage, type ChatResponse, emptyUsage, type StopReason, type Usage } from "../../domain/model/types.ts"
import * as Tracing from "../../domain/observability/tracing.ts"
import type { ToolCallContext } from "../../domain/tool.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import type { ToolRegistry } from "../../domain/tool.ts"
import type { UsageLog } from "../../services/UsageLog.ts"
import { runToolCalls } from "./toolCalls.ts"

/**
 * Output tokens asked of the model per call when the caller says nothing (the `agent` tool's
 * children); a session turn asks for its agent's output reserve (domain/config/agent.ts `outputReserve`).
 */
export const MAX_OUTPUT_TOKENS = 8_192

/** Where the loop's conversation lives. */
export interface LoopHistory<E> {
  /** What the model sees this round. */
  readonly messages: Effect.Effect<ReadonlyArray<Message>, E>
  /** Adds the model's answer or the tool results (the persist hook). */
  readonly append: (message: Message) => Effect.Effect<void, E>
}

export interface LoopHooks {
  readonly onText?: ((text: string) => Effect.Effect<void>) | undefined
  readonly onToolStart?: ((call: ToolUseBlock) => Effect.Effect<void>) | undefined
  readonly onToolEnd?: ((call: ToolUseBlock, output: string, isError: boolean) => Effect.Effect<void>) | undefined
  /** After each complete model answer (before its tool calls run). */
  readonly onResponse?: ((response: ChatResponse) => Effect.Effect<void>) | undefined
}

export interface LoopSetup<E> {
  readonly client: ChatModelClient
  readonly model: string
  readonly system: string
  readonly tools: ToolRegistry
  readonly maxTurns: number
  /** Whose work this is: tools act for it and usage is recorded against it. */
  readonly context: ToolCallContext
  readonly usage: UsageLog["Service"]
  readonly history: LoopHistory<E>
  readonly hooks?: LoopHooks | undefined
  /** Which loop this is (`turn`, `agent`): the `anna.loop` attribute of its model and tool spans. */
  readonly span: string
  /** Output tokens asked of the model per call (default MAX_OUTPUT_TOKENS). */
  readonly maxTokens?: number | undefined
}

export interface LoopResult {
  /** The model's own stop reason, or `max_turns` when it still wanted tools after the last call. */
  readonly stopReason: StopReason | "max_turns"
  readonly usage: Usage
  readonly modelCalls: number
  readonly toolCalls: number
}

/** The text of an assistant message ('' when it only called tools). */
export const textOf = (message: Message): string =>
  typeof message.content === "string"
    ? message.content
    : message.content.flatMap((b: ContentBlock) => (b.type === "text" ? [b.text] : [])).join("")

const aborted = (pending: ReadonlyArray<ToolUseBlock>): Message => ({
  role: "tool_result",
  content: pending.map((p): ToolResultBlock => ({
    type: "tool_result",
    tool_use_id: p.id,
    content: "[aborted: the user stopped this turn before the tool finished]",
    is_error: true
  }))
})

/**
 * Runs the loop. `stats` is updated as the loop goes (usage and counts so far), so a caller that cuts
 * the loop short (a child's timeout) can still report what it cost.
 */
export const runLoop = <E>(setup: LoopSetup<E>, stats: { usage: Usage; modelCalls: number; toolCalls: number } = {
  usage: emptyUsage,
  modelCalls: 0,
  toolCalls: 0
}): Effect.Effect<LoopResult, E | ProviderError> => {
  const hooks = setup.hooks ?? {}
  let pending: ReadonlyArray<ToolUseBlock> = []

  const maxTokens = setup.maxTokens ?? MAX_OUTPUT_TOKENS

  const loop = Effect.gen(function*() {
    for (let round = 1; round <= setup.maxTurns; round++) {
      const messages = yield* setup.history.messages
      const response = yield* collectResponse(
        setup.client.stream({ model: setup.model, system: setup.system, messages, tools: setup.tools.definitions, maxTokens }),
        (event) => (event.type === "text_delta" && hooks.onText !== undefined ? hooks.onText(event.text) : Effect.void)
      ).pipe(
        // Each model call is a span as the OpenTelemetry GenAI conventions describe one (no text in it).
        Tracing.tracedChat(setup.client, setup.model, maxTokens, { "anna.purpose": "turn", "anna.loop": setup.span, "anna.round": round })
      )
      stats.modelCalls++
      stats.usage = addUsage(stats.usage, response.usage)
      yield* setup.usage.record({
        providerId: setup.client.provider,
        model: setup.model,
        purpose: "chat",
        sessionKey: setup.context.sessionKey,
        agentId: setup.context.agentId,
        userId: setup.context.userId,
        usage: response.usage
      }).pipe(Effect.ignore)
      if (hooks.onResponse !== undefined) yield* hooks.onResponse(response)
      const blocks = typeof response.message.content === "string" ? [] : response.message.content
      const calls = blocks.flatMap((b) => (b.type === "tool_use" ? [b] : []))
      if (blocks.length > 0) {
        pending = calls
        yield* setup.history.append(response.message)
      }
      if (calls.length === 0) return response.stopReason
      const results = yield* runToolCalls(setup.tools, calls, setup.context, {
        span: setup.span,
        onStart: hooks.onToolStart,
        onEnd: hooks.onToolEnd
      })
      stats.toolCalls += calls.length
      yield* setup.history.append({ role: "tool_result", content: results })
      pending = []
    }
    return "max_turns" as const
  })

  return loop.pipe(
    Effect.onInterrupt(() => (pending.length === 0 ? Effect.void : setup.history.append(aborted(pending)).pipe(Effect.ignore))),
    Effect.map((stopReason): LoopResult => ({ stopReason, usage: stats.usage, modelCalls: stats.modelCalls, toolCalls: stats.toolCalls }))
  )
}
