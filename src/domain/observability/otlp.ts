/**
 * What the standard OpenTelemetry variables ask of the gateway's OTLP export (issue 27), decided
 * from their values alone (src/programs/env.ts reads them; src/programs/telemetry.ts builds the
 * exporters). Nothing set, or `OTEL_SDK_DISABLED=true`, is `undefined`: no exporter at all.
 *
 * Honoured (per the OpenTelemetry SDK environment specification, an empty value is unset):
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (a base: `/v1/traces`, `/v1/metrics`, `/v1/logs` are appended) and
 *   `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT` (used as given); a signal without an
 *   endpoint is not exported.
 * - `OTEL_{TRACES,METRICS,LOGS}_EXPORTER`: `otlp` (the default) or `none`.
 * - `OTEL_EXPORTER_OTLP[_SIGNAL]_PROTOCOL`: `http/protobuf` (the default) or `http/json`; `grpc` is
 *   refused (anna speaks OTLP over HTTP only, port 4318).
 * - `OTEL_EXPORTER_OTLP[_SIGNAL]_HEADERS` (`k=v,k2=v2`, percent-decoded) and `..._COMPRESSION`
 *   (`gzip` or `none`).
 * - `OTEL_SERVICE_NAME` (default `anna`, or `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, whose
 *   other attributes effect's exporters add themselves).
 * - `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BLRP_SCHEDULE_DELAY`, `OTEL_METRIC_EXPORT_INTERVAL` (ms) and
 *   `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE` (`cumulative` or `delta`).
 * - `OTEL_EXPORTER_OTLP[_SIGNAL]_TIMEOUT` (ms, default 10000): how long one export request may take.
 * - `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, `OTEL_BLRP_MAX_EXPORT_BATCH_SIZE`: spans or log records held
 *   before an export is sent early (effect's exporters' 1000 when unset).
 * - `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio` and their `parentbased_`
 *   forms, default `parentbased_always_on`) with `OTEL_TRACES_SAMPLER_ARG` (the ratio, 0..1).
 *
 * A value anna cannot use is a problem in one line naming the variable — never repeating a
 * header's value, which is usually a credential.
 */
import { Result } from "effect"

export type Signal = "traces" | "metrics" | "logs"
export const SIGNALS: ReadonlyArray<Signal> = ["traces", "metrics", "logs"]

export type OtlpProtocol = "http/protobuf" | "http/json"

/** Where and how one signal is sent. */
export interface SignalExport {
  readonly url: string
  readonly protocol: OtlpProtocol
  readonly headers: Readonly<Record<string, string>>
  readonly compression: "gzip" | "none"
  /** Milliseconds between exports (the exporters' default when absent). */
  readonly intervalMs?: number | undefined
  /** Milliseconds one export request may take. */
  readonly timeoutMs: number
  /** Items held before an export is sent early (the exporters' default when absent; metrics have none). */
  readonly maxBatchSize?: number | undefined
}

/** `OTEL_EXPORTER_OTLP_TIMEOUT`'s default (the specification's). */
const DEFAULT_TIMEOUT_MS = 10_000

/** Which traces are kept: decided where a trace starts (a span without a parent, or a caller's). */
export interface Sampler {
  /** What is decided for a trace anna starts (and, unless parent-based, for a caller's). */
  readonly root: "always_on" | "always_off" | "traceidratio"
  /** The share kept by `traceidratio` (0..1). */
  readonly ratio: number
  /** A caller's trace (`traceparent`) keeps the caller's decision. */
  readonly parentBased: boolean
}

export interface OtlpSettings {
  readonly traces?: SignalExport | undefined
  readonly metrics?: (SignalExport & { readonly temporality?: "cumulative" | "delta" | undefined }) | undefined
  readonly logs?: SignalExport | undefined
  readonly serviceName: string
  readonly serviceVersion: string
  readonly sampler: Sampler
}

/** Reads one variable; empty or absent is undefined. */
export type Env = (name: string) => string | undefined

const upper = (signal: Signal) => signal.toUpperCase()

/** The variables this module reads (for a test's environment, and for the README). */
export const otlpVariables: ReadonlyArray<string> = [
  "OTEL_SDK_DISABLED",
  "OTEL_SERVICE_NAME",
  "OTEL_RESOURCE_ATTRIBUTES",
  "OTEL_TRACES_SAMPLER",
  "OTEL_TRACES_SAMPLER_ARG",
  "OTEL_BSP_SCHEDULE_DELAY",
  "OTEL_BLRP_SCHEDULE_DELAY",
  "OTEL_METRIC_EXPORT_INTERVAL",
  "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
  "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
  "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE",
  ...["", ...SIGNALS.map((s) => `${upper(s)}_`)].flatMap((p) =>
    ["ENDPOINT", "PROTOCOL", "HEADERS", "COMPRESSION", "TIMEOUT"].map((v) => `OTEL_EXPORTER_OTLP_${p}${v}`)
  ),
  ...SIGNALS.map((s) => `OTEL_${upper(s)}_EXPORTER`)
]

