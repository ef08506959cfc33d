/**
 * The parts LcmMemory and SimpleMemory share, built over the same MemoryStore and SessionLocks:
 * bootstrap/append/stats, assembly from a selection, profiles, session management. Sharing them is
 * what makes switching plugins lossless in both directions: both append the same rows.
 */
import { Effect, Option } from "effect"
import { type ItemMeta, selectForBudget } from "../../domain/memory/context.ts"
import { InvalidInput, SessionNotFound } from "../../domain/memory/errors.ts"
import { gainedTooLittle, TAIL_SHARE, tailTokensOf } from "../../domain/memory/fit.ts"
import { renderSummary, repairPairing } from "../../domain/memory/render.ts"
import type { SessionRef } from "../../domain/memory/session.ts"
import {
  type AssembleOptions,
  type Assembled,
  type CompactionReport,
  type CompactOptions,
  DEFAULT_FRESH_TAIL,
  type SessionInfo
} from "../../domain/memory/types.ts"
import { estimateMessageTokens, type Message, type NewMessage } from "../../domain/message.ts"
import type { MemoryProvider } from "../../services/MemoryProvider.ts"
import { type Conversation, MemoryStore, type StoredMessage, type StoredSummary } from "../../services/MemoryStore.ts"
import type { ProfileStore } from "../../services/ProfileStore.ts"
import type { SessionManager } from "../../services/SessionManager.ts"
import { SessionLocks } from "../../services/SessionLocks.ts"

export interface RenderOptions {
  readonly summaryMessages?: (s: StoredSummary) => ReadonlyArray<Message>
  /** Content already read (with the items, say): not read again. */
  readonly loaded?: { readonly messages: ReadonlyArray<StoredMessage>; readonly summaries: ReadonlyArray<StoredSummary> }
}

/** Profiles are notes, not documents: 64 KiB is far beyond what a prompt should carry. */
export const MAX_PROFILE_BYTES = 64 * 1024

type ListInfoFilter = Parameters<SessionManager["Service"]["listInfo"]>[0]
type LoadHistoryOptions = Parameters<SessionManager["Service"]["loadHistory"]>[1]

/** Checks assembly options; `tailTokens` is the fresh tail's token cap (a share of the budget). */
export const validateAssemble = (options: AssembleOptions) => {
  const freshTail = options.freshTail ?? DEFAULT_FRESH_TAIL
  const share = options.tailShare ?? TAIL_SHARE
  if (!Number.isInteger(options.budget) || options.budget <= 0) {
    return Effect.fail(new InvalidInput({ reason: `budget must be a positive integer of tokens, got ${options.budget}` }))
  }
  if (!Number.isInteger(freshTail) || freshTail < 0) {
    return Effect.fail(new InvalidInput({ reason: `fresh tail must be a non-negative integer, got ${freshTail}` }))
  }
  if (!(share > 0 && share <= 1)) {
    return Effect.fail(new InvalidInput({ reason: `the fresh tail's share of the budget must be in (0, 1], got ${share}` }))
  }
  return Effect.succeed({ budget: options.budget, freshTail, tailTokens: tailTokensOf(options.budget, share) })
}

/** At most this many sessions remember a compaction that gained too little (the oldest is forgotten first). */
const FUTILE_LIMIT = 10_000

/**
 * Per conversation, the context tokens after the last compaction with a budget that gained less
 * than the least worthwhile gain (domain/memory/fit.ts), so `worthCompacting` does not run another
 * until the context has grown: never twice in a row for nothing. In memory: a restart forgets it,
 * which costs at most one more such compaction.
 */
export const makeFutileMemo = () => {
  const at = new Map<number, number>()
  return {
    get: (conversationId: number): number | undefined => at.get(conversationId),
    record: (conversationId: number, options: CompactOptions, report: CompactionReport) => {
      if (options.budget === undefined) return
      at.delete(conversationId)
      if (!gainedTooLittle(report.tokensBefore, report.tokensAfter, options.budget)) return
      if (at.size >= FUTILE_LIMIT) {
        const oldest = at.keys().next()
        if (oldest.done !== true) at.delete(oldest.value)
      }
      at.set(conversationId, report.tokensAfter)
    }
  }
}

