/**
 * SimpleMemory — a sliding window: the last messages that fit the budget (the fresh tail always),
 * no summaries, no search. Same tables as LcmMemory, so switching between them loses nothing:
 * Simple ignores summaries and assembles from the raw messages, which are all still there.
 * Provides MemoryProvider, ProfileStore and SessionManager.
 */
import { Context, Effect, Layer } from "effect"
import type { AssembleOptions } from "../domain/memory/types.ts"
import { MemoryProvider } from "../services/MemoryProvider.ts"
import { ProfileStore } from "../services/ProfileStore.ts"
import { SessionManager } from "../services/SessionManager.ts"
import { makeShared, validateAssemble } from "./memory/shared.ts"
import * as SessionLocks from "./SessionLocks.ts"
import * as SqliteMemoryStore from "./SqliteMemoryStore.ts"

export const NAME = "memory/simple"

export const make = Effect.gen(function*() {
  const shared = yield* makeShared
  const assemble = Effect.fn("SimpleMemory.assemble")(function*(sessionKey: string, options: AssembleOptions) {
    const { budget, freshTail } = yield* validateAssemble(options)
    const conversation = yield* shared.store.getConversation(sessionKey)
    return yield* shared.render(yield* shared.store.messageMetas(conversation.id), budget, freshTail, "contiguous")
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
