/** What the agent loop needs of a tool: a definition for the model and a way to run it. */
import { type Effect, Schema } from "effect"

export interface ToolDefinition {
  readonly name: string
  readonly description: string
  /**
   * JSON Schema (draft 2020-12 subset understood by the Anthropic and OpenAI APIs). Built-in tools
   * derive it from the Schema that decodes their input: `inputSchemaOf` in toolSchema.ts.
   */
  readonly inputSchema: Readonly<Record<string, unknown>>
}

/** Who is calling: tools act for this session's user and agent, and never beyond them. */
export interface ToolCallContext {
  readonly sessionKey: string
  readonly userId: string
  readonly agentId: string
}

/** A tool call the model got wrong or that failed; the message goes back to the model as the result. */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  tool: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.tool}: ${this.reason}`
  }
}

export interface Tool {
  readonly definition: ToolDefinition
  readonly execute: (input: unknown, context: ToolCallContext) => Effect.Effect<string, ToolError>
}
