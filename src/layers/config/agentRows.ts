/**
 * The `agents` table's rows for SqliteConfigStore: the row schema (tools as a JSON array or NULL),
 * row → Agent, a patch → columns, and the checks a patch must pass before it is stored.
 */
import { Schema } from "effect"
import { type Agent, MAX_SYSTEM_PROMPT_BYTES, toolListProblem } from "../../domain/config/agent.ts"
import type { AgentPatch } from "../../services/AgentStore.ts"
import { storedPolicy } from "../../domain/access/policy.ts"

export const AgentRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  provider_id: Schema.NullOr(Schema.String),
  model: Schema.String,
  summary_provider_id: Schema.NullOr(Schema.String),
  summary_model: Schema.String,
  summary_max_calls: Schema.Number,
  embedding_provider_id: Schema.NullOr(Schema.String),
  embedding_model: Schema.String,
  summary_window_seconds: Schema.Number,
  system_prompt: Schema.String,
  sandbox_image: Schema.String,
  sandbox_network: Schema.Literals(["disabled", "allow_all"]),
  sandbox_memory_mb: Schema.Number,
  sandbox_cpus: Schema.Number,
  sandbox_pids: Schema.Number,
  sandbox_workspace: Schema.Literals(["user", "shared"]),
  sandbox_disk_mb: Schema.Number,
  allowed_models: Schema.fromJsonString(Schema.Array(Schema.String)),
  turn_timeout_seconds: Schema.Number,
  context_tokens: Schema.Number,
  max_output_tokens: Schema.Number,
  tools: Schema.NullOr(Schema.fromJsonString(Schema.Array(Schema.String))),
  max_turns: Schema.Number,
  enabled: Schema.Number,
  access: Schema.String,
  awaiting_model: Schema.Number,
  created_at: Schema.Number,
  updated_at: Schema.Number
})
export const decodeAgents = Schema.decodeUnknownEffect(Schema.Array(AgentRow))

export const toAgent = (r: typeof AgentRow.Type): Agent => ({
  id: r.id,
  name: r.name,
  providerId: r.provider_id,
  model: r.model,
  summaryProviderId: r.summary_provider_id,
  summaryModel: r.summary_model,
  embeddingProviderId: r.embedding_provider_id,
  embeddingModel: r.embedding_model,
  summaryMaxCalls: r.summary_max_calls,
  summaryWindowSeconds: r.summary_window_seconds,
  systemPrompt: r.system_prompt,
  sandboxImage: r.sandbox_image,
  sandboxNetwork: r.sandbox_network,
  sandboxMemoryMb: r.sandbox_memory_mb,
  sandboxCpus: r.sandbox_cpus,
  sandboxPids: r.sandbox_pids,
  sandboxWorkspace: r.sandbox_workspace,
  sandboxDiskMb: r.sandbox_disk_mb,
  allowedModels: r.allowed_models,
  turnTimeoutSeconds: r.turn_timeout_seconds,
  contextTokens: r.context_tokens,
  maxOutputTokens: r.max_output_tokens,
  tools: r.tools,
  maxTurns: r.max_turns,
  enabled: r.enabled === 1,
  access: storedPolicy(r.access),
  awaitingModel: r.awaiting_model === 1,
  createdAt: r.created_at,
  updatedAt: r.updated_at
})

/** The columns a patch sets (absent fields are left out, so an UPDATE keeps them). */
export const agentColumns = (p: AgentPatch): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries({
      name: p.name,
      provider_id: p.providerId,
      model: p.model,
      summary_provider_id: p.summaryProviderId,
      summary_model: p.summaryModel,
      embedding_provider_id: p.embeddingProviderId,
      embedding_model: p.embeddingModel,
      summary_max_calls: p.summaryMaxCalls,
      summary_window_seconds: p.summaryWindowSeconds,
      system_prompt: p.systemPrompt,
      sandbox_image: p.sandboxImage,
      sandbox_network: p.sandboxNetwork,
      sandbox_memory_mb: p.sandboxMemoryMb,
      sandbox_cpus: p.sandboxCpus,
      sandbox_pids: p.sandboxPids,
      sandbox_workspace: p.sandboxWorkspace,
      sandbox_disk_mb: p.sandboxDiskMb,
      allowed_models: p.allowedModels === undefined ? undefined : JSON.stringify(p.allowedModels),
      turn_timeout_seconds: p.turnTimeoutSeconds,
      context_tokens: p.contextTokens,
      max_output_tokens: p.maxOutputTokens,
      // null (every tool) must reach the column, so only `undefined` means "not in the patch".
      tools: p.tools === undefined ? undefined : p.tools === null ? null : JSON.stringify(p.tools),
      max_turns: p.maxTurns,
      enabled: p.enabled === undefined ? undefined : p.enabled ? 1 : 0,
      access: p.access === undefined ? undefined : JSON.stringify(p.access),
      awaiting_model: p.awaitingModel === undefined ? undefined : p.awaitingModel ? 1 : 0
    }).filter(([, v]) => v !== undefined)
  )

