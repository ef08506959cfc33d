/**
 * The `agent` tool (seed 001, "Agent Tool"): the model hands focused subtasks (research, review,
 * drafting) to child agents that start from a fresh context — each child's history holds only its
 * task (and the context the parent chose to pass), never the parent's conversation. Up to 8 tasks
 * per call run in parallel, `concurrency` at a time (default 3); one failing or timing out does not
 * fail the others. Children get the parent's tools minus `agent` (no recursion), optionally narrowed
 * by a whitelist; their output comes back truncated to ~4,096 tokens so it cannot bloat the parent.
 *
 * Per task: `preset` (a markdown file, see `runtime/presets.ts`), `context`, `model`, `system`
 * (instructions added to the preset's or the parent's system prompt), `tools`, `max_turns` (10),
 * `timeout_seconds` (120). A task's own setting wins over its preset's, which wins over the default;
 * a task's `tools` replaces the preset's list (both can only name tools the parent has).
 */
import { Effect, Option, Result, Schema } from "effect"
import { estimateTextTokens } from "../../domain/message.ts"
import { type Tool, type ToolCallContext, ToolError, type ToolRegistry, toolRegistry } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import type { ChatModelClient } from "../../services/ChatModel.ts"
import type { UsageLog } from "../../services/UsageLog.ts"
import { type ChildResult, runChild } from "./child.ts"
import { ChildTurns, MAX_CHILD_TIMEOUT_SECONDS, type Preset } from "./presets.ts"
import { formatCount, utf8Length } from "../../domain/text.ts"

export const TOOL_NAME = "agent"
export const MAX_TASKS = 8
export const DEFAULT_CONCURRENCY = 3
export const DEFAULT_MAX_TURNS = 10
export const DEFAULT_TIMEOUT_SECONDS = 120
/** What one child may put in the parent's context. */
export const OUTPUT_TOKENS = 4_096

export interface AgentToolDeps {
  readonly client: ChatModelClient
  /** The parent's model: the children's unless a task or preset names another. */
  readonly defaultModel: string
  /** The parent's system prompt: the children's unless a preset gives one. */
  readonly baseSystem: string
  /** The parent's tools; `agent` among them is dropped. */
  readonly tools: ReadonlyArray<Tool>
  readonly presets: ReadonlyArray<Preset>
  /**
   * Whether a child may run on `model` (the operator's allow-list of the agent, see
   * runtime/models.ts); a task or preset naming another model is refused. Default: any.
   */
  readonly modelAllowed?: ((model: string) => boolean) | undefined
  /** Where the children's model calls are recorded (against the calling session). */
  readonly usage: UsageLog["Service"]
}

const Task = Schema.Struct({
  task: Schema.String.check(Schema.isNonEmpty()).annotate({ description: "What the child must do and what it should answer with." }),
  preset: Schema.optionalKey(Schema.String.annotate({ description: "A preset's name (see the list above)." })),
  context: Schema.optionalKey(
    Schema.String.annotate({ description: "Facts, text or findings the child needs: it sees nothing of this conversation." })
  ),
  model: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty()).annotate({ description: "Another model of the same provider." })),
  system: Schema.optionalKey(Schema.String.annotate({ description: "Extra instructions added to the child's system prompt." })),
  tools: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "Only these tools (default: all of yours except agent)." })),
  max_turns: Schema.optionalKey(ChildTurns.annotate({ description: `Model calls allowed (default ${DEFAULT_MAX_TURNS}).` })),
  // presets' ChildTimeout is a Number, whose JSON form would also admit "NaN" and "Infinity" (and lose its bounds).
  timeout_seconds: Schema.optionalKey(
    Schema.Finite.check(Schema.isBetween({ minimum: 1, maximum: MAX_CHILD_TIMEOUT_SECONDS })).annotate({
      description: `Time limit for the child (default ${DEFAULT_TIMEOUT_SECONDS}).`
    })
  )
})
type Task = typeof Task.Type

