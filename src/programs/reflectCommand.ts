/** `anna diary reflect` (issue 15). Placeholder of the groundwork commit: lands with the learning loop. */
import { Console } from "effect"
import { Command } from "effect/cli"

export const reflectCommand = Command.make("reflect", {}, () => Console.log("not built yet")).pipe(
  Command.withDescription("Reflect on a session's latest burst now (being built)")
)
