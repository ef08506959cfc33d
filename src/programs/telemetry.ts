/**
 * The gateway's OpenTelemetry export (issue 27): traces, metrics and logs over OTLP/HTTP with
 * effect/observability's exporters, as the standard `OTEL_*` variables ask (env.ts `otlpSetting`,
 * domain/observability/otlp.ts). When they ask for nothing, `Telemetry` is `Layer.empty`: no
 * tracer but Effect's own, no exporter fiber, nothing sent.
 *
 * - Spans are those of the code (`Effect.fn` names, the turn's tree in src/layers/runtime/); the HTTP
 *   server opens a server span per request and continues a caller's W3C `traceparent`.
 * - Metrics are the registry `/metrics` prints (domain/observability/metrics.ts).
 * - Logs are the lines the gateway logs (at ANNA_LOG_LEVEL), with the span they happened in.
 * - Spans hold no text (`privateSpans`): a failed span's exception event and status say the
 *   error's type (its `_tag`, e.g. `ToolError`), not its message, which can quote what the model
 *   asked a tool for (a path, a command) or what a tool answered; and the log lines written inside a
 *   span are not copied into it as events (they name sessions and users): they are the logs signal,
 *   which carries what the log lines on stderr carry, with the trace and span ids to join them. A
 *   request's span has its route's pattern (`http.route`), not its path, which can hold a session key.
 * - Sampling (`OTEL_TRACES_SAMPLER`): effect's tracer keeps every span and has no ratio sampler, so
 *   it is decided here where a trace starts — a span without a parent (a turn, a request, a
 *   background sweep), or one continuing a caller's trace — and a span not kept is not exported,
 *   nor are its children (Effect passes the decision down).
 * - Shutdown: the exporters are scoped; provided around the whole gateway, their scope closes last,
 *   and each sends what it holds (up to 3 s) after the channels and turns have stopped.
 *
 * Why not `Otlp.layerFromConfig`: in effect 4.1 it exports nothing unless `OTEL_<SIGNAL>_EXPORTER`
 * is set (the specification's default is `otlp`), has no `OTEL_EXPORTER_OTLP_PROTOCOL`, and dies
 * without `OTEL_SERVICE_NAME`; and the environment is read in env.ts only.
 */
import { Cause, Duration, Effect, Exit, Layer, Option, Tracer } from "effect"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { HttpBody, HttpClient, HttpClientError } from "effect/http"
import { OtlpExporter, OtlpLogger, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"
import { encodeLogs, encodeTraces } from "../domain/observability/otlpProtobuf.ts"
import { keepTrace, type OtlpProtocol, type OtlpSettings, type Sampler, type SignalExport } from "../domain/observability/otlp.ts"
import { type InvalidEnvironment, otlpSetting } from "./env.ts"
import { VERSION } from "./cli.ts"

/**
 * OTLP/protobuf bodies: traces and logs by anna's one-pass encoder (domain/observability/otlpProtobuf.ts,
 * the same bytes as effect's at a fraction of the cost), metrics (once an interval) by effect's.
 */
const protobuf = Layer.effect(
  OtlpSerialization.OtlpSerialization,
  Effect.map(Effect.service(OtlpSerialization.OtlpSerialization), (effects) => ({
    traces: (data) => HttpBody.uint8Array(encodeTraces(data), "application/x-protobuf"),
    metrics: effects.metrics,
    logs: (data) => HttpBody.uint8Array(encodeLogs(data), "application/x-protobuf")
  }))
).pipe(Layer.provide(OtlpSerialization.layerProtobuf))

const serialization = (protocol: OtlpProtocol) => (protocol === "http/json" ? OtlpSerialization.layerJson : protobuf)

/** Whether a trace anna starts is kept (a random draw is as good as its random trace id's bits). */
const keepNew = (sampler: Sampler): boolean =>
  sampler.root === "always_on" ? true : sampler.root === "always_off" ? false : Math.random() < sampler.ratio

/**
 * `tracer` with `sampler`'s decisions where a trace starts or enters: a span without a parent, or
 * whose parent is a caller's (an `ExternalSpan`: parent-based samplers keep the caller's choice,
 * which Effect has already applied). Spans under a local parent follow it.
 */
export const withSampler = (sampler: Sampler) => (tracer: Tracer.Tracer): Tracer.Tracer => {
  if (sampler.root === "always_on" && sampler.parentBased) return tracer
  return Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      if (parent?._tag === "Span") return tracer.span(options)
      if (parent === undefined) return tracer.span({ ...options, sampled: options.sampled && keepNew(sampler) })
      if (sampler.parentBased) return tracer.span(options)
      const keep = sampler.root === "traceidratio" ? keepTrace(parent.traceId, sampler.ratio) : sampler.root === "always_on"
      return tracer.span({ ...options, sampled: keep })
    },
    ...(tracer.context === undefined ? {} : { context: tracer.context })
  })
}

