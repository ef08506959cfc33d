/** Agents as configuration: which models they use (main and summary tier) and their spend guard. */

export interface Agent {
  readonly id: string
  readonly name: string
  /** Main model: provider id (null until one is configured) and model id ('' = provider default). */
  readonly providerId: string | null
  readonly model: string
  /** Cheaper tier for summaries and background work; null = use the main model. */
  readonly summaryProviderId: string | null
  readonly summaryModel: string
  /** Spend guard: at most `summaryMaxCalls` summarizer calls per session per window. */
  readonly summaryMaxCalls: number
  readonly summaryWindowSeconds: number
  readonly systemPrompt: string
  /** Sandbox: image ('' = anna's default image), network policy, limits. */
  readonly sandboxImage: string
  readonly sandboxNetwork: "disabled" | "allow_all"
  readonly sandboxMemoryMb: number
  readonly sandboxCpus: number
  readonly sandboxPids: number
  readonly enabled: boolean
  readonly createdAt: number
  readonly updatedAt: number
}

export const DEFAULT_AGENT_ID = "default"

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
