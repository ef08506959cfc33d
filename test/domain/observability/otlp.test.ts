/**
 * The OTEL_* variables as the gateway reads them (src/domain/observability/otlp.ts): nothing set or
 * the SDK disabled is no export at all; a base endpoint gets `/v1/<signal>`, a signal's own endpoint
 * is used as given; protocol, headers, service name and sampler; values anna cannot use are one
 * line naming the variable, never a header's value.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { keepTrace, otlpSettings } from "../../../src/domain/observability/otlp.ts"

const DEFAULTS = { serviceName: "anna", serviceVersion: "0.1.0" }
const read = (vars: Record<string, string>) => otlpSettings((name) => vars[name], DEFAULTS)
const settings = (vars: Record<string, string>) => {
  const r = read(vars)
  if (Result.isFailure(r)) throw new Error(r.failure)
  return r.success
}
const problem = (vars: Record<string, string>) => {
  const r = read(vars)
  assert.isTrue(Result.isFailure(r), "expected a problem")
  return Result.isFailure(r) ? r.failure : ""
}

describe("otlpSettings", () => {
  it("asks for nothing when no endpoint is set, or the SDK is disabled, or every exporter is none", () => {
    assert.isUndefined(settings({}))
    assert.isUndefined(settings({ OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }))
    assert.isUndefined(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "TRUE" }))
    assert.isUndefined(settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_TRACES_EXPORTER: "none",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none"
    }))
  })

  it("sends every signal below a base endpoint, a signal's own endpoint as given, over http/protobuf by default", () => {
    const s = settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/base/", OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: "https://logs.example/ingest" })
    assert.strictEqual(s?.traces?.url, "http://collector:4318/base/v1/traces")
    assert.strictEqual(s?.metrics?.url, "http://collector:4318/base/v1/metrics")
    assert.strictEqual(s?.logs?.url, "https://logs.example/ingest")
    assert.strictEqual(s?.traces?.protocol, "http/protobuf")
    assert.strictEqual(s?.serviceName, "anna")
    assert.deepStrictEqual(s?.sampler, { root: "always_on", ratio: 1, parentBased: true })
    // Only one signal's endpoint: only that signal.
    const only = settings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" })
    assert.isDefined(only?.traces)
    assert.isUndefined(only?.metrics)
    assert.isUndefined(only?.logs)
    assert.isUndefined(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_METRICS_EXPORTER: "none" })?.metrics)
  })

  it("reads protocol, headers, compression, intervals, service name and sampler, a signal's own value first", () => {
    const s = settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Bearer%20abc, x-tenant = t1",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-only=traces",
      OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
      OTEL_BSP_SCHEDULE_DELAY: "250",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,service.name=from-resource",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25"
    })
    assert.strictEqual(s?.logs?.protocol, "http/json")
    assert.strictEqual(s?.metrics?.protocol, "http/protobuf")
    assert.deepStrictEqual(s?.logs?.headers, { authorization: "Bearer abc", "x-tenant": "t1" })
    assert.deepStrictEqual(s?.traces?.headers, { "x-only": "traces" })
    assert.strictEqual(s?.traces?.compression, "gzip")
    assert.strictEqual(s?.traces?.intervalMs, 250)
    assert.isUndefined(s?.logs?.intervalMs)
    assert.strictEqual(s?.serviceName, "from-resource")
    assert.deepStrictEqual(s?.sampler, { root: "traceidratio", ratio: 0.25, parentBased: true })
    assert.strictEqual(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SERVICE_NAME: "svc", OTEL_RESOURCE_ATTRIBUTES: "service.name=r" })?.serviceName, "svc")
  })

  it("reads each signal's request timeout (10 s by default) and the batch sizes of spans and log records", () => {
    const plain = settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" })
    assert.deepStrictEqual([plain?.traces?.timeoutMs, plain?.metrics?.timeoutMs, plain?.logs?.timeoutMs], [10_000, 10_000, 10_000])
    assert.deepStrictEqual([plain?.traces?.maxBatchSize, plain?.logs?.maxBatchSize], [undefined, undefined])
    const s = settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TIMEOUT: "2500",
      OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: "700",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "512",
      OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: "64"
    })
    assert.deepStrictEqual([s?.traces?.timeoutMs, s?.metrics?.timeoutMs, s?.logs?.timeoutMs], [2500, 2500, 700])
    assert.deepStrictEqual([s?.traces?.maxBatchSize, s?.metrics?.maxBatchSize, s?.logs?.maxBatchSize], [512, undefined, 64])
  })

  it("refuses what it cannot use in one line naming the variable, never a header's value", () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }
    assert.include(problem({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported")
    assert.include(problem({ ...base, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "thrift" }), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    assert.include(problem({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }), "OTEL_EXPORTER_OTLP_ENDPOINT is not a URL")
    assert.include(problem({ ...base, OTEL_TRACES_SAMPLER: "sometimes" }), "OTEL_TRACES_SAMPLER")
    assert.include(problem({ ...base, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }), "OTEL_TRACES_SAMPLER_ARG")
    assert.include(problem({ ...base, OTEL_BSP_SCHEDULE_DELAY: "soon" }), "OTEL_BSP_SCHEDULE_DELAY")
    assert.include(problem({ ...base, OTEL_EXPORTER_OTLP_TIMEOUT: "0" }), "OTEL_EXPORTER_OTLP_TIMEOUT=0 is not a timeout")
    assert.include(problem({ ...base, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "-5" }), "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
    assert.include(problem({ ...base, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "0" }), "OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
    assert.include(problem({ ...base, OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: "many" }), "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE")
    const headers = problem({ ...base, OTEL_EXPORTER_OTLP_HEADERS: "api-key-s3cr3t-without-equals" })
    assert.include(headers, "OTEL_EXPORTER_OTLP_HEADERS")
    assert.notInclude(headers, "s3cr3t")
  })
})

describe("keepTrace", () => {
  it("keeps a share of traces by their id, the same answer for the same id", () => {
    const ids = Array.from({ length: 2000 }, (_, i) => (i * 2654435761 % 2 ** 32).toString(16).padStart(8, "0").repeat(4))
    const kept = ids.filter((id) => keepTrace(id, 0.25)).length
    assert.isAbove(kept, 300)
    assert.isBelow(kept, 700)
    assert.isTrue(ids.every((id) => keepTrace(id, 1)))
    assert.isFalse(ids.some((id) => keepTrace(id, 0)))
    assert.isTrue(keepTrace("0".repeat(32), 0.01))
    assert.isFalse(keepTrace("f".repeat(32), 0.99))
  })
})
