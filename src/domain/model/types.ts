/**
 * The provider port's data: one streaming chat request with tools, the events a model streams back,
 * and the collected response. Messages use the same shape memory stores (`domain/message.ts`), so a
 * conversation goes from memory to any provider without a conversion layer of its own.
 */
import type { Message } from "../message.ts"
import type { ToolDefinition } from "../tool.ts"

export type ProviderType = "anthropic" | "openai" | "openai-response"
export const PROVIDER_TYPES: ReadonlyArray<ProviderType> = ["anthropic", "openai", "openai-response"]

export interface ChatRequest {
  readonly model: string
  readonly system?: string | undefined
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  /** Output cap (default 4,096). */
  readonly maxTokens?: number | undefined
  readonly temperature?: number | undefined
}

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "refusal" | "other"

export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  /** Prompt tokens read from the provider's cache (counted within or besides inputTokens, as the provider reports). */
  readonly cacheReadTokens: number
  readonly cacheWriteTokens: number
}

export const emptyUsage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }

export const addUsage = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
  cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens
})

/**
 * What a model streams. Tool calls are indexed in the order they start; their arguments arrive as
 * JSON text deltas and are parsed once at `tool_call_end`. `usage` may come more than once (e.g. input
 * at the start, output at the end): the values are cumulative, the last one wins per field.
 */
export type ChatEvent =
  | { readonly type: "text_delta"; readonly text: string }
  | { readonly type: "tool_call_start"; readonly index: number; readonly id: string; readonly name: string }
  | { readonly type: "tool_call_delta"; readonly index: number; readonly argumentsDelta: string }
  | {
    readonly type: "tool_call_end"
    readonly index: number
    readonly id: string
    readonly name: string
    readonly input: unknown
  }
  | { readonly type: "usage"; readonly usage: Partial<Usage> }
  | { readonly type: "stop"; readonly reason: StopReason }

export interface ChatResponse {
  /** The assistant message: text and tool_use blocks in the order they were produced. */
  readonly message: Message
  readonly usage: Usage
  readonly stopReason: StopReason
}

export interface ModelInfo {
  readonly id: string
  readonly displayName?: string | undefined
  readonly createdAt?: number | undefined
}

export interface ProviderConfig {
  readonly id: string
  readonly type: ProviderType
  /** Empty for the provider's public endpoint. */
  readonly baseUrl: string
  readonly apiKey: string
  /** Models the user declared (in addition to what listing returns). */
  readonly models: ReadonlyArray<string>
  readonly defaultModel: string
  readonly headers: Readonly<Record<string, string>>
  readonly enabled: boolean
  /**
   * How long one attempt may wait for the response's first byte (headers and first event), in
   * seconds; unset = `DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS`. A slow local model may need more.
   */
  readonly firstByteTimeoutSeconds?: number | undefined
}

/** Time to first byte per attempt when the provider row sets none. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS = 60

/** Why `seconds` cannot be a first-byte timeout, or undefined when it can. */
export const firstByteTimeoutProblem = (seconds: number): string | undefined =>
  Number.isFinite(seconds) && seconds > 0 && seconds <= 3_600
    ? undefined
    : `the first-byte timeout must be a number of seconds above 0 and at most 3600, got ${seconds}`

/**
 * How a layer talks HTTP: timeouts and bounded retries.
 *
 * - `firstByteTimeoutMs`: one attempt fails as a timeout when the response has not started (status,
 *   headers and the first stream event) within this time; it is retried like any network error.
 * - `timeoutMs`: once the stream has started, the longest silence between two events.
 * - `retryBudgetMs`: the whole wait for a first byte, every attempt and backoff included. No retry
 *   starts past it, and the last attempt's first-byte limit is cut to what is left, so a provider that
 *   never answers holds a turn for at most this long (default 150 s, instead of 4 × the timeout).
 *
 * The newer fields are optional so that callers written before them keep working: an unset
 * `firstByteTimeoutMs` is `timeoutMs` (which used to bound the wait for headers), an unset budget
 * `DEFAULT_RETRY_BUDGET_MS`.
 */
export interface TransportOptions {
  readonly timeoutMs: number
  readonly maxRetries: number
  /** First backoff; doubles each retry, with ±50 % jitter, capped at `maxBackoffMs`. */
  readonly baseBackoffMs: number
  readonly maxBackoffMs: number
  readonly firstByteTimeoutMs?: number | undefined
  readonly retryBudgetMs?: number | undefined
}

export const DEFAULT_RETRY_BUDGET_MS = 150_000

export const defaultTransport: TransportOptions = {
  timeoutMs: 120_000,
  maxRetries: 3,
  baseBackoffMs: 500,
  maxBackoffMs: 30_000,
  firstByteTimeoutMs: DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS * 1000,
  retryBudgetMs: DEFAULT_RETRY_BUDGET_MS
}

/** The transport for one provider row: its own first-byte timeout wins over the default. */
export const transportFor = (config: ProviderConfig, transport: TransportOptions): TransportOptions => ({
  ...transport,
  firstByteTimeoutMs: config.firstByteTimeoutSeconds !== undefined
    ? config.firstByteTimeoutSeconds * 1000
    : transport.firstByteTimeoutMs ?? transport.timeoutMs
})

