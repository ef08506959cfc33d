/**
 * The `anna` command tree and its edge:
 *
 * - Errors become one line on stderr and an exit code (1 for a refused operation, 2 for a usage
 *   error or a bad environment variable); a stack trace appears only for a real defect.
 * - A usage error (unknown command or flag, missing or bad argument) is that line, the command's
 *   short usage and where to read more, on stderr — not the whole help (`usagePresenter`).
 * - Every log line goes to stderr, for every command and the gateway (`Logger.LogToStderr`, set
 *   here once): stdout carries only a command's output, so `--json` prints exactly one document.
 *   Each is one line (`key=value` annotations), Node's process warnings included (logging.ts).
 * - `anna help [command…]` prints what `anna [command…] --help` prints.
 * - `anna` alone runs the gateway and takes its `--host`/`--port` (so `npm start -- --port P` works);
 *   given before a command they would be silently meaningless, so that is refused (`misplacedFlags`).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Effect, Exit, Logger, References } from "effect"
import { CliError, CliOutput, Command, type HelpDoc } from "effect/cli"
import { InvalidEnvironment, logFormatSetting, logLevelSetting, databaseUrlSetting, folderSettings } from "./env.ts"
import { LOGGERS, lineLogging, loggersFor } from "./logging.ts"
import { databaseUrl, FLAG_NAMES, host, port } from "./gatewayFlags.ts"

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
  admin: () => import("./adminCommands.ts").then((m) => m.adminCommand),
  channel: () => import("./channelCommands.ts").then((m) => m.channelCommand),
  sandbox: () => import("./sandboxCommands.ts").then((m) => m.sandboxCommand),
  memory: () => import("./memoryCommands.ts").then((m) => m.memoryCommand),
  plugin: () => import("./pluginCommands.ts").then((m) => m.pluginCommand),
  settings: () => import("./settingsCommands.ts").then((m) => m.settingsCommand),
  notify: () => import("./notifyCommand.ts").then((m) => m.notifyCommand),
  schedule: () => import("./scheduleCommands.ts").then((m) => m.scheduleCommand),
  skill: () => import("./skillCommands.ts").then((m) => m.skillCommand),
  mcp: () => import("./mcpCommands.ts").then((m) => m.mcpCommand),
  playbook: () => import("./playbookCommands.ts").then((m) => m.playbookCommand),
  diary: () => import("./diaryCommands.ts").then((m) => m.diaryCommand),
  db: () => import("./dbCommands.ts").then((m) => m.dbCommand),
  cluster: () => import("./clusterCommands.ts").then((m) => m.clusterCommand),
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
      Command.make("anna", { host, port, databaseUrl }, (f) =>
        Effect.flatMap(Effect.promise(() => import("./gateway.ts")), (m) => m.runGateway(m.gatewayOptions(f)))).pipe(
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

const isShowHelp = (e: unknown): e is CliError.ShowHelp => CliError.isCliError(e) && e._tag === "ShowHelp"

/** Renders a failure for a person; returns the exit code. */
export const reportFailure = <E>(cause: Cause.Cause<E>) => {
  if (Cause.hasInterruptsOnly(cause)) return exitWith(130)
  const failure = cause.reasons.find(Cause.isFailReason)
  if (failure !== undefined) {
    const e: unknown = failure.error
    // Help, or a usage error, was already printed (see usagePresenter).
    if (isShowHelp(e)) return exitWith(e.errors.length > 0 ? 2 : 0)
    if (e instanceof InvalidEnvironment) return exitWith(2, `anna: ${e.message}`)
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

/** A flag's value placeholder in a usage line. */
const placeholder = (flag: HelpDoc.FlagDoc): string => {
  if (flag.type === "boolean") return ""
  if (flag.type === "integer" || flag.type === "number") return " N"
  if (flag.type === "key=value") return " KEY=VALUE"
  return ` ${flag.name.replaceAll("-", "_").toUpperCase()}`
}

/** More optional flags than this show as `[flags]` (the help lists them). */
const MAX_LISTED_FLAGS = 5

/**
 * A command's usage on one line, e.g. `anna memory search <query> [--session SESSION] [--limit N]
 * [--json]` or `anna memory <sessions|import|…>`, from the help document effect/cli builds.
 */
export const usageLine = (path: ReadonlyArray<string>, doc: HelpDoc.HelpDoc): string => {
  const subcommands = (doc.subcommands ?? []).flatMap((g) => g.commands.map((c) => c.name))
  const args = (doc.args ?? []).map((a) => {
    const name = `<${a.name}>${a.variadic ? "..." : ""}`
    return a.required ? name : `[${name}]`
  })
  const optional = doc.flags.filter((f) => !f.required)
  const flags = [
    ...doc.flags.filter((f) => f.required).map((f) => `--${f.name}${placeholder(f)}`),
    ...(optional.length > MAX_LISTED_FLAGS ? ["[flags]"] : optional.map((f) => `[--${f.name}${placeholder(f)}]`))
  ]
  const commands = subcommands.length > 0 ? [`<${subcommands.join("|")}>`] : []
  // A command with subcommands and flags of its own (`anna`: the gateway's): two ways to call it.
  if (commands.length > 0 && flags.length > 0) return `${[...path, ...flags].join(" ")} | ${[...path, ...commands].join(" ")}`
  // Flags go before a variadic argument, which takes the rest of the line (`-- command…`).
  const variadic = (doc.args ?? []).some((a) => a.variadic)
  return [...path, ...commands, ...(variadic ? [...flags, ...args] : [...args, ...flags])].join(" ")
}

/** An effect/cli parse error as one line (its "Did you mean" block folded in). */
const errorLine = (error: CliError.CliError): string => {
  const first = error.message.split("\n")[0] ?? error.message
  const suggestions = "suggestions" in error && Array.isArray(error.suggestions) ? (error.suggestions as ReadonlyArray<string>) : []
  return suggestions.length > 0 ? `${first} (did you mean ${suggestions.join(" or ")}?)` : first
}

/** What anna prints for a usage error: the problem, the usage, where to read more — on stderr. */
const printUsageError = (path: ReadonlyArray<string>, doc: HelpDoc.HelpDoc, errors: ReadonlyArray<CliError.CliError>) =>
  Effect.sync(() => {
    const lines = [...errors.map((e) => `anna: ${errorLine(e)}`), `usage: ${usageLine(path, doc)}`, `run \`${path.join(" ")} --help\` for more`]
    process.stderr.write(`${lines.join("\n")}\n`)
  })

/** effect/cli's presenter, except that a usage error is short and on stderr (help and version as before). */
export const usagePresenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? printUsageError(event.helpDoc.commandPath ?? event.commandPath, event.helpDoc, event.errors)
      : CliOutput.defaultPresenter.present(event)
}

type Root = Effect.Success<ReturnType<typeof rootCommand>>

const run = (root: Root, argv: ReadonlyArray<string>) =>
  Command.runWith(root, { version: VERSION })(argv)

/**
 * `anna help [command…]`: the help of that command, as `anna [command…] --help` prints it; a name
 * that is not a command is a usage error (exit 2) with the usage of the last command that exists.
 */
const help = (words: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const root = yield* rootCommand(groupsFor(words))
    let command: Command.Command.Any = root
    const path: Array<string> = []
    for (const word of words) {
      const next: Command.Command.Any | undefined = command.subcommands.flatMap((g) => g.commands).find((c) => c.name === word || c.alias === word)
      if (next === undefined) {
        const error = new CliError.UnknownSubcommand({ subcommand: word, parent: ["anna", ...path], suggestions: [] })
        // The help document of the command that does exist, for its usage line.
        let shown: CliOutput.Presenter.Event | undefined
        yield* run(root, [...path, "--help"]).pipe(
          Effect.provideService(CliOutput.Presenter, {
            present: (event) =>
              Effect.sync(() => {
                shown = event
              })
          })
        )
        if (shown?._tag === "Help") yield* printUsageError(["anna", ...path], shown.helpDoc, [error])
        return yield* new CliError.ShowHelp({ commandPath: ["anna", ...path], errors: [error] })
      }
      path.push(word)
      command = next
    }
    return yield* run(root, [...path, "--help"])
  })

