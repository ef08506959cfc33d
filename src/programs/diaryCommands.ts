/** `anna diary` (issue 15). Placeholder of the groundwork commit: the commands land with the diary work. */
import { Console } from "effect"
import { Command } from "effect/cli"

export const diaryCommand = Command.make("diary", {}, () => Console.log("not built yet")).pipe(
  Command.withDescription("diary (issue 15, being built)")
)
