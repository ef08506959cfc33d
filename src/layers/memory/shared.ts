/**
 * The parts LcmMemory and SimpleMemory share, built over the same MemoryStore and SessionLocks:
 * bootstrap/append/stats, assembly from a selection, profiles, session management. Sharing them is
 * what makes switching plugins lossless in both directions: both append the same rows.
 */
import { Effect, Option } from "effect"
import { type ItemMeta, selectForBudget } from "../../domain/memory/context.ts"
import { InvalidInput, SessionNotFound } from "../../domain/memory/errors.ts"
import { renderSummary, repairPairing } from "../../domain/memory/render.ts"
import type { SessionRef } from "../../domain/memory/session.ts"
import { type AssembleOptions, type Assembled, DEFAULT_FRESH_TAIL, type SessionInfo } from "../../domain/memory/types.ts"
import { estimateMessageTokens, type Message, type NewMessage } from "../../domain/message.ts"
import type { MemoryProvider } from "../../services/MemoryProvider.ts"
import { type Conversation, MemoryStore, type StoredSummary } from "../../services/MemoryStore.ts"
import type { ProfileStore } from "../../services/ProfileStore.ts"
import type { SessionManager } from "../../services/SessionManager.ts"
import { SessionLocks } from "../../services/SessionLocks.ts"

/** Profiles are notes, not documents: 64 KiB is far beyond what a prompt should carry. */
export const MAX_PROFILE_BYTES = 64 * 1024

type ListInfoFilter = Parameters<SessionManager["Service"]["listInfo"]>[0]
type LoadHistoryOptions = Parameters<SessionManager["Service"]["loadHistory"]>[1]

export const validateAssemble = (options: AssembleOptions) => {
  const freshTail = options.freshTail ?? DEFAULT_FRESH_TAIL
  if (!Number.isInteger(options.budget) || options.budget <= 0) {
    return Effect.fail(new InvalidInput({ reason: `budget must be a positive integer of tokens, got ${options.budget}` }))
  }
  if (!Number.isInteger(freshTail) || freshTail < 0) {
    return Effect.fail(new InvalidInput({ reason: `fresh tail must be a non-negative integer, got ${freshTail}` }))
  }
  return Effect.succeed({ budget: options.budget, freshTail })
}

export const makeShared = Effect.gen(function*() {
  const store = yield* MemoryStore
  const locks = yield* SessionLocks

  const bootstrap = Effect.fn("Memory.bootstrap")(function*(session: SessionRef) {
    yield* store.ensureConversation(session)
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
   * Loads the selected items (one query for messages, one for summaries) and renders them; a
   * summary renders as LCM's delimited message unless `summaryMessages` says otherwise (Simple's
   * summary + acknowledgement). The metas' tokens must be what their rendering costs.
   */
  const render = Effect.fn("Memory.render")(function*(
    metas: ReadonlyArray<ItemMeta>,
    budget: number,
    freshTail: number,
    mode: "greedy" | "contiguous",
    summaryMessages: (s: StoredSummary) => ReadonlyArray<Message> = (s) => [renderSummary(s)]
  ) {
    const selection = selectForBudget(metas, budget, freshTail, mode)
    const chosen = selection.indices.flatMap((i) => {
      const m = metas[i]
      return m === undefined ? [] : [m]
    })
    const [messages, summaries] = yield* Effect.all([
      store.messagesByIds(chosen.filter((m) => m.kind === "message").map((m) => m.refId)),
      store.summariesByIds(chosen.filter((m) => m.kind === "summary").map((m) => m.refId))
    ])
    const messageById = new Map(messages.map((m) => [m.id, m.message]))
    const summaryById = new Map(summaries.map((s) => [s.id, s]))
    const tailCount = metas.length - selection.tailStart
    const list: Array<Message> = []
    let tailFirstOut = -1
    chosen.forEach((meta, i) => {
      if (i === chosen.length - tailCount) tailFirstOut = list.length
      const message = meta.kind === "message" ? messageById.get(meta.refId) : undefined
      const summary = meta.kind === "summary" ? summaryById.get(meta.refId) : undefined
      if (message !== undefined) list.push(message)
      else if (summary !== undefined) list.push(...summaryMessages(summary))
    })
    // The tail starts on a unit boundary, so nothing pairs across it: repairing both sides apart is
    // the same as repairing the whole, and tells how many output messages are the tail.
    const olderOut = tailFirstOut < 0 ? list.length : tailFirstOut
    const tail = repairPairing(list.slice(olderOut))
    const out = [...repairPairing(list.slice(0, olderOut)), ...tail]
    const assembled: Assembled = {
      messages: out,
      tokens: out.reduce((n, m) => n + estimateMessageTokens(m), 0),
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
