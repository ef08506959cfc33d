/**
 * SessionLocks — one mutex per session key, so appends and compaction steps on a session never
 * interleave while different sessions run in parallel. Locks of idle sessions are evicted.
 *
 * Layers: `SessionLocks.layer` (src/layers/memory/SessionLocks.ts).
 */
import { Context, type Effect } from "effect"

export class SessionLocks extends Context.Service<SessionLocks, {
  readonly withLock: (key: string) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}>()("anna/SessionLocks") {}
