/** The `mcp` tool (issue 14): placeholder source (offers nothing) until its work lands. */
import { Effect } from "effect"
import * as ToolCatalogLayer from "./ToolCatalog.ts"

export const TOOL_NAME = "mcp"

export const layer = ToolCatalogLayer.register(Effect.succeed({ id: TOOL_NAME, tools: () => Effect.succeed([]) }))
