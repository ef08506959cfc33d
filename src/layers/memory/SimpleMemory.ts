/**
 * SimpleMemory — a sliding window with handoff compaction (seed 003). Its view of a session is the
 * newest live summary, if any, followed by every message after it; it assembles the fresh tail
 * always, then the summary (it holds everything before), then the newest messages before the tail
 * that fit (contiguous: no gaps), the summary as a user message plus an assistant acknowledgement. Compaction (memory/handoffCompactor.ts) turns the
 * view's messages outside the fresh tail into one structured leaf summary. Same tables as
 * LcmMemory, so switching loses nothing: Simple reads LCM's newest live summary the same way, and
 * LCM reads Simple's summaries as ordinary depth-0 summaries.
 * Provides MemoryProvider, Compactor, ProfileStore and SessionManager (no search, no explore).
 */
import { Context, Effect, Layer, Option } from "effect"
import type { ItemMeta } from "../../domain/memory/context.ts"
import { handoffContextTokens, renderHandoff } from "../../domain/memory/handoff.ts"
import type { AssembleOptions } from "../../domain/memory/types.ts"
import { Compactor } from "../../services/Compactor.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { ProfileStore } from "../../services/ProfileStore.ts"
import { SessionManager } from "../../services/SessionManager.ts"
import * as HandoffCompactor from "./handoffCompactor.ts"
import { makeShared, validateAssemble } from "./shared.ts"
import * as SessionLocks from "./SessionLocks.ts"
import * as SqliteMemoryStore from "./SqliteMemoryStore.ts"

export const NAME = "memory/simple"

const PAGE = 512

export const make = Effect.gen(function*() {
  const shared = yield* makeShared
  const { store } = shared
  /**
   * The window is contiguous, so only the newest messages matter: read newest-first in pages until
   * there are more than the budget's worth and the fresh tail, ending on a unit boundary, or until
   * the messages after `afterSeq` (the view's summary) are all read. Choosing from that suffix gives
   * the same window as choosing from the whole view, at a cost that follows the budget instead of
   * the session's length. `complete` says whether the suffix reaches back to `afterSeq`.
   */
  const newestSuffix = (conversationId: number, budget: number, freshTail: number, afterSeq: number) =>
    Effect.gen(function*() {
      const newestFirst: Array<ItemMeta> = []
      let tokens = 0
      let before: number | null = null
      for (;;) {
        const page: ReadonlyArray<ItemMeta> = yield* store.messageMetasNewest(conversationId, before, PAGE)
        for (const m of page) {
          if (m.position <= afterSeq) return { metas: newestFirst.reverse(), complete: true }
          newestFirst.push(m)
          tokens += m.tokens
        }
        const oldest = newestFirst[newestFirst.length - 1]
        if (page.length < PAGE || oldest === undefined) return { metas: newestFirst.reverse(), complete: true }
        if (tokens > budget && newestFirst.length > freshTail && !oldest.continuesUnit) {
          return { metas: newestFirst.reverse(), complete: false }
        }
        before = oldest.position
      }
    })

  const assemble = Effect.fn("SimpleMemory.assemble")(function*(sessionKey: string, options: AssembleOptions) {
    const { budget, freshTail, tailTokens } = yield* validateAssemble(options)
    const conversation = yield* store.getConversation(sessionKey)
    const last = yield* shared.lastSummary(conversation.id)
    const afterSeq = Option.match(last, { onNone: () => 0, onSome: (l) => l.summary.lastSeq })
    const suffix = yield* newestSuffix(conversation.id, budget, freshTail, afterSeq)
    // The view's summary is its oldest item, priced as Simple renders it. It holds everything before
    // the messages, so it is chosen first (selectForBudget), even when the suffix does not reach it.
    const head = Option.match(last, {
      onNone: () => [],
      onSome: (l): Array<ItemMeta> => [{ ...l.item, tokens: handoffContextTokens(l.summary) }]
    })
    const assembled = yield* shared.render(conversation.id, [...head, ...suffix.metas], budget, freshTail, tailTokens, { summaryMessages: renderHandoff })
    // Seqs are 1..N without gaps: the view's messages older than the suffix are all unread.
    const unread = suffix.complete ? 0 : (suffix.metas[0]?.position ?? afterSeq + 1) - afterSeq - 1
    return { ...assembled, omittedItems: assembled.omittedItems + unread }
  })

  const compactor = yield* HandoffCompactor.make(shared)
  return Context.make(MemoryProvider, MemoryProvider.of(shared.provider(NAME, assemble))).pipe(
    Context.add(Compactor, compactor),
    Context.add(ProfileStore, ProfileStore.of(shared.profiles)),
    Context.add(SessionManager, SessionManager.of(shared.sessions))
  )
})

/** Needs MemoryStore, SessionLocks and a Summarizer (for handoff compaction). */
export const layer = Layer.effectContext(make)

/** On SQLite with its own locks: needs SqlClient and a Summarizer. */
export const layerSqlite = layer.pipe(Layer.provideMerge(Layer.merge(SqliteMemoryStore.layer, SessionLocks.layer)))
