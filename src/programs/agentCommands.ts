/**
 * `anna agent list|show|set`: agents' models (main and summary tier), summarization spend guard,
 * sandbox, and what the runtime gives them (context budget, tools, turn limit).
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type Agent, ANY_PROVIDER_MODEL, formatModelRef, parseModelRef, parseToolList, TOOL_NAMES, WORKSPACE_MODES } from "../domain/config/agent.ts"
import { InvalidConfig } from "../domain/config/errors.ts"
import { DEFAULT_IMAGE, NETWORK_POLICIES } from "../domain/sandbox/types.ts"
import { type AgentPatch, AgentStore } from "../services/AgentStore.ts"
import { DEFAULT_CONTEXT_TOKENS } from "../services/ConfigStore.ts"
import { printJson, table } from "./output.ts"
import { Providers } from "./layers.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))

const main = (a: Agent) => (a.providerId === null ? "-" : formatModelRef({ providerId: a.providerId, model: a.model }))
const summary = (a: Agent) =>
  a.summaryProviderId === null ? "(main model)" : formatModelRef({ providerId: a.summaryProviderId, model: a.summaryModel })
const guard = (a: Agent) => `${a.summaryMaxCalls} calls / ${Math.round(a.summaryWindowSeconds / 60)} min`
const context = (a: Agent) => (a.contextTokens > 0 ? String(a.contextTokens) : `${DEFAULT_CONTEXT_TOKENS} (default)`)
const tools = (a: Agent) => (a.tools === null ? "all" : a.tools.length === 0 ? "none" : a.tools.join(","))

const allowed = (a: Agent) =>
  a.allowedModels.length === 0
    ? "only the agent's model"
    : a.allowedModels.map((m) => (m === ANY_PROVIDER_MODEL ? "any model the provider lists" : m)).join(", ")

/** `--allowed-models` text: model ids separated by commas, `*` for any the provider lists, `none` for none. */
const parseModelList = (text: string): ReadonlyArray<string> => {
  const t = text.trim()
  if (t === "" || t.toLowerCase() === "none") return []
  return [...new Set(t.split(",").map((s) => s.trim()).filter((s) => s !== ""))]
}

const describeAgent = (a: Agent) =>
  table(["", ""], [
    ["agent", `${a.id} (${a.name})${a.enabled ? "" : ", disabled"}`],
    ["model", main(a)],
    ["summary model", summary(a)],
    ["summary limit", `${guard(a)} per session`],
    ["sandbox", `${a.sandboxImage || DEFAULT_IMAGE}, network ${a.sandboxNetwork}, ${a.sandboxMemoryMb} MiB, ${a.sandboxCpus} CPU, ${a.sandboxPids} processes`],
    ["workspace", `${a.sandboxWorkspace === "user" ? "one per user" : "shared by all users"}, quota ${a.sandboxDiskMb} MiB`],
    ["/model may pick", allowed(a)],
    ["turn timeout", `${a.turnTimeoutSeconds} s`],
    ["context", `${context(a)} tokens`],
    ["tools", tools(a)],
    ["max turns", String(a.maxTurns)]
  ]).split("\n").slice(1).join("\n")

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const agents = yield* (yield* AgentStore).list
    if (f.json) return yield* printJson(agents)
    if (agents.length === 0) return yield* Console.log("No agents. Run anna onboard --from-env, or anna agent set default --model PROVIDER/MODEL.")
    yield* Console.log(table(
      ["AGENT", "MODEL", "SUMMARY MODEL", "SUMMARY LIMIT", "CONTEXT", "TOOLS", "TURNS", "STATE"],
      agents.map((a) => [a.id, main(a), summary(a), guard(a), context(a), tools(a), String(a.maxTurns), a.enabled ? "enabled" : "disabled"])
    ))
  })).pipe(Command.withDescription("List agents and their models"))

const id = Argument.String("id").pipe(Argument.withDescription("Agent id"))

const show = Command.make("show", { id, json }, (f) =>
  Effect.gen(function*() {
    const a = yield* (yield* AgentStore).get(f.id)
    yield* f.json ? printJson(a) : Console.log(describeAgent(a))
  })).pipe(Command.withDescription("Show one agent"))

const modelFlag = (name: string, description: string) =>
  Flag.String(name).pipe(
    Flag.withDescription(description),
    Flag.mapTryCatch(
      (text) => {
        const ref = parseModelRef(text)
        if (ref === undefined) throw new Error("empty")
        return ref
      },
      () => `--${name} takes PROVIDER or PROVIDER/MODEL, e.g. openai/gpt-4.1-mini`
    ),
    Flag.optional
  )