/** A failure as telemetry shows it: its type only (no message, no stack). */
class Failed extends Error {
  constructor(type: string) {
    super(type)
    this.name = type
    this.stack = type
  }
}

const typeOf = (u: unknown): string => {
  if (typeof u === "object" && u !== null) {
    if ("_tag" in u && typeof u._tag === "string") return u._tag
    if (u instanceof Error) return u.name
  }
  return "Error"
}

/** `cause` with each error and defect replaced by one that says only its type. */
const typesOnly = (cause: Cause.Cause<unknown>): Cause.Cause<unknown> =>
  Cause.fromReasons(cause.reasons.map((r) =>
    Cause.isFailReason(r) ? Cause.makeFailReason(new Failed(typeOf(r.error))) : Cause.isDieReason(r) ? Cause.makeDieReason(new Failed(typeOf(r.defect))) : r
  ))

/**
 * The request's path and query, which the HTTP server's spans would carry: a path can hold a session
 * key (`/api/sessions/{key}/…`); the route's pattern (`http.route`) stands for it.
 */
const URL_ATTRIBUTES: ReadonlySet<string> = new Set(["url.full", "url.path", "url.query"])

/**
 * The hot inner spans left out of export: each SQL statement (the SQL client's spans, which carry
 * `db.system.name`) and transaction — about 85 of a turn's 180 spans — and the lookups of the stores
 * and the configuration (QUIET), another 75: a turn's trace keeps its ~20 spans that explain it
 * (routing, assembly, model and tool calls, search, compaction, delivery). A quiet span's children
 * hang from its nearest exported ancestor, so the tree stays whole.
 */
const DB_SYSTEM = "db.system.name"
const QUIET = new RegExp(
  `^(?:${
    [
      "MemoryStore", "ConfigStore", "JobStore", "Accounts", "ProviderStore", "PluginStore", "ChannelLedger", "UsageLog",
      "RuleVotes", "SkillStats", "SessionManager", "AgentStore", "ToolCatalog", "McpServers", "LiveConfig", "ProfileStore",
      "PlaybookFiles", "Skills", "AgentPresets", "AgentFiles", "ProviderRegistry", "LoginThrottle", "TokenLineage",
      "Memory", "ToolRegistry", "AdminAuth", "Sandbox"
    ].join("|")
  })\\.|^(?:Playbook\\.(?:list|view)|HttpChannel\\.authenticate|sql\\.transaction)$`
)

/** Span names already judged quiet or not (the names are the code's, a few hundred; the cache is capped all the same). */
const quietNames = new Map<string, boolean>()

const quiet = (name: string): boolean => {
  let q = quietNames.get(name)
  if (q === undefined) {
    q = QUIET.test(name)
    if (quietNames.size >= 4096) quietNames.clear()
    quietNames.set(name, q)
  }
  return q
}

/** Whether a span is exported: not a quiet lookup (a server or client span always is, but for SQL's). */
export const exported = (options: { readonly name: string; readonly kind: Tracer.SpanKind }): boolean =>
  options.kind === "server" || options.kind === "client" || !quiet(options.name)

/**
 * An exported span as privateSpans shows it to the code: `span`'s own, but that its end says the
 * errors' types only, it takes no events, nor a request's path and query, and a SQL statement's
 * span (DB_SYSTEM) turns itself unsampled. One object per span, not a closure per method.
 */
class PrivateSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly span: Tracer.Span
  constructor(span: Tracer.Span) {
    this.span = span
  }
  get name() {
    return this.span.name
  }
  get spanId() {
    return this.span.spanId
  }
  get traceId() {
    return this.span.traceId
  }
  get parent() {
    return this.span.parent
  }
  get annotations() {
    return this.span.annotations
  }
  get status() {
    return this.span.status
  }
  get attributes() {
    return this.span.attributes
  }
  get links() {
    return this.span.links
  }
  get sampled() {
    return this.span.sampled
  }
  get kind() {
    return this.span.kind
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.span.end(endTime, Exit.isFailure(exit) ? Exit.failCause(typesOnly(exit.cause)) : exit)
  }
  attribute(key: string, value: unknown): void {
    // A SQL statement's span (named after the database) says so first: it is not exported.
    if (key === DB_SYSTEM) (this.span as { sampled: boolean }).sampled = false
    if (!URL_ATTRIBUTES.has(key)) this.span.attribute(key, value)
  }
  event(): void {}
  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.span.addLinks(links)
  }
}

