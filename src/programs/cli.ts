/**
 * The `anna` command tree and its edge: errors become one line on stderr and an exit code (1 for
 * a refused operation, 2 for a usage error); a stack trace appears only for a real defect.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Effect, Exit } from "effect"
import { Command } from "effect/cli"
import { gatewayCommand, runGateway } from "./gateway.ts"
import { memoryCommand } from "./memoryCommands.ts"
import { pluginCommand } from "./pluginCommands.ts"
import { agentCommand } from "./agentCommands.ts"
import { channelCommand } from "./channelCommands.ts"
import { runtimeLayer } from "./app.ts"
import { chatCommand } from "./chat.ts"
import { doctorCommand } from "./doctor.ts"
import { sandboxCommand } from "./sandboxCommands.ts"
import { onboardCommand, providerCommand } from "./providerCommands.ts"
import { withLogLevel } from "./env.ts"
import { settingsCommand } from "./settingsCommands.ts"
import { userCommand } from "./userCommands.ts"

export const VERSION = "0.1.0"

export const rootCommand = Command.make("anna", {}, () => runGateway()).pipe(
  Command.withDescription(
    "anna: a self-hosted AI assistant gateway with lossless memory. Without a command, runs the gateway. State lives in $ANNA_HOME (default ~/.anna)."
  ),
  Command.withSubcommands([
    gatewayCommand,
    chatCommand(runtimeLayer),
    onboardCommand,
    providerCommand,
    agentCommand,
    userCommand,
    channelCommand,
    sandboxCommand,
    memoryCommand,
    pluginCommand,
    settingsCommand,
    doctorCommand
  ])
)

const exitWith = (code: number, line?: string) =>
  Effect.sync(() => {
    if (line !== undefined) process.stderr.write(`${line}\n`)
    process.exitCode = code
  })

/** Renders a failure for a person; returns the exit code. */
export const reportFailure = <E>(cause: Cause.Cause<E>) => {
  if (Cause.hasInterruptsOnly(cause)) return exitWith(130)
  const failure = cause.reasons.find(Cause.isFailReason)
  if (failure !== undefined) {
    const e: unknown = failure.error
    if (typeof e === "object" && e !== null && "_tag" in e && e._tag === "ShowHelp") {
      // Help was already printed (with the parse errors under it, if any).
      const errors = "errors" in e && Array.isArray(e.errors) ? e.errors : []
      return exitWith(errors.length > 0 ? 2 : 0)
    }
    const message = e instanceof Error ? e.message : String(e)
    return exitWith(1, `anna: ${message}`)
  }
  const defect = cause.reasons.find(Cause.isDieReason)
  const d: unknown = defect?.defect
  const text = d instanceof Error ? d.message : String(d)
  return exitWith(70, `anna: internal error: ${text}\n(run with ANNA_LOG_LEVEL=debug for details; please report this)`).pipe(
    Effect.andThen(Effect.logDebug(Cause.pretty(cause)))
  )
}

export const main = (argv: ReadonlyArray<string>) =>
  Command.runWith(rootCommand, { version: VERSION })(argv).pipe(
    Effect.catchCause(reportFailure),
    withLogLevel,
    Effect.provide(NodeServices.layer)
  )

/**
 * Exit codes: what `reportFailure` set; after a signal, 130 unless the interrupted command ended
 * cleanly and said so (the gateway sets 0).
 */
export const runMain = () =>
  NodeRuntime.runMain(main(process.argv.slice(2)), {
    disableErrorReporting: true,
    teardown: (exit, onExit) =>
      onExit(
        Exit.isSuccess(exit)
          ? Number(process.exitCode ?? 0)
          : Cause.hasInterruptsOnly(exit.cause)
          ? Number(process.exitCode ?? 130)
          : 1
      )
  })
