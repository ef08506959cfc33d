/**
 * One turn of an agent's session (seed 001, "Agent loop"): the user's message is stored first (so it
 * is never lost), the session is compacted when that is worth it (a failure is logged and the turn
 * goes on with the full history — seed 003), then the agent loop (./agentLoop.ts) runs over the
 * session's memory: each round the model gets the context assembled within the budget, and every
 * answer and tool result is stored. Text and tool activity stream to the channel as TurnEvents.
 *
 * A message a channel answers again after a crash (`resumed`) is not stored twice; when its first
 * attempt also stored the whole answer (the crash came while the reply was being delivered), that
 * answer is given again as it was and the model is not asked a second time, so that a platform
 * that cannot edit (QQ, WeChat) finishes the reply it began with parts of the same answer.
 *
 * Windows of any size (issue 11): the output reserve — what each model call asks for and what the
 * budget leaves free — is the agent's setting or proportional to its window (`outputReserve`), so a
 * 6k-token local model is neither asked for 8k of output nor left a 1k context. Compaction runs only
 * when a plan of it gains a meaningful share of the budget (`Compactor.worthCompacting`), goes that
 * far below the threshold (`compactionTarget`), makes at most MAX_SUMMARIZER_CALLS_PER_TURN summarizer
 * calls (the rest waits for the next turn), and says what it did as a status notice, which the HTTP
 * channel keeps out of the answer's content.
 */
import { Effect, Option } from "effect"
import { outputReserve } from "../../domain/config/agent.ts"
import { compactionTarget } from "../../domain/memory/fit.ts"
import { DEFAULT_CONTEXT_THRESHOLD } from "../../domain/memory/types.ts"
import { splitForStorage } from "../../domain/memory/storedSize.ts"
import { estimateTextTokens, type NewMessage } from "../../domain/message.ts"
import { PROVIDER_ERROR_TAGS } from "../../domain/model/errors.ts"
import * as Metrics from "../../domain/observability/metrics.ts"
import { emptyUsage, type StopReason } from "../../domain/model/types.ts"
import { errorOf } from "../../domain/runtime/failure.ts"
import type { ResolvedChat, TurnError, TurnEvent, UserMessage } from "../../domain/runtime/types.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import type { Compactor } from "../../services/Compactor.ts"
import type { MemoryProvider } from "../../services/MemoryProvider.ts"
import type { ToolRegistry } from "../../domain/tool.ts"
import type { UsageLog } from "../../services/UsageLog.ts"
import { MAX_OUTPUT_TOKENS, runLoop } from "./agentLoop.ts"

export { MAX_OUTPUT_TOKENS }

export interface TurnSetup {
  readonly chat: ResolvedChat
  readonly client: ChatModelClient
  readonly model: string
  readonly system: string
  readonly tools: ToolRegistry
  readonly contextTokens: number
  /** The agent's output reserve setting (0 or absent: proportional to the window). */
  readonly maxOutputTokens?: number | undefined
  readonly maxTurns: number
  readonly memory: MemoryProvider["Service"]
  readonly compactor: Option.Option<Compactor["Service"]>
  readonly usage: UsageLog["Service"]
  readonly emit: (event: TurnEvent) => Effect.Effect<void>
  /** The channel answers this message again after a crash (SendOptions.resumed). */
  readonly resumed?: boolean | undefined
}

/** Summarizer calls one turn's compaction may make; what is left waits for the next turn. */
export const MAX_SUMMARIZER_CALLS_PER_TURN = 8

/** The least assembly budget, unless the window less the output reserve is smaller still. */
export const MIN_ASSEMBLY_BUDGET = 1_000

/** Output tokens each model call of the turn asks for, also kept free in the window. */
export const turnOutputTokens = (setup: Pick<TurnSetup, "contextTokens" | "maxOutputTokens">): number =>
  outputReserve(setup.contextTokens, setup.maxOutputTokens ?? 0)

/**
 * What the context may hold: the model's window less the output reserve, the system prompt and the
 * tools; at least MIN_ASSEMBLY_BUDGET (or the window less the reserve, when that is smaller).
 */
