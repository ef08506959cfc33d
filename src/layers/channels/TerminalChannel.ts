/**
 * The terminal channel (`anna chat`): the local OS user talks to an agent through the Runtime
 * (platform "cli"); the session key is the same on the next start, so a conversation continues where
 * it stopped (its messages are in SQLite). Interactive on a terminal (node:readline), one message per
 * line on piped stdin, or one turn with `prompt` for scripts (`json` for a result object).
 *
 * It is a Channel like the gateway's: building its layer resolves the chat and starts the
 * conversation in the layer's scope; `notify` prints a message for the user on stderr between
 * replies; `finished` completes when the conversation ends (the user left, the input ended, the one
 * turn was answered), which is when `anna chat` stops the channel (src/programs/chat.ts).
 *
 * Everything printed from model, tool or user text goes through `terminalSafe` (./terminal/render.ts):
 * escape sequences in a reply must not retitle the window, write the clipboard or move the cursor.
 */
import { Context, Deferred, Effect, Fiber, Layer, Option, Queue, Stdio, Stream } from "effect"
import { userInfo } from "node:os"
import { ChannelError } from "../../domain/channels/errors.ts"
import type { ChatTarget, ResolvedChat, TurnEvent } from "../../domain/runtime/types.ts"
import { Channel } from "../../services/Channel.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { Runtime } from "../../services/Runtime.ts"
import { feedLine, flushPending, type Input, isPending, type LineSource, nothingPending, pipedSource, terminalSource } from "./terminal/input.ts"
import { chatScreen } from "./terminal/logLines.ts"
import { makeCollector, terminalJson, terminalSafe, type TurnResult, type Writer } from "./terminal/render.ts"

const isSlashCommand = (text: string): boolean => /^\/[a-z]+(\s|$)/i.test(text.trim())

/** The platform name of this channel in chat targets and session keys. */
export const PLATFORM = "cli"

/** Where the command's exit code goes: `process.exitCode`, read by `runMain`; tests record it. */
export const ExitCode = Context.Reference<(code: number) => Effect.Effect<void>>("anna/ChatExitCode", {
  defaultValue: () => (code) =>
    Effect.sync(() => {
      process.exitCode = code
    })
})

/** 0 for a normal stop, 1 when the agent could not work (the notice says why), 130 when aborted. */
export const exitCodeOf = (stopReason: TurnResult["stopReason"]): number =>
  stopReason === "unavailable" ? 1 : stopReason === "aborted" ? 130 : 0

/** stdout and stderr of the `Stdio` service; a closed pipe is not an error worth a stack trace. */
export const stdioWriter = Effect.gen(function*() {
  const stdio = yield* Stdio.Stdio
  const color = yield* stdio.stderrIsTerminal
  const sameTerminal = color && (yield* stdio.stdoutIsTerminal)
  const out = stdio.stdout()
  const err = stdio.stderr()
  const writer: Writer = {
    out: (text) => Stream.run(Stream.succeed(text), out).pipe(Effect.ignore),
    err: (text) => Stream.run(Stream.succeed(text), err).pipe(Effect.ignore),
    color,
    sameTerminal
  }
  return writer
})

/**
 * One message through the runtime, each event handed to `onEvent` as it arrives. If this fiber
 * is interrupted (Ctrl-C on a pipe, SIGTERM), the turn is aborted: it runs in the runtime's scope
 * and would otherwise go on without anyone reading it.
 */
export const consumeTurn = (
  runtime: Runtime["Service"],
  chat: ResolvedChat,
  message: string,
  onEvent: (e: TurnEvent) => Effect.Effect<void>
): Effect.Effect<TurnResult> =>
  Effect.gen(function*() {
    const collector = makeCollector(chat.sessionKey, chat.agentId)
    yield* runtime.send(chat, message).pipe(
      Stream.runForEach((e) => Effect.andThen(Effect.sync(() => collector.add(e)), onEvent(e)))
    )
    return collector.result()
  }).pipe(Effect.onInterrupt(() => runtime.abort(chat)))

