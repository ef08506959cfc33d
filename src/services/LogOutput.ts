/**
 * LogOutput — where anna's log lines are written: stderr, except while `anna chat` draws on the
 * terminal, which takes them for the time it does (`divert`) so that a line logged while the user
 * types or while a tool line is open is drawn between the chat's own lines, not over them.
 *
 * It owns the destination only; the lines are formatted by the logger the CLI installs
 * (src/programs/logging.ts), and drawing them on a chat's screen is the terminal channel's
 * (src/layers/channels/terminal/logLines.ts).
 *
 * A mutable destination behind a Reference rather than a layer: a log line comes from any fiber,
 * including those forked by layers built before the chat started (the runtime's, the session
 * pool's), which a layer provided to the chat would not reach. Its default value is one per process.
 */
import { Context, Effect, type Scope } from "effect"

export interface LogOutputShape {
  /** Writes one log line (without its line break). */
  readonly write: (line: string) => void
  /** Sends the lines to `draw` until the scope closes, then to where they went before. */
  readonly divert: (draw: (line: string) => void) => Effect.Effect<void, never, Scope.Scope>
}

/** A LogOutput writing to `fallback` unless diverted. */
export const makeLogOutput = (fallback: (line: string) => void): LogOutputShape => {
  let target = fallback
  return {
    write: (line) => target(line),
    divert: (draw) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const before = target
          target = draw
          return before
        }),
        (before) =>
          Effect.sync(() => {
            target = before
          })
      ).pipe(Effect.asVoid)
  }
}

export const LogOutput = Context.Reference<LogOutputShape>("anna/LogOutput", {
  defaultValue: () => makeLogOutput((line) => process.stderr.write(`${line}\n`))
})
