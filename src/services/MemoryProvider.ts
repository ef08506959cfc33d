/**
 * MemoryProvider — the core memory contract (seed: Provider). Owns: making sure a session has a
 * conversation, storing its messages losslessly, building the model's context within a token
 * budget, and session statistics. Does not own: compaction, search, summaries or profiles, which
 * are optional capability services a memory layer may also provide.
 *
 * Layers: `LcmMemory.layer`, `SimpleMemory.layer` (src/layers/memory/); `MemoryFromPlugins.layer` picks the enabled one.
 */
import { Context, type Effect } from "effect"
import type { InvalidInput, SessionNotFound } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { SessionRef } from "../domain/memory/session.ts"
import type { AssembleOptions, Assembled, SessionStats } from "../domain/memory/types.ts"
import type { NewMessage } from "../domain/message.ts"

export class MemoryProvider extends Context.Service<MemoryProvider, {
  /** Plugin id, e.g. `memory/lcm`. */
  readonly name: string
  /**
   * Ensures a conversation exists for the session (idempotent), as the database has it now: a turn
   * starts with it, so a session deleted or moved away by another process is not served from a cache.
   */
  readonly bootstrap: (session: SessionRef) => Effect.Effect<void, StorageError>
  /** Stores messages in order and adds them to the live context (bootstraps if needed). */
  readonly append: (
    session: SessionRef,
    messages: ReadonlyArray<NewMessage>
  ) => Effect.Effect<void, StorageError | InvalidInput>
  /**
   * The context for the next model call: the fresh tail always, older context newest-first while
   * it fits, returned in chronological order; always a valid tool-call pairing.
   */
  readonly assemble: (
    sessionKey: string,
    options: AssembleOptions
  ) => Effect.Effect<Assembled, StorageError | SessionNotFound | InvalidInput>
  readonly stats: (sessionKey: string) => Effect.Effect<SessionStats, StorageError | SessionNotFound>
  /** Releases what the provider holds (caches, locks); the database closes with its own layer. */
  readonly close: Effect.Effect<void>
}>()("anna/MemoryProvider") {}
