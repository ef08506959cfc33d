/**
 * Output of `anna chat`: a turn's events for a person (the reply streamed to stdout as it
 * arrives; tool activity and notices as short, dim lines on stderr so a reply piped to a file
 * stays clean) and the same events collected into one result for `--json`.
 *
 * Model, tool and user text is untrusted: a reply or a file a tool read can hold escape sequences
 * that retitle the window, write the clipboard (OSC 52), move the cursor or hide text. Every such
 * text passes `terminalSafe` before it is printed; only anna's own styling reaches the terminal.
 */
import { Effect } from "effect"
import type { Usage } from "../../../domain/model/types.ts"
import type { TurnEvent } from "../../../domain/runtime/types.ts"
import { emptyUsage } from "../../../domain/model/types.ts"
import { oneLine } from "../../../domain/text.ts"
import { RESTARTED } from "../../../domain/runtime/restart.ts"

export type DoneReason = Extract<TurnEvent, { type: "done" }>["stopReason"]

export interface ToolRecord {
  readonly name: string
  readonly input: unknown
  /** null when the tool never finished (the turn was aborted). */
  readonly output: string | null
  readonly isError: boolean
}

/** The `--json` shape of one turn. */
export interface TurnResult {
  readonly reply: string
  readonly notices: ReadonlyArray<string>
  readonly tools: ReadonlyArray<ToolRecord>
  readonly usage: Usage
  readonly stopReason: DoneReason
  readonly sessionKey: string
  /** The agent the turn went to (a chat's /agent switch, --agent, or the user's default). */
  readonly agent: string
}

/** Collects a turn's events; a stream that ends without `done` counts as aborted. */
export const makeCollector = (sessionKey: string, agent: string) => {
  let reply = ""
  const notices: Array<string> = []
  const tools = new Map<string, { name: string; input: unknown; output: string | null; isError: boolean }>()
  let usage: Usage = emptyUsage
  let stopReason: DoneReason = "aborted"
  const add = (e: TurnEvent): void => {
    switch (e.type) {
      case "text":
        reply += e.text
        return
      case "notice":
        notices.push(e.text)
        return
      case "tool_start":
        tools.set(e.id, { name: e.name, input: e.input, output: null, isError: false })
        return
      case "tool_end": {
        const t = tools.get(e.id)
        if (t === undefined) tools.set(e.id, { name: e.name, input: null, output: e.output, isError: e.isError })
        else Object.assign(t, { output: e.output, isError: e.isError })
        return
      }
      case "done":
        usage = e.usage
        stopReason = e.stopReason
        return
      case "restart":
        // The turn started over (restart.ts): the result is the new attempt's.
        reply = ""
        notices.length = 0
        tools.clear()
    }
  }
  const result = (): TurnResult => ({ reply, notices: [...notices], tools: [...tools.values()], usage, stopReason, sessionKey, agent })
  return { add, result }
}

/**
 * Code points a terminal may act on: C0 controls but tab and newline, DEL, C1 controls
 * (U+0080–U+009F: 0x9B is CSI, 0x9D OSC), and the bidi embeddings, overrides and isolates that
 * reorder what is shown ("Trojan Source"). Bidi marks (LRM, RLM, ALM) stay: RTL text needs them.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point (they are escaped before display)
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

const visible = (c: string): string => {
  const code = c.charCodeAt(0)
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`
}

/**
 * `text` as it may reach a terminal: carriage returns dropped (CRLF line ends, or a line drawn over
 * itself), every other unsafe code point shown as an escape (`\x1b`, `\x9b`, `\u202e`); all else,
 * tabs and newlines included, unchanged.
 */
export const terminalSafe = (text: string): string => text.replace(/\r/g, "").replace(UNSAFE, visible)

/**
 * JSON for `--json`: JSON.stringify escapes C0 controls but writes C1 controls, DEL and bidi
 * overrides raw; here they are `\uXXXX` escapes too, so the same value parses back unchanged.
 */
export const terminalJson = (value: unknown, indent?: number): string =>
  JSON.stringify(value, null, indent).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

const SUMMARY_KEYS = ["command", "path", "file_path", "query", "url", "pattern", "action", "id"]

/** "bash ls -la" rather than the whole input object. */
export const toolSummary = (name: string, input: unknown): string => {
  let detail = ""
  if (typeof input === "object" && input !== null) {
    const record: Record<string, unknown> = { ...input }
    const key = SUMMARY_KEYS.find((k) => typeof record[k] === "string")
    detail = key === undefined ? JSON.stringify(input) : String(record[key])
  } else if (input !== undefined && input !== null) {
    detail = JSON.stringify(input)
  }
  return oneLine(terminalSafe(detail === "" || detail === "{}" ? name : `${name} ${detail}`), 100)
}

