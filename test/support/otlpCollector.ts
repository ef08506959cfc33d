/**
 * A fake OpenTelemetry Collector: an HTTP server on 127.0.0.1 (a free port) taking OTLP/HTTP with
 * JSON bodies (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) at POST /v1/traces, /v1/metrics and
 * /v1/logs, as a collector's `otlp` receiver on 4318 does, and keeping every request for the test
 * to read: spans flattened out of resourceSpans → scopeSpans → spans with their attributes as plain
 * values, metric names, log records — from JSON bodies (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) and
 * protobuf ones (`http/protobuf`, the default) alike: a protobuf body is read by ./otlpProtobufReader.ts
 * into the shape JSON gives, and one that breaks the wire format is answered 400, as a collector would.
 */
import { createServer, type IncomingMessage } from "node:http"
import { readLogs, readMetrics, readTraces } from "./otlpProtobufReader.ts"

/** An OTLP AnyValue (`{ stringValue }`, `{ intValue }`, …) as JSON carries it. */
export interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values?: ReadonlyArray<AnyValue> }
  readonly kvlistValue?: { readonly values?: ReadonlyArray<KeyValue> }
}

export interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

/** A plain value of an AnyValue: a string, a number, a boolean, or an array of them. */
export type Plain = string | number | boolean | null | ReadonlyArray<Plain> | { readonly [key: string]: Plain }

export const plain = (v: AnyValue | undefined): Plain => {
  if (v === undefined) return null
  if (v.stringValue !== undefined) return v.stringValue
  if (v.intValue !== undefined) return Number(v.intValue)
  if (v.doubleValue !== undefined) return v.doubleValue
  if (v.boolValue !== undefined) return v.boolValue
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(plain)
  if (v.kvlistValue !== undefined) return Object.fromEntries((v.kvlistValue.values ?? []).map((kv) => [kv.key, plain(kv.value)]))
  return null
}

const attributesOf = (list: ReadonlyArray<KeyValue> | undefined): Record<string, Plain> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]))

/** One exported span, as the test reads it. */
export interface CollectedSpan {
  readonly traceId: string
  readonly spanId: string
  /** Absent (or empty) for a trace's root. */
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number | undefined
  readonly attributes: Record<string, Plain>
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Record<string, Plain> }>
  readonly status: { readonly code?: number; readonly message?: string } | undefined
  /** The resource it came with (`service.name`, …). */
  readonly resource: Record<string, Plain>
}

export interface CollectedLog {
  readonly body: Plain
  readonly severityText: string | undefined
  readonly traceId: string | undefined
  readonly spanId: string | undefined
  readonly attributes: Record<string, Plain>
}

export interface OtlpCollector {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://127.0.0.1:40123. */
  readonly url: string
  readonly spans: () => ReadonlyArray<CollectedSpan>
  readonly metricNames: () => ReadonlySet<string>
  readonly logs: () => ReadonlyArray<CollectedLog>
  /** Every request received (path, content type, raw body), in order. */
  readonly requests: () => ReadonlyArray<{ readonly path: string; readonly contentType: string; readonly body: string }>
  /**
   * Resolves with `find`'s first defined answer over what has arrived, looking again as requests
   * come; rejects with `what` after `timeoutMs`.
   */
  readonly waitFor: <A>(what: string, find: () => A | undefined, timeoutMs?: number) => Promise<A>
  readonly close: () => Promise<void>
}

interface SpanJson {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind?: number
  readonly attributes?: ReadonlyArray<KeyValue>
  readonly events?: ReadonlyArray<{ readonly name: string; readonly attributes?: ReadonlyArray<KeyValue> }>
  readonly status?: { readonly code?: number; readonly message?: string }
}

interface TracesJson {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<KeyValue> }
    readonly scopeSpans?: ReadonlyArray<{ readonly spans?: ReadonlyArray<SpanJson> }>
  }>
}

interface MetricsJson {
  readonly resourceMetrics?: ReadonlyArray<{ readonly scopeMetrics?: ReadonlyArray<{ readonly metrics?: ReadonlyArray<{ readonly name: string }> }> }>
}