class Problem {
  readonly message: string
  constructor(message: string) {
    this.message = message
  }
}

const fail = (message: string): never => {
  throw new Problem(message)
}

/** `k=v,k2=v2` (percent-decoded keys and values); the value is never repeated in a problem. */
export const parseHeaders = (raw: string, name: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const entry of raw.split(",")) {
    if (entry.trim() === "") continue
    const at = entry.indexOf("=")
    if (at <= 0) fail(`${name} is not a list of key=value pairs separated by commas`)
    try {
      const key = decodeURIComponent(entry.slice(0, at).trim()).toLowerCase()
      if (key === "") fail(`${name} has an entry without a key`)
      out[key] = decodeURIComponent(entry.slice(at + 1).trim())
    } catch (e) {
      if (e instanceof Problem) throw e
      fail(`${name} has an entry that is not valid percent-encoding`)
    }
  }
  return out
}

/** `service.name` of OTEL_RESOURCE_ATTRIBUTES, when it has one. */
const resourceServiceName = (raw: string | undefined): string | undefined => {
  for (const entry of (raw ?? "").split(",")) {
    const at = entry.indexOf("=")
    if (at <= 0 || entry.slice(0, at).trim() !== "service.name") continue
    try {
      const value = decodeURIComponent(entry.slice(at + 1).trim())
      if (value !== "") return value
    } catch {
      return undefined
    }
  }
  return undefined
}

/** A timeout in milliseconds: more than 0 (0 would fail every request). */
const timeout = (env: Env, name: string): number | undefined => {
  const n = milliseconds(env, name)
  return n === 0 ? fail(`${name}=0 is not a timeout: give the milliseconds one export may take`) : n
}

const milliseconds = (env: Env, name: string): number | undefined => {
  const raw = env(name)
  if (raw === undefined) return undefined
  const n = Number(raw)
  return Number.isInteger(n) && n >= 0 ? n : fail(`${name}=${JSON.stringify(raw)} is not a whole number of milliseconds`)
}

const count = (env: Env, name: string): number | undefined => {
  const raw = env(name)
  if (raw === undefined) return undefined
  const n = Number(raw)
  return Number.isInteger(n) && n >= 1 ? n : fail(`${name}=${JSON.stringify(raw)} is not a whole number of 1 or more`)
}

const oneOf = <A extends string>(env: Env, name: string, allowed: ReadonlyArray<A>): A | undefined => {
  const raw = env(name)
  if (raw === undefined) return undefined
  const s = raw.trim().toLowerCase()
  return allowed.find((a) => a === s) ?? fail(`${name}=${JSON.stringify(raw)} is not one of ${allowed.join(", ")}`)
}

const protocol = (env: Env, name: string): OtlpProtocol | undefined => {
  const raw = env(name)
  if (raw?.trim().toLowerCase() === "grpc") {
    return fail(`${name}=grpc is not supported: anna exports OTLP over HTTP (http/protobuf or http/json, usually port 4318)`)
  }
  return oneOf(env, name, ["http/protobuf", "http/json"] as const)
}

const url = (raw: string, name: string): URL => (URL.canParse(raw) ? new URL(raw) : fail(`${name} is not a URL (for example http://localhost:4318)`))

/** Where a signal goes: its own endpoint as given, else the base endpoint + `/v1/<signal>`. */
const endpoint = (env: Env, signal: Signal): string | undefined => {
  const own = `OTEL_EXPORTER_OTLP_${upper(signal)}_ENDPOINT`
  const ownRaw = env(own)
  if (ownRaw !== undefined) return url(ownRaw.trim(), own).toString()
  const baseRaw = env("OTEL_EXPORTER_OTLP_ENDPOINT")
  if (baseRaw === undefined) return undefined
  const base = url(baseRaw.trim(), "OTEL_EXPORTER_OTLP_ENDPOINT")
  base.pathname = `${base.pathname.replace(/\/+$/, "")}/v1/${signal}`
  return base.toString()
}

/** `OTEL_<SIGNAL>_EXPORTER`: a list; `otlp` (the default) exports, `none` or anything else does not. */
const exporterOn = (env: Env, signal: Signal): boolean => {
  const raw = env(`OTEL_${upper(signal)}_EXPORTER`)
  if (raw === undefined) return true
  return raw.split(",").map((s) => s.trim().toLowerCase()).includes("otlp")
}