export interface Writer {
  readonly out: (text: string) => Effect.Effect<void>
  readonly err: (text: string) => Effect.Effect<void>
  /** Dim the stderr lines (stderr is a terminal). */
  readonly color: boolean
  /** stdout and stderr show on one terminal: a stderr line after reply text needs a line break first. */
  readonly sameTerminal: boolean
}

/**
 * Renders events as they arrive. A tool line opens on `tool_start` ("⚙ bash ls -la") and is closed
 * with ✓ / ✗ by the matching `tool_end` when nothing was printed in between; otherwise (calls run in
 * parallel) the ✓ / ✗ gets a line of its own that repeats the call ("⚙ bash ls -la ✓"), and a call
 * started while an identical one is in flight is numbered ("⚙ bash ls -la #2"). Line breaks that only
 * matter on screen go to stderr, so a reply redirected to a file is exactly the model's text plus
 * a final newline.
 *
 * `interject` draws a line that is not the turn's (a log line) where it splits none of the turn's:
 * an open tool line is ended first (its ✓ / ✗ then repeats the call, as for parallel calls), and
 * while the reply's line is still being written on the same terminal, the line waits for that line's
 * end (the reply's next line break, the next line on stderr, or the end of the turn).
 */
export const makeRenderer = (w: Writer) => {
  const dim = (s: string) => (w.color ? `\x1b[2m${s}\x1b[22m` : s)
  /** The reply on stdout does not end with a newline (yet). */
  let outOpen = false
  /** The id of the tool whose line is open on stderr. */
  let openTool: string | undefined
  /** Calls in flight: id → what their start line showed. */
  const inFlight = new Map<string, string>()
  /** "bash ls", or "bash ls #2" while another "bash ls" is in flight. */
  const label = (summary: string): string => {
    const taken = new Set(inFlight.values())
    if (!taken.has(summary)) return summary
    let n = 2
    while (taken.has(`${summary} #${n}`)) n++
    return `${summary} #${n}`
  }
  /** Interjected lines waiting for the reply's line to end. */
  let held = ""
  const takeHeld = (): string => {
    const lines = held
    held = ""
    return lines
  }
  /** What stderr needs before a new line of its own (and the interjected lines that waited). */
  const lead = (): string => {
    const needed = openTool !== undefined || (w.sameTerminal && outOpen)
    // On one terminal the break also ends the reply's line on screen.
    if (w.sameTerminal) outOpen = false
    openTool = undefined
    return `${needed ? "\n" : ""}${takeHeld()}`
  }
  const interject = (line: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (w.sameTerminal && outOpen && openTool === undefined) {
        held += `${line}\n`
        return Effect.void
      }
      return w.err(`${lead()}${line}\n`)
    })
  /** The held lines, once the reply's line has ended. */
  const flushHeld = Effect.suspend(() => (held === "" || outOpen ? Effect.void : w.err(takeHeld())))
  const errLine = (text: string) => Effect.suspend(() => w.err(`${lead()}${dim(text)}\n`))
  const event = (e: TurnEvent): Effect.Effect<void> =>
    Effect.suspend(() => {
      switch (e.type) {
        case "text": {
          const text = terminalSafe(e.text)
          if (text === "") return Effect.void
          const close = openTool !== undefined ? w.err("\n") : Effect.void
          openTool = undefined
          outOpen = !text.endsWith("\n")
          return close.pipe(Effect.andThen(w.out(text)), Effect.andThen(flushHeld))
        }
        case "tool_start": {
          const shown = label(toolSummary(e.name, e.input))
          inFlight.set(e.id, shown)
          const text = `${lead()}${dim(`⚙ ${shown}`)}`
          openTool = e.id
          return w.err(text)
        }
        case "tool_end": {
          const mark = e.isError ? `✗ ${oneLine(terminalSafe(e.output), 80)}` : "✓"
          const shown = inFlight.get(e.id) ?? oneLine(terminalSafe(e.name), 100)
          inFlight.delete(e.id)
          if (openTool === e.id) {
            openTool = undefined
            return w.err(`${dim(` ${mark}`)}\n`)
          }
          return errLine(`⚙ ${shown} ${mark}`)
        }
        case "notice":
          return errLine(`[${terminalSafe(e.text)}]`)
        case "done":
          return end
        case "choices":
          // The command's text lists the same options, numbered.
          return Effect.void
        case "restart":
          // What was printed cannot be taken back: the line says the answer below it is the new one.
          return end.pipe(Effect.andThen(errLine(`[${RESTARTED}]`)))
      }
    })
  /** Ends the reply with a newline and closes an open tool line; then the lines that waited. */
  const end = Effect.suspend(() => {
    const closeOut = outOpen ? w.out("\n") : Effect.void
    const closeErr = openTool !== undefined ? w.err("\n") : Effect.void
    outOpen = false
    openTool = undefined
    return closeErr.pipe(Effect.andThen(closeOut), Effect.andThen(flushHeld))
  })
  return { event, end, interject }
}
