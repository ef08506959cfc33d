/**
 * LcmMemory — Lossless Context Management: every message kept, the live context compacted into a
 * DAG of summaries, assembly within a budget, search, describe/expand. Provides all seven memory
 * services (MemoryProvider, Compactor, Searcher, Explorer, ProfileStore, SessionManager,
 * ReviewSource).
 */
import { Context, Effect, Layer } from "effect"
import type { ItemMeta } from "../../domain/memory/context.ts"
import { SummaryNotFound } from "../../domain/memory/errors.ts"
import { worthCompacting } from "../../domain/memory/fit.ts"
import { formatSummaryId, parseSummaryId } from "../../domain/memory/session.ts"
import type {
  AssembleOptions,
  CompactOptions,
  ExpandedItem,
  ExpandOptions,
  ReviewBatch,
  SearchHit,
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
import type { StoredMessage, StoredSummary } from "../../services/MemoryStore.ts"
import { ProfileStore } from "../../services/ProfileStore.ts"
import { ReviewSource } from "../../services/ReviewSource.ts"
import { MAX_SEARCH_HITS, Searcher } from "../../services/Searcher.ts"
import { SessionManager } from "../../services/SessionManager.ts"
import * as DagCompactionEngine from "./DagCompactionEngine.ts"
import { makeFutileMemo, makeShared, validateAssemble } from "./shared.ts"
import * as SessionLocks from "./SessionLocks.ts"
import * as SqliteMemoryStore from "./SqliteMemoryStore.ts"

export const NAME = "memory/lcm"
const DEFAULT_SEARCH_LIMIT = 10
const MAX_SEARCH_LIMIT = MAX_SEARCH_HITS
const MAX_SEARCH_CONTEXT = 10
const finite = (n: number | undefined, fallback: number) => (n !== undefined && Number.isFinite(n) ? n : fallback)
const DEFAULT_EXPAND_TOKENS = 4_000
const DEFAULT_REVIEW_TOKENS = 8_000
/** Live items read by assembly's first page, newest first; later pages follow the budget, up to MAX_PAGE. */
const FIRST_PAGE = 256
const MAX_PAGE = 4_096

type UnreviewedOptions = Parameters<ReviewSource["Service"]["listUnreviewed"]>[0]
type ReviewContextOptions = Parameters<ReviewSource["Service"]["buildReviewContext"]>[1]

const inScope = (s: StoredSummary, scope: SearchScope | undefined): boolean =>
  scope === undefined || scope._tag === "All" ||
  (scope._tag === "Session" ? s.sessionKey === scope.sessionKey : s.userId === scope.userId)

export const make = Effect.gen(function*() {
  const shared = yield* makeShared
  const { store, locks } = shared
  const engine = yield* CompactionEngine

  /**
   * Assembly reads what the budget needs, not the whole live context: the live items newest first,
   * in pages, until the raw messages read cost more than the budget and the oldest item read starts
   * a unit (or the session's start), plus the live summaries older than that (an index holds them).
   * The choice over that (selectForBudget) is the choice over every item: the fresh tail (at most the
   * budget) lies in what was read, every summary is there, and the raw window before the tail, which
   * stops at the first unit that does not fit, ends inside it. So a 100k-message session assembles
   * in the time of a budget's worth of rows.
   */
  const assemble = Effect.fn("LcmMemory.assemble")(function*(
    sessionKey: string,
    options: AssembleOptions
  ) {
    const { budget, freshTail, tailTokens } = yield* validateAssemble(options)
    const conversation = yield* store.getConversation(sessionKey)
    const newestFirst: Array<ItemMeta> = []
    const messages: Array<StoredMessage> = []
    const summaries: Array<StoredSummary> = []
    let messageTokens = 0
    let before: number | null = null
    let complete = false
    for (let page = FIRST_PAGE;;) {
      // With the first page, the content of its newest items within the budget (what is most likely
      // chosen; after a compaction, often all of it): the rest is read when rendering, by seq range.
      const newest = yield* store.itemsNewest(conversation.id, before, page, before === null ? budget : 0)
      const rows = newest.items
      messages.push(...newest.messages)
      summaries.push(...newest.summaries)
      for (const it of rows) {
        newestFirst.push(it)
        if (it.kind === "message") messageTokens += it.tokens
      }
      const oldest = newestFirst[newestFirst.length - 1]
      if (rows.length < page || oldest === undefined) {
        complete = true
        break
      }
      if (messageTokens > budget && !oldest.continuesUnit) break
      before = oldest.position
      // The next page: what the rest of the budget needs at the tokens per item seen so far, plus a
      // fifth (so most assemblies take two reads), between 16 and MAX_PAGE items.
      const perItem = Math.max(1, messageTokens / newestFirst.length)
      page = Math.min(MAX_PAGE, Math.max(16, Math.ceil((1.2 * Math.max(0, budget - messageTokens)) / perItem)))
    }
    const read = newestFirst.reverse()
    const from = read[0]?.position ?? 0
    const older = complete ? [] : (yield* store.liveSummaries(conversation.id)).filter((s) => s.item.position < from)
    const assembled = yield* shared.render(conversation.id, [...older.map((s) => s.item), ...read], budget, freshTail, tailTokens, {
      loaded: { messages, summaries }
    })
    // Live items partition seqs 1..N in order, a summary item's position being its first seq: the
    // raw messages before `from` that were not read are the seqs there that no older summary covers.
    const unread = from - 1 - older.reduce((n, s) => n + s.lastSeq - s.item.position + 1, 0)
    return complete ? assembled : { ...assembled, omittedItems: assembled.omittedItems + unread }
  })

  const futile = makeFutileMemo()
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
    worthCompacting: Effect.fn("Compactor.worthCompacting")(function*(sessionKey: string, budget: number) {
      const c = yield* store.getConversation(sessionKey)
      const tokens = yield* store.contextTokens(c.id)
      const threshold = engine.config.threshold
      const futileAt = futile.get(c.id)
      // The plan reads the live items: only when the cheap checks have not said no already.
      if (!worthCompacting({ tokens, budget, threshold, gain: Number.MAX_SAFE_INTEGER, futileAt })) return false
      const gain = engine.estimateGain(yield* store.items(c.id), budget)
      return worthCompacting({ tokens, budget, threshold, gain, futileAt })
    }),
    compact: Effect.fn("Compactor.compact")(function*(sessionKey: string, options: CompactOptions = {}) {
      const c = yield* store.getConversation(sessionKey)
      const report = yield* engine.compact(c, options)
      futile.record(c.id, options, report)
      return report
    })
  })

  const searcher = Searcher.of({
    search: Effect.fn("Searcher.search")(function*(query: string, options: SearchOptions) {
      const limit = Math.min(MAX_SEARCH_LIMIT, Math.max(1, Math.floor(finite(options.limit, DEFAULT_SEARCH_LIMIT))))
      const context = Math.min(MAX_SEARCH_CONTEXT, Math.max(0, Math.floor(finite(options.context, 0))))
      const plan = planSearch(query, options.mode ?? "ranked", { includeMemoryCalls: options.includeMemoryCalls })
      // Strict mode stays lexical: every term must match, which a vector cannot say.
      const dense = (options.mode ?? "ranked") === "ranked" ? options.dense : undefined
      const hits = yield* store.search(plan, options.scope, {
        limit,
        context,
        neighbours: options.neighbours ?? true,
        ...(dense === undefined ? {} : { dense })
      })
      return hits.map((h): SearchHit => {
        const { context: around, ...hit } = h
        return {
          ...hit,
          id: `${h.kind === "message" ? "msg" : "sum"}_${h.id}`,
          ...(around === undefined ? {} : { context: around.map((m) => ({ ...m, id: `msg_${m.id}` })) })
        }
      })
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

