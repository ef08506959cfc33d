/**
 * The compaction engine of LCM: plans chunks with the pure planners of domain/memory/context.ts,
 * summarizes each chunk through the escalation pipeline (memory/escalation.ts), and commits one
 * summary per transaction under the session lock. Stops on: below threshold, nothing left to compact, an iteration that did
 * not shrink the context, the iteration bound, or the cap on summarizer calls; the report says which
 * and counts the calls.
 *
 * With a budget, compaction fits it (domain/memory/fit.ts): the fresh tail is also capped by a share
 * of the budget, summary targets and summarizer inputs by other shares, and when the ordinary plan
 * has nothing left while the context is still over threshold × budget, an iteration plans "to fit":
 * leaf chunks of any length (not `leafMinMessages`) and condensed chunks of adjacent summaries of any
 * depths, so the summaries older than the tail always fold into fewer, smaller ones.
 */
import { Effect, Layer } from "effect"
import {
  type ChunkLimits,
  contextTokens,
  type ItemMeta,
  planCondensedChunks,
  planLeafChunks
} from "../../domain/memory/context.ts"
import { CompactionFailed } from "../../domain/memory/errors.ts"
import { renderSummary, summaryContextTokens } from "../../domain/memory/render.ts"
import { chunkCapOf, summaryTarget, tailTokensOf } from "../../domain/memory/fit.ts"
import { formatSummaryId } from "../../domain/memory/session.ts"
import {
  type CompactionReport,
  type CompactOptions,
  DEFAULT_CHUNK_TOKENS,
  DEFAULT_CONDENSED_FAN_IN,
  DEFAULT_CONDENSED_MIN,
  DEFAULT_CONTEXT_THRESHOLD,
  DEFAULT_FRESH_TAIL,
  DEFAULT_LEAF_CHUNK_SIZE,
  MAX_FULL_ITERATIONS,
  spendGuardStop,
  type SpendGuardStop,
  type StopReason
} from "../../domain/memory/types.ts"
import { estimateMessageTokens, messageText } from "../../domain/message.ts"
import { type CompactionConfig, CompactionEngine } from "../../services/CompactionEngine.ts"
import { type Conversation, MemoryStore } from "../../services/MemoryStore.ts"
import { SessionLocks } from "../../services/SessionLocks.ts"
import { Summarizer, type SummaryInput } from "../../services/Summarizer.ts"
import { summarizeEscalating } from "./escalation.ts"

export const defaultConfig: CompactionConfig = {
  threshold: DEFAULT_CONTEXT_THRESHOLD,
  freshTail: DEFAULT_FRESH_TAIL,
  leafMinMessages: DEFAULT_LEAF_CHUNK_SIZE,
  condensedMin: DEFAULT_CONDENSED_MIN,
  condensedFanIn: DEFAULT_CONDENSED_FAN_IN,
  chunkTokens: DEFAULT_CHUNK_TOKENS,
  maxIterations: MAX_FULL_ITERATIONS
}

/** The framing a summary costs in context, whatever its text (id, depth, dates, the expand hint). */
const FRAME_TOKENS = estimateMessageTokens(
  renderSummary({ id: 1e9, kind: "condensed", depth: 9, earliestAt: 0, latestAt: 0, content: "" })
)

