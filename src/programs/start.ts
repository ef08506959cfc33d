/**
 * What runs first when `anna` starts, kept free of Effect so it loads in milliseconds:
 *
 * - Node's on-disk compile cache (`module.enableCompileCache`): parsing the bundled JavaScript is
 *   most of a cold start; later starts reuse the compiled code.
 * - `anna --help` prints the help text the build rendered from the same command tree
 *   (dist/help.txt, or dist/help.ansi on a color terminal, as effect/cli decides colors), so the
 *   most common first command does not load the CLI at all. `anna -h` always renders it live; a
 *   test checks that both print the same bytes.
 * - Everything else loads the command tree (src/programs/cli.ts), which loads only the command
 *   group the command line names.
 */
import { readFileSync } from "node:fs"
import * as NodeModule from "node:module"

const cachedHelp = (): string | undefined => {
  const color = process.stdout.isTTY === true && !process.env.NO_COLOR
  try {
    return readFileSync(new URL(color ? "./help.ansi" : "./help.txt", import.meta.url), "utf8")
  } catch {
    return undefined
  }
}

export const start = async (argv: ReadonlyArray<string>): Promise<void> => {
  NodeModule.enableCompileCache?.()
  if (argv.length === 1 && argv[0] === "--help") {
    const text = cachedHelp()
    if (text !== undefined) {
      process.stdout.write(text)
      return
    }
  }
  const cli = await import("./cli.ts")
  cli.runMain()
}
