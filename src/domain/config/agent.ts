/**
 * Agents as configuration: which models they use (main and summary tier), their spend guard, their
 * sandbox, and what the runtime gives them (context budget, tools, turn limit).
 */

import type { AccessPolicy } from "../access/policy.ts"
export interface Agent {
  readonly id: string
  readonly name: string
  /** Main model: provider id (null until one is configured) and model id ('' = provider default). */
  readonly providerId: string | null
  readonly model: string
  /** Cheaper tier for summaries and background work; null = use the main model. */
  readonly summaryProviderId: string | null
  readonly summaryModel: string
  /**
   * Embedding model for dense retrieval (issue 25): its provider (null = none: search stays lexical
   * and nothing is embedded) and model id (never '' when the provider is set). Always set by the
   * store; optional so hand-made agents need not say it.
   */
  readonly embeddingProviderId?: string | null
  readonly embeddingModel?: string
  /**
   * Spend guard: at most `summaryMaxCalls` summarizer calls per session per window (and, with an
   * embedding model, at most as many embedding calls for the agent per window).
   */
  readonly summaryMaxCalls: number
  readonly summaryWindowSeconds: number
  readonly systemPrompt: string
  /** Sandbox: image ('' = anna's default image), network policy, limits. */
  readonly sandboxImage: string
  readonly sandboxNetwork: "disabled" | "allow_all"
  readonly sandboxMemoryMb: number
  readonly sandboxCpus: number
  readonly sandboxPids: number
  /** `user`: a workspace per (agent, user); `shared`: one workspace for every user of the agent. */
  readonly sandboxWorkspace: WorkspaceMode
  /** Disk quota of one workspace, MiB. */
  readonly sandboxDiskMb: number
  /** Models chat users may switch to with /model besides the agent's own; "*" = any the provider lists. */
  readonly allowedModels: ReadonlyArray<string>
  /** Overall deadline of one turn (all model calls and tools), seconds. */
  readonly turnTimeoutSeconds: number
  /** Context budget in tokens; 0 = unset (the runtime then uses 128,000). */
  readonly contextTokens: number
  /**
   * Output tokens asked of the model per call and kept free in the window; 0 = proportional to the
   * window (see `outputReserve`). Always set by the store; optional so hand-made agents need not say it.
   */
  readonly maxOutputTokens?: number
  /** Enabled tools (names from TOOL_NAMES); null = every available tool. */
  readonly tools: ReadonlyArray<string> | null
  /** Model calls allowed in one turn before it stops with `max_turns`. */
  readonly maxTurns: number
  readonly enabled: boolean
  /** Who may use it (src/domain/access/policy.ts); absent = everyone. */
  readonly access?: AccessPolicy
  /**
   * Disabled only because it has no model (created without one): it is enabled as soon as it gets
   * one. Always set by the store; optional so that hand-made agents (tests, fakes) need not say it.
   */
  readonly awaitingModel?: boolean
  readonly createdAt: number
  readonly updatedAt: number
}

export type WorkspaceMode = "user" | "shared"
export const WORKSPACE_MODES: ReadonlyArray<WorkspaceMode> = ["user", "shared"]
/** `allowedModels` entry meaning "any model the agent's provider lists". */
export const ANY_PROVIDER_MODEL = "*"
export const DEFAULT_TURN_TIMEOUT_SECONDS = 900
export const DEFAULT_DISK_MB = 1024

/** The output reserve of a large window when the agent sets none (what every model call asked for before). */
export const MAX_DEFAULT_OUTPUT_TOKENS = 8_192
/** The smallest output reserve the proportional rule gives (unless that is more than half the window). */
export const MIN_DEFAULT_OUTPUT_TOKENS = 256

/**
 * The output reserve for a context window: what each model call asks for (`max_tokens`) and what
 * the context budget leaves free. Set (`maxOutputTokens` > 0): that, but at most half the window —
 * a server cannot give more output than its window holds beside the prompt. Unset: a quarter of the
 * window, between 256 and 8,192 tokens (6,000 → 1,500; 32,768 and more → 8,192).
 */
export const outputReserve = (contextTokens: number, maxOutputTokens: number = 0): number => {
  const half = Math.max(1, Math.floor(contextTokens / 2))
  if (maxOutputTokens > 0) return Math.min(maxOutputTokens, half)
  return Math.min(half, MAX_DEFAULT_OUTPUT_TOKENS, Math.max(MIN_DEFAULT_OUTPUT_TOKENS, Math.floor(contextTokens / 4)))
}

export const DEFAULT_AGENT_ID = "default"
export const DEFAULT_MAX_TURNS = 25

/** Every tool an agent can be given (`anna agent set --tools`). */
export const TOOL_NAMES = ["bash", "read", "write", "edit", "memory", "agent", "notify", "scheduler", "skills", "mcp", "webfetch", "playbook", "search_skills", "create_skill"] as const

/** Agent (and user) ids: they appear in session keys and paths, so no ':' or '/'. */
export const isValidId = (id: string): boolean => /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id)