export const assemblyBudget = (setup: Pick<TurnSetup, "contextTokens" | "maxOutputTokens" | "system" | "tools">): number => {
  const room = setup.contextTokens - turnOutputTokens(setup)
  return Math.max(
    Math.min(MIN_ASSEMBLY_BUDGET, room),
    room - estimateTextTokens(setup.system) - estimateTextTokens(JSON.stringify(setup.tools.definitions))
  )
}

/** How far a resumed message got before the crash: `new` (not stored), `stored` (stored, unanswered), or `answered` with the stored answer's text. */
type Progress = { readonly kind: "new" | "stored" } | { readonly kind: "answered"; readonly text: string }

/** Messages of the fresh tail looked at for a resumed message's answer. */
const RESUME_TAIL = 64

const textOf = (m: { readonly content: string | ReadonlyArray<{ readonly type: string; readonly text?: string }> }): string =>
  typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text ?? "" : "")).join("")

/**
 * Where a message answered again after a crash stands in the session: its first attempt stored it
 * (the last message), or also stored the whole answer (the crash came while the reply was being
 * delivered: the answer is given again as it was, not asked of the model a second time, so that the
 * parts a platform already shows belong to the same answer and memory holds it once).
 */
const resumedProgress = (memory: MemoryProvider["Service"], sessionKey: string, message: UserMessage) =>
  memory.assemble(sessionKey, { budget: 1_000_000, freshTail: RESUME_TAIL, tailShare: 1 }).pipe(
    Effect.map((a): Progress => {
      const lastUser = a.messages.findLastIndex((m) => m.role === "user")
      const user = a.messages[lastUser]
      if (user === undefined || JSON.stringify(user.content) !== JSON.stringify(message)) return { kind: "new" }
      const after = a.messages.slice(lastUser + 1)
      const last = after.at(-1)
      if (last === undefined) return { kind: "stored" }
      const finished = last.role === "assistant" && (typeof last.content === "string" || last.content.every((b) => b.type !== "tool_use"))
      const answers = after.filter((m) => m.role === "assistant" && !isNotAnswered(m))
      // A turn cut short among its tool calls, or stopped before the model answered (its marker), runs again.
      return finished && answers.length > 0 ? { kind: "answered", text: answers.map(textOf).join("") } : { kind: "new" }
    }),
    Effect.orElseSucceed((): Progress => ({ kind: "new" }))
  )

