/** `anna playbook` (issue 15). Placeholder of the groundwork commit: the commands land with the playbook work. */
import { Console } from "effect"
import { Command } from "effect/cli"

export const playbookCommand = Command.make("playbook", {}, () => Console.log("not built yet")).pipe(
  Command.withDescription("playbook (issue 15, being built)")
)
