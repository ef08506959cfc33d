/**
 * Every metric anna keeps (issue 27), named here once, with Prometheus names and units: counters end
 * in `_total`, durations are `_seconds` histograms, gauges say what they count. The code that does
 * the work updates them (`Metric.update` through the helpers below); `GET /metrics` prints them all
 * (src/layers/admin/metricsRoute.ts), and an OTLP exporter would read the same registry.
 *
 * Labels are bounded: agent ids, tool names, provider and model ids come from the configuration; a
 * channel is one of the platforms anna has (else `other`); an HTTP route is its pattern, never the
 * path; a tool name the model made up is `unknown`. User ids, session keys and message text are never
 * labels. The helpers cap what could come from outside (`knownChannel`, `httpMethod`, `labelValue`).
 *
 * Why here, in domain: a metric is a value (its name, type, help and buckets); updating it is
 * Effect's own registry (a `Context.Reference`, one per process), not a service of ours, and every
 * subsystem counts something, so the definitions live below them all and no subsystem reaches into
 * another's files for them.
 */
import { Clock, Effect, Exit, Metric } from "effect"

/** What a label value is when it is not one anna knows. */
export const OTHER = "other"

/** The platforms a turn or a message can come from (channels, the web console, the scheduler, the terminal). */
const CHANNELS: ReadonlySet<string> = new Set(["http", "telegram", "qq", "feishu", "wechat", "web", "cli", "scheduler"])

/** A channel label: one of the platforms anna has, else `other`. */
export const knownChannel = (platform: string): string => (CHANNELS.has(platform) ? platform : OTHER)

const METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** An HTTP method label: the usual ones, else `other`. */
export const httpMethod = (method: string): string => {
  const upper = method.toUpperCase()
  return METHODS.has(upper) ? upper : OTHER
}

/** A label value from the configuration (an id, a model name): kept when it looks like one, else `other`. */
export const labelValue = (value: string): string => (/^[\w.:/@+-]{1,128}$/.test(value) ? value : OTHER)

/** One event: counted by `counter` with `labels` and `extra`, its duration observed by `histogram` with `labels`. */
const countAndTime = (
  counter: Metric.Counter<number>,
  histogram: Metric.Histogram<number>,
  labels: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, string>>,
  durationSeconds: number
) =>
  Effect.andThen(
    Metric.update(Metric.withAttributes(counter, { ...labels, ...extra }), 1),
    Metric.update(Metric.withAttributes(histogram, labels), durationSeconds)
  )

// Turns (src/layers/runtime/SessionPool.ts)

export const turnsTotal = Metric.counter("anna_turns_total", {
  description: "Turns run, by agent, channel and outcome (the done event's stop reason, or failed/aborted).",
  incremental: true
})
export const turnDurationSeconds = Metric.histogram("anna_turn_duration_seconds", {
  description: "How long a turn took, from its start to its done event, by agent and channel.",
  boundaries: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
})

/** A finished turn. */
export const turnDone = (labels: { readonly agent: string; readonly channel: string; readonly outcome: string }, durationSeconds: number) =>
  countAndTime(
    turnsTotal,
    turnDurationSeconds,
    { agent: labelValue(labels.agent), channel: knownChannel(labels.channel) },
    { outcome: labelValue(labels.outcome) },
    durationSeconds
  )

// Model calls (src/layers/config/SqliteUsageLog.ts: every call's usage passes there)

export const modelTokensTotal = Metric.counter("anna_model_tokens_total", {
  description: "Tokens of model calls (chat, summaries, reflection, embeddings), by provider, model and kind (input, output, cache_read, cache_write).",
  incremental: true
})
export const modelCostUsdTotal = Metric.counter("anna_model_cost_usd_total", {
  description: "USD of model calls whose model has a price (anna provider price), by provider and model.",
  incremental: true
})

/** A model call's tokens, and its cost when it is priced. */
export const modelUsage = (
  labels: { readonly provider: string; readonly model: string },
  tokens: { readonly inputTokens: number; readonly outputTokens: number; readonly cacheReadTokens: number; readonly cacheWriteTokens: number },
  costUsd: number | null
) =>
  Effect.gen(function*() {
    const base = { provider: labelValue(labels.provider), model: labelValue(labels.model) }
    const kinds = [
      ["input", tokens.inputTokens],
      ["output", tokens.outputTokens],
      ["cache_read", tokens.cacheReadTokens],
      ["cache_write", tokens.cacheWriteTokens]
    ] as const
    for (const [kind, n] of kinds) {
      if (n > 0) yield* Metric.update(Metric.withAttributes(modelTokensTotal, { ...base, kind }), n)
    }
    if (costUsd !== null && costUsd > 0) yield* Metric.update(Metric.withAttributes(modelCostUsdTotal, base), costUsd)
  })

// Tool calls (src/layers/runtime/toolCalls.ts: turns and sub-agents)

export const toolCallsTotal = Metric.counter("anna_tool_calls_total", {
  description: "Tool calls, by tool and outcome (ok, error, aborted); a tool the agent does not have is `unknown`.",
  incremental: true
})
export const toolCallDurationSeconds = Metric.histogram("anna_tool_call_duration_seconds", {
  description: "How long a tool call took, by tool.",
  boundaries: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
})