export const Input = Schema.Struct({
  tasks: Schema.Array(Task).check(Schema.isBetweenLength(1, MAX_TASKS)).annotate({
    description: `The subtasks, one child agent each (1 to ${MAX_TASKS}).`
  }),
  concurrency: Schema.optionalKey(
    Schema.Number.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: MAX_TASKS })).annotate({
      description: `Children running at once (default ${DEFAULT_CONCURRENCY}).`
    })
  )
})

const inputSchema = inputSchemaOf(Input)

const MARKER_RESERVE = 80

/**
 * `text` if it fits in ~`tokens` (estimateTextTokens: UTF-8 bytes / 4), else its head cut on a
 * character boundary — at a line end when one is near — and a marker saying how much was left out.
 */
export const truncateToTokens = (text: string, tokens: number = OUTPUT_TOKENS): string => {
  if (estimateTextTokens(text) <= tokens) return text
  const bytes = Buffer.from(text, "utf8")
  let end = Math.max(0, tokens * 4 - MARKER_RESERVE)
  // Back up to the first byte of a character (UTF-8 continuation bytes are 10xxxxxx).
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--
  let head = bytes.subarray(0, end).toString("utf8")
  const lineEnd = head.lastIndexOf("\n")
  if (lineEnd >= 0 && head.length - lineEnd <= head.length / 10) head = head.slice(0, lineEnd + 1)
  const omitted = bytes.length - utf8Length(head)
  return `${head}${head.endsWith("\n") ? "" : "\n"}[… child output truncated: ${formatCount(omitted)} more bytes (~${formatCount(Math.ceil(omitted / 4))} tokens) omitted …]`
}

interface Plan {
  readonly preset: Preset | undefined
  readonly model: string
  readonly system: string
  readonly tools: ReadonlyArray<Tool>
  readonly maxTurns: number
  readonly timeoutSeconds: number
}

const list = (names: ReadonlyArray<string>) => (names.length === 0 ? "none" : names.join(", "))

/** How a task runs, or why it cannot: an unknown preset or a tool the children cannot have. */
const planTask = (deps: AgentToolDeps, available: ReadonlyArray<Tool>, task: Task): Result.Result<Plan, string> => {
  const preset = task.preset === undefined ? undefined : deps.presets.find((p) => p.name === task.preset)
  if (task.preset !== undefined && preset === undefined) {
    return Result.fail(
      `unknown preset "${task.preset}"; presets: ${list(deps.presets.map((p) => p.name))} (markdown files in /workspace/agents)`
    )
  }
  const names = task.tools ?? preset?.tools
  const byName = new Map(available.map((t) => [t.definition.name, t]))
  if (names !== undefined) {
    if (names.includes(TOOL_NAME)) return Result.fail("child agents cannot use the agent tool")
    const unknown = names.filter((n) => !byName.has(n))
    if (unknown.length > 0) {
      return Result.fail(`unknown tool(s) ${unknown.join(", ")}; tools available to child agents: ${list(Array.from(byName.keys()))}`)
    }
  }
  const tools = names === undefined ? available : available.filter((t) => names.includes(t.definition.name))
  const base = preset !== undefined && preset.system !== "" ? preset.system : deps.baseSystem
  const model = task.model ?? preset?.model ?? deps.defaultModel
  if (model !== deps.defaultModel && deps.modelAllowed?.(model) === false) {
    return Result.fail(`model "${model}" is not allowed for this agent; use the default (leave model out) or one the operator allows`)
  }
  return Result.succeed({
    preset,
    model,
    system: [base, task.system?.trim() ?? ""].filter((s) => s !== "").join("\n\n"),
    tools,
    maxTurns: task.max_turns ?? preset?.maxTurns ?? DEFAULT_MAX_TURNS,
    timeoutSeconds: task.timeout_seconds ?? preset?.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS
  })
}

