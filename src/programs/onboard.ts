/**
 * Onboarding, two ways.
 *
 * From the environment (`--from-env`, and the gateway's first start): a provider for each of
 * ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL and OPENAI_API_KEY/OPENAI_BASE_URL that is set, with a
 * default model discovered from the server when it answers (a local Ollama or vLLM has its own
 * model names), and a default agent on the first provider. Idempotent: what exists is left as it
 * is, so running it twice changes nothing.
 *
 * Interactively (`onboardWizard`, on a terminal): the provider's type, base URL, id and key (typed
 * hidden, or read from an environment variable), then a model picked from the server's list (typed
 * when the list cannot be had), a confirmation, and only then the provider and the agent `default`.
 * Leaving a prompt (Ctrl-C, Esc, Ctrl-D) ends it with nothing created. Built on effect/cli's Prompt.
 */
import { Console, Effect, Option, Redacted } from "effect"
import { Prompt } from "effect/cli"
import { type Agent, DEFAULT_AGENT_ID, formatModelRef } from "../domain/config/agent.ts"
import { InvalidConfig } from "../domain/config/errors.ts"
import {
  maskKey,
  maskUrl,
  type ModelInfo,
  type ProviderConfig,
  providerSecrets,
  type ProviderType,
  redactSecrets,
  shownProvider,
  type TransportOptions
} from "../domain/model/types.ts"
import { validateProvider } from "../layers/config/SqliteProviderStore.ts"
import { clientFor } from "../layers/providers/SdkProviderRegistry.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import { type ProviderEnv, providerEnv } from "./env.ts"

export interface OnboardReport {
  readonly createdProviders: ReadonlyArray<{ readonly id: string; readonly type: ProviderType; readonly defaultModel: string; readonly modelSource: "server" | "built-in" }>
  readonly existingProviders: ReadonlyArray<string>
  readonly createdAgent: string | null
  /** Variables that were looked for and not set. */
  readonly missing: ReadonlyArray<string>
}

const FALLBACK: Record<"anthropic" | "openai", string> = { anthropic: "claude-sonnet-4-5", openai: "gpt-4.1-mini" }

/** Listing a server's models during onboarding: one quick attempt. */
const LISTING: TransportOptions = { timeoutMs: 10_000, maxRetries: 0, baseBackoffMs: 0, maxBackoffMs: 0 }

const isOfficial = (baseUrl: string) => baseUrl === "" || /(^|\.)(openai|anthropic)\.com$/.test(new URL(baseUrl).hostname)

/** The default model to offer among what a server lists. */
export const pickModel = (type: "anthropic" | "openai", models: ReadonlyArray<ModelInfo>, officialEndpoint: boolean): string | undefined => {
  const ids = models.map((m) => m.id)
  if (type === "anthropic") return ids.find((m) => m.includes("sonnet")) ?? ids[0]
  if (!officialEndpoint) return ids[0]
  return ["gpt-4.1-mini", "gpt-4o-mini", "gpt-4.1", "gpt-4o"].find((m) => ids.includes(m)) ?? ids.find((m) => m.startsWith("gpt")) ?? ids[0]
}

const candidates = (env: ProviderEnv): Array<ProviderConfig> => {
  const out: Array<ProviderConfig> = []
  if (env.anthropicKey !== undefined || env.anthropicBaseUrl !== undefined) {
    out.push({
      id: "anthropic",
      type: "anthropic",
      baseUrl: env.anthropicBaseUrl ?? "",
      apiKey: env.anthropicKey ?? "",
      models: [],
      defaultModel: FALLBACK.anthropic,
      headers: {},
      enabled: true
    })
  }
  if (env.openAiKey !== undefined || env.openAiBaseUrl !== undefined) {
    out.push({
      id: "openai",
      // Chat Completions is what OpenAI-compatible servers (Ollama, vLLM, llama.cpp) all speak.
      type: "openai",
      baseUrl: env.openAiBaseUrl ?? "",
      apiKey: env.openAiKey ?? "",
      models: [],
      defaultModel: FALLBACK.openai,
      headers: {},
      enabled: true
    })
  }
  return out
}