const isWhole = (n: number) => Number.isInteger(n)
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length

/** Why a patch cannot be stored (the reason says what to change), or undefined. */
export const agentPatchProblem = (patch: AgentPatch): string | undefined => {
  if (patch.summaryMaxCalls !== undefined && (!isWhole(patch.summaryMaxCalls) || patch.summaryMaxCalls < 0)) {
    return "the summary call limit must be a whole number, 0 or more"
  }
  if (patch.summaryWindowSeconds !== undefined && (!isWhole(patch.summaryWindowSeconds) || patch.summaryWindowSeconds <= 0)) {
    return "the summary window must be a positive whole number of seconds"
  }
  if (patch.embeddingProviderId !== undefined && patch.embeddingProviderId !== null && (patch.embeddingModel ?? "").trim() === "") {
    return "the embedding model needs a model id: PROVIDER/MODEL, e.g. openai/text-embedding-3-small"
  }
  if (patch.sandboxNetwork !== undefined && patch.sandboxNetwork !== "disabled" && patch.sandboxNetwork !== "allow_all") {
    return `network policy must be disabled or allow_all, got ${String(patch.sandboxNetwork)}`
  }
  if (patch.sandboxMemoryMb !== undefined && (!isWhole(patch.sandboxMemoryMb) || patch.sandboxMemoryMb < 16)) {
    return "the sandbox memory limit must be a whole number of MiB, at least 16"
  }
  if (patch.sandboxCpus !== undefined && !(patch.sandboxCpus > 0 && patch.sandboxCpus <= 512)) {
    return "the sandbox CPU limit must be more than 0"
  }
  if (patch.sandboxPids !== undefined && (!isWhole(patch.sandboxPids) || patch.sandboxPids < 8)) {
    return "the sandbox process limit must be a whole number, at least 8"
  }
  if (patch.sandboxWorkspace !== undefined && patch.sandboxWorkspace !== "user" && patch.sandboxWorkspace !== "shared") {
    return `workspace must be user or shared, got ${String(patch.sandboxWorkspace)}`
  }
  if (patch.sandboxDiskMb !== undefined && (!isWhole(patch.sandboxDiskMb) || patch.sandboxDiskMb < 1)) {
    return "the workspace disk quota must be a whole number of MiB, at least 1"
  }
  if (patch.turnTimeoutSeconds !== undefined && (!isWhole(patch.turnTimeoutSeconds) || patch.turnTimeoutSeconds < 1 || patch.turnTimeoutSeconds > 86_400)) {
    return "the turn timeout must be a whole number of seconds from 1 to 86400"
  }
  if (patch.allowedModels?.some((m) => m.trim() === "" || m.length > 200)) {
    return "allowed models must be non-empty model ids (or * for any model the provider lists)"
  }
  const ctx = patch.contextTokens
  // A lower bound catches `--context-tokens 128` meant as thousands.
  if (ctx !== undefined && (!isWhole(ctx) || (ctx !== 0 && (ctx < 1000 || ctx > 10_000_000)))) {
    return "the context budget must be a whole number of tokens from 1000 to 10000000 (0 = the default, 128000)"
  }
  const out = patch.maxOutputTokens
  if (out !== undefined && (!isWhole(out) || out < 0 || out > 1_000_000)) {
    return "the output reserve must be a whole number of tokens from 0 to 1000000 (0 = proportional to the context window)"
  }
  if (patch.tools !== undefined && patch.tools !== null) {
    const problem = toolListProblem(patch.tools)
    if (problem !== undefined) return problem
  }
  if (patch.systemPrompt !== undefined && utf8Bytes(patch.systemPrompt) > MAX_SYSTEM_PROMPT_BYTES) {
    return `the system prompt is ${utf8Bytes(patch.systemPrompt)} bytes; at most ${MAX_SYSTEM_PROMPT_BYTES} (64 KiB) are allowed`
  }
  if (patch.maxTurns !== undefined && (!isWhole(patch.maxTurns) || patch.maxTurns < 1 || patch.maxTurns > 1000)) {
    return "the turn limit must be a whole number from 1 to 1000"
  }
  return undefined
}
