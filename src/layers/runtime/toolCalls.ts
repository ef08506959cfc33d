/**
 * Running one model response's tool calls, shared by the session turn and sub-agents: several at a
 * time, each answered by a tool_result block in call order; a failing tool becomes an error result
 * for the model to read, never a failure of the loop. Every result and error is capped here
 * (`capToolResult`), the one place all tools' output passes, before the hooks store or show it; and
 * every call is counted and timed here (`anna_tool_calls_total`, `anna_tool_call_duration_seconds`)
 * and is a span (`execute_tool {tool}`, domain/observability/tracing.ts) without its arguments or output.
 */
import { Effect, Exit, Option } from "effect"
import type { ToolResultBlock, ToolUseBlock } from "../../domain/message.ts"
import * as Metrics from "../../domain/observability/metrics.ts"
import * as Tracing from "../../domain/observability/tracing.ts"
import { capToolResult, type ToolCallContext } from "../../domain/tool.ts"
import type { ToolRegistry } from "../../domain/tool.ts"

/** Tool calls of one model response run at most this many at a time. */
export const TOOL_CONCURRENCY = 4

export interface ToolCallHooks {
  /** Which loop runs the calls (`turn`, `AgentTool.child`): the spans' `anna.loop` attribute. */
  readonly span: string
  readonly onStart?: ((call: ToolUseBlock) => Effect.Effect<void>) | undefined
  readonly onEnd?: ((call: ToolUseBlock, output: string, isError: boolean) => Effect.Effect<void>) | undefined
}

export const runToolCalls = (
  tools: ToolRegistry,
  calls: ReadonlyArray<ToolUseBlock>,
  context: ToolCallContext,
  hooks: ToolCallHooks
): Effect.Effect<Array<ToolResultBlock>> =>
  Effect.forEach(calls, (call) =>
    Effect.gen(function*() {
      if (hooks.onStart !== undefined) yield* hooks.onStart(call)
      // The model names the tool: one the agent does not have is counted as `unknown`, never by that name.
      const tool = Option.isSome(tools.get(call.name)) ? call.name : "unknown"
      const span = Tracing.toolSpan(tool, call.id)
      const outcome = yield* tools.execute(call.name, call.input, context).pipe(
        Effect.map((output) => ({ output: capToolResult(output), isError: false })),
        Effect.catch((e) => Effect.succeed({ output: capToolResult(e.reason), isError: true })),
        (run) =>
          Metrics.timed(run, (seconds, exit) =>
            Metrics.toolCallDone(tool, Exit.isSuccess(exit) ? (exit.value.isError ? "error" : "ok") : "aborted", seconds)),
        Effect.tap((o) => Effect.annotateCurrentSpan("anna.tool.outcome", o.isError ? "error" : "ok")),
        Effect.onInterrupt(() => Effect.annotateCurrentSpan("anna.tool.outcome", "aborted")),
        Effect.withSpan(span.name, { attributes: { ...span.attributes, "anna.loop": hooks.span } })
      )
      if (hooks.onEnd !== undefined) yield* hooks.onEnd(call, outcome.output, outcome.isError)
      const block: ToolResultBlock = outcome.isError
        ? { type: "tool_result", tool_use_id: call.id, content: outcome.output, is_error: true }
        : { type: "tool_result", tool_use_id: call.id, content: outcome.output }
      return block
    }), { concurrency: TOOL_CONCURRENCY })
