/**
 * LcmMemory — Lossless Context Management: every message kept, the live context compacted into a
 * DAG of summaries, assembly within a budget, search, describe/expand. Provides all seven memory
 * services (MemoryProvider, Compactor, Searcher, Explorer, ProfileStore, SessionManager,
 * ReviewSource).
 */
import { Context, Effect, Layer } from "effect"
import { SummaryNotFound } from "../../domain/memory/errors.ts"
import { formatSummaryId, parseSummaryId } from "../../domain/memory/session.ts"
import type {
  AssembleOptions,
  CompactOptions,
  ExpandedItem,
  ExpandOptions,
  ReviewBatch,
  SearchOptions,
  SearchScope,
  SummaryDescription
} from "../../domain/memory/types.ts"
import { estimateTextTokens, messageText } from "../../domain/message.ts"
import { planSearch } from "../../domain/search/query.ts"
import { CompactionEngine } from "../../services/CompactionEngine.ts"
import { Compactor } from "../../services/Compactor.ts"
import { Explorer } from "../../services/Explorer.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import type { StoredSummary } from "../../services/MemoryStore.ts"
import { ProfileStore } from "../../services/ProfileStore.ts"
import { ReviewSource } from "../../services/ReviewSource.ts"
import { Searcher } from "../../services/Searcher.ts"
import { SessionManager } from "../../services/SessionManager.ts"
import * as DagCompactionEngine from "./DagCompactionEngine.ts"
import { makeShared, validateAssemble } from "./shared.ts"
import * as SessionLocks from "./SessionLocks.ts"
import * as SqliteMemoryStore from "./SqliteMemoryStore.ts"

export const NAME = "memory/lcm"
const DEFAULT_SEARCH_LIMIT = 10
const MAX_SEARCH_LIMIT = 100
const DEFAULT_EXPAND_TOKENS = 4_000
const DEFAULT_REVIEW_TOKENS = 8_000

type UnreviewedOptions = Parameters<ReviewSource["Service"]["listUnreviewed"]>[0]
type ReviewContextOptions = Parameters<ReviewSource["Service"]["buildReviewContext"]>[1]

const inScope = (s: StoredSummary, scope: SearchScope | undefined): boolean =>
  scope === undefined || scope._tag === "All" ||
  (scope._tag === "Session" ? s.sessionKey === scope.sessionKey : s.userId === scope.userId)

