/**
 * A turn that starts over (issue 28): on a cluster, a session's turn streams from the node that owns
 * the session; when that node stops mid-answer, effect/cluster re-sends the call to the new owner,
 * which answers the same turn again (resumed: its stored answer, or its stored message answered
 * once). The caller then sees a `restart` event and the new attempt's events
 * (src/layers/cluster/SessionEntity.ts `followAttempts`).
 *
 * Channels that can take back what they showed rewrite it; the rest end the turn here with an
 * `unavailable` error naming the move (`endAtRestart`: the HTTP channel, whose client retries with
 * its Idempotency-Key and is given the stored answer) — never a silently repeated prefix.
 */
import { Stream } from "effect"
import { emptyUsage } from "../model/types.ts"
import type { TurnEvent } from "./types.ts"

export const MOVED_NOTICE = "This conversation moved to another gateway node mid-answer (a node stopped); send the message again."
export const UNREACHABLE_NOTICE = "This conversation's gateway node could not be reached; send the message again."
/** Said where a turn starts over: a chat platform's streamed message shows it until the new attempt's first words. */
export const RESTARTED = "this answer is starting over: the gateway node answering it stopped"

/** The end of a turn that could not reach its owner or was moved mid-way. */
export const unavailable = (text: string): ReadonlyArray<TurnEvent> => [
  { type: "notice", text },
  { type: "done", stopReason: "unavailable", usage: emptyUsage, modelCalls: 0, toolCalls: 0, error: { kind: "unavailable" } }
]

/** A turn's events up to a restart, which ends it as unavailable (for a channel that cannot take back what it sent). */
export const endAtRestart = <E, R>(events: Stream.Stream<TurnEvent, E, R>): Stream.Stream<TurnEvent, E, R> =>
  events.pipe(
    Stream.flatMap((event) => Stream.fromIterable(event.type === "restart" ? unavailable(MOVED_NOTICE) : [event])),
    Stream.takeUntil((event) => event.type === "done")
  )

/** The events of a turn's last attempt (those after its last restart). */
export const lastAttempt = (events: ReadonlyArray<TurnEvent>): ReadonlyArray<TurnEvent> =>
  events.slice(events.findLastIndex((e) => e.type === "restart") + 1)