export const runTurn = (setup: TurnSetup, message: UserMessage) =>
  Effect.gen(function*() {
    const { chat, memory, emit } = setup
    const session = { key: chat.sessionKey, agentId: chat.agentId, userId: chat.userId }
    const budget = assemblyBudget(setup)
    // The conversation as stored now, not as cached: its user may have been removed (and the id given
    // to someone new) by another process since the last turn.
    yield* memory.bootstrap(session)

    const progress: Progress = setup.resumed === true ? yield* resumedProgress(memory, chat.sessionKey, message) : { kind: "new" }
    if (progress.kind === "answered") {
      if (progress.text !== "") yield* emit({ type: "text", text: progress.text })
      return { stopReason: "end_turn" as StopReason | "max_turns" | "unavailable", usage: emptyUsage, modelCalls: 0, toolCalls: 0 }
    }
    if (progress.kind === "new") yield* memory.append(session, [{ role: "user", content: message }])

    if (Option.isSome(setup.compactor)) {
      const compactor = setup.compactor.value
      yield* compactor.worthCompacting(chat.sessionKey, budget).pipe(
        Effect.flatMap((worth) =>
          worth
            ? Metrics.compaction(
              "auto",
              compactor.compact(chat.sessionKey, {
                budget,
                target: compactionTarget(budget, DEFAULT_CONTEXT_THRESHOLD),
                full: true,
                maxSummarizerCalls: MAX_SUMMARIZER_CALLS_PER_TURN
              })
            )
            : Effect.succeed(undefined)
        ),
        Effect.tap((report) =>
          report === undefined || !report.compacted
            ? Effect.void
            : emit({
              type: "notice",
              status: true,
              text: `compacted the conversation: ${report.tokensBefore} → ${report.tokensAfter} tokens`
            })
        ),
        Effect.tap((report) =>
          Effect.annotateCurrentSpan(
            report === undefined
              ? { "anna.compaction.outcome": "not_worth_it" }
              : {
                "anna.compaction.outcome": report.compacted ? "compacted" : "unchanged",
                "anna.compaction.tokens_before": report.tokensBefore,
                "anna.compaction.tokens_after": report.tokensAfter
              }
          )
        ),
        Effect.catch((e) => Effect.logWarning(`compaction before the turn failed, continuing with the full history: ${e.message}`)),
        Effect.withSpan("turn.compaction")
      )
    }

    const stats = { usage: emptyUsage, modelCalls: 0, toolCalls: 0 }
    // A turn that ends before the model answered leaves a marker instead of a lone user message, so the
    // next turn's history says what happened and still alternates.
    let answered = false
    const unanswered = (why: string) => (answered ? Effect.void : memory.append(session, [notAnswered(why)]).pipe(Effect.ignore))
    const ended = yield* runLoop({
      client: setup.client,
      model: setup.model,
      system: setup.system,
      tools: setup.tools,
      maxTurns: setup.maxTurns,
      context: { sessionKey: chat.sessionKey, userId: chat.userId, agentId: chat.agentId },
      usage: setup.usage,
      span: "turn",
      maxTokens: turnOutputTokens(setup),
      history: {
        messages: memory.assemble(chat.sessionKey, { budget }).pipe(
          Effect.tap((a) => Effect.annotateCurrentSpan({ "anna.context.budget": budget, "anna.context.messages": a.messages.length })),
          Effect.map((a) => a.messages),
          Effect.withSpan("turn.assemble")
        ),
        // A reply over the stored-message limit is stored as several messages, so memory keeps all that was shown.
        append: (m) => {
          if (m.role === "assistant") answered = true
          return memory.append(session, m.role === "assistant" ? splitForStorage(m) : [m])
        }
      },
      hooks: {
        onText: (text) => emit({ type: "text", text }),
        onToolStart: (call) => emit({ type: "tool_start", id: call.id, name: call.name, input: call.input }),
        onToolEnd: (call, output, isError) => emit({ type: "tool_end", id: call.id, name: call.name, output, isError })
      }
    }, stats).pipe(
      Effect.map((r): { readonly stopReason: StopReason | "max_turns" | "unavailable"; readonly error?: TurnError } => ({ stopReason: r.stopReason })),
      // A provider failure ends the turn here (same notice as the runtime's) rather than in the caller,
      // so that `done` carries what failed and the HTTP channel can answer 429/504/400/503 (TurnError).
      Effect.catchTag(PROVIDER_ERROR_TAGS, (e) =>
        unanswered(e.message).pipe(
          Effect.andThen(emit({ type: "notice", text: `The turn failed: ${e.message}` })),
          Effect.as({ stopReason: "unavailable" as const, error: errorOf(e) })
        )
      ),
      Effect.onInterrupt(() => unanswered("the turn was stopped before the model answered"))
    )
    if (ended.stopReason === "max_turns") {
      yield* emit({ type: "notice", text: `stopped after ${setup.maxTurns} model calls in one turn (the agent's max_turns)` })
    }
    return { ...ended, usage: stats.usage, modelCalls: stats.modelCalls, toolCalls: stats.toolCalls }
  })

export type TurnOutcome = Effect.Success<ReturnType<typeof runTurn>>

/** Longest reason kept in a "not answered" marker. */
const MAX_REASON = 300

/** The assistant message stored for a user message that got no answer (and why). */
export const notAnswered = (why: string): NewMessage => ({
  role: "assistant",
  content: `[not answered: ${why.length > MAX_REASON ? `${why.slice(0, MAX_REASON - 1)}…` : why}]`
})

/** Whether `m` is such a marker. */
const isNotAnswered = (m: { readonly role: string; readonly content: unknown }): boolean =>
  m.role === "assistant" && typeof m.content === "string" && m.content.startsWith("[not answered: ") && m.content.endsWith("]")
