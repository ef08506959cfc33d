/** `anna skill …` (issue 14, skills): placeholder until the skills work lands. */
import { Command } from "effect/cli"

export const skillCommand = Command.make("skill").pipe(Command.withDescription("Skills: install, list, remove"))