export const onboardFromEnv = Effect.gen(function*() {
  const env = yield* providerEnv
  const providers = yield* ProviderStore
  const agents = yield* AgentStore
  const existing = new Set((yield* providers.list).map((p) => p.id))
  const created: Array<OnboardReport["createdProviders"][number]> = []
  const kept: Array<string> = []
  for (const candidate of candidates(env)) {
    if (existing.has(candidate.id)) {
      kept.push(candidate.id)
      continue
    }
    const type = candidate.type === "anthropic" ? "anthropic" : "openai"
    const listed = yield* clientFor(candidate, LISTING).pipe(
      Effect.flatMap((client) => client.listModels),
      Effect.tapError((e) => Effect.logWarning(`onboard: could not list ${candidate.id} models (${e.message}); using ${candidate.defaultModel}`)),
      Effect.orElseSucceed((): ReadonlyArray<ModelInfo> => [])
    )
    const picked = pickModel(type, listed, isOfficial(candidate.baseUrl))
    const config = { ...candidate, defaultModel: picked ?? candidate.defaultModel }
    yield* providers.add(config)
    created.push({ id: config.id, type: config.type, defaultModel: config.defaultModel, modelSource: picked === undefined ? "built-in" : "server" })
  }
  let createdAgent: string | null = null
  const first = (yield* providers.list).find((p) => p.enabled)
  if ((yield* agents.list).length === 0 && first !== undefined) {
    yield* agents.create(DEFAULT_AGENT_ID, { name: "Default agent", providerId: first.id, model: "" })
    createdAgent = DEFAULT_AGENT_ID
  }
  const missing = [
    ...(env.anthropicKey === undefined && env.anthropicBaseUrl === undefined ? ["ANTHROPIC_API_KEY"] : []),
    ...(env.openAiKey === undefined && env.openAiBaseUrl === undefined ? ["OPENAI_API_KEY"] : [])
  ]
  const report: OnboardReport = { createdProviders: created, existingProviders: kept, createdAgent, missing }
  return report
})

/** The gateway's first start: onboard from the environment when no provider exists yet. */
export const onboardOnFirstStart = Effect.gen(function*() {
  const providers = yield* ProviderStore
  if ((yield* providers.list).length > 0) return Option.none<OnboardReport>()
  return Option.some(yield* onboardFromEnv)
})

/** What the wizard did (`anna onboard --json` on a terminal prints it at the end). */
export interface WizardReport {
  /** The provider as stored, credentials masked. */
  readonly provider: ProviderConfig
  readonly model: string
  /** The agent `default`: created, given this model (it had none), or kept as it was. */
  readonly agent: { readonly id: string; readonly outcome: "created" | "updated" | "kept"; readonly enabled: boolean }
}

const TYPES: ReadonlyArray<Prompt.SelectChoice<ProviderType>> = [
  { title: "anthropic", value: "anthropic", description: "Anthropic's Messages API (Claude)" },
  { title: "openai", value: "openai", description: "OpenAI Chat Completions; also Ollama, vLLM, llama.cpp and other compatible servers" },
  { title: "openai-response", value: "openai-response", description: "OpenAI's Responses API" }
]

const ENV_NAMES: Record<ProviderType, { readonly key: string; readonly baseUrl: string }> = {
  anthropic: { key: "ANTHROPIC_API_KEY", baseUrl: "ANTHROPIC_BASE_URL" },
  openai: { key: "OPENAI_API_KEY", baseUrl: "OPENAI_BASE_URL" },
  "openai-response": { key: "OPENAI_API_KEY", baseUrl: "OPENAI_BASE_URL" }
}

const envValue = (name: string): string | undefined => {
  const v = process.env[name]?.trim()
  return v === undefined || v === "" ? undefined : v
}

/** A draft provider for checks and for listing the server's models. */
const draft = (type: ProviderType, id: string, baseUrl: string, apiKey: string): ProviderConfig => ({
  id,
  type,
  baseUrl,
  apiKey,
  models: [],
  defaultModel: "-",
  headers: {},
  enabled: true
})

const check = (problem: string | undefined, value: string) => (problem === undefined ? Effect.succeed(value) : Effect.fail(problem))

const askKey = (type: ProviderType) =>
  Effect.gen(function*() {
    const how = yield* Prompt.Select({
      message: "API key",
      choices: [
        { title: "type it", value: "type" as const, description: "hidden as you type" },
        { title: "read it from an environment variable", value: "env" as const },
        { title: "none", value: "none" as const, description: "a local server that needs no key" }
      ]
    })
    if (how === "none") return ""
    if (how === "type") {
      const key = yield* Prompt.Hidden({
        message: "API key (hidden)",
        validate: (v) => check(v.trim() === "" ? "the key is empty" : undefined, v.trim())
      })
      return Redacted.value(key)
    }
    const name = yield* Prompt.String({
      message: "Environment variable",
      default: ENV_NAMES[type].key,
      validate: (v) => check(envValue(v.trim()) === undefined ? `${v.trim()} is not set (or empty)` : undefined, v.trim())
    })
    return envValue(name) ?? ""
  })