/**
 * The command a command line names after the root's own flags (`anna --port 1 doctor` → doctor):
 * those flags are the gateway's, meaningless before another command.
 */
export const misplacedFlags = (argv: ReadonlyArray<string>): string | undefined => {
  let i = 0
  while (i < argv.length) {
    const word = argv[i] ?? ""
    if ((FLAG_NAMES as ReadonlyArray<string>).includes(word)) i += 2
    else if (FLAG_NAMES.some((f) => word.startsWith(`${f}=`))) i += 1
    else break
  }
  const next = argv[i]
  return i > 0 && (isGroup(next) || next === "help") ? next : undefined
}

export const main = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const level = yield* logLevelSetting
    const format = yield* logFormatSetting
    yield* databaseUrlSetting
    yield* folderSettings
    const misplaced = misplacedFlags(argv)
    if (misplaced !== undefined) {
      return yield* exitWith(2, `anna: --host, --port and --database-url belong to the gateway: \`anna --port P\` or \`anna gateway --port P\`, not before \`${misplaced}\``)
    }
    const program = argv[0] === "help" ? help(argv.slice(1)) : Effect.flatMap(rootCommand(groupsFor(argv)), (root) => run(root, argv))
    return yield* program.pipe(
      Effect.provideService(CliOutput.Presenter, usagePresenter),
      Effect.catchCause(reportFailure),
      // A command other than the gateway logs its audit lines at debug level (see AuditLogLevel).
      lineLogging(isGroup(argv[0]) && argv[0] !== "gateway"),
      Effect.provideService(References.MinimumLogLevel, level),
      Effect.provideService(Logger.CurrentLoggers, loggersFor(format))
    )
  }).pipe(
    // ANNA_LOG_LEVEL not understood.
    Effect.catchCause(reportFailure),
    // The one place that decides where logs go: stderr, never stdout; one line per event.
    Effect.provideService(Logger.LogToStderr, true),
    Effect.provideService(Logger.CurrentLoggers, LOGGERS),
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
