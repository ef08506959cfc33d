/**
 * Parses an `anna` command line against the real command tree (src/programs/cli.ts) without running
 * its handler: the lexer, the parser and each command's typed parse (flag types, choices, filters,
 * argument counts) are effect/cli's own — the steps `Command.runWith` takes before it calls the
 * handler. effect/cli exports no parse-only entry, so this reaches its internal modules by file path
 * (`effect` is pinned exactly; an upgrade that moves them fails this module loudly, not silently).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect } from "effect"
import type { CliError, Command } from "effect/cli"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { rootCommand } from "../../src/programs/cli.ts"

interface Token {
  readonly _tag: string
}
interface LexResult {
  readonly tokens: ReadonlyArray<Token>
  readonly trailingOperands: ReadonlyArray<string>
}
interface ParsedArgs {
  readonly errors?: ReadonlyArray<CliError.CliError> | undefined
}
interface Internals {
  readonly lex: (argv: ReadonlyArray<string>) => LexResult
  readonly parseArgs: (lexed: LexResult, command: Command.Command.Any) => Effect.Effect<ParsedArgs>
  readonly toImpl: (command: Command.Command.Any) => { readonly parse: (args: ParsedArgs) => Effect.Effect<unknown, CliError.CliError> }
}

const internal = join(dirname(createRequire(import.meta.url).resolve("effect/cli")), "internal")
const load = async (): Promise<Internals> => {
  const [lexer, parser, command] = await Promise.all(
    ["lexer.js", "parser.js", "command.js"].map((f) => import(pathToFileURL(join(internal, f)).href))
  )
  return { lex: lexer.lex, parseArgs: parser.parseArgs, toImpl: command.toImpl } as Internals
}

/**
 * A parse-only checker over the whole command tree: the errors of `argv` (none when it parses). A
 * line asking for help (`anna memory --help`, `anna help memory`) needs only its command path to exist.
 */
export const makeParser = async () => {
  const { lex, parseArgs, toImpl } = await load()
  const root = await Effect.runPromise(rootCommand())
  const pathProblem = (words: ReadonlyArray<string>): ReadonlyArray<string> => {
    let command: Command.Command.Any = root
    for (const word of words) {
      const next = command.subcommands.flatMap((g) => g.commands).find((c) => c.name === word)
      if (next === undefined) return [`no command "${word}" in ${command.name}`]
      command = next
    }
    return []
  }
  return (argv: ReadonlyArray<string>): Promise<ReadonlyArray<string>> => {
    if (argv[0] === "help") return Promise.resolve(pathProblem(argv.slice(1)))
    const help = argv.findIndex((w) => w === "--help" || w === "-h")
    if (help >= 0) return Promise.resolve(pathProblem(argv.slice(0, help).filter((w) => !w.startsWith("-"))))
    return Effect.runPromise(
      Effect.gen(function*() {
        const parsed = yield* parseArgs(lex(argv), root)
        if (parsed.errors !== undefined && parsed.errors.length > 0) return parsed.errors.map((e) => e.message.split("\n")[0] ?? "")
        const typed = yield* Effect.result(toImpl(root).parse(parsed))
        return typed._tag === "Failure" ? [typed.failure.message] : []
      }).pipe(Effect.provide(NodeServices.layer))
    )
  }
}