export const make = (config: CompactionConfig = defaultConfig) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const baseSummarizer = yield* Summarizer
    const locks = yield* SessionLocks

    /** One step: summarize `chunk` and commit it. Returns the committed summary's id, if any. */
    const step = Effect.fn("CompactionEngine.step")(function*(
      conversation: Conversation,
      kind: "leaf" | "condensed",
      chunk: ReadonlyArray<ItemMeta>,
      budget: number | undefined,
      summarizer: Summarizer["Service"]
    ) {
      const chunkTokens = chunk.reduce((n, it) => n + it.tokens, 0)
      const ids = chunk.map((it) => it.refId)
      let input: SummaryInput
      let source: { tokens: number; earliest: number; latest: number; firstSeq: number; lastSeq: number }
      let depth: number
      if (kind === "leaf") {
        const messages = yield* store.messagesByIds(ids)
        if (messages.length !== ids.length) return undefined
        input = {
          kind,
          messages: messages.map((m) => ({ role: m.role, text: messageText(m.message), createdAt: m.createdAt }))
        }
        source = {
          tokens: messages.reduce((n, m) => n + m.tokens, 0),
          earliest: Math.min(...messages.map((m) => m.createdAt)),
          latest: Math.max(...messages.map((m) => m.createdAt)),
          firstSeq: messages[0]?.seq ?? 0,
          lastSeq: messages[messages.length - 1]?.seq ?? 0
        }
        depth = 0
      } else {
        const summaries = yield* store.summariesByIds(ids)
        if (summaries.length !== ids.length) return undefined
        // One deeper than the deepest: runs planned to fit a budget may mix depths.
        const childDepth = Math.max(...summaries.map((s) => s.depth))
        input = {
          kind,
          depth: childDepth,
          summaries: summaries.map((s) => ({
            id: formatSummaryId(s.id),
            content: s.content,
            earliestAt: s.earliestAt,
            latestAt: s.latestAt
          }))
        }
        source = {
          tokens: summaries.reduce((n, s) => n + s.tokenCount, 0),
          earliest: Math.min(...summaries.map((s) => s.earliestAt)),
          latest: Math.max(...summaries.map((s) => s.latestAt)),
          firstSeq: summaries[0]?.firstSeq ?? 0,
          lastSeq: summaries[summaries.length - 1]?.lastSeq ?? 0
        }
        depth = childDepth + 1
      }
      const target = summaryTarget(source.tokens, budget)
      const { content, mode } = yield* summarizeEscalating(summarizer, {
        sessionKey: conversation.sessionKey,
        targetTokens: target,
        input
      })
      const render = (id: number) =>
        summaryContextTokens({ id, kind, depth, earliestAt: source.earliest, latestAt: source.latest, content })
      // A summary that would cost as much context as what it replaces is not worth committing.
      if (render(Number.MAX_SAFE_INTEGER) >= chunkTokens) return undefined
      return yield* store.commitSummary(conversation.id, {
        kind,
        depth,
        mode,
        content,
        sourceTokenCount: source.tokens,
        earliestAt: source.earliest,
        latestAt: source.latest,
        firstSeq: source.firstSeq,
        lastSeq: source.lastSeq,
        replaces: chunk
      }, render).pipe(
        Effect.map((c): number | undefined => c.summaryId),
        Effect.catchTag("StaleContext", () => Effect.succeed(undefined))
      )
    }, (effect, conversation) => locks.withLock(conversation.sessionKey)(effect))

    /** How chunks are planned: ordinary, or "to fit" a budget when the ordinary plan is used up. */
    interface Planning {
      readonly freshTail: number
      readonly budget: number | undefined
      readonly fit: boolean
    }

    const limits = (kind: "leaf" | "condensed", p: Planning): ChunkLimits => {
      const tailTokens = p.budget === undefined ? undefined : tailTokensOf(p.budget)
      const maxTokens = p.budget === undefined ? config.chunkTokens : chunkCapOf(p.budget, config.chunkTokens)
      return kind === "leaf"
        ? { freshTail: p.freshTail, tailTokens, minItems: p.fit ? 1 : config.leafMinMessages, maxTokens, maxItems: Number.MAX_SAFE_INTEGER }
        : { freshTail: p.freshTail, tailTokens, minItems: p.fit ? 2 : config.condensedMin, maxTokens, maxItems: config.condensedFanIn, anyDepth: p.fit }
    }

    const plan = (items: ReadonlyArray<ItemMeta>, kind: "leaf" | "condensed", p: Planning) =>
      (kind === "leaf" ? planLeafChunks : planCondensedChunks)(items, limits(kind, p))
        .map((span) => items.slice(span.start, span.end))
        .filter((chunk) => chunk.reduce((n, it) => n + it.tokens, 0) > 2 * FRAME_TOKENS)

    const planned = (items: ReadonlyArray<ItemMeta>, p: Planning) => [...plan(items, "leaf", p), ...plan(items, "condensed", p)]

    /** Whether the ordinary plan is used up while the context is still over `limit` (then plan to fit). */
    const mustFit = (items: ReadonlyArray<ItemMeta>, p: Omit<Planning, "fit">, limit: number | undefined) =>
      p.budget !== undefined && limit !== undefined && contextTokens(items) > limit && planned(items, { ...p, fit: false }).length === 0

    const estimateGain = (items: ReadonlyArray<ItemMeta>, budget: number): number => {
      const base = { freshTail: Math.max(1, config.freshTail), budget }
      const chunks = planned(items, { ...base, fit: mustFit(items, base, config.threshold * budget) })
      return chunks.reduce((n, chunk) => {
        const tokens = chunk.reduce((t, it) => t + it.tokens, 0)
        return n + Math.max(0, tokens - summaryTarget(tokens, budget) - FRAME_TOKENS)
      }, 0)
    }

    const compact = Effect.fn("CompactionEngine.compact")(function*(conversation: Conversation, options: CompactOptions) {
      // At least the last unit stays raw, even with a fresh tail of 0: its tool calls may still be
      // waiting for their results, which must find their tool_use live, not inside a summary.
      const freshTail = Math.max(1, options.freshTail ?? config.freshTail)
      const budget = options.budget
      const limit = budget === undefined ? undefined : options.target ?? config.threshold * budget
      const maxCalls = options.maxSummarizerCalls ?? Number.POSITIVE_INFINITY
      let calls = 0
      const summarizer = Summarizer.of({
        summarize: (request) => Effect.suspend(() => {
          calls++
          return baseSummarizer.summarize(request)
        })
      })
      /** A step may call the summarizer twice (normal, then aggressive): it starts only when both fit the cap. */
      const capped = () => calls + 2 > maxCalls
      const tokensBefore = contextTokens(yield* store.items(conversation.id))
      let tokens = tokensBefore
      let passes = 0
      let leafSummaries = 0
      let condensedSummaries = 0
      const summaryIds: Array<string> = []
      let stopReason: StopReason | undefined
      // Set when the summarizer refuses on the session's spend guard: stop, keep what is committed.
      let guarded: SpendGuardStop | undefined
      const below = () => limit !== undefined && tokens <= limit
      const maxIterations = options.full === true ? config.maxIterations : 1

      const runPass = (kind: "leaf" | "condensed", fit: boolean) =>
        Effect.gen(function*() {
          const chunks = plan(yield* store.items(conversation.id), kind, { freshTail, budget, fit })
          let made = 0
          let index = 0
          for (const chunk of chunks) {
            if (guarded !== undefined || capped()) break
            index++
            const id = yield* step(conversation, kind, chunk, budget, summarizer).pipe(
              Effect.catchTag("SpendGuardExceeded", (e) =>
                Effect.logWarning(e.message).pipe(Effect.andThen(Effect.sync(() => {
                  guarded = spendGuardStop(e)
                  return undefined
                })))
              ),
              Effect.catchTag("SummarizerError", (e) =>
                Effect.fail(
                  new CompactionFailed({
                    sessionKey: conversation.sessionKey,
                    reason: e.reason,
                    committedSteps: leafSummaries + condensedSummaries + made
                  })
                ))
            )
            const ok = id !== undefined
            if (ok) {
              made++
              summaryIds.push(formatSummaryId(id))
            }
            if (ok && options.onProgress !== undefined) {
              yield* options.onProgress({
                pass: passes + 1,
                kind,
                step: index,
                steps: chunks.length,
                leafSummaries: leafSummaries + (kind === "leaf" ? made : 0),
                condensedSummaries: condensedSummaries + (kind === "condensed" ? made : 0)
              })
            }
          }
          passes++
          if (kind === "leaf") leafSummaries += made
          else condensedSummaries += made
          tokens = contextTokens(yield* store.items(conversation.id))
          return made
        })

      if (below()) stopReason = "below_threshold"
      for (let iteration = 1; stopReason === undefined && iteration <= maxIterations; iteration++) {
        const start = tokens
        const fit = mustFit(yield* store.items(conversation.id), { freshTail, budget }, limit)
        const made = (yield* runPass("leaf", fit)) + (below() || guarded !== undefined || capped() ? 0 : yield* runPass("condensed", fit))
        if (guarded !== undefined) stopReason = "spend_guard"
        else if (below()) stopReason = "below_threshold"
        else if (capped()) stopReason = "call_limit"
        else if (made === 0) stopReason = "no_candidates"
        else if (tokens >= start) stopReason = "no_progress"
      }
      if (stopReason === undefined) {
        // Out of iterations: say truthfully whether anything was left to do.
        const items = yield* store.items(conversation.id)
        const left = planned(items, { freshTail, budget, fit: mustFit(items, { freshTail, budget }, limit) }).length
        stopReason = left === 0 ? "no_candidates" : "max_iterations"
      }
      const report: CompactionReport = {
        compacted: leafSummaries + condensedSummaries > 0,
        passes,
        leafSummaries,
        condensedSummaries,
        tokensBefore,
        tokensAfter: tokens,
        stopReason,
        summaryIds,
        summarizerCalls: calls,
        ...(guarded === undefined ? {} : { spendGuard: guarded })
      }
      return report
    })

    return CompactionEngine.of({ config, compact, estimateGain })
  })

export const layer = (config: CompactionConfig = defaultConfig) => Layer.effect(CompactionEngine, make(config))
