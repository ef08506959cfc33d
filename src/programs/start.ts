/**
 * What runs first when `anna` starts, kept free of Effect so it loads in milliseconds:
 *
 * - The Node.js version: anna needs 22.19 or newer (`node:sqlite`, @effect/platform-node); an older
 *   Node gets one line on stderr saying so and exit code 1, instead of a module-loading stack
 *   trace. This file must stay loadable by old Nodes (no dependencies, nothing newer than
 *   ES2022): in the bundled binary (dist/main.js) it runs before any chunk is loaded. (Node 20
 *   cannot run the TypeScript sources at all, so src/main.ts fails before reaching it.)
 * - Node's on-disk compile cache (`module.enableCompileCache`): parsing the bundled JavaScript is
 *   most of a cold start; later starts reuse the compiled code.
 * - Node's process warnings become anna's log lines (warnings.ts) before anything can emit one.
 * - `anna --help` (and `anna help`) prints the help text the build rendered from the same command tree
 *   (dist/help.txt, or dist/help.ansi on a color terminal, as effect/cli decides colors), so the
 *   most common first command does not load the CLI at all. `anna -h` always renders it live; a
 *   test checks that both print the same bytes.
 * - Everything else loads the command tree (src/programs/cli.ts), which loads only the command
 *   group the command line names.
 */
import { readFileSync } from "node:fs"
import * as NodeModule from "node:module"
import { routeWarnings } from "./warnings.ts"

/** package.json's `engines.node` (a test keeps them equal). */
export const MIN_NODE = "22.19.0"

/** Whether `version` ("20.20.2") is older than `minimum`. */
export const olderThan = (version: string, minimum: string): boolean => {
  const have = version.split(".").map((n) => Number.parseInt(n, 10) || 0)
  const want = minimum.split(".").map((n) => Number.parseInt(n, 10) || 0)
  for (let i = 0; i < want.length; i++) {
    const h = have[i] ?? 0
    const w = want[i] ?? 0
    if (h !== w) return h < w
  }
  return false
}

const cachedHelp = (): string | undefined => {
  const color = process.stdout.isTTY === true && !process.env.NO_COLOR
  try {
    return readFileSync(new URL(color ? "./help.ansi" : "./help.txt", import.meta.url), "utf8")
  } catch {
    return undefined
  }
}

export const start = async (argv: ReadonlyArray<string>): Promise<void> => {
  const node = process.versions.node
  if (olderThan(node, MIN_NODE)) {
    const wanted = MIN_NODE.replace(/\.0$/, "")
    process.stderr.write(
      `anna: needs Node.js ${wanted} or newer (this is ${node}); run it with npm start or npx node dist/main.js, which use the Node 24 this project installs\n`
    )
    process.exitCode = 1
    return
  }
  routeWarnings()
  NodeModule.enableCompileCache?.()
  if (argv.length === 1 && (argv[0] === "--help" || argv[0] === "help")) {
    const text = cachedHelp()
    if (text !== undefined) {
      process.stdout.write(text)
      return
    }
  }
  const cli = await import("./cli.ts")
  cli.runMain()
}
