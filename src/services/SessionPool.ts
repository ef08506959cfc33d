/**
 * SessionPool — where agent sessions live while they work (seed 001, "Session Lifecycle"): per agent
 * its current configuration and model client; per session a runner (its tools and sandbox
 * container), created on the first turn and reaped when idle; and the turn running now, one at a
 * time per session. The Runtime sends every turn through it; the scheduler, notifications and the
 * admin API reach live sessions here too (list them, abort a turn, release a runner).
 *
 * Turns run in the pool's own scope: a caller that stops reading (a closed HTTP connection) does not
 * cut a turn short — it finishes and is stored — while `abort` interrupts it (pending tool calls then
 * get an "aborted" result). Configuration changes apply from the next turn; a tightening of an
 * agent's sandbox or tools also closes its live containers at once.
 *
 * Owns runners, containers' lifetimes and running turns; does not own routing (Runtime), memory or
 * configuration.
 *
 * Layers: `SessionPool.layer` (src/layers/runtime/SessionPool.ts).
 */
import { Context, type Effect, type Stream } from "effect"
import type { ResolvedChat, SendOptions, TurnEvent, UserMessage } from "../domain/runtime/types.ts"

/** A session with a live runner. */
export interface LiveSession {
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
  /** The incarnation of the user id the session's runner was made for (ResolvedChat.userUid). */
  readonly userUid?: string | undefined
  /** A turn is running now. */
  readonly running: boolean
  /** Its sandbox session was started (a container runs, or will on the next command). */
  readonly sandbox: boolean
  /** When its last turn started (ms since the epoch). */
  readonly lastTurnAt: number
}

export class SessionPool extends Context.Service<SessionPool, {
  /**
   * One turn of the agent (never a slash command): events stream back as they happen. Turns of one
   * session wait for each other. Failures the user should read come as `notice` + `done`, not as
   * stream errors.
   */
  readonly send: (chat: ResolvedChat, message: UserMessage, options?: SendOptions) => Stream.Stream<TurnEvent>
  /** Interrupts the session's running turn; false when none was running. */
  readonly abort: (sessionKey: string) => Effect.Effect<boolean>
  /** The sessions with a live runner, most recently used first. */
  readonly live: Effect.Effect<ReadonlyArray<LiveSession>>
  /** Ends a session's runner now (its container removed; a running turn's tools fail); false when none was live. */
  readonly release: (sessionKey: string, reason: string) => Effect.Effect<boolean>
}>()("anna/SessionPool") {}
