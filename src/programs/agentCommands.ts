/**
 * `anna agent list|show|set|enable|disable|remove`: agents' models (main and summary tier), system
 * prompt, summarization spend guard, sandbox, what the runtime gives them (context budget, output
 * reserve, tools, turn limit), whether they are enabled, and their removal. An agent created without a usable model
 * is disabled until `set --model` gives it one (then it is enabled); `enable` is refused without
 * one; an agent disabled with `disable` stays disabled until `enable`. `remove` needs `--yes` (like
 * `anna memory delete`): the agent's sessions (memory's) and its folder stay.
 */
import { describePolicy, EVERYONE, parsePolicy } from "../domain/access/policy.ts"
import { Console, Effect, FileSystem, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { PlatformError } from "effect/PlatformError"
import {
  type Agent,
  ANY_PROVIDER_MODEL,
  embeddingModelOf,
  formatModelRef,
  MAX_SYSTEM_PROMPT_BYTES,
  type ModelRef,
  outputReserve,
  parseModelRef,
  parseToolList,
  TOOL_NAMES,
  WORKSPACE_MODES
} from "../domain/config/agent.ts"
import { InvalidConfig } from "../domain/config/errors.ts"
import { agentFolder } from "../domain/sandbox/spec.ts"
import { DEFAULT_IMAGE, NETWORK_POLICIES } from "../domain/sandbox/types.ts"
import { type AgentPatch, AgentStore } from "../services/AgentStore.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { DEFAULT_CONTEXT_TOKENS } from "../services/ConfigStore.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import { printJson, table, usageError, usageOf } from "./output.ts"
import { StoresWithMemory } from "./layers.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))

/** Each provider's default model, for a model given as PROVIDER alone. */
type Defaults = ReadonlyMap<string, string>
const providerDefaults = Effect.gen(function*() {
  const providers = yield* (yield* ProviderStore).list
  return new Map(providers.map((p) => [p.id, p.defaultModel])) as Defaults
})

/** PROVIDER/MODEL; a model given as PROVIDER alone is that provider's default model, named as such. */
const modelText = (providerId: string, model: string, defaults: Defaults) => {
  const fallback = model === "" ? defaults.get(providerId) ?? "" : ""
  return fallback === "" ? formatModelRef({ providerId, model }) : `${providerId}/${fallback} (its default)`
}
const main = (a: Agent, defaults: Defaults) => (a.providerId === null ? "-" : modelText(a.providerId, a.model, defaults))
const summary = (a: Agent, defaults: Defaults) =>
  a.summaryProviderId === null ? "(main model)" : modelText(a.summaryProviderId, a.summaryModel, defaults)
const embedding = (a: Agent) => {
  const ref = embeddingModelOf(a)
  return ref === undefined ? "none (lexical search only)" : formatModelRef(ref)
}
const guard = (a: Agent) => `${a.summaryMaxCalls} calls / ${Math.round(a.summaryWindowSeconds / 60)} min`
const context = (a: Agent) => (a.contextTokens > 0 ? String(a.contextTokens) : `${DEFAULT_CONTEXT_TOKENS} (default)`)
/** The output reserve as it applies now: the setting (kept within half the window), or the proportional one. */
const output = (a: Agent) => {
  const reserve = outputReserve(a.contextTokens > 0 ? a.contextTokens : DEFAULT_CONTEXT_TOKENS, a.maxOutputTokens ?? 0)
  const set = a.maxOutputTokens ?? 0
  return set === 0
    ? `${reserve} tokens (proportional to the context window)`
    : set > reserve
    ? `${reserve} tokens (${set} set; at most half the context window)`
    : `${reserve} tokens`
}
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

const state = (a: Agent) => (a.enabled ? "enabled" : a.awaitingModel === true ? "disabled (no model)" : "disabled")

/** The system prompt on one line, shortened (`show --json` has it whole). */
const promptLine = (a: Agent) => {
  const text = a.systemPrompt.trim().replace(/\s+/g, " ")
  if (text === "") return "(none)"
  return text.length <= 60 ? text : `${text.slice(0, 59)}… (${a.systemPrompt.length} characters)`
}

const describeAgent = (a: Agent, defaults: Defaults) =>
  table(["", ""], [
    ["agent", `${a.id} (${a.name})${a.enabled ? "" : a.awaitingModel === true ? ", disabled until it has a model" : ", disabled"}`],
    ["model", main(a, defaults)],
    ["system prompt", promptLine(a)],
    ["summary model", summary(a, defaults)],
    ["summary limit", `${guard(a)} per session`],
    ["embedding model", embedding(a)],
    ["sandbox", `${a.sandboxImage || DEFAULT_IMAGE}, network ${a.sandboxNetwork}, ${a.sandboxMemoryMb} MiB, ${a.sandboxCpus} CPU, ${a.sandboxPids} processes`],
    ["workspace", `${a.sandboxWorkspace === "user" ? "one per user" : "shared by all users"}, quota ${a.sandboxDiskMb} MiB`],
    ["/model may pick", allowed(a)],
    ["turn timeout", `${a.turnTimeoutSeconds} s`],
    ["access", describePolicy(a.access ?? EVERYONE)],
    ["context", `${context(a)} tokens`],
    ["output reserve", output(a)],
    ["tools", tools(a)],
    ["max turns", String(a.maxTurns)]
  ]).split("\n").slice(1).join("\n")

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const agents = yield* (yield* AgentStore).list
    if (f.json) return yield* printJson(agents)
    if (agents.length === 0) return yield* Console.log("No agents. Run anna onboard (or anna onboard --from-env), or anna agent set default --model PROVIDER/MODEL.")
    const defaults = yield* providerDefaults
    yield* Console.log(table(
      ["AGENT", "MODEL", "SUMMARY MODEL", "SUMMARY LIMIT", "CONTEXT", "TOOLS", "TURNS", "STATE"],
      agents.map((a) => [a.id, main(a, defaults), summary(a, defaults), guard(a), context(a), tools(a), String(a.maxTurns), state(a)])
    ))
  })).pipe(Command.withDescription("List agents and their models"))