const describeOutcome = (r: ChildResult, plan: Plan): string => {
  const work = `${r.modelCalls} model call${r.modelCalls === 1 ? "" : "s"}, ${r.toolCalls} tool call${r.toolCalls === 1 ? "" : "s"}`
  switch (r.outcome) {
    case "done":
      return `done (${work})`
    case "max_turns":
      return `stopped at max_turns ${plan.maxTurns} (${work}); its last text follows`
    case "timeout":
      return `timed out after ${plan.timeoutSeconds} s (${work}); what it had produced follows`
  }
}

export const make = (deps: AgentToolDeps): Tool => {
  const available = deps.tools.filter((t) => t.definition.name !== TOOL_NAME)

  const runTask = (task: Task, index: number, context: ToolCallContext) =>
    Effect.gen(function*() {
      const title = `## Task ${index + 1}${task.preset === undefined ? "" : ` (preset ${task.preset})`}`
      const plan = planTask(deps, available, task)
      if (plan._tag === "Failure") return { ok: false, section: `${title}: failed\n${plan.failure}` }
      const tools = yield* toolRegistry(plan.success.tools)
      const run = yield* runChild({
        client: deps.client,
        model: plan.success.model,
        system: plan.success.system,
        tools,
        maxTurns: plan.success.maxTurns,
        timeoutSeconds: plan.success.timeoutSeconds,
        context,
        usage: deps.usage
      }, task).pipe(Effect.result)
      if (run._tag === "Failure") return { ok: false, section: `${title}: failed\n${run.failure.message}` }
      const text = run.success.text.trim() === "" ? "(no text)" : truncateToTokens(run.success.text.trim())
      return { ok: run.success.outcome !== "timeout", section: `${title}: ${describeOutcome(run.success, plan.success)}\n${text}` }
    })

  const run = Effect.fn("AgentTool.run")(function*(input: typeof Input.Type, context: ToolCallContext) {
    const reports = yield* Effect.forEach(input.tasks, (task, i) => runTask(task, i, context), {
      concurrency: input.concurrency ?? DEFAULT_CONCURRENCY
    })
    const output = reports.map((r) => r.section).join("\n\n")
    // Only when nothing came back is the call an error; otherwise failures are reported per task.
    if (reports.every((r) => !r.ok)) return yield* new ToolError({ tool: TOOL_NAME, reason: output })
    return output
  })

  const presetLines = deps.presets.map((p) => `- ${p.name}${p.description === "" ? "" : `: ${p.description}`}`)
  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Delegate focused subtasks (research, review, drafting) to child agents with a fresh context, in parallel.",
        "A child sees only its task and the context you pass — nothing of this conversation — so say everything it needs and what to answer with.",
        `Children cannot start agents; each answer comes back truncated to ~${formatCount(OUTPUT_TOKENS)} tokens.`,
        `Tools children can use: ${list(available.map((t) => t.definition.name))}.`,
        presetLines.length === 0 ? "No presets are defined (add markdown files to /workspace/agents)." : `Presets:\n${presetLines.join("\n")}`
      ].join("\n"),
      inputSchema
    },
    execute: (raw, context) =>
      Schema.decodeUnknownEffect(Input)(raw).pipe(
        Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: `invalid input: ${e.message}` })),
        Effect.flatMap((input) => run(input, context))
      )
  }
}

/**
 * `registry` plus the agent tool for one parent turn, with these presets (the runtime keeps them
 * current: the operator's are cached until their files change, the workspace's until a tool that can
 * change files ran); the children get the registry's other tools.
 */
export const withAgentTool = (
  registry: ToolRegistry,
  deps: Omit<AgentToolDeps, "tools">
): Effect.Effect<ToolRegistry> => {
  const tools = registry.definitions.flatMap((d) => Option.toArray(registry.get(d.name))).filter((t) => t.definition.name !== TOOL_NAME)
  return toolRegistry([...tools, make({ ...deps, tools })])
}