export const make = Effect.gen(function*() {
  const shared = yield* makeShared
  const { store, locks } = shared
  const engine = yield* CompactionEngine

  const assemble = Effect.fn("LcmMemory.assemble")(function*(
    sessionKey: string,
    options: AssembleOptions
  ) {
    const { budget, freshTail } = yield* validateAssemble(options)
    const conversation = yield* store.getConversation(sessionKey)
    return yield* shared.render(yield* store.items(conversation.id), budget, freshTail, "greedy")
  })

  const compactor = Compactor.of({
    needsCompaction: Effect.fn("Compactor.needsCompaction")(function*(
      sessionKey: string,
      budget: number,
      threshold: number = engine.config.threshold
    ) {
      const c = yield* store.getConversation(sessionKey)
      const tokens = yield* store.contextTokens(c.id)
      return tokens > threshold * budget
    }),
    compact: Effect.fn("Compactor.compact")(function*(sessionKey: string, options: CompactOptions = {}) {
      const c = yield* store.getConversation(sessionKey)
      return yield* engine.compact(c, options)
    })
  })

  const searcher = Searcher.of({
    search: Effect.fn("Searcher.search")(function*(query: string, options: SearchOptions) {
      const limit = Math.min(MAX_SEARCH_LIMIT, Math.max(1, Math.floor(options.limit ?? DEFAULT_SEARCH_LIMIT)))
      const hits = yield* store.search(planSearch(query), options.scope, limit)
      return hits.map((h) => ({ ...h, id: `${h.kind === "message" ? "msg" : "sum"}_${h.id}` }))
    })
  })

  const findSummary = (text: string, scope: SearchScope | undefined) =>
    Effect.gen(function*() {
      const id = parseSummaryId(text)
      const found = id === undefined ? [] : yield* store.summariesByIds([id])
      const s = found[0]
      if (s === undefined || !inScope(s, scope)) return yield* new SummaryNotFound({ summaryId: text })
      return s
    })

  const describe = Effect.fn("LcmMemory.describe")(function*(summaryId: string, scope?: SearchScope) {
    const s = yield* findSummary(summaryId, scope)
    const links = yield* store.summaryLinks(s.id)
    const description: SummaryDescription = {
      id: formatSummaryId(s.id),
      sessionKey: s.sessionKey,
      kind: s.kind,
      depth: s.depth,
      mode: s.mode,
      tokens: s.tokenCount,
      sourceTokens: s.sourceTokenCount,
      earliestAt: s.earliestAt,
      latestAt: s.latestAt,
      createdAt: s.createdAt,
      parents: links.parents.map(formatSummaryId),
      childSummaries: links.constituents.map(formatSummaryId),
      childMessages: links.sourceMessages.length,
      sourceRange: { firstSeq: s.firstSeq, lastSeq: s.lastSeq, messages: s.lastSeq - s.firstSeq + 1 },
      live: links.live,
      content: s.content
    }
    return description
  })

  const expand = Effect.fn("LcmMemory.expand")(function*(
    summaryId: string,
    options: ExpandOptions & { readonly scope?: SearchScope | undefined } = {}
  ) {
    const s = yield* findSummary(summaryId, options.scope)
    const links = yield* store.summaryLinks(s.id)
    const all: Array<ExpandedItem> = s.kind === "leaf"
      ? (yield* store.messagesByIds(links.sourceMessages)).map((m) => ({
        kind: "message" as const,
        id: `msg_${m.id}`,
        seq: m.seq,
        createdAt: m.createdAt,
        message: m.message,
        tokens: m.tokens
      }))
      : (yield* store.summariesByIds(links.constituents)).map((c) => ({
        kind: "summary" as const,
        id: formatSummaryId(c.id),
        depth: c.depth,
        earliestAt: c.earliestAt,
        latestAt: c.latestAt,
        content: c.content,
        tokens: c.tokenCount
      }))
    const maxTokens = Math.max(1, options.maxTokens ?? DEFAULT_EXPAND_TOKENS)
    const start = Math.min(Math.max(0, Math.floor(options.cursor ?? 0)), all.length)
    const page: Array<ExpandedItem> = []
    let tokens = 0
    for (let i = start; i < all.length; i++) {
      const item = all[i]
      if (item === undefined || (page.length > 0 && tokens + item.tokens > maxTokens)) break
      page.push(item)
      tokens += item.tokens
    }
    const end = start + page.length
    return {
      summaryId: formatSummaryId(s.id),
      kind: s.kind,
      items: page,
      totalItems: all.length,
      tokens,
      nextCursor: end < all.length ? end : null
    }
  })

  const review = ReviewSource.of({
    listUnreviewed: Effect.fn("ReviewSource.listUnreviewed")(function*(options: UnreviewedOptions = {}) {
      const cs = yield* store.listConversations({})
      return cs.flatMap((c): Array<ReviewBatch> =>
        c.messages - c.reviewedSeq >= Math.max(1, options.minMessages ?? 1)
          ? [{
            sessionKey: c.sessionKey,
            agentId: c.agentId,
            userId: c.userId,
            unreviewedMessages: c.messages - c.reviewedSeq,
            fromSeq: c.reviewedSeq + 1,
            toSeq: c.messages
          }]
          : []
      ).slice(0, options.limit ?? 50)
    }),
    buildReviewContext: Effect.fn("ReviewSource.buildReviewContext")(function*(sessionKey: string, options: ReviewContextOptions = {}) {
      const c = yield* store.loadConversation(sessionKey)
      const maxTokens = options.maxTokens ?? DEFAULT_REVIEW_TOKENS
      const lines: Array<string> = []
      let tokens = 0
      let toSeq = c.reviewedSeq
      let from = c.reviewedSeq + 1
      for (;;) {
        const batch = yield* store.messagesBySeq(c.id, from, 200)
        if (batch.length === 0) break
        for (const m of batch) {
          const line = `[${m.role} ${new Date(m.createdAt).toISOString()}] ${messageText(m.message)}`
          const t = estimateTextTokens(line)
          if (lines.length > 0 && tokens + t > maxTokens) return { sessionKey, toSeq, transcript: lines.join("\n") }
          lines.push(line)
          tokens += t
          toSeq = m.seq
        }
        from = toSeq + 1
      }
      return { sessionKey, toSeq, transcript: lines.join("\n") }
    }),
    markReviewed: Effect.fn("ReviewSource.markReviewed")(function*(sessionKey: string, toSeq: number) {
      const c = yield* store.getConversation(sessionKey)
      yield* store.setReviewedSeq(c.id, toSeq)
    }, (effect, sessionKey) => locks.withLock(sessionKey)(effect))
  })

  return Context.make(MemoryProvider, MemoryProvider.of(shared.provider(NAME, assemble))).pipe(
    Context.add(Compactor, compactor),
    Context.add(Searcher, searcher),
    Context.add(Explorer, Explorer.of({ describe, expand })),
    Context.add(ProfileStore, ProfileStore.of(shared.profiles)),
    Context.add(SessionManager, SessionManager.of(shared.sessions)),
    Context.add(ReviewSource, review)
  )
})

/** Needs MemoryStore, SessionLocks and CompactionEngine. */
export const layer = Layer.effectContext(make)

/** On SQLite with its own locks and engine: needs SqlClient and a Summarizer. */
export const layerSqlite = layer.pipe(
  Layer.provide(DagCompactionEngine.layer()),
  Layer.provideMerge(Layer.merge(SqliteMemoryStore.layer, SessionLocks.layer))
)