const EXIT = /^\/(exit|quit)\s*$/i

/** The runtime's reply to a successful `/agent` switch (src/layers/runtime/commands.ts). */
const SWITCHED = /^You are now talking to (\S+) in this (?:chat|group)\b/

/** Said when a message typed during a turn waits for it to end. */
const QUEUED = "queued: sent when this reply ends; /abort stops the reply"

/** `/abort` on a line of its own: typed during a turn, it stops the turn at once. */
const ABORT = /^\/abort\s*$/i

/**
 * The conversation loop over a line source. While a turn runs, input is still read: Ctrl-C or a
 * line `/abort` aborts the turn at once (the prompt comes back when the runtime has stopped it), and
 * other lines wait their turn — `queued` says so for each message they complete — and are sent
 * after it, in order. At the prompt, Ctrl-C drops what was typed or pending, and on an empty prompt
 * leaves; end of input sends what is pending and leaves.
 */
export const converse = (
  source: LineSource,
  turn: (message: string) => Effect.Effect<void>,
  abort: Effect.Effect<unknown>,
  queued: (message: string) => Effect.Effect<void> = () => Effect.void
) =>
  Effect.gen(function*() {
    const backlog: Array<Input> = []
    /** What the lines waiting in the backlog assemble to (an `/abort` inside a message is text). */
    const waiting = () =>
      backlog.reduce((p, i) => (i._tag === "line" ? feedLine(p, i.text).pending : p), nothingPending)
    /** One input taken while a turn runs. */
    const during = (i: Input): Effect.Effect<void> => {
      if (i._tag === "interrupt") return Effect.asVoid(abort)
      if (i._tag !== "line") {
        backlog.push(i)
        return Effect.void
      }
      const before = waiting()
      if (!isPending(before) && ABORT.test(i.text.trim())) return Effect.asVoid(abort)
      backlog.push(i)
      const message = feedLine(before, i.text).message
      return message === undefined || message.trim() === "" ? Effect.void : queued(message)
    }
    const run = (message: string) =>
      Effect.gen(function*() {
        // An input taken while the turn ends is kept, not lost with the watcher: Ctrl-D typed just as
        // a reply ends must still end the chat.
        const watcher = yield* Effect.uninterruptibleMask((restore) =>
          restore(Queue.take(source.inputs)).pipe(Effect.flatMap(during))
        ).pipe(Effect.forever, Effect.forkChild)
        yield* turn(message).pipe(Effect.ensuring(Fiber.interrupt(watcher)))
      })
    let pending = nothingPending
    while (true) {
      if (backlog.length === 0) yield* source.prompt(isPending(pending))
      const input = backlog.shift() ?? (yield* Queue.take(source.inputs))
      if (input._tag === "end") {
        const last = flushPending(pending)
        if (last !== undefined && last.trim() !== "") yield* run(last)
        return
      }
      if (input._tag === "interrupt") {
        if (!input.typed && !isPending(pending)) return
        pending = nothingPending
        continue
      }
      const fed = feedLine(pending, input.text)
      pending = fed.pending
      const message = fed.message
      if (message === undefined || message.trim() === "") continue
      if (source.interactive && EXIT.test(message.trim())) return
      yield* run(message)
    }
  })

const localUser = (): string => {
  try {
    return userInfo().username
  } catch {
    // No passwd entry (e.g. an arbitrary uid in a container).
    return `uid-${process.getuid?.() ?? "unknown"}`
  }
}

/** "continuing session … (N messages)" when the memory layer is at hand, else just the key. */
const sessionLine = (chat: ResolvedChat) =>
  Effect.gen(function*() {
    const memory = yield* Effect.serviceOption(MemoryProvider)
    if (Option.isNone(memory)) return `session ${terminalSafe(chat.sessionKey)}`
    const stats = yield* Effect.option(memory.value.stats(chat.sessionKey))
    return Option.isSome(stats) && stats.value.messages > 0
      ? `continuing session ${terminalSafe(chat.sessionKey)} (${stats.value.messages} messages)`
      : `new session ${terminalSafe(chat.sessionKey)}`
  })