export const makeShared = Effect.gen(function*() {
  const store = yield* MemoryStore
  const locks = yield* SessionLocks

  /**
   * The session's conversation as the database has it now (a turn starts here): one deleted, or moved
   * away with its removed user, by another process since it was cached is not served from the cache,
   * so a later user of the same id starts a conversation of their own.
   */
  const bootstrap = Effect.fn("Memory.bootstrap")(function*(session: SessionRef) {
    yield* store.loadConversation(session.key).pipe(
      Effect.catchTag("SessionNotFound", () => store.ensureConversation(session))
    )
  })

  const append = Effect.fn("Memory.append")(function*(session: SessionRef, messages: ReadonlyArray<NewMessage>) {
    const conversation = yield* store.ensureConversation(session)
    yield* store.appendMessages(conversation.id, messages).pipe(locks.withLock(session.key))
  })

  const stats = Effect.fn("Memory.stats")(function*(sessionKey: string) {
    const c = yield* store.getConversation(sessionKey)
    const s = yield* store.stats(c.id)
    return { sessionKey, agentId: c.agentId, userId: c.userId, ...s }
  })

  /**
   * The newest live summary of a conversation and its item, if any: where memory/simple's view
   * starts (and what `/compact` shows after a handoff compaction).
   */
  const lastSummary = Effect.fn("Memory.lastSummary")(function*(conversationId: number) {
    const item = yield* store.lastSummaryItem(conversationId)
    if (Option.isNone(item)) return Option.none<LiveSummary>()
    const [summary] = yield* store.summariesByIds([item.value.refId])
    return Option.fromNullishOr(summary).pipe(Option.map((s): LiveSummary => ({ item: item.value, summary: s })))
  })

  /**
   * The chosen messages. A message item's position is its seq, and the raw messages assembly
   * chooses are mostly one run of seqs (the window before the tail, and the tail), so they are read
   * as a seq range — an index range scan — unless the range holds many messages that are not chosen.
   */
  const chosenMessages = (conversationId: number, metas: ReadonlyArray<ItemMeta>) => {
    if (metas.length === 0) return Effect.succeed([])
    let lo = Number.POSITIVE_INFINITY
    let hi = 0
    for (const m of metas) {
      lo = Math.min(lo, m.position)
      hi = Math.max(hi, m.position)
    }
    const ids = metas.map((m) => m.refId)
    if (hi - lo + 1 > 2 * metas.length + 16) return store.messagesByIds(ids)
    const wanted = new Set(ids)
    return Effect.map(store.messagesBySeq(conversationId, lo, hi - lo + 1), (rows) => rows.filter((r) => wanted.has(r.id)))
  }

  /**
   * Loads the selected items (one query for messages, one for summaries, both skipped for what
   * `loaded` already holds) and renders them; a summary renders as LCM's delimited message unless
   * `summaryMessages` says otherwise (Simple's summary + acknowledgement). The metas' tokens must be
   * what their rendering costs.
   */
  const render = Effect.fn("Memory.render")(function*(
    conversationId: number,
    metas: ReadonlyArray<ItemMeta>,
    budget: number,
    freshTail: number,
    tailTokens: number,
    options: RenderOptions = {}
  ) {
    const summaryMessages = options.summaryMessages ?? ((s: StoredSummary) => [renderSummary(s)])
    const selection = selectForBudget(metas, budget, freshTail, tailTokens)
    const chosen = selection.indices.flatMap((i) => {
      const m = metas[i]
      return m === undefined ? [] : [m]
    })
    const messageById = new Map(options.loaded?.messages.map((m) => [m.id, m.message]))
    const summaryById = new Map(options.loaded?.summaries.map((s) => [s.id, s]))
    const missing = chosen.filter((m) => !(m.kind === "message" ? messageById.has(m.refId) : summaryById.has(m.refId)))
    if (missing.length > 0) {
      // Both at once: on PostgreSQL each read is a round trip, on a connection of the pool of its own.
      const [messages, summaries] = yield* Effect.all([
        chosenMessages(conversationId, missing.filter((m) => m.kind === "message")),
        store.summariesByIds(missing.filter((m) => m.kind === "summary").map((m) => m.refId))
      ], { concurrency: 2 })
      for (const m of messages) messageById.set(m.id, m.message)
      for (const s of summaries) summaryById.set(s.id, s)
    }
    const tailCount = metas.length - selection.tailStart
    const list: Array<Message> = []
    // A stored message's tokens are its item's (estimated at append, and it comes back exactly as
    // given); what the repair rewrote and the rendered summaries are estimated afresh.
    const known = new Map<Message, number>()
    let tailFirstOut = -1
    chosen.forEach((meta, i) => {
      if (i === chosen.length - tailCount) tailFirstOut = list.length
      const message = meta.kind === "message" ? messageById.get(meta.refId) : undefined
      const summary = meta.kind === "summary" ? summaryById.get(meta.refId) : undefined
      if (message !== undefined) {
        list.push(message)
        known.set(message, meta.tokens)
      } else if (summary !== undefined) list.push(...summaryMessages(summary))
    })
    // The tail starts on a unit boundary, so nothing pairs across it: repairing both sides apart is
    // the same as repairing the whole, and tells how many output messages are the tail.
    const olderOut = tailFirstOut < 0 ? list.length : tailFirstOut
    const tail = repairPairing(list.slice(olderOut))
    const out = [...repairPairing(list.slice(0, olderOut)), ...tail]
    const assembled: Assembled = {
      messages: out,
      tokens: out.reduce((n, m) => n + (known.get(m) ?? estimateMessageTokens(m)), 0),
      freshTailMessages: tail.length,
      summaries: chosen.filter((m) => m.kind === "summary").length,
      omittedItems: selection.omitted
    }
    return assembled
  })

  const profiles: ProfileStore["Service"] = {
    getProfile: Effect.fn("ProfileStore.getProfile")(function*(userId: string, agentId: string) {
      return yield* store.getProfile(userId, agentId)
    }),
    setProfile: Effect.fn("ProfileStore.setProfile")(function*(userId: string, agentId: string, content: string) {
      if (new TextEncoder().encode(content).length > MAX_PROFILE_BYTES) {
        return yield* new InvalidInput({ reason: `profile notes are limited to ${MAX_PROFILE_BYTES / 1024} KiB` })
      }
      yield* store.setProfile(userId, agentId, content)
    })
  }

  const toInfo = (c: Conversation, messages: number): SessionInfo => ({
    sessionKey: c.sessionKey,
    agentId: c.agentId,
    userId: c.userId,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    messages,
    info: c.info
  })

  const sessions: SessionManager["Service"] = {
    saveInfo: Effect.fn("SessionManager.saveInfo")(function*(sessionKey: string, info: Readonly<Record<string, unknown>>) {
      const c = yield* store.loadConversation(sessionKey)
      yield* store.saveInfo(c.id, { ...c.info, ...info })
    }, (effect, sessionKey) => locks.withLock(sessionKey)(effect)),
    loadInfo: Effect.fn("SessionManager.loadInfo")(function*(sessionKey: string) {
      const c = yield* store.loadConversation(sessionKey)
      const s = yield* store.stats(c.id)
      return toInfo(c, s.messages)
    }),
    listInfo: Effect.fn("SessionManager.listInfo")(function*(filter: ListInfoFilter = {}) {
      const cs = yield* store.listConversations(filter)
      return cs.map((c) => toInfo(c, c.messages))
    }),
    loadHistory: Effect.fn("SessionManager.loadHistory")(function*(sessionKey: string, options: LoadHistoryOptions = {}) {
      const c = yield* store.getConversation(sessionKey)
      return yield* store.messagesBySeq(c.id, options.fromSeq ?? 1, options.limit ?? -1)
    })
  }

  const provider = (
    name: string,
    assemble: MemoryProvider["Service"]["assemble"]
  ): MemoryProvider["Service"] => ({ name, bootstrap, append, assemble, stats, close: Effect.void })

  return { store, locks, render, lastSummary, profiles, sessions, provider }
})

export type Shared = Effect.Success<typeof makeShared>

export interface LiveSummary {
  readonly item: ItemMeta
  readonly summary: StoredSummary
}

export const notFound = (sessionKey: string) => new SessionNotFound({ sessionKey })
