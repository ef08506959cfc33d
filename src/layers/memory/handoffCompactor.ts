/**
 * Handoff compaction, memory/simple's Compactor (seed 003): the messages of Simple's view outside
 * the fresh tail (default 20, unit-aligned) become ONE structured summary — Goal, Progress, Key
 * Decisions, Files Changed, Current State, Blockers / Gotchas, Next Steps — written by the
 * Summarizer with the previous summary's text folded in, and committed as an ordinary leaf summary
 * of exactly those messages (so the DAG stays lossless and LCM reads it after a switch). One step
 * per call, `full` or not. Token counts are those of Simple's view (summary + acknowledgement +
 * the messages after it), the context memory/simple actually assembles.
 *
 * Nothing is stopped or restarted: compaction only writes rows, and the next assembly reads them.
 * With a budget, the fresh tail and the summary's target are also capped by shares of it (fit.ts).
 */
import { Effect, Option } from "effect"
import { CompactionFailed } from "../../domain/memory/errors.ts"
import { tailTokensOf, worthCompacting } from "../../domain/memory/fit.ts"
import {
  HANDOFF_FRAME_TOKENS,
  handoffContextTokens,
  handoffTarget,
  planHandoff,
  viewTokens,
  worthHandoff
} from "../../domain/memory/handoff.ts"
import { summaryContextTokens } from "../../domain/memory/render.ts"
import { formatSummaryId } from "../../domain/memory/session.ts"
import {
  type CompactionReport,
  type CompactOptions,
  DEFAULT_CONTEXT_THRESHOLD,
  DEFAULT_FRESH_TAIL,
  spendGuardStop,
  type SpendGuardStop,
  type StopReason
} from "../../domain/memory/types.ts"
import { estimateTextTokens, messageText } from "../../domain/message.ts"
import { Compactor } from "../../services/Compactor.ts"
import type { Conversation } from "../../services/MemoryStore.ts"
import { Summarizer } from "../../services/Summarizer.ts"
import { summarizeEscalating } from "./escalation.ts"
import { makeFutileMemo, type Shared } from "./shared.ts"

