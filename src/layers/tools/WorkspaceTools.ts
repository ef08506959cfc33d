/**
 * The built-in workspace tools (seed 001, "Built-in Tools") as a ToolCatalog source: `bash`, `read`,
 * `write`, `edit`, each bound to the session's sandbox. `bash` runs through `session.exec`; the file
 * tools reach the workspace through the session's confined `readFile`/`writeFile`. The sandbox is
 * started only when the agent enables one of them, so an agent without these tools never starts a
 * container; when it cannot start (no Docker, no image), the session gets none of them and the
 * runtime says why. The tools themselves are in ./bash.ts, ./read.ts, ./write.ts, ./edit.ts.
 */
import { Effect, Layer, Option } from "effect"
import type { Tool } from "../../domain/tool.ts"
import { Sandbox, type SandboxSession } from "../../services/Sandbox.ts"
import type { ToolSource } from "../../services/ToolCatalog.ts"
import * as Bash from "./bash.ts"
import * as Edit from "./edit.ts"
import * as Read from "./read.ts"
import * as ToolCatalog from "./ToolCatalog.ts"
import * as Write from "./write.ts"

export { Bash, Edit, Read, Write }

/** The built-ins in their fixed order. */
export const BUILTINS: ReadonlyArray<readonly [string, (session: SandboxSession) => Tool]> = [
  [Bash.TOOL_NAME, Bash.make],
  [Read.TOOL_NAME, Read.make],
  [Write.TOOL_NAME, Write.make],
  [Edit.TOOL_NAME, Edit.make]
]

/** The four tools on one sandbox session (tests, custom tool sets). */
export const toolsFor = (session: SandboxSession): ReadonlyArray<Tool> => BUILTINS.map(([, make]) => make(session))

export const source: ToolSource = {
  id: "workspace",
  tools: (session) =>
    Effect.gen(function*() {
      const wanted = BUILTINS.filter(([name]) => session.enabled(name))
      if (wanted.length === 0) return []
      // No sandbox, no workspace tools (the runtime tells the user why): nothing ever runs on the host.
      const sandbox = yield* Effect.option(session.sandbox)
      return Option.isSome(sandbox) ? wanted.map(([, make]) => make(sandbox.value)) : []
    })
}

/**
 * Registers the workspace tools with the ToolCatalog when the deployment has a Sandbox; without one
 * they are left out (an agent then has only the other sources' tools), as before any container runs.
 */
export const layer = Layer.unwrap(Effect.map(Effect.serviceOption(Sandbox), (sandbox) =>
  Option.isSome(sandbox) ? ToolCatalog.register(Effect.succeed(source)) : Layer.empty))