/**
 * `--tools` text: `all` (null = every tool), `none` (no tools), or names separated by commas,
 * deduplicated in order. Names are checked by the store, which says which are unknown.
 */
export const parseToolList = (text: string): ReadonlyArray<string> | null => {
  const t = text.trim().toLowerCase()
  if (t === "all") return null
  if (t === "none" || t === "") return []
  return [...new Set(t.split(",").map((s) => s.trim()).filter((s) => s !== ""))]
}

/** Why a tool list cannot be stored, or undefined when every name is known and none repeats. */
export const toolListProblem = (tools: ReadonlyArray<string>): string | undefined => {
  const unknown = tools.filter((n) => !(TOOL_NAMES as ReadonlyArray<string>).includes(n))
  if (unknown.length > 0) return `unknown tool(s) ${unknown.join(", ")}; tools are ${TOOL_NAMES.join(", ")} (or all, none)`
  if (new Set(tools).size !== tools.length) return "a tool is listed twice"
  return undefined
}

/** `provider/model` (the model id may itself contain slashes) or just `provider`. */
export interface ModelRef {
  readonly providerId: string
  /** '' = the provider's default model. */
  readonly model: string
}

export const parseModelRef = (text: string): ModelRef | undefined => {
  const t = text.trim()
  if (t === "") return undefined
  const slash = t.indexOf("/")
  const providerId = slash < 0 ? t : t.slice(0, slash)
  const model = slash < 0 ? "" : t.slice(slash + 1)
  return providerId === "" ? undefined : { providerId, model }
}

export const formatModelRef = (ref: ModelRef): string => (ref.model === "" ? ref.providerId : `${ref.providerId}/${ref.model}`)

/** The model used for summaries: the summary tier when set, else the main model. */
export const summaryModelOf = (agent: Agent): ModelRef | undefined =>
  agent.summaryProviderId !== null
    ? { providerId: agent.summaryProviderId, model: agent.summaryModel }
    : agent.providerId !== null
    ? { providerId: agent.providerId, model: agent.model }
    : undefined

/** The agent's embedding model, when it has one. */
export const embeddingModelOf = (agent: Agent): ModelRef | undefined =>
  agent.embeddingProviderId === undefined || agent.embeddingProviderId === null || (agent.embeddingModel ?? "") === ""
    ? undefined
    : { providerId: agent.embeddingProviderId, model: agent.embeddingModel ?? "" }

/** What the model rule needs of an agent's provider. */
export interface ModelSource {
  readonly enabled: boolean
  readonly defaultModel: string
}

/**
 * Whether an agent can call a model, and which: `lacksModel` says the agent itself has none (no
 * provider, a provider that is gone, or no model named by the agent or its provider), which keeps
 * it from being enabled; a disabled provider is the provider's state, so it stops turns but does
 * not keep the agent disabled.
 */
export type ModelCheck<P extends ModelSource> =
  | { readonly ok: true; readonly provider: P; readonly model: string }
  | { readonly ok: false; readonly reason: string; readonly lacksModel: boolean }

/** The one rule for an agent's model (ConfigStore.snapshot and AgentStore's enabling both use it). */
export const checkAgentModel = <P extends ModelSource>(
  agent: Pick<Agent, "providerId" | "model">,
  provider: P | undefined
): ModelCheck<P> => {
  if (agent.providerId === null) return { ok: false, reason: "no provider is set", lacksModel: true }
  if (provider === undefined) return { ok: false, reason: `its provider "${agent.providerId}" is missing`, lacksModel: true }
  const model = agent.model !== "" ? agent.model : provider.defaultModel
  if (model === "") {
    return { ok: false, reason: `neither the agent nor provider "${agent.providerId}" names a model`, lacksModel: true }
  }
  if (!provider.enabled) return { ok: false, reason: `its provider "${agent.providerId}" is disabled`, lacksModel: false }
  return { ok: true, provider, model }
}

/** Whether an agent is switched on, and whether it is off only until it has a model. */
export interface Enablement {
  readonly enabled: boolean
  /** Disabled only because it has no model: it is enabled as soon as it gets one. */
  readonly awaitingModel: boolean
}

/**
 * The state an agent is stored with: one awaiting a model is enabled when it has one and stays
 * disabled until then; being switched on (`enableAsked`) without a model is refused (undefined);
 * anything else is kept as asked (an agent the operator disabled stays disabled when it gets a model).
 */
export const settleEnablement = (asked: Enablement, enableAsked: boolean, hasModel: boolean): Enablement | undefined => {
  if (asked.awaitingModel) return hasModel ? { enabled: true, awaitingModel: false } : { enabled: false, awaitingModel: true }
  if (asked.enabled && enableAsked && !hasModel) return undefined
  return asked
}

/** An agent's system prompt is sent with every turn: this many bytes (UTF-8) at most. */
export const MAX_SYSTEM_PROMPT_BYTES = 64 * 1024
