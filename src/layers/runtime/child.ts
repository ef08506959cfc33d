/**
 * One child agent of the `agent` tool (seed 001, "Agent Tool"): the agent loop of a turn
 * (./agentLoop.ts) over a history kept in memory — nothing is stored, the history starts with the task alone and is
 * dropped when the child ends. The model is called, the tool calls of a response run in parallel,
 * their results are appended, and so on until the model stops calling tools or `maxTurns` model
 * calls were made. The whole child is bounded by `timeoutSeconds`: on timeout it is interrupted
 * (its model request aborted, its tools interrupted) and the result says so, with the text it had
 * produced by then.
 *
 * Usage: every model call is recorded in the UsageLog as it completes (purpose "chat", against the
 * parent's session, agent and user — a child's spend is the parent turn's spend), so a child that
 * later times out or fails is still accounted for. The totals are also returned for the report.
 */
import { Duration, Effect, Option } from "effect"
import type { Message } from "../../domain/message.ts"
import { emptyUsage, type Usage } from "../../domain/model/types.ts"
import type { ToolCallContext } from "../../domain/tool.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import type { ToolRegistry } from "../../domain/tool.ts"
import type { UsageLog } from "../../services/UsageLog.ts"
import { runLoop, textOf } from "./agentLoop.ts"


export interface ChildSetup {
  readonly client: ChatModelClient
  readonly model: string
  readonly system: string
  /** The child's tools (never the agent tool). */
  readonly tools: ToolRegistry
  readonly maxTurns: number
  readonly timeoutSeconds: number
  /** The parent's session: tools act for it and usage is recorded against it. */
  readonly context: ToolCallContext
  readonly usage: UsageLog["Service"]
}

export interface ChildTask {
  readonly task: string
  readonly context?: string | undefined
}

export interface ChildResult {
  /** `done`: the model stopped by itself; `max_turns`: it still wanted tools; `timeout`: cut off. */
  readonly outcome: "done" | "max_turns" | "timeout"
  /** The final assistant text, else the last text the child produced ('' when none). */
  readonly text: string
  readonly usage: Usage
  readonly modelCalls: number
  readonly toolCalls: number
}

/** The child's only message: its task, and the context the parent passed along. */
export const firstMessage = (task: ChildTask): string =>
  task.context === undefined || task.context.trim() === "" ? task.task : `${task.task}\n\nContext:\n${task.context}`

export const runChild = Effect.fn("AgentTool.child")(function*(setup: ChildSetup, task: ChildTask) {
  const messages: Array<Message> = [{ role: "user", content: firstMessage(task) }]
  const stats = { usage: emptyUsage, modelCalls: 0, toolCalls: 0 }
  // Kept outside the timed loop so that a timeout still reports what was said.
  let lastText = ""
  let partial = ""

  const loop = runLoop({
    client: setup.client,
    model: setup.model,
    system: setup.system,
    tools: setup.tools,
    maxTurns: setup.maxTurns,
    context: setup.context,
    usage: setup.usage,
    span: "AgentTool.child",
    history: {
      messages: Effect.sync(() => messages),
      append: (m) => Effect.sync(() => void messages.push(m))
    },
    hooks: {
      onText: (text) => Effect.sync(() => {
        partial += text
      }),
      onResponse: (response) =>
        Effect.sync(() => {
          partial = ""
          const text = textOf(response.message)
          if (text.trim() !== "") lastText = text
        })
    }
  }, stats).pipe(Effect.map((r) => (r.stopReason === "max_turns" ? "max_turns" as const : "done" as const)))

  const finished = yield* loop.pipe(Effect.timeoutOption(Duration.seconds(setup.timeoutSeconds)))
  const result: ChildResult = {
    outcome: Option.getOrElse(finished, () => "timeout" as const),
    // A response cut off by the timeout is newer than the last complete one.
    text: Option.isNone(finished) && partial.trim() !== "" ? partial : lastText,
    usage: stats.usage,
    modelCalls: stats.modelCalls,
    toolCalls: stats.toolCalls
  }
  return result
})
