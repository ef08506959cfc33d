/**
 * Onboarding from the environment: a provider for each of ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL and
 * OPENAI_API_KEY/OPENAI_BASE_URL that is set, with a default model discovered from the server when
 * it answers (a local Ollama or vLLM has its own model names), and a default agent on the first
 * provider. Idempotent: what exists is left as it is, so running it twice changes nothing.
 */
import { Effect, Option } from "effect"
import { DEFAULT_AGENT_ID } from "../domain/config/agent.ts"
import type { ModelInfo, ProviderConfig, ProviderType } from "../domain/model/types.ts"
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
    const listed = yield* clientFor(candidate, { timeoutMs: 10_000, maxRetries: 0, baseBackoffMs: 0, maxBackoffMs: 0 }).pipe(
      Effect.flatMap((client) => client.listModels),
      Effect.tapError((e) => Effect.logWarning(`onboard: could not list ${candidate.id} models (${e.message}); using ${candidate.defaultModel}`)),
      Effect.orElseSucceed((): ReadonlyArray<ModelInfo> => [])
    )
    const official = candidate.baseUrl === "" || /(^|\.)(openai|anthropic)\.com$/.test(new URL(candidate.baseUrl).hostname)
    const picked = pickModel(type, listed, official)
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