const oneTurn = (runtime: Runtime["Service"], chat: ResolvedChat, prompt: string, json: boolean, w: Writer) =>
  Effect.scoped(Effect.gen(function*() {
    const setExit = yield* ExitCode
    const text = prompt === "-"
      ? yield* (yield* Stdio.Stdio).stdin.pipe(Stream.decodeText(), Stream.mkString, Effect.orElseSucceed(() => ""))
      : prompt
    if (text.trim() === "") {
      yield* w.err("anna: the prompt is empty\n")
      return yield* setExit(2)
    }
    // Log lines during the turn are drawn between its lines (terminal/logLines.ts).
    const renderer = (yield* chatScreen(w, undefined)).renderer()
    // Which agent answers (a chat's /agent switch outlives the process that made it): said on
    // stderr, so that the reply on stdout stays clean; --json has it as `agent`.
    if (!json) yield* w.err(`agent: ${terminalSafe(chat.agentId)}\n`)
    const result = yield* consumeTurn(runtime, chat, text, json ? () => Effect.void : renderer.event).pipe(
      Effect.onInterrupt(() => (json ? Effect.void : renderer.end))
    )
    yield* json ? w.out(`${terminalJson(result, 2)}\n`) : renderer.end
    yield* setExit(exitCodeOf(result.stopReason))
  }))

/**
 * The conversation on a line source: the start line, then each message's reply rendered (or, with
 * `json`, one result object per line) until the source ends or the user leaves.
 */
export const chatLoop = (
  runtime: Runtime["Service"],
  chat: ResolvedChat,
  source: LineSource,
  options: {
    readonly json: boolean
    readonly writer: Writer
    /**
     * Where the conversation stands after a slash command (/new moves the session on, /model and
     * /agent change what answers): the next message goes there at once, not at the next start.
     */
    readonly reroute?: ((current: ResolvedChat, command: string, reply: string) => Effect.Effect<ResolvedChat>) | undefined
  }
) =>
  Effect.scoped(Effect.gen(function*() {
    const w = options.writer
    // Log lines go above the prompt, or between the turn's lines (terminal/logLines.ts).
    const screen = yield* chatScreen(w, source)
    let current = chat
    const line = yield* sessionLine(chat)
    yield* w.err(
      source.interactive
        ? `anna chat with ${terminalSafe(chat.agentId)}: ${line}\n/help lists commands; """ starts a multi-line block; Ctrl-C stops a reply; /exit or Ctrl-D leaves.\n`
        : `${line}\n`
    )
    /** The running turn's renderer: a line about the input goes between the turn's lines. */
    let active: { readonly event: (e: TurnEvent) => Effect.Effect<void> } | undefined
    const send = (message: string) =>
      options.json
        ? consumeTurn(runtime, current, message, () => Effect.void).pipe(
          Effect.tap((r) => w.out(`${terminalJson(r)}\n`))
        )
        : Effect.suspend(() => {
          const renderer = screen.renderer()
          active = renderer
          return consumeTurn(runtime, current, message, renderer.event).pipe(
            Effect.tap(() => renderer.end),
            Effect.ensuring(Effect.sync(() => {
              active = undefined
            }))
          )
        })
    const turn = (message: string) =>
      Effect.gen(function*() {
        const result = yield* send(message)
        if (options.reroute !== undefined && isSlashCommand(message)) current = yield* options.reroute(current, message, result.reply)
      })
    // A message typed during a turn is kept for after it; the user is told, not left guessing.
    const queued = () =>
      Effect.suspend(() => (active === undefined ? w.err(`[${QUEUED}]\n`) : active.event({ type: "notice", text: QUEUED })))
    yield* converse(source, turn, Effect.suspend(() => runtime.abort(current)), queued)
  }))