const INTERVALS: Readonly<Record<Signal, string>> = {
  traces: "OTEL_BSP_SCHEDULE_DELAY",
  metrics: "OTEL_METRIC_EXPORT_INTERVAL",
  logs: "OTEL_BLRP_SCHEDULE_DELAY"
}

const BATCH_SIZES: Readonly<Record<Signal, string | undefined>> = {
  traces: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
  metrics: undefined,
  logs: "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE"
}

const signalExport = (env: Env, signal: Signal): SignalExport | undefined => {
  const at = endpoint(env, signal)
  if (at === undefined || !exporterOn(env, signal)) return undefined
  const own = (v: string) => `OTEL_EXPORTER_OTLP_${upper(signal)}_${v}`
  const base = (v: string) => `OTEL_EXPORTER_OTLP_${v}`
  const headersName = env(own("HEADERS")) !== undefined ? own("HEADERS") : base("HEADERS")
  const headersRaw = env(headersName)
  return {
    url: at,
    protocol: protocol(env, own("PROTOCOL")) ?? protocol(env, base("PROTOCOL")) ?? "http/protobuf",
    headers: headersRaw === undefined ? {} : parseHeaders(headersRaw, headersName),
    compression: oneOf(env, own("COMPRESSION"), ["gzip", "none"] as const) ?? oneOf(env, base("COMPRESSION"), ["gzip", "none"] as const) ?? "none",
    intervalMs: milliseconds(env, INTERVALS[signal]),
    timeoutMs: timeout(env, own("TIMEOUT")) ?? timeout(env, base("TIMEOUT")) ?? DEFAULT_TIMEOUT_MS,
    maxBatchSize: BATCH_SIZES[signal] === undefined ? undefined : count(env, BATCH_SIZES[signal])
  }
}

const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const

const sampler = (env: Env): Sampler => {
  const name = oneOf(env, "OTEL_TRACES_SAMPLER", SAMPLERS) ?? "parentbased_always_on"
  const parentBased = name.startsWith("parentbased_")
  const root = name.replace(/^parentbased_/, "") as Sampler["root"]
  if (root !== "traceidratio") return { root, ratio: root === "always_on" ? 1 : 0, parentBased }
  const raw = env("OTEL_TRACES_SAMPLER_ARG")
  if (raw === undefined) return { root, ratio: 1, parentBased }
  const ratio = Number(raw)
  return Number.isFinite(ratio) && ratio >= 0 && ratio <= 1
    ? { root, ratio, parentBased }
    : fail(`OTEL_TRACES_SAMPLER_ARG=${JSON.stringify(raw)} is not a ratio between 0 and 1`)
}

/**
 * The export the variables ask for, `undefined` when none (no endpoint, every signal's exporter
 * `none`, or `OTEL_SDK_DISABLED=true`), or a problem naming the variable.
 */
export const otlpSettings = (env: Env, defaults: { readonly serviceName: string; readonly serviceVersion: string }): Result.Result<OtlpSettings | undefined, string> => {
  try {
    if (env("OTEL_SDK_DISABLED")?.trim().toLowerCase() === "true") return Result.succeed(undefined)
    const [traces, metrics, logs] = SIGNALS.map((s) => signalExport(env, s))
    if (traces === undefined && metrics === undefined && logs === undefined) return Result.succeed(undefined)
    const temporality = oneOf(env, "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", ["cumulative", "delta"] as const)
    return Result.succeed({
      traces,
      metrics: metrics === undefined ? undefined : { ...metrics, temporality },
      logs,
      serviceName: env("OTEL_SERVICE_NAME")?.trim() ?? resourceServiceName(env("OTEL_RESOURCE_ATTRIBUTES")) ?? defaults.serviceName,
      serviceVersion: defaults.serviceVersion,
      sampler: sampler(env)
    })
  } catch (e) {
    if (e instanceof Problem) return Result.fail(e.message)
    throw e
  }
}

/**
 * Whether a trace is kept, from its id (the lowest 56 bits as a share of 2^56, as OpenTelemetry's
 * TraceIdRatioBased sampler reads them), so every span of one trace gets the same answer.
 */
export const keepTrace = (traceId: string, ratio: number): boolean => {
  if (ratio >= 1) return true
  if (ratio <= 0) return false
  const low = Number.parseInt(traceId.slice(-14), 16)
  return Number.isFinite(low) && low / 2 ** 56 < ratio
}