const set = Command.make("set", {
  id,
  name: Flag.String("name").pipe(Flag.withDescription("Display name"), Flag.optional),
  model: modelFlag("model", "Main model, PROVIDER/MODEL (PROVIDER alone: its default model)"),
  summaryModel: modelFlag("summary-model", "Cheaper model for summaries and background work, PROVIDER/MODEL"),
  noSummaryModel: Flag.Boolean("no-summary-model").pipe(
    Flag.withDescription("Summarize with the main model again"),
    Flag.withDefault(false)
  ),
  summaryMaxCalls: Flag.Int("summary-max-calls").pipe(
    Flag.withDescription("Spend guard: summarizer calls allowed per session per window (default 60)"),
    Flag.optional
  ),
  summaryWindowMinutes: Flag.Int("summary-window-minutes").pipe(
    Flag.withDescription("Spend guard window in minutes (default 60)"),
    Flag.optional
  ),
  image: Flag.String("image").pipe(Flag.withDescription(`Sandbox image ('' for anna's default, ${DEFAULT_IMAGE})`), Flag.optional),
  network: Flag.Literals("network", NETWORK_POLICIES).pipe(
    Flag.withDescription("Sandbox network: disabled (default, no network at all) or allow_all"),
    Flag.optional
  ),
  memoryMb: Flag.Int("memory-mb").pipe(Flag.withDescription("Sandbox memory limit in MiB (default 1024)"), Flag.optional),
  cpus: Flag.Finite("cpus").pipe(Flag.withDescription("Sandbox CPU limit (default 1)"), Flag.optional),
  pids: Flag.Int("pids").pipe(Flag.withDescription("Sandbox process limit (default 256)"), Flag.optional),
  contextTokens: Flag.Int("context-tokens").pipe(
    Flag.withDescription(`Context budget in tokens (0 = the default, ${DEFAULT_CONTEXT_TOKENS})`),
    Flag.optional
  ),
  tools: Flag.String("tools").pipe(
    Flag.withDescription(`Enabled tools, comma-separated (${TOOL_NAMES.join(",")}), or all, or none`),
    Flag.map(parseToolList),
    Flag.optional
  ),
  maxTurns: Flag.Int("max-turns").pipe(Flag.withDescription("Model calls allowed in one turn (default 25)"), Flag.optional),
  workspace: Flag.Literals("workspace", WORKSPACE_MODES).pipe(
    Flag.withDescription("Sandbox workspace: user (default, one per user of the agent) or shared (one for all its users)"),
    Flag.optional
  ),
  diskMb: Flag.Int("disk-mb").pipe(Flag.withDescription("Disk quota of one workspace in MiB (default 1024)"), Flag.optional),
  allowedModels: Flag.String("allowed-models").pipe(
    Flag.withDescription("Models chat users may switch to with /model besides the agent's own: ids separated by commas, * for any model the provider lists, none (default)"),
    Flag.map(parseModelList),
    Flag.optional
  ),
  turnTimeout: Flag.Int("turn-timeout").pipe(
    Flag.withDescription("Overall deadline of one turn in seconds (default 900)"),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* AgentStore
    if (f.noSummaryModel && Option.isSome(f.summaryModel)) {
      return yield* new InvalidConfig({ reason: "--summary-model and --no-summary-model contradict each other" })
    }
    const patch: AgentPatch = {
      ...(Option.isSome(f.name) ? { name: f.name.value } : {}),
      ...(Option.isSome(f.model) ? { providerId: f.model.value.providerId, model: f.model.value.model } : {}),
      ...(Option.isSome(f.summaryModel)
        ? { summaryProviderId: f.summaryModel.value.providerId, summaryModel: f.summaryModel.value.model }
        : {}),
      ...(f.noSummaryModel ? { summaryProviderId: null, summaryModel: "" } : {}),
      ...(Option.isSome(f.summaryMaxCalls) ? { summaryMaxCalls: f.summaryMaxCalls.value } : {}),
      ...(Option.isSome(f.summaryWindowMinutes) ? { summaryWindowSeconds: f.summaryWindowMinutes.value * 60 } : {}),
      ...(Option.isSome(f.image) ? { sandboxImage: f.image.value } : {}),
      ...(Option.isSome(f.network) ? { sandboxNetwork: f.network.value } : {}),
      ...(Option.isSome(f.memoryMb) ? { sandboxMemoryMb: f.memoryMb.value } : {}),
      ...(Option.isSome(f.cpus) ? { sandboxCpus: f.cpus.value } : {}),
      ...(Option.isSome(f.pids) ? { sandboxPids: f.pids.value } : {}),
      ...(Option.isSome(f.contextTokens) ? { contextTokens: f.contextTokens.value } : {}),
      ...(Option.isSome(f.tools) ? { tools: f.tools.value } : {}),
      ...(Option.isSome(f.maxTurns) ? { maxTurns: f.maxTurns.value } : {}),
      ...(Option.isSome(f.workspace) ? { sandboxWorkspace: f.workspace.value } : {}),
      ...(Option.isSome(f.diskMb) ? { sandboxDiskMb: f.diskMb.value } : {}),
      ...(Option.isSome(f.allowedModels) ? { allowedModels: f.allowedModels.value } : {}),
      ...(Option.isSome(f.turnTimeout) ? { turnTimeoutSeconds: f.turnTimeout.value } : {})
    }
    const exists = Option.isSome(yield* store.get(f.id).pipe(Effect.option))
    const agent = exists ? yield* store.update(f.id, patch) : yield* store.create(f.id, patch)
    if (f.json) return yield* printJson(agent)
    yield* Console.log(`${exists ? "Updated" : "Created"} agent ${agent.id}.\n${describeAgent(agent)}`)
  })).pipe(Command.withDescription("Create or change an agent's models, summary limit, sandbox, context budget, tools and turn limit"))

export const agentCommand = Command.make("agent").pipe(
  Command.withDescription("Agents: list, show, set (models, summarization limits, sandbox, context, tools, turns)"),
  Command.withSubcommands([list, show, set]),
  Command.provide(Providers)
)