export const make = (shared: Shared) =>
  Effect.gen(function*() {
    const summarizer = yield* Summarizer
    const { store, locks } = shared

    /** Tokens of Simple's view: the newest live summary (as summary + acknowledgement) and every message after it. */
    const viewTokensOf = Effect.fn("SimpleMemory.viewTokens")(function*(conversationId: number) {
      const last = yield* shared.lastSummary(conversationId)
      if (Option.isNone(last)) return yield* store.contextTokens(conversationId)
      return handoffContextTokens(last.value.summary) + (yield* store.contextTokens(conversationId, last.value.item.position))
    })

    const step = Effect.fn("SimpleMemory.compact")(function*(conversation: Conversation, options: CompactOptions) {
      // At least the last unit stays raw, as in LCM: its tool calls may still wait for their results.
      const freshTail = Math.max(1, options.freshTail ?? DEFAULT_FRESH_TAIL)
      const limit = options.budget === undefined ? undefined : options.target ?? DEFAULT_CONTEXT_THRESHOLD * options.budget
      const items = yield* store.items(conversation.id)
      const plan = planHandoff(items, freshTail, options.budget === undefined ? undefined : tailTokensOf(options.budget))
      const previousItem = plan.previous === undefined ? undefined : items[plan.previous]
      const [previous] = previousItem === undefined ? [] : yield* store.summariesByIds([previousItem.refId])
      const tokensBefore = viewTokens(items, previous === undefined ? 0 : handoffContextTokens(previous))
      let calls = 0
      const counted = Summarizer.of({
        summarize: (request) => Effect.suspend(() => {
          calls++
          return summarizer.summarize(request)
        })
      })
      const unchanged = (stopReason: StopReason, passes: number, spendGuard?: SpendGuardStop): CompactionReport => ({
        compacted: false,
        passes,
        leafSummaries: 0,
        condensedSummaries: 0,
        tokensBefore,
        tokensAfter: tokensBefore,
        stopReason,
        summaryIds: [],
        summarizerCalls: calls,
        ...(spendGuard === undefined ? {} : { spendGuard })
      })
      if (limit !== undefined && tokensBefore <= limit) return unchanged("below_threshold", 0)
      const run = items.slice(plan.run.start, plan.run.end)
      const runTokens = run.reduce((n, it) => n + it.tokens, 0)
      const previousTokens = previous === undefined ? 0 : estimateTextTokens(previous.content)
      // Too small a run costs more as a summary than as itself, or leaves the sections no room.
      if (!worthHandoff(runTokens, previousTokens)) return unchanged("no_candidates", 0)
      // The step may call the summarizer twice (normal, then aggressive).
      if ((options.maxSummarizerCalls ?? Number.POSITIVE_INFINITY) < 2) return unchanged("call_limit", 0)
      const messages = yield* store.messagesByIds(run.map((it) => it.refId))
      const first = messages[0]
      const last = messages[messages.length - 1]
      if (first === undefined || last === undefined || messages.length !== run.length) {
        return yield* Effect.die(new Error(`handoff compaction: live message items of ${conversation.sessionKey} have no rows`))
      }
      const input = {
        kind: "leaf" as const,
        messages: messages.map((m) => ({ role: m.role, text: messageText(m.message), createdAt: m.createdAt })),
        ...(previous === undefined ? {} : { previousSummary: previous.content })
      }
      const targetTokens = handoffTarget(runTokens + previousTokens, options.budget)
      const result = yield* Effect.result(
        summarizeEscalating(counted, { sessionKey: conversation.sessionKey, targetTokens, input, style: "handoff" })
      )
      if (result._tag === "Failure") {
        const e = result.failure
        if (e._tag === "SpendGuardExceeded") {
          yield* Effect.logWarning(e.message)
          return unchanged("spend_guard", 1, spendGuardStop(e))
        }
        return yield* new CompactionFailed({ sessionKey: conversation.sessionKey, reason: e.reason, committedSteps: 0 })
      }
      const { content, mode } = result.success
      const earliestAt = Math.min(...messages.map((m) => m.createdAt))
      const latestAt = Math.max(...messages.map((m) => m.createdAt))
      const tailTokens = items.slice(plan.run.end).reduce((n, it) => n + it.tokens, 0)
      // The view must shrink; a summary as large as what it replaces is not committed.
      if (handoffContextTokens({ content, earliestAt, latestAt }) + tailTokens >= tokensBefore) return unchanged("no_progress", 1)
      const committed = yield* store.commitSummary(conversation.id, {
        kind: "leaf",
        depth: 0,
        mode,
        content,
        sourceTokenCount: messages.reduce((n, m) => n + m.tokens, 0),
        earliestAt,
        latestAt,
        firstSeq: first.seq,
        lastSeq: last.seq,
        replaces: run
        // The item's tokens are LCM's rendering of it, like every summary item; Simple prices its own.
      }, (id) => summaryContextTokens({ id, kind: "leaf", depth: 0, earliestAt, latestAt, content })).pipe(
        Effect.map(Option.some),
        Effect.catchTag("StaleContext", () => Effect.succeed(Option.none()))
      )
      if (Option.isNone(committed)) return unchanged("no_progress", 1)
      if (options.onProgress !== undefined) {
        yield* options.onProgress({ pass: 1, kind: "leaf", step: 1, steps: 1, leafSummaries: 1, condensedSummaries: 0 })
      }
      const tokensAfter = yield* viewTokensOf(conversation.id)
      // Read back: the stored text is what memory holds (SQLite replaces lone surrogates).
      const [stored] = yield* store.summariesByIds([committed.value.summaryId])
      const report: CompactionReport = {
        compacted: true,
        passes: 1,
        leafSummaries: 1,
        condensedSummaries: 0,
        tokensBefore,
        tokensAfter,
        // One summary is all a handoff makes: below threshold, or nothing left that it could do.
        stopReason: limit !== undefined && tokensAfter <= limit ? "below_threshold" : "no_candidates",
        summaryIds: [formatSummaryId(committed.value.summaryId)],
        summary: { id: formatSummaryId(committed.value.summaryId), content: stored?.content ?? content },
        summarizerCalls: calls
      }
      return report
    })

    /** What one handoff step would save now (the new summary at its target, the old one replaced). */
    const estimateGain = Effect.fn("SimpleMemory.estimateGain")(function*(conversationId: number, budget: number) {
      const items = yield* store.items(conversationId)
      const plan = planHandoff(items, Math.max(1, DEFAULT_FRESH_TAIL), tailTokensOf(budget))
      const previousItem = plan.previous === undefined ? undefined : items[plan.previous]
      const [previous] = previousItem === undefined ? [] : yield* store.summariesByIds([previousItem.refId])
      const runTokens = items.slice(plan.run.start, plan.run.end).reduce((n, it) => n + it.tokens, 0)
      const previousTokens = previous === undefined ? 0 : estimateTextTokens(previous.content)
      if (!worthHandoff(runTokens, previousTokens)) return 0
      const replaced = runTokens + (previous === undefined ? 0 : handoffContextTokens(previous))
      return Math.max(0, replaced - handoffTarget(runTokens + previousTokens, budget) - HANDOFF_FRAME_TOKENS)
    })

    const futile = makeFutileMemo()

    return Compactor.of({
      needsCompaction: Effect.fn("Compactor.needsCompaction")(function*(
        sessionKey: string,
        budget: number,
        threshold: number = DEFAULT_CONTEXT_THRESHOLD
      ) {
        const c = yield* store.getConversation(sessionKey)
        const tokens = yield* viewTokensOf(c.id)
        return tokens > threshold * budget
      }),
      worthCompacting: Effect.fn("Compactor.worthCompacting")(function*(sessionKey: string, budget: number) {
        const c = yield* store.getConversation(sessionKey)
        const tokens = yield* viewTokensOf(c.id)
        const base = { tokens, budget, threshold: DEFAULT_CONTEXT_THRESHOLD, futileAt: futile.get(c.id) }
        if (!worthCompacting({ ...base, gain: Number.MAX_SAFE_INTEGER })) return false
        return worthCompacting({ ...base, gain: yield* estimateGain(c.id, budget) })
      }),
      compact: Effect.fn("Compactor.compact")(function*(sessionKey: string, options: CompactOptions = {}) {
        const c = yield* store.getConversation(sessionKey)
        const report = yield* step(c, options).pipe(locks.withLock(sessionKey))
        futile.record(c.id, options, report)
        return report
      })
    })
  })