/** Shows a key as `sk-…abcd`: enough to tell keys apart, never enough to use one. */
export const maskKey = (key: string): string =>
  key.length === 0 ? "(none)" : key.length <= 8 ? "…" + key.slice(-2) : `${key.slice(0, 3)}…${key.slice(-4)}`

const MASK = "***"

/**
 * A secret other than an API key (a header value, a password): `maskKey` when it is long enough
 * that its first 3 and last 4 characters give little away, else fully hidden.
 */
export const maskSecret = (secret: string): string => (secret.length >= 16 ? maskKey(secret) : MASK)

/** Query parameters that only select an API version (Azure's `api-version`): shown, since they help and hide nothing. */
const PLAIN_QUERY = /^(api[-_]?)?version$/i

const decoded = (s: string): string => {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** A URL cut into the parts that may carry credentials; plain string work, so nothing is normalised. */
const urlParts = (url: string) => {
  const hashAt = url.indexOf("#")
  const beforeHash = hashAt < 0 ? url : url.slice(0, hashAt)
  const fragment = hashAt < 0 ? undefined : url.slice(hashAt + 1)
  const queryAt = beforeHash.indexOf("?")
  const beforeQuery = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt)
  const query = queryAt < 0 ? undefined : beforeHash.slice(queryAt + 1)
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(beforeQuery)?.[0] ?? ""
  const rest = beforeQuery.slice(scheme.length)
  // The authority ends at the path; WHATWG parsers also end it at "\" and split user info at the last "@".
  const slash = rest.search(/[/\\]/)
  const authority = slash < 0 ? rest : rest.slice(0, slash)
  const at = authority.lastIndexOf("@")
  const userinfo = at < 0 ? undefined : authority.slice(0, at)
  return { scheme, userinfo, hostAndPath: at < 0 ? rest : rest.slice(at + 1), query, fragment }
}

const queryParams = (query: string) =>
  query.split("&").map((part) => {
    const eq = part.indexOf("=")
    return eq < 0 ? { name: undefined, value: part } : { name: part.slice(0, eq), value: part.slice(eq + 1) }
  })

/**
 * A URL as it may be printed: user info (`user:***@`, or `***@` when the user name is the token),
 * every query value except an API version (`?key=***`), and a fragment are masked. Hosts and paths
 * stay as written, so the operator still sees which server is meant.
 */
export const maskUrl = (url: string): string => {
  const p = urlParts(url)
  const colon = p.userinfo?.indexOf(":") ?? -1
  const userinfo = p.userinfo === undefined ? "" : colon < 0 ? `${MASK}@` : `${p.userinfo.slice(0, colon)}:${MASK}@`
  const query = p.query === undefined ? "" : "?" + queryParams(p.query).map(({ name, value }) =>
    name === undefined
      ? (value === "" ? "" : MASK)
      : PLAIN_QUERY.test(decoded(name)) || value === "" ? `${name}=${value}` : `${name}=${MASK}`
  ).join("&")
  const fragment = p.fragment === undefined ? "" : p.fragment === "" ? "#" : `#${MASK}`
  return `${p.scheme}${userinfo}${p.hostAndPath}${query}${fragment}`
}

/** Extra headers are there to authenticate more often than not (Authorization, X-Api-Key, …): every value is masked. */
export const maskHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, maskSecret(value)]))

/** A provider as it may be printed (text or JSON): key, header values and URL credentials masked. */
export const shownProvider = (p: ProviderConfig): ProviderConfig => ({
  ...p,
  baseUrl: maskUrl(p.baseUrl),
  apiKey: maskKey(p.apiKey),
  headers: maskHeaders(p.headers)
})

/** The secret strings in a URL: what `maskUrl` hides, as written and percent-decoded. */
const urlSecrets = (url: string): Array<string> => {
  const p = urlParts(url)
  const raw: Array<string> = []
  if (p.userinfo !== undefined) {
    const colon = p.userinfo.indexOf(":")
    raw.push(colon < 0 ? p.userinfo : p.userinfo.slice(colon + 1))
  }
  for (const { name, value } of p.query === undefined ? [] : queryParams(p.query)) {
    if (name === undefined || !PLAIN_QUERY.test(decoded(name))) raw.push(value)
  }
  if (p.fragment !== undefined) raw.push(p.fragment)
  return raw.flatMap((s) => [s, decoded(s)])
}

/** Shorter strings are not scrubbed from free text: they would mangle it and hardly identify a credential. */
const MIN_SECRET = 4

/** Every secret of a provider's configuration, for scrubbing free text (error messages) before it is printed. */
export const providerSecrets = (p: ProviderConfig): ReadonlyArray<string> =>
  [...new Set([p.apiKey, ...Object.values(p.headers), ...urlSecrets(p.baseUrl)])].filter((s) => s.length >= MIN_SECRET)

/**
 * `text` with every secret replaced by its mask (longest first, so a secret that contains another
 * goes whole). For messages that may quote a request: an SDK error can repeat the URL or a header.
 */
export const redactSecrets = (text: string, secrets: ReadonlyArray<string>): string =>
  [...secrets].sort((a, b) => b.length - a.length).reduce((t, s) => (s === "" ? t : t.split(s).join(maskSecret(s))), text)