export const toolCallDone = (tool: string, outcome: "ok" | "error" | "aborted", durationSeconds: number) =>
  countAndTime(toolCallsTotal, toolCallDurationSeconds, { tool: labelValue(tool) }, { outcome }, durationSeconds)

// Sandbox (src/layers/sandbox/admission.ts), compaction (src/layers/runtime), summarizer breaker (src/layers/memory/summaryBreaker.ts)

export const sandboxContainers = Metric.gauge("anna_sandbox_containers", {
  description: "Sandbox containers this anna holds now (started or starting, counted against the sandbox caps)."
})
export const compactionsTotal = Metric.counter("anna_compactions_total", {
  description: "Compactions run by the gateway, by mode (auto: before a turn; manual: /compact) and outcome (compacted, unchanged, failed).",
  incremental: true
})
export const compactionDurationSeconds = Metric.histogram("anna_compaction_duration_seconds", {
  description: "How long a compaction took (its summarizer calls included).",
  boundaries: [0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
})
export const summarizerBreakerOpen = Metric.gauge("anna_summarizer_breaker_open", {
  description: "1 while the summarizer's circuit breaker for a provider is open (deterministic summaries instead), else 0."
})

export const sandboxLive = (count: number) => Metric.update(sandboxContainers, count)

/** Runs a compaction, counting and timing it: `auto` before a turn, `manual` when asked for (/compact). */
export const compaction = <A extends { readonly compacted: boolean }, E, R>(mode: "auto" | "manual", effect: Effect.Effect<A, E, R>) =>
  timed(effect, (durationSeconds, exit) =>
    countAndTime(
      compactionsTotal,
      compactionDurationSeconds,
      {},
      { mode, outcome: Exit.isSuccess(exit) ? (exit.value.compacted ? "compacted" : "unchanged") : "failed" },
      durationSeconds
    ))

export const summarizerBreaker = (provider: string, open: boolean) =>
  Metric.update(Metric.withAttributes(summarizerBreakerOpen, { provider: labelValue(provider) }), open ? 1 : 0)

// Channels (src/layers/channels), the scheduler (src/layers/scheduler)

export const channelMessagesTotal = Metric.counter("anna_channel_messages_total", {
  description:
    "Chat messages by channel, direction (in: from users; out: replies and notifications) and outcome (in: accepted, duplicate, ignored, refused; out: sent, failed).",
  incremental: true
})
export const channelUp = Metric.gauge("anna_channel_up", {
  description: "1 while the channel runs in this gateway, 0 while it starts, failed or was stopped."
})
export const schedulerRunsTotal = Metric.counter("anna_scheduler_runs_total", {
  description: "Scheduled job runs, by outcome (ok, error, skipped).",
  incremental: true
})

export type InboundOutcome = "accepted" | "duplicate" | "ignored" | "refused"
export type OutboundOutcome = "sent" | "failed"

export const channelMessage = (channel: string, direction: "in" | "out", outcome: InboundOutcome | OutboundOutcome) =>
  Metric.update(Metric.withAttributes(channelMessagesTotal, { channel: knownChannel(channel), direction, outcome }), 1)

/** The channels' states (the supervisor's view): 1 for running, 0 for the others. */
export const channelsUp = (channels: ReadonlyArray<{ readonly id: string; readonly running: boolean }>) =>
  Effect.forEach(channels, (c) => Metric.update(Metric.withAttributes(channelUp, { channel: knownChannel(c.id) }), c.running ? 1 : 0), {
    discard: true
  })

export const schedulerRun = (outcome: "ok" | "error" | "skipped") => Metric.update(Metric.withAttributes(schedulerRunsTotal, { outcome }), 1)

// HTTP (src/layers/channels/http/server.ts: every route of the gateway's server)

export const httpRequestsTotal = Metric.counter("anna_http_requests_total", {
  description: "HTTP requests answered by the gateway's server, by method, route pattern and status.",
  incremental: true
})
export const httpRequestDurationSeconds = Metric.histogram("anna_http_request_duration_seconds", {
  description: "How long the gateway took to answer an HTTP request (a streamed answer: until its headers), by method and route pattern.",
  boundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120]
})

export const httpRequest = (labels: { readonly method: string; readonly route: string; readonly status: number }, durationSeconds: number) =>
  countAndTime(
    httpRequestsTotal,
    httpRequestDurationSeconds,
    { method: httpMethod(labels.method), route: labels.route },
    { status: String(labels.status) },
    durationSeconds
  )

/** Runs `effect`, then `report`s how many seconds it took and how it ended (whatever the ending). */
export const timed = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  report: (durationSeconds: number, exit: Exit.Exit<A, E>) => Effect.Effect<void>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.monotonicTimeNanos, (start) =>
    Effect.onExit(effect, (exit) => Effect.flatMap(Clock.monotonicTimeNanos, (end) => report(Number(end - start) / 1e9, exit))))
