/**
 * SimpleMemory — a sliding window: the last messages that fit the budget (the fresh tail always),
 * no summaries, no search. Same tables as LcmMemory, so switching between them loses nothing:
 * Simple ignores summaries and assembles from the raw messages, which are all still there.
 * Provides MemoryProvider, ProfileStore and SessionManager.
 */
import { Context, Effect, Layer } from "effect"
import type { ItemMeta } from "../domain/memory/context.ts"
import type { AssembleOptions } from "../domain/memory/types.ts"
import { MemoryProvider } from "../services/MemoryProvider.ts"
import { ProfileStore } from "../services/ProfileStore.ts"
import { SessionManager } from "../services/SessionManager.ts"
import { makeShared, validateAssemble } from "./memory/shared.ts"
import * as SessionLocks from "./SessionLocks.ts"
import * as SqliteMemoryStore from "./SqliteMemoryStore.ts"

export const NAME = "memory/simple"

const PAGE = 512

export const make = Effect.gen(function*() {
  const shared = yield* makeShared
  const { store } = shared
  /**
   * The window is contiguous, so only the newest messages matter: read newest-first in pages until
   * there are more than the budget's worth and the fresh tail, ending on a unit boundary. Choosing
   * from that suffix gives the same window as choosing from the whole session, at a cost that
   * follows the budget instead of the session's length.
   */
  const newestSuffix = (conversationId: number, budget: number, freshTail: number) =>
    Effect.gen(function*() {
      const newestFirst: Array<ItemMeta> = []
      let tokens = 0
      let before: number | null = null
      for (;;) {
        const page: ReadonlyArray<ItemMeta> = yield* store.messageMetasNewest(conversationId, before, PAGE)
        for (const m of page) {
          newestFirst.push(m)
          tokens += m.tokens
        }
        const oldest = newestFirst[newestFirst.length - 1]
        if (page.length < PAGE || oldest === undefined) break
        if (tokens > budget && newestFirst.length > freshTail && !oldest.continuesUnit) break
        before = oldest.position
      }
      return newestFirst.reverse()
    })
  const assemble = Effect.fn("SimpleMemory.assemble")(function*(sessionKey: string, options: AssembleOptions) {
    const { budget, freshTail } = yield* validateAssemble(options)
    const conversation = yield* store.getConversation(sessionKey)
    const suffix = yield* newestSuffix(conversation.id, budget, freshTail)
    const assembled = yield* shared.render(suffix, budget, freshTail, "contiguous")
    // Seqs are 1..N without gaps, so everything older than the suffix is `first seq - 1` messages.
    const older = (suffix[0]?.position ?? 1) - 1
    return { ...assembled, omittedItems: assembled.omittedItems + older }
  })
  return Context.make(MemoryProvider, MemoryProvider.of(shared.provider(NAME, assemble))).pipe(
    Context.add(ProfileStore, ProfileStore.of(shared.profiles)),
    Context.add(SessionManager, SessionManager.of(shared.sessions))
  )
})

/** Needs MemoryStore and SessionLocks. */
export const layer = Layer.effectContext(make)

/** On SQLite with its own locks: needs SqlClient. */
export const layerSqlite = layer.pipe(Layer.provideMerge(Layer.merge(SqliteMemoryStore.layer, SessionLocks.layer)))
