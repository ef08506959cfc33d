/**
 * The `anna` command tree and its edge: errors become one line on stderr and an exit code (1 for
 * a refused operation, 2 for a usage error); a stack trace appears only for a real defect.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Effect, Exit } from "effect"
import { Command } from "effect/cli"
import { withLogLevel } from "./env.ts"

export const VERSION = "0.1.0"

/**
 * The command groups, in the order `anna --help` lists them, each loaded on demand: a command
 * loads its own group's module (and what that imports), not the others' — `anna memory stats`
 * never loads the runtime, the Docker client or a model SDK. Only a command line that does not
 * start with a group's name (`anna --help`, `anna`, a typo) loads them all.
 */
const GROUPS = {
  gateway: () => import("./gateway.ts").then((m) => m.gatewayCommand),
  chat: () => Promise.all([import("./chat.ts"), import("./layers.ts")]).then(([m, l]) => m.chatCommand(l.AgentRuntime)),
  onboard: () => import("./providerCommands.ts").then((m) => m.onboardCommand),
  provider: () => import("./providerCommands.ts").then((m) => m.providerCommand),
  agent: () => import("./agentCommands.ts").then((m) => m.agentCommand),
  user: () => import("./userCommands.ts").then((m) => m.userCommand),
  channel: () => import("./channelCommands.ts").then((m) => m.channelCommand),
  sandbox: () => import("./sandboxCommands.ts").then((m) => m.sandboxCommand),
  memory: () => import("./memoryCommands.ts").then((m) => m.memoryCommand),
  plugin: () => import("./pluginCommands.ts").then((m) => m.pluginCommand),
  settings: () => import("./settingsCommands.ts").then((m) => m.settingsCommand),
  doctor: () => import("./doctor.ts").then((m) => m.doctorCommand)
} as const

export type GroupName = keyof typeof GROUPS
export const GROUP_NAMES = Object.keys(GROUPS) as ReadonlyArray<GroupName>

const isGroup = (s: string | undefined): s is GroupName => s !== undefined && Object.hasOwn(GROUPS, s)

/** The groups a command line needs: its first word's, or all of them. */
export const groupsFor = (argv: ReadonlyArray<string>): ReadonlyArray<GroupName> => {
  const first = argv[0]
  return isGroup(first) ? [first] : GROUP_NAMES
}

/** The `anna` command tree with the given groups (all of them for help and for `anna` alone). */
export const rootCommand = (names: ReadonlyArray<GroupName> = GROUP_NAMES) =>
  Effect.promise(() => Promise.all(names.map((n) => GROUPS[n]()))).pipe(
    Effect.map((groups) =>
      Command.make("anna", {}, () => Effect.flatMap(Effect.promise(() => import("./gateway.ts")), (m) => m.runGateway())).pipe(
        Command.withDescription(
          "anna: a self-hosted AI assistant gateway with lossless memory. Without a command, runs the gateway. State lives in $ANNA_HOME (default ~/.anna)."
        ),
        Command.withSubcommands(groups)
      )
    )
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
  Effect.flatMap(rootCommand(groupsFor(argv)), (root) => Command.runWith(root, { version: VERSION })(argv)).pipe(
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