const id = Argument.String("id").pipe(Argument.withDescription("Agent id"))

const show = Command.make("show", { id, json }, (f) =>
  Effect.gen(function*() {
    const a = yield* (yield* AgentStore).get(f.id)
    yield* f.json ? printJson(a) : Console.log(describeAgent(a, yield* providerDefaults))
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

/** `--embedding-model`: PROVIDER/MODEL, or `none` / "" to clear it (null). */
const embeddingFlag = Flag.String("embedding-model").pipe(
  Flag.withDescription(
    "Embedding model for dense retrieval, PROVIDER/MODEL of an OpenAI-compatible /v1/embeddings (none or \"\" clears it: lexical search only)"
  ),
  Flag.mapTryCatch(
    (text): ModelRef | null => {
      const t = text.trim()
      if (t === "" || t.toLowerCase() === "none") return null
      const ref = parseModelRef(t)
      if (ref === undefined || ref.model === "") throw new Error("no model")
      return ref
    },
    () => "--embedding-model takes PROVIDER/MODEL, e.g. openai/text-embedding-3-small (or none)"
  ),
  Flag.optional
)

const whyUnreadable = (e: PlatformError) =>
  e.reason._tag === "NotFound" ? "no such file" : e.reason._tag === "PermissionDenied" ? "permission denied" : e.message

const SET = ["anna", "agent", "set"]

/**
 * `--system-prompt` text: the prompt itself, or `@FILE` for the contents of a regular file of UTF-8
 * text, at most MAX_SYSTEM_PROMPT_BYTES (the store checks the text's size too).
 */
const systemPromptFrom = (value: string) =>
  Effect.gen(function*() {
    if (!value.startsWith("@")) return value
    const path = value.slice(1)
    if (path === "") return yield* usageError(SET, "--system-prompt @FILE needs a file name after the @")
    const fs = yield* FileSystem.FileSystem
    const unreadable = (e: PlatformError) => new InvalidConfig({ reason: `cannot read the system prompt file ${path}: ${whyUnreadable(e)}` })
    const tooBig = (bytes: number) =>
      new InvalidConfig({ reason: `the system prompt file ${path} is ${bytes} bytes; at most ${MAX_SYSTEM_PROMPT_BYTES} (64 KiB) are allowed` })
    const info = yield* fs.stat(path).pipe(Effect.mapError(unreadable))
    if (info.type !== "File") return yield* new InvalidConfig({ reason: `the system prompt file ${path} is not a regular file` })
    if (Number(info.size) > MAX_SYSTEM_PROMPT_BYTES) return yield* tooBig(Number(info.size))
    const bytes = yield* fs.readFile(path).pipe(Effect.mapError(unreadable))
    if (bytes.length > MAX_SYSTEM_PROMPT_BYTES) return yield* tooBig(bytes.length)
    return yield* Effect.try({
      try: () => new TextDecoder("utf-8", { fatal: true }).decode(bytes),
      catch: () => new InvalidConfig({ reason: `the system prompt file ${path} is not UTF-8 text` })
    })
  })

const set = Command.make("set", {
  id,
  name: Flag.String("name").pipe(Flag.withDescription("Display name"), Flag.optional),
  systemPrompt: Flag.String("system-prompt").pipe(
    Flag.withDescription(
      `The agent's system prompt: TEXT, or @FILE to read it from a UTF-8 file (at most ${MAX_SYSTEM_PROMPT_BYTES / 1024} KiB); "" clears it. SOUL.md in the agent's folder takes precedence`
    ),
    Flag.optional
  ),
  model: modelFlag("model", "Main model, PROVIDER/MODEL (PROVIDER alone: its default model)"),
  summaryModel: modelFlag("summary-model", "Cheaper model for summaries and background work, PROVIDER/MODEL"),
  noSummaryModel: Flag.Boolean("no-summary-model").pipe(
    Flag.withDescription("Summarize with the main model again"),
    Flag.withDefault(false)
  ),
  embeddingModel: embeddingFlag,
  summaryMaxCalls: Flag.Int("summary-max-calls").pipe(
    Flag.withDescription("Spend guard: summarizer calls allowed per session per window (default 60); embedding calls per agent likewise"),
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
  maxOutputTokens: Flag.Int("max-output-tokens").pipe(
    Flag.withDescription(
      "Output tokens asked of the model per call and kept free in the context window (0 = proportional: a quarter of the window, 256 to 8192; at most half the window)"
    ),
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
  access: Flag.String("access").pipe(
    Flag.withDescription("Who may use the agent: everyone (default), users:ID,ID… or attr:KEY=VALUE,… (users whose attributes match, see anna user set --attr)"),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* AgentStore
    if (f.noSummaryModel && Option.isSome(f.summaryModel)) return yield* usageError(SET, "--summary-model and --no-summary-model contradict each other")
    const systemPrompt = Option.isSome(f.systemPrompt) ? yield* systemPromptFrom(f.systemPrompt.value) : undefined
    const access = Option.isSome(f.access) ? parsePolicy(f.access.value) : undefined
    if (access !== undefined && access._tag === "Failure") return yield* usageError(SET, access.failure)
    const patch: AgentPatch = {
      ...(Option.isSome(f.name) ? { name: f.name.value } : {}),
      ...(systemPrompt !== undefined ? { systemPrompt } : {}),
      ...(Option.isSome(f.model) ? { providerId: f.model.value.providerId, model: f.model.value.model } : {}),
      ...(Option.isSome(f.summaryModel)
        ? { summaryProviderId: f.summaryModel.value.providerId, summaryModel: f.summaryModel.value.model }
        : {}),
      ...(f.noSummaryModel ? { summaryProviderId: null, summaryModel: "" } : {}),
      ...(Option.isSome(f.embeddingModel)
        ? f.embeddingModel.value === null
          ? { embeddingProviderId: null, embeddingModel: "" }
          : { embeddingProviderId: f.embeddingModel.value.providerId, embeddingModel: f.embeddingModel.value.model }
        : {}),
      ...(Option.isSome(f.summaryMaxCalls) ? { summaryMaxCalls: f.summaryMaxCalls.value } : {}),
      ...(Option.isSome(f.summaryWindowMinutes) ? { summaryWindowSeconds: f.summaryWindowMinutes.value * 60 } : {}),
      ...(Option.isSome(f.image) ? { sandboxImage: f.image.value } : {}),
      ...(Option.isSome(f.network) ? { sandboxNetwork: f.network.value } : {}),
      ...(Option.isSome(f.memoryMb) ? { sandboxMemoryMb: f.memoryMb.value } : {}),
      ...(Option.isSome(f.cpus) ? { sandboxCpus: f.cpus.value } : {}),
      ...(Option.isSome(f.pids) ? { sandboxPids: f.pids.value } : {}),
      ...(Option.isSome(f.contextTokens) ? { contextTokens: f.contextTokens.value } : {}),
      ...(Option.isSome(f.maxOutputTokens) ? { maxOutputTokens: f.maxOutputTokens.value } : {}),
      ...(Option.isSome(f.tools) ? { tools: f.tools.value } : {}),
      ...(Option.isSome(f.maxTurns) ? { maxTurns: f.maxTurns.value } : {}),
      ...(Option.isSome(f.workspace) ? { sandboxWorkspace: f.workspace.value } : {}),
      ...(Option.isSome(f.diskMb) ? { sandboxDiskMb: f.diskMb.value } : {}),
      ...(Option.isSome(f.allowedModels) ? { allowedModels: f.allowedModels.value } : {}),
      ...(Option.isSome(f.turnTimeout) ? { turnTimeoutSeconds: f.turnTimeout.value } : {}),
      ...(access !== undefined && access._tag === "Success" ? { access: access.success } : {})
    }
    const before = Option.getOrUndefined(yield* store.get(f.id).pipe(Effect.option))
    // A new agent is enabled once it has a usable model: at once when it has one, else when it gets one.
    // The store's InvalidConfig here is a value it refused (a range, the tools, the id's form).
    const agent = yield* (before !== undefined ? store.update(f.id, patch) : store.create(f.id, { ...patch, awaitingModel: true })).pipe(
      Effect.catchTag("InvalidConfig", usageOf(SET))
    )
    if (f.json) return yield* printJson(agent)
    yield* Console.log(`${before !== undefined ? "Updated" : "Created"} agent ${agent.id}.\n${describeAgent(agent, yield* providerDefaults)}`)
    if (agent.awaitingModel === true) {
      yield* Console.log(`Agent ${agent.id} is disabled until it has a model: anna agent set ${agent.id} --model PROVIDER/MODEL`)
    } else if (before?.awaitingModel === true && agent.enabled) {
      yield* Console.log(`Agent ${agent.id} has a model now, so it is enabled.`)
    }
  })).pipe(Command.withDescription("Create or change an agent's models, system prompt, summary limit, sandbox, context budget, output reserve, tools and turn limit"))

const toggle = (name: "enable" | "disable") =>
  Command.make(name, { id, json }, (f) =>
    Effect.gen(function*() {
      const agent = yield* (yield* AgentStore).update(f.id, { enabled: name === "enable", awaitingModel: false })
      if (f.json) return yield* printJson(agent)
      yield* Console.log(
        name === "enable"
          ? `Enabled agent ${agent.id}: it answers from its next turn.`
          : `Disabled agent ${agent.id}: it answers no more turns (its live sandboxes close) until anna agent enable ${agent.id}.`
      )
    })).pipe(
      Command.withDescription(
        name === "enable"
          ? "Enable an agent (refused while it has no usable model: give it one with anna agent set ID --model PROVIDER/MODEL)"
          : "Disable an agent: it answers nothing until enabled again (it keeps its settings, sessions and bindings)"
      )
    )

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

const remove = Command.make("remove", {
  id,
  yes: Flag.Boolean("yes").pipe(
    Flag.withDescription("Confirm: the agent's settings, bindings and chat states go for good (its sessions and folder stay)"),
    Flag.withDefault(false)
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* AgentStore
    // Checked first, so a mistyped id says so even without --yes.
    const agent = yield* store.get(f.id)
    const sessions = (yield* (yield* MemoryStore).listConversations({ agentId: agent.id })).length
    const fs = yield* FileSystem.FileSystem
    const path = agentFolder((yield* AppConfig).workspaces, agent.id)
    const folder = (yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false))) ? path : null
    if (!f.yes) {
      return yield* new InvalidConfig({
        reason: `removing agent ${agent.id} cannot be undone (its sessions and folder stay); pass --yes to do it`
      })
    }
    const r = yield* store.remove(agent.id)
    if (f.json) {
      return yield* printJson({ removed: r.agentId, usersDefaulted: r.usersDefaulted, bindings: r.bindings, chatStates: r.chatStates, keptSessions: sessions, folder })
    }
    yield* Console.log([
      `Removed agent ${r.agentId}.` +
      (r.bindings > 0 ? ` Unbound ${plural(r.bindings, "group chat")} from it.` : "") +
      (r.usersDefaulted > 0 ? ` ${plural(r.usersDefaulted, "user")} had it as default agent and now get the first enabled agent.` : ""),
      sessions === 0
        ? "It had no sessions."
        : `Its ${plural(sessions, "session")} ${sessions === 1 ? "stays" : "stay"} in memory (anna memory sessions --agent ${r.agentId}); anna memory delete removes one.`,
      folder === null ? "It had no folder." : `Its folder ${folder} is left in place; delete it yourself if you no longer need it.`
    ].join("\n"))
  })).pipe(Command.withDescription("Remove an agent (needs --yes); its sessions and its folder stay"))

export const agentCommand = Command.make("agent").pipe(
  Command.withDescription("Agents: list, show, set (models, system prompt, summarization limits, sandbox, context, tools, turns), enable, disable, remove"),
  Command.withSubcommands([list, show, set, toggle("enable"), toggle("disable"), remove]),
  Command.provide(StoresWithMemory)
)
