/**
 * Bursts whose end nobody saw (issue 15): a gateway that stopped, or an `anna chat` that exited,
 * closes its runners without reflecting (a shutdown must not wait for a model). Their messages stay
 * unreflected in the store, so at the gateway's start the recent sessions with messages after their
 * latest diary entry, idle for longer than a runner lives, are queued for reflection (trigger
 * `startup`) in the background. Nothing is lost; at most CATCH_UP_MAX sessions per start.
 */
import { Clock, Effect, Option } from "effect"
import { Diary } from "../../services/Diary.ts"
import { Learning } from "../../services/Learning.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"

/** Sessions idle for longer than this (a runner's default idle time) are over. */
export const CATCH_UP_IDLE_MS = 10 * 60_000
/** Sessions quiet for longer than this are left alone (reflection is about recent work). */
export const CATCH_UP_WINDOW_MS = 7 * 86_400_000
/** At most this many of the most recently updated sessions are looked at and queued per start. */
export const CATCH_UP_MAX = 50

/** Queues the unreflected recent sessions; returns how many. Failures are the caller's to log. */
export const catchUp = Effect.fn("Learning.catchUp")(function*() {
  const memory = yield* MemoryStore
  const diary = yield* Diary
  const learning = yield* Learning
  const now = yield* Clock.currentTimeMillis
  const { rows } = yield* memory.browseConversations({}, { limit: CATCH_UP_MAX * 4, offset: 0 })
  let queued = 0
  for (const row of rows) {
    if (queued >= CATCH_UP_MAX) break
    const last = row.lastMessageAt
    if (last === null || last < now - CATCH_UP_WINDOW_MS || last > now - CATCH_UP_IDLE_MS) continue
    const latest = yield* diary.latest(row.sessionKey)
    const reflectedTo = Option.match(latest, { onNone: () => 0, onSome: (e) => e.toSeq })
    // Two messages at least: a question and its answer.
    if (row.messages - reflectedTo < 2) continue
    yield* learning.endBurst(row.sessionKey, "startup")
    queued++
  }
  return queued
})
