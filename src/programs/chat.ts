/**
 * `anna chat`: the terminal channel (src/layers/channels/TerminalChannel.ts) for the local user,
 * launched on the runtime the composition root passes (`chatCommand(layer)`) and stopped when the
 * conversation ends.
 */
import { Deferred, Effect, Layer, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { usageError } from "./output.ts"
import { chatNameProblem } from "../domain/runtime/types.ts"
import * as TerminalChannel from "../layers/channels/TerminalChannel.ts"
import { AppConfig } from "../services/AppConfig.ts"
import type { Runtime } from "../services/Runtime.ts"

export { chatLoop, consumeTurn, converse, ExitCode, exitCodeOf, stdioWriter } from "../layers/channels/TerminalChannel.ts"

const DESCRIPTION = [
  "Chat with an agent in the terminal. The reply streams as it is written; tool use and notices show as short lines on stderr.",
  "Slash commands (/help, /new, /compact, /abort, /whoami, /model, /agent) are answered by anna; /exit or Ctrl-D leaves. /agent ID switches this chat (this --session), /agent ID --default your default agent.",
  "Multi-line input: end a line with \\ to continue on the next one, or put \"\"\" on a line of its own to start a block and again to send it.",
  "Ctrl-C, or a line /abort, stops a running reply; other lines typed during a reply are queued and sent after it. At an empty prompt Ctrl-C leaves.",
  "The conversation is stored: the next `anna chat` with the same --agent and --session continues it.",
  "Without a terminal, each line of stdin is one message (--json prints one result object per line).",
  "-p sends one message and prints the reply (-p - reads it from stdin), and on stderr which agent answers; exit code 0, 1 when the agent is unavailable, 130 when aborted."
].join("\n  ")

const flags = {
  agent: Flag.String("agent").pipe(Flag.withDescription("Talk to this agent instead of the default one"), Flag.optional),
  session: Flag.String("session").pipe(
    Flag.withDescription("Conversation name: each name is a separate session (default dm; no control characters or \"#\", at most 128 characters)"),
    Flag.withDefault("dm")
  ),
  prompt: Flag.String("prompt").pipe(
    Flag.withAlias("p"),
    Flag.withDescription("Send this one message, print the reply and exit (\"-\" reads it from stdin)"),
    Flag.optional
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDescription("Print {reply, notices, tools, usage, stopReason, sessionKey, agent} instead of the text (one per line without -p)"),
    Flag.withDefault(false)
  )
}

/** `anna chat`, running its turns on the `Runtime` that `runtimeLayer` provides. */
export const chatCommand = <E, R>(runtimeLayer: Layer.Layer<Runtime, E, R>) =>
  Command.make("chat", flags, (f) =>
    Effect.gen(function*() {
      const problem = chatNameProblem(f.session)
      if (problem !== undefined) return yield* usageError(["anna", "chat"], `--session: ${problem}`)
      const app = yield* Effect.serviceOption(AppConfig)
      const finished = yield* Deferred.make<void>()
      const channel = TerminalChannel.layer({
        agent: Option.getOrUndefined(f.agent),
        session: f.session,
        prompt: Option.getOrUndefined(f.prompt),
        json: f.json,
        historyFile: Option.isSome(app) ? app.value.chatHistory : undefined,
        finished
      })
      yield* Effect.raceFirst(Layer.launch(channel), Deferred.await(finished))
    })).pipe(Command.withDescription(DESCRIPTION), Command.provide(runtimeLayer))
