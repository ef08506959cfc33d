/**
 * One turn of an agent (seed 001, "Agent loop"): the user's message is stored first (so it is never
 * lost), the session is compacted when it needs it (a failure is logged and the turn goes on with
 * the full history — seed 003), then the model is called with the assembled context and the tools;
 * its text streams to the channel; tool calls (several at once when the model made several) run and
 * their results are stored; repeat until the model stops or `maxTurns`. An interrupted turn (/abort)
 * stores an "aborted" result for every call still pending, so history never holds a tool_use
 * without its result.
 */
import { Effect, Option, Stream } from "effect"
import { splitForStorage } from "../../domain/memory/storedSize.ts"
import { estimateTextTokens, type Message, type ToolResultBlock } from "../../domain/message.ts"
import { collectEvent, finishCollect, initialCollect } from "../../domain/model/collect.ts"
import { PROVIDER_ERROR_TAGS, type ProviderError } from "../../domain/model/errors.ts"
import { addUsage, emptyUsage, type StopReason, type Usage } from "../../domain/model/types.ts"
import { errorOf } from "../../domain/runtime/failure.ts"
import type { ResolvedChat, TurnError, TurnEvent, UserMessage } from "../../domain/runtime/types.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import type { Compactor } from "../../services/Compactor.ts"
import type { MemoryProvider } from "../../services/MemoryProvider.ts"
import type { ToolRegistry } from "../../services/ToolRegistry.ts"
import type { UsageLog } from "../../services/UsageLog.ts"
import { runToolCalls } from "./toolCalls.ts"

/** Output tokens asked of the model per call; also kept free in the context budget. */
export const MAX_OUTPUT_TOKENS = 8_192

export interface TurnSetup {
  readonly chat: ResolvedChat
  readonly client: ChatModelClient
  readonly model: string
  readonly system: string
  readonly tools: ToolRegistry["Service"]
  readonly contextTokens: number
  readonly maxTurns: number
  readonly memory: MemoryProvider["Service"]
  readonly compactor: Option.Option<Compactor["Service"]>
  readonly usage: UsageLog["Service"]
  readonly emit: (event: TurnEvent) => Effect.Effect<void>
}

/** What the context may hold: the model's window less the answer, the system prompt and the tools. */
export const assemblyBudget = (setup: Pick<TurnSetup, "contextTokens" | "system" | "tools">): number =>
  Math.max(
    1_000,
    setup.contextTokens - MAX_OUTPUT_TOKENS - estimateTextTokens(setup.system) - estimateTextTokens(JSON.stringify(setup.tools.definitions))
  )

export const runTurn = (setup: TurnSetup, message: UserMessage) =>
  Effect.gen(function*() {
    const { chat, memory, emit } = setup
    const session = { key: chat.sessionKey, agentId: chat.agentId, userId: chat.userId }
    const budget = assemblyBudget(setup)
    const context = { sessionKey: chat.sessionKey, userId: chat.userId, agentId: chat.agentId }
    let usage: Usage = emptyUsage
    let modelCalls = 0
    let toolCalls = 0
    let pending: ReadonlyArray<{ readonly id: string; readonly name: string }> = []

    yield* memory.append(session, [{ role: "user", content: message }])

    if (Option.isSome(setup.compactor)) {
      const compactor = setup.compactor.value
      yield* compactor.needsCompaction(chat.sessionKey, budget).pipe(
        Effect.flatMap((needed) => (needed ? compactor.compact(chat.sessionKey, { budget }) : Effect.succeed(undefined))),
        Effect.tap((report) =>
          report === undefined || !report.compacted
            ? Effect.void
            : emit({ type: "notice", text: `compacted the conversation: ${report.tokensBefore} → ${report.tokensAfter} tokens` })
        ),
        Effect.catch((e) => Effect.logWarning(`compaction before the turn failed, continuing with the full history: ${e.message}`)),
        Effect.withSpan("turn.compaction")
      )
    }

    const callModel = (messages: ReadonlyArray<Message>) =>
      setup.client.stream({
        model: setup.model,
        system: setup.system,
        messages,
        tools: setup.tools.definitions,
        maxTokens: MAX_OUTPUT_TOKENS
      }).pipe(
        Stream.tap((event) => (event.type === "text_delta" ? emit({ type: "text", text: event.text }) : Effect.void)),
        Stream.runFold(() => initialCollect, collectEvent),
        Effect.map(finishCollect)
      )

    const loop = Effect.gen(function*() {
      for (let round = 1; round <= setup.maxTurns; round++) {
        const assembled = yield* memory.assemble(chat.sessionKey, { budget })
        const response = yield* callModel(assembled.messages).pipe(Effect.withSpan("turn.model", { attributes: { round } }))
        modelCalls++
        usage = addUsage(usage, response.usage)
        yield* setup.usage.record({
          providerId: setup.client.provider,
          model: setup.model,
          purpose: "chat",
          sessionKey: chat.sessionKey,
          agentId: chat.agentId,
          userId: chat.userId,
          usage: response.usage
        }).pipe(Effect.ignore)
        const blocks = typeof response.message.content === "string" ? [] : response.message.content
        const calls = blocks.flatMap((b) => (b.type === "tool_use" ? [b] : []))
        if (blocks.length > 0) {
          pending = calls.map((c) => ({ id: c.id, name: c.name }))
          // A reply over the stored-message limit is stored as several messages, so memory keeps all that was shown.
          yield* memory.append(session, splitForStorage(response.message))
        }
        if (calls.length === 0) return response.stopReason as StopReason | "max_turns"
        const results = yield* runToolCalls(setup.tools, calls, context, {
          span: "turn.tool",
          onStart: (call) => emit({ type: "tool_start", id: call.id, name: call.name, input: call.input }),
          onEnd: (call, output, isError) => emit({ type: "tool_end", id: call.id, name: call.name, output, isError })
        })
        toolCalls += calls.length
        yield* memory.append(session, [{ role: "tool_result", content: results }])
        pending = []
      }
      return "max_turns" as const
    })

    const ended = yield* loop.pipe(
      Effect.map((stopReason): { readonly stopReason: StopReason | "max_turns" | "unavailable"; readonly error?: TurnError } => ({ stopReason })),
      Effect.onInterrupt(() =>
        pending.length === 0 ? Effect.void : memory.append(session, [{
          role: "tool_result",
          content: pending.map((p): ToolResultBlock => ({
            type: "tool_result",
            tool_use_id: p.id,
            content: "[aborted: the user stopped this turn before the tool finished]",
            is_error: true
          }))
        }]).pipe(Effect.ignore)
      ),
      // A provider failure ends the turn here (same notice as the runtime's) rather than in the caller,
      // so that `done` carries what failed and the HTTP channel can answer 429/504/400/503 (TurnError).
      Effect.catchTag(PROVIDER_ERROR_TAGS, (e) =>
        emit({ type: "notice", text: `The turn failed: ${e.message}` }).pipe(Effect.as({ stopReason: "unavailable" as const, error: errorOf(e) }))
      )
    )
    if (ended.stopReason === "max_turns") {
      yield* emit({ type: "notice", text: `stopped after ${setup.maxTurns} model calls in one turn (the agent's max_turns)` })
    }
    return { ...ended, usage, modelCalls, toolCalls }
  }).pipe(Effect.withSpan("turn", { attributes: { session: setup.chat.sessionKey } }))

export type TurnOutcome = Effect.Success<ReturnType<typeof runTurn>>
export type TurnFailure = Effect.Error<ReturnType<typeof runTurn>> | ProviderError