/** A model from the server's list, or typed when the server cannot list them (saying why). */
const askModel = (config: ProviderConfig) =>
  Effect.gen(function*() {
    yield* Console.log("Asking the server for its models…")
    const listed = yield* clientFor(config, LISTING).pipe(Effect.flatMap((c) => c.listModels), Effect.result)
    const models = listed._tag === "Success" ? listed.success.map((m) => m.id) : []
    if (models.length > 0) {
      const suggested = pickModel(config.type === "anthropic" ? "anthropic" : "openai", listed._tag === "Success" ? listed.success : [], isOfficial(config.baseUrl))
      const ordered = [...models.filter((m) => m === suggested), ...models.filter((m) => m !== suggested)]
      return yield* Prompt.AutoComplete({
        message: `Model (${models.length} listed; type to filter)`,
        choices: ordered.map((m) => (m === suggested ? { title: m, value: m, description: "suggested" } : { title: m, value: m }))
      })
    }
    yield* Console.log(
      listed._tag === "Failure"
        ? `The server's models could not be listed (${redactSecrets(listed.failure.message, providerSecrets(config))}); type the model id.`
        : "The server lists no models; type the model id."
    )
    return yield* Prompt.String({
      message: "Model id",
      validate: (v) => check(v.trim() === "" ? "a model id is needed" : undefined, v.trim())
    })
  })

/** The provider and the agent `default`, stored once the user confirmed. */
const create = (config: ProviderConfig, existing: Agent | undefined) =>
  Effect.gen(function*() {
    const providers = yield* ProviderStore
    const agents = yield* AgentStore
    // The store's refusal may quote the base URL; its credentials stay hidden.
    yield* providers.add(config).pipe(
      Effect.catchTag("InvalidConfig", (e) => Effect.fail(new InvalidConfig({ reason: redactSecrets(e.reason, providerSecrets(config)) })))
    )
    const model = { providerId: config.id, model: config.defaultModel }
    if (existing === undefined) {
      const a = yield* agents.create(DEFAULT_AGENT_ID, { name: "Default agent", ...model, awaitingModel: true })
      return { id: a.id, outcome: "created" as const, enabled: a.enabled }
    }
    if (existing.providerId === null) {
      const a = yield* agents.update(DEFAULT_AGENT_ID, model)
      return { id: a.id, outcome: "updated" as const, enabled: a.enabled }
    }
    return { id: existing.id, outcome: "kept" as const, enabled: existing.enabled }
  })

/**
 * The interactive wizard; fails with Terminal.QuitError when the user leaves a prompt (nothing is
 * created before the last confirmation), and succeeds with None when they decline it.
 */
export const onboardWizard = Effect.gen(function*() {
  const providers = yield* ProviderStore
  const agents = yield* AgentStore
  const taken = new Set((yield* providers.list).map((p) => p.id))
  const type = yield* Prompt.Select({ message: "Provider type", choices: TYPES })
  const baseUrl = yield* Prompt.String({
    message: "Base URL (empty for the official API)",
    default: envValue(ENV_NAMES[type].baseUrl) ?? "",
    validate: (v) => check(validateProvider({ ...draft(type, "p", v.trim(), ""), defaultModel: "m" }), v.trim())
  })
  const base = type === "anthropic" ? "anthropic" : "openai"
  let suggestedId = base
  for (let n = 2; taken.has(suggestedId); n++) suggestedId = `${base}-${n}`
  const id = yield* Prompt.String({
    message: "Provider id",
    default: suggestedId,
    validate: (v) =>
      check(
        taken.has(v.trim())
          ? `a provider "${v.trim()}" already exists`
          : validateProvider({ ...draft(type, v.trim(), "", ""), defaultModel: "m" }),
        v.trim()
      )
  })
  const apiKey = yield* askKey(type)
  const model = yield* askModel(draft(type, id, baseUrl, apiKey))
  const config: ProviderConfig = { ...draft(type, id, baseUrl, apiKey), defaultModel: model }
  const existing = yield* agents.get(DEFAULT_AGENT_ID).pipe(
    Effect.map((a): Agent | undefined => a),
    Effect.catchTag("AgentNotFound", () => Effect.succeed(undefined))
  )
  const agentPart = existing === undefined
    ? ` and agent ${DEFAULT_AGENT_ID} on ${formatModelRef({ providerId: id, model })}`
    : existing.providerId === null
    ? `, and give agent ${DEFAULT_AGENT_ID} the model ${formatModelRef({ providerId: id, model })}`
    : ""
  const go = yield* Prompt.Confirm({
    message: `Create provider ${id} (${type}, ${maskUrl(baseUrl) || "official API"}, key ${maskKey(apiKey)})${agentPart}?`,
    initial: true
  })
  if (!go) return Option.none<WizardReport>()
  const agent = yield* create(config, existing)
  const report: WizardReport = { provider: shownProvider(config), model, agent }
  return Option.some(report)
})