const interactive = (
  runtime: Runtime["Service"],
  chat: ResolvedChat,
  json: boolean,
  w: Writer,
  historyFile: string | undefined,
  reroute: (current: ResolvedChat, command: string, reply: string) => Effect.Effect<ResolvedChat>
) =>
  Effect.scoped(Effect.gen(function*() {
    const tty = yield* (yield* Stdio.Stdio).stdinIsTerminal
    const source = tty
      ? yield* terminalSource({ input: process.stdin, output: process.stdout, historyFile })
      : yield* pipedSource
    yield* chatLoop(runtime, chat, source, { json, writer: w, reroute })
    yield* (yield* ExitCode)(0)
  }))

export interface TerminalOptions {
  /** Talk to this agent instead of the routing rules' choice. */
  readonly agent?: string | undefined
  /** The conversation's name (already checked with `chatNameProblem`). */
  readonly session: string
  /** One message, answered and done (`-p`; "-" reads it from stdin). */
  readonly prompt?: string | undefined
  readonly json: boolean
  /** Where the interactive input history is kept (private, like the conversations). */
  readonly historyFile?: string | undefined
  /** Completed (or failed) when the conversation ends. */
  readonly finished: Deferred.Deferred<void>
}

/**
 * The terminal channel for the local user; needs Runtime and Stdio (MemoryProvider, when present,
 * makes the start line say how many messages the session has).
 */
export const layer = (options: TerminalOptions) =>
  Layer.effect(Channel, Effect.gen(function*() {
    const runtime = yield* Runtime
    const user = localUser()
    // The OS user NAME is the anna user NAME when there is one (one person, one user: issue 24).
    const target = (agentId: string | undefined): ChatTarget => ({
      platform: PLATFORM,
      externalUserId: user,
      userName: user,
      chatId: options.session,
      agentId,
      firstContactUser: user
    })
    const chat = yield* runtime.resolve(target(options.agent))
    const w = yield* stdioWriter
    if (chat.claimedIdentity === true) {
      yield* w.err(
        `anna: linked ${PLATFORM}:${terminalSafe(user)} to the existing user ${terminalSafe(chat.userId)}, so \`anna chat\` and the web chat share one memory` +
          ` (to keep them apart: anna user unlink ${terminalSafe(chat.userId)} ${PLATFORM}:${terminalSafe(user)}, then anna user link <another user> ${PLATFORM}:${terminalSafe(user)})\n`
      )
    }
    // After a command the chat is resolved again; a switch made with /agent (its reply names the
    // agent, a number or --default included) also replaces a --agent choice.
    let pinned = options.agent
    const reroute = (current: ResolvedChat, command: string, reply: string) => {
      const switched = /^\/agent\s/i.test(command.trim()) ? SWITCHED.exec(reply)?.[1] : undefined
      return runtime.resolve(target(switched ?? pinned)).pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            if (switched !== undefined) pinned = switched
          })
        ),
        Effect.orElseSucceed(() => current)
      )
    }
    const conversation = options.prompt !== undefined
      ? oneTurn(runtime, chat, options.prompt, options.json, w)
      : interactive(runtime, chat, options.json, w, options.historyFile, reroute)
    // Forked in the layer's scope (with the layer's services): stopping the channel stops the conversation.
    yield* conversation.pipe(
      Effect.exit,
      Effect.flatMap((exit) => Deferred.done(options.finished, exit)),
      Effect.forkScoped
    )
    return Channel.of({
      id: PLATFORM,
      description: `terminal chat with ${chat.agentId} (session ${chat.sessionKey})`,
      notify: (_target, message) =>
        message.text.trim() === ""
          ? Effect.fail(new ChannelError({ channel: PLATFORM, reason: "an empty message" }))
          : w.err(`[notice] ${terminalSafe(message.text)}\n`)
    })
  }))
