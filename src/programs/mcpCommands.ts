/** `anna mcp …` (issue 14, MCP client): placeholder until the MCP client work lands. */
import { Command } from "effect/cli"
import { mcpServeCommand } from "./mcpServe.ts"

export const mcpCommand = Command.make("mcp").pipe(
  Command.withDescription("MCP: servers the agents use (add, list, remove), and anna's memory as an MCP server (serve)"),
  Command.withSubcommands([mcpServeCommand])
)
