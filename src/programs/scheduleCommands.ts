/** `anna schedule …` (issue 14, scheduler): placeholder until the scheduler work lands. */
import { Command } from "effect/cli"

export const scheduleCommand = Command.make("schedule").pipe(Command.withDescription("Scheduled jobs: add, list, remove, run, history"))
