/**
 * Input of `anna chat`: lines become messages (a line ending with "\" continues on the next one;
 * a line of """ opens a block that the next """ closes), read either from a terminal through
 * node:readline (prompt, line editing, history kept in a file, Ctrl-C and Ctrl-D as inputs) or
 * from piped stdin, one message per line until end of input. Both sources feed one queue of
 * inputs so the conversation loop is the same for a person and for a script.
 */
import { Effect, Queue, Stdio, Stream } from "effect"
import { appendFileSync, readFileSync, writeFileSync } from "node:fs"
import { clearScreenDown, createInterface, cursorTo, moveCursor } from "node:readline"

// --- assembling messages from lines (pure) ---

export interface Pending {
  readonly lines: ReadonlyArray<string>
  /** Inside a """ block: every line is taken as is until the closing """. */
  readonly block: boolean
}

export const nothingPending: Pending = { lines: [], block: false }

export const isPending = (p: Pending): boolean => p.lines.length > 0 || p.block

const BLOCK = '"""'

/** One more line: either a complete message or more pending input. */
export const feedLine = (p: Pending, line: string): { readonly pending: Pending; readonly message: string | undefined } => {
  if (line.trim() === BLOCK) {
    return p.block
      ? { pending: nothingPending, message: p.lines.join("\n") }
      : { pending: { lines: p.lines, block: true }, message: undefined }
  }
  if (p.block) return { pending: { lines: [...p.lines, line], block: true }, message: undefined }
  if (line.endsWith("\\")) return { pending: { lines: [...p.lines, line.slice(0, -1)], block: false }, message: undefined }
  return { pending: nothingPending, message: [...p.lines, line].join("\n") }
}

/** At end of input, what was pending is still sent (an unclosed block or a trailing "\"). */
export const flushPending = (p: Pending): string | undefined => (isPending(p) ? p.lines.join("\n") : undefined)

// --- sources ---

export type Input =
  | { readonly _tag: "line"; readonly text: string }
  /** Ctrl-C; `typed` when it cleared text typed on the current line. */
  | { readonly _tag: "interrupt"; readonly typed: boolean }
  /** Ctrl-D or end of piped input. */
  | { readonly _tag: "end" }

export interface LineSource {
  readonly inputs: Queue.Dequeue<Input>
  /** Shows the prompt on a terminal (a different one while a message continues); no-op for pipes. */
  readonly prompt: (continuation: boolean) => Effect.Effect<void>
  /** A person at a terminal (local commands like /exit apply). */
  readonly interactive: boolean
  /**
   * Writes `text` (whole lines) above the prompt while one is showing, and draws the prompt again
   * under it with what was typed and the cursor where it was; false, writing nothing, when no
   * prompt shows (or there is none: pipes).
   */
  readonly above?: ((text: string) => boolean) | undefined
}

/** Piped stdin from the `Stdio` service: each line an input, then `end` (also on a read error). */
export const pipedSource = Effect.gen(function*() {
  const stdio = yield* Stdio.Stdio
  const inputs = yield* Queue.unbounded<Input>()
  yield* stdio.stdin.pipe(
    Stream.decodeText(),
    Stream.splitLines,
    Stream.runForEach((text) => Queue.offer(inputs, { _tag: "line", text })),
    Effect.ignore,
    Effect.andThen(Queue.offer(inputs, { _tag: "end" })),
    Effect.forkScoped
  )
  const source: LineSource = { inputs, prompt: () => Effect.void, interactive: false }
  return source
})

export interface TerminalOptions {
  readonly input: NodeJS.ReadableStream
  readonly output: NodeJS.WritableStream
  /** File of past input lines (oldest first); missing or unreadable means no history. */
  readonly historyFile?: string | undefined
  readonly historySize?: number | undefined
}

/** What the user typed is private like the conversations: the history file is created 0600. */
const HISTORY_MODE = 0o600

/** The last `size` lines, newest first (readline's order); a file grown past twice that is cut back. */
const readHistory = (file: string | undefined, size: number): Array<string> => {
  if (file === undefined) return []
  try {
    const lines = readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "")
    const kept = lines.slice(-size)
    if (lines.length > 2 * size) writeFileSync(file, kept.map((l) => `${l}\n`).join(""), { mode: HISTORY_MODE })
    return kept.reverse()
  } catch {
    return []
  }
}

/**
 * A terminal through node:readline. Ctrl-C never reaches the process as a signal (readline reads
 * it in raw mode), so it arrives here as an input: the loop aborts a running turn with it.
 */
export const terminalSource = (options: TerminalOptions) =>
  Effect.gen(function*() {
    const inputs = yield* Queue.unbounded<Input>()
    const size = options.historySize ?? 1000
    /** The prompt is showing: leaving then ends its line, as a shell does. */
    let atPrompt = false
    /** Ctrl-D (or the end of input) closed readline: it must not be used again (it throws). */
    let closed = false
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() =>
        createInterface({
          input: options.input,
          output: options.output,
          terminal: true,
          history: readHistory(options.historyFile, size),
          historySize: size,
          removeHistoryDuplicates: true
        })
      ),
      (rl) =>
        Effect.sync(() => {
          if (atPrompt && !closed) options.output.write("\n")
          rl.close()
        })
    )
    rl.on("line", (text: string) => {
      atPrompt = false
      Queue.offerUnsafe(inputs, { _tag: "line", text })
      const file = options.historyFile
      if (file !== undefined && text.trim() !== "") {
        try {
          appendFileSync(file, `${text.replace(/\n/g, " ")}\n`, { mode: HISTORY_MODE })
        } catch {
          // History is a convenience: a read-only home must not stop the chat.
        }
      }
    })
    rl.on("SIGINT", () => {
      const typed = rl.line !== ""
      if (typed) {
        // Like a shell: Ctrl-C drops what was typed on the line.
        rl.write(null, { ctrl: true, name: "e" })
        options.output.write("^C\n")
        rl.write(null, { ctrl: true, name: "u" })
      }
      Queue.offerUnsafe(inputs, { _tag: "interrupt", typed })
    })
    rl.on("close", () => {
      closed = true
      Queue.offerUnsafe(inputs, { _tag: "end" })
    })
    const source: LineSource = {
      inputs,
      // Ctrl-D can close readline while a reply is still streaming; the loop then asks for a prompt
      // that must not be shown (the end of input is already queued and ends the chat).
      prompt: (continuation) =>
        Effect.sync(() => {
          if (closed) {
            // The end of input is what comes next, even if the loop already took it once.
            Queue.offerUnsafe(inputs, { _tag: "end" })
            return
          }
          rl.setPrompt(continuation ? "… " : "> ")
          rl.prompt()
          atPrompt = true
        }),
      interactive: true,
      above: (text) => {
        if (!atPrompt || closed) return false
        // From the cursor up to the prompt's first row (typed text may wrap), and clear from there.
        const rows = rl.getCursorPos().rows
        moveCursor(options.output, 0, -rows)
        cursorTo(options.output, 0)
        clearScreenDown(options.output)
        options.output.write(text)
        // readline draws the prompt again from `rows` rows above where it last left the cursor: make
        // those rows, so that it starts under the text.
        if (rows > 0) options.output.write("\n".repeat(rows))
        rl.prompt(true)
        return true
      }
    }
    return source
  })
