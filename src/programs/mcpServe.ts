/** `anna mcp serve` (issue 14): placeholder until the MCP server work lands. */
import { Command } from "effect/cli"

export const mcpServeCommand = Command.make("serve").pipe(Command.withDescription("Serve anna's memory to MCP clients over stdio"))
