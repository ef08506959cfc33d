/**
 * The write fence of a session on a cluster (issue 28). effect/cluster does not fence: a node frozen
 * past its lease (SIGSTOP, a long GC pause, a stalled VM) and then thawed still runs what it ran, while
 * the session's new owner already runs it too. So each time a node takes a session (the entity starts
 * there) it moves the session's epoch on in PostgreSQL (`session_fences`), and every write of the
 * memory store made for that session's turns checks, under the same write lock, that the epoch is
 * still the one its node took; a thawed former owner's writes fail instead of interleaving.
 *
 * `CurrentFence` is set around a turn by the entity (src/layers/cluster/SessionEntity.ts) and read by
 * the store (src/layers/memory/SqliteMemoryStore.ts); unset — one gateway, SQLite — nothing is checked.
 */
import { Context } from "effect"

export interface Fence {
  /** The session's entity id (SHA-256 of its key). */
  readonly entityId: string
  /** The epoch this node took the session at. */
  readonly epoch: number
}

export const CurrentFence = Context.Reference<Fence | undefined>("anna/cluster/CurrentFence", { defaultValue: () => undefined })

/** Why a fenced write was refused (the StorageError's reason). */
export const FENCED_REASON = "another gateway node has taken this conversation over (this node was stopped or cut off); nothing was written"

/** The SQLSTATE `anna_append_fenced` and the fence check raise (a class of our own: P0 + A01). */
export const FENCED_SQLSTATE = "P0A01"