/** A quiet span (not exported: Effect's own span, in the same trace), and its nearest exported ancestor (none: it is a root). */
class QuietSpan extends Tracer.NativeSpan {
  readonly standsFor: Option.Option<Tracer.AnySpan>
  constructor(options: ConstructorParameters<typeof Tracer.NativeSpan>[0]) {
    super(options)
    this.standsFor = options.parent
  }
}

/**
 * `tracer`'s spans but the SQL client's (DB_SYSTEM), and a span ending in failure exported with its errors' types only
 * (an error's message may quote a tool's arguments or output, or a provider's answer), and without
 * events (Effect copies every log line written inside a span into it; those are the logs' to carry), nor a
 * request's path and query (URL_ATTRIBUTES).
 */
export const privateSpans = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      // A quiet parent is not exported: its children hang from its nearest exported ancestor. (The
      // options are a fresh object Effect builds for this one call.)
      const parent = options.parent
      if (parent._tag === "Some" && parent.value instanceof QuietSpan) (options as { parent: Option.Option<Tracer.AnySpan> }).parent = parent.value.standsFor
      return exported(options) ? new PrivateSpan(tracer.span(options)) : new QuietSpan(options)
    },
    ...(tracer.context === undefined ? {} : { context: tracer.context })
  })

/** Where a signal goes, as a log line may show it: no credentials of a URL's user part. */
const shown = (url: string): string => {
  const u = new URL(url)
  u.username = ""
  u.password = ""
  return u.toString()
}

const common = (settings: OtlpSettings, to: SignalExport) => ({
  url: to.url,
  resource: { serviceName: settings.serviceName, serviceVersion: settings.serviceVersion },
  headers: to.headers,
  compression: to.compression,
  exportInterval: to.intervalMs === undefined ? undefined : Duration.millis(to.intervalMs),
  maxBatchSize: to.maxBatchSize
})

/**
 * The HTTP client a signal's exporter sends with: Node's node:http (fetch's web streams, abort
 * signals and per-request objects cost more CPU per export), each request given up after the
 * signal's timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`), which the exporter then handles like every
 * failed export (retried, then left alone for a minute). Without it a collector that takes the
 * connection and never answers would hold each batch forever.
 */
const clientFor = (to: SignalExport) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(
      Effect.service(HttpClient.HttpClient),
      HttpClient.transform((response, request) =>
        Effect.timeoutOrElse(response, {
          duration: Duration.millis(to.timeoutMs),
          orElse: () =>
            Effect.fail(
              new HttpClientError.HttpClientError({
                reason: new HttpClientError.TransportError({ request, description: `no answer within ${to.timeoutMs} ms (OTEL_EXPORTER_OTLP_TIMEOUT)` })
              })
            )
        })
      )
    )
  ).pipe(Layer.provide(NodeHttpClient.layerNodeHttp))

/** The exporters `settings` ask for, each signal with its own protocol, HTTP client and timeout. */
export const layerOtlp = (settings: OtlpSettings) => {
  const { traces, metrics, logs } = settings
  // Each signal's layer is kept whole: the tracer and the logger are what it provides.
  const tracing = traces === undefined
    ? Layer.empty
    : Layer.effect(Tracer.Tracer, Effect.map(OtlpTracer.make(common(settings, traces)), (t) => withSampler(settings.sampler)(privateSpans(t)))).pipe(
      Layer.provideMerge(OtlpExporter.layerFlusher),
      Layer.provide([serialization(traces.protocol), clientFor(traces)])
    )
  const metering = metrics === undefined
    ? Layer.empty
    : OtlpMetrics.layer({ ...common(settings, metrics), temporality: metrics.temporality }).pipe(
      Layer.provide([serialization(metrics.protocol), clientFor(metrics)])
    )
  const logging = logs === undefined ? Layer.empty : OtlpLogger.layer(common(settings, logs)).pipe(Layer.provide([serialization(logs.protocol), clientFor(logs)]))
  const described = [["traces", traces], ["metrics", metrics], ["logs", logs]] as const
  const started = Effect.logInfo(
    `telemetry: exporting ${described.flatMap(([s, to]) => (to === undefined ? [] : [`${s} to ${shown(to.url)} (${to.protocol})`])).join(", ")}`
  )
  return Layer.mergeAll(tracing, metering, logging, Layer.effectDiscard(started))
}

/**
 * What the gateway provides around everything it runs: the OTLP exporters when the `OTEL_*`
 * variables ask for them, else nothing at all.
 */
export const Telemetry: Layer.Layer<never, InvalidEnvironment> = Layer.unwrap(
  Effect.map(otlpSetting({ serviceName: "anna", serviceVersion: VERSION }), (settings) => (settings === undefined ? Layer.empty : layerOtlp(settings)))
)
