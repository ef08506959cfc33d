/**
 * ToolRegistry — the tools one agent session may call: their definitions (sent to the model) and
 * dispatch by name. It owns lookup and the "unknown tool" answer; it does not own what a tool does,
 * nor which tools an agent is allowed (the ToolCatalog and the runtime decide what goes in).
 *
 * Implementation: `ToolRegistry.fromTools` (src/layers/tools/ToolRegistry.ts), one per session runner.
 */
import { Context, type Effect, type Option } from "effect"
import type { Tool, ToolCallContext, ToolDefinition, ToolError } from "../domain/tool.ts"

export class ToolRegistry extends Context.Service<ToolRegistry, {
  /** In a stable order: the ToolCatalog's sources in registration order, then the agent tool. */
  readonly definitions: ReadonlyArray<ToolDefinition>
  readonly get: (name: string) => Option.Option<Tool>
  /** Runs a tool; an unknown name fails with a ToolError listing the tools that exist. */
  readonly execute: (name: string, input: unknown, context: ToolCallContext) => Effect.Effect<string, ToolError>
}>()("anna/ToolRegistry") {}