interface LogsJson {
  readonly resourceLogs?: ReadonlyArray<{
    readonly scopeLogs?: ReadonlyArray<{
      readonly logRecords?: ReadonlyArray<{
        readonly body?: AnyValue
        readonly severityText?: string
        readonly traceId?: string
        readonly spanId?: string
        readonly attributes?: ReadonlyArray<KeyValue>
      }>
    }>
  }>
}

const readBody = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (c: Buffer) => chunks.push(c))
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

/** A request's body as OTLP/JSON gives it: parsed JSON, or protobuf read into that shape; undefined for another content type. */
const decoded = (path: string, contentType: string, raw: Buffer): unknown => {
  if (contentType.startsWith("application/json")) return JSON.parse(raw.toString("utf8"))
  if (!contentType.startsWith("application/x-protobuf")) return undefined
  return path === "/v1/traces" ? readTraces(raw) : path === "/v1/metrics" ? readMetrics(raw) : readLogs(raw)
}

/** Starts a collector on `port` (default: a free one). */
export const startOtlpCollector = async (port = 0): Promise<OtlpCollector> => {
  const requests: Array<{ path: string; contentType: string; body: string }> = []
  const spans: Array<CollectedSpan> = []
  const metricNames = new Set<string>()
  const logs: Array<CollectedLog> = []
  const waiters = new Set<() => void>()

  const take = (path: string, body: unknown) => {
    if (path === "/v1/traces") {
      for (const rs of (body as TracesJson).resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes)
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId === "" ? undefined : s.parentSpanId,
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
              events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
              status: s.status,
              resource
            })
          }
        }
      }
    } else if (path === "/v1/metrics") {
      for (const rm of (body as MetricsJson).resourceMetrics ?? []) {
        for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) metricNames.add(m.name)
      }
    } else if (path === "/v1/logs") {
      for (const rl of (body as LogsJson).resourceLogs ?? []) {
        for (const sl of rl.scopeLogs ?? []) {
          for (const r of sl.logRecords ?? []) {
            logs.push({ body: plain(r.body), severityText: r.severityText, traceId: r.traceId, spanId: r.spanId, attributes: attributesOf(r.attributes) })
          }
        }
      }
    }
  }

  const server = createServer((request, response) => {
    void readBody(request).then((raw) => {
      const body = raw.toString("utf8")
      const path = (request.url ?? "/").split("?")[0] ?? "/"
      const contentType = request.headers["content-type"] ?? ""
      if (request.method !== "POST" || !["/v1/traces", "/v1/metrics", "/v1/logs"].includes(path)) {
        response.writeHead(404).end()
        return
      }
      requests.push({ path, contentType, body })
      try {
        const data = decoded(path, contentType, raw)
        if (data !== undefined) take(path, data)
      } catch (e) {
        response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ message: `not OTLP: ${String(e)}` }))
        return
      }
      // An OTLP/HTTP success: an empty ExportServiceResponse.
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
      for (const wake of waiters) wake()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve())
  })
  const address = server.address()
  const bound = typeof address === "object" && address !== null ? address.port : 0

  const waitFor = <A>(what: string, find: () => A | undefined, timeoutMs = 30_000): Promise<A> =>
    new Promise((resolve, reject) => {
      const look = () => {
        const found = find()
        if (found === undefined) return false
        clearTimeout(timer)
        waiters.delete(wake)
        resolve(found)
        return true
      }
      const wake = () => {
        look()
      }
      const timer = setTimeout(() => {
        waiters.delete(wake)
        reject(new Error(`the collector did not receive ${what} within ${timeoutMs} ms (${requests.length} request(s): ${requests.map((r) => r.path).join(", ")})`))
      }, timeoutMs)
      if (!look()) waiters.add(wake)
    })

  return {
    url: `http://127.0.0.1:${bound}`,
    spans: () => spans,
    metricNames: () => metricNames,
    logs: () => logs,
    requests: () => requests,
    waitFor,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
