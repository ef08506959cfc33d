/**
 * Log lines while `anna chat` draws on the terminal. For as long as a chat runs, every log line of
 * the process (LogOutput: anna's warnings, Node's, a debug line) comes here instead of going straight
 * to stderr, where it landed wherever the cursor was — after the text the user was typing at the
 * prompt, or inside a tool line ("⚙ mcp call[14:02:07.118] INFO …"). Here a line is drawn where it
 * splits none of the chat's:
 *
 * - at the prompt, above it: the prompt and what was typed are cleared, the line is written, and the
 *   prompt is drawn again under it with the typed text (readline keeps the text and the cursor, so
 *   the next key goes on where the user was);
 * - during a turn, through the turn's renderer (`interject`): after an open tool line is ended, or
 *   once the reply's current line is complete;
 * - otherwise, as a line on stderr.
 *
 * One fiber draws the lines, in order, and never in the middle of the turn's own drawing: both take
 * the same lock. Lines not drawn when the chat ends go to stderr.
 */
import { Effect, Queue, type Scope, Semaphore } from "effect"
import type { TurnEvent } from "../../../domain/runtime/types.ts"
import { LogOutput } from "../../../services/LogOutput.ts"
import type { LineSource } from "./input.ts"
import { makeRenderer, type Writer } from "./render.ts"

export interface TurnRenderer {
  readonly event: (e: TurnEvent) => Effect.Effect<void>
  readonly end: Effect.Effect<void>
}

export interface ChatScreen {
  /** A renderer for the next turn (see makeRenderer): log lines go between its lines until its `end`. */
  readonly renderer: () => TurnRenderer
}

/** Takes the process's log lines for the scope's lifetime and draws them on the chat's screen. */
export const chatScreen = (w: Writer, source: LineSource | undefined): Effect.Effect<ChatScreen, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lock = yield* Semaphore.make(1)
    const lines = yield* Queue.unbounded<string>()
    const output = yield* LogOutput
    let turn: ReturnType<typeof makeRenderer> | undefined
    const draw = (line: string) =>
      lock.withPermit(Effect.suspend(() => {
        // The prompt shows only between turns (a renderer a failed turn never ended is stale then).
        if (w.sameTerminal && source?.above?.(`${line}\n`) === true) return Effect.void
        if (turn !== undefined) return turn.interject(line)
        return w.err(`${line}\n`)
      }))
    // Added before the diversion, so it runs after it has ended: what is left goes to stderr.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.clear(lines), (rest) =>
        Effect.sync(() => {
          for (const line of rest) output.write(line)
        }))
    )
    yield* output.divert((line) => {
      Queue.offerUnsafe(lines, line)
    })
    yield* Queue.take(lines).pipe(Effect.flatMap(draw), Effect.forever, Effect.forkScoped)
    return {
      renderer: () => {
        const r = makeRenderer(w)
        turn = r
        return {
          event: (e) => lock.withPermit(r.event(e)),
          end: lock.withPermit(r.end.pipe(Effect.andThen(Effect.sync(() => {
            if (turn === r) turn = undefined
          }))))
        }
      }
    }
  })
