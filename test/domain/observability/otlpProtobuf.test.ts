/**
 * anna's OTLP/protobuf encoder of traces and logs writes the bytes effect's own encoder writes
 * (`OtlpSerialization.layerProtobuf`, the reference) for any message the exporters can build:
 * every field, any string (non-ASCII, lone surrogates, long enough that lengths take several bytes),
 * negative and 64-bit integers, nested arrays and lists, batches large enough to move a body up.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { OtlpSerialization } from "effect/observability"
import { readLogs, readTraces } from "../../support/otlpProtobufReader.ts"
import { encodeLogs, encodeTraces, type AnyValue, type KeyValue, type LogsData, type Span, type TracesData } from "../../../src/domain/observability/otlpProtobuf.ts"

const reference = Effect.runSync(Effect.provide(Effect.service(OtlpSerialization.OtlpSerialization), OtlpSerialization.layerProtobuf))
const bodyOf = (body: unknown): Uint8Array => (body as { readonly body: Uint8Array }).body

const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
const hex = (bytes: number) => Arbitrary.map(Arbitrary.array(int(0, 255), { minLength: bytes, maxLength: bytes }), (xs) => xs.map((x) => x.toString(16).padStart(2, "0")).join(""))
/** Any string, some long (a length of 2–3 bytes), some with characters outside ASCII and lone surrogates. */
const text = Arbitrary.map(
  Arbitrary.all([Arbitrary.schema(Schema.String), int(0, 4), int(0, 0xffff)]),
  ([s, shape, code]) => (shape === 0 ? s.repeat(40) : shape === 1 ? `${s}${String.fromCharCode(code)}é世🎉` : shape === 2 ? "x".repeat(code) : s)
)
const nanos = Arbitrary.map(Arbitrary.all([int(0, 2_000_000_000), int(0, 999_999_999)]), ([s, ns]) => (BigInt(s) * 1_000_000_000n + BigInt(ns)).toString())

const scalar: Arbitrary.Arbitrary<AnyValue> = Arbitrary.map(
  Arbitrary.all([int(0, 6), text, Arbitrary.schema(Schema.Boolean), int(-2_000_000_000, 2_000_000_000), Arbitrary.schema(Schema.Finite)]),
  ([k, s, b, i, d]): AnyValue =>
    k === 0 ? { stringValue: s }
    : k === 1 ? { boolValue: b }
    : k === 2 ? { intValue: i }
    : k === 3 ? { intValue: String(BigInt(i) * 9_000_000_000n) }
    : k === 4 ? { doubleValue: d }
    : k === 5 ? { bytesValue: new TextEncoder().encode(s) }
    : {}
)
const value: Arbitrary.Arbitrary<AnyValue> = Arbitrary.map(
  Arbitrary.all([int(0, 3), scalar, Arbitrary.array(scalar, { maxLength: 4 }), text]),
  ([k, v, vs, key]): AnyValue =>
    k === 0 ? { arrayValue: { values: vs } } : k === 1 ? { kvlistValue: { values: vs.map((x, i) => ({ key: `${key}${i}`, value: x })) } } : v
)
const attributes: Arbitrary.Arbitrary<Array<KeyValue>> = Arbitrary.array(Arbitrary.map(Arbitrary.all([text, value]), ([key, v]) => ({ key, value: v })), { maxLength: 6 })

const span: Arbitrary.Arbitrary<Span> = Arbitrary.map(
  Arbitrary.all([hex(16), hex(8), hex(8), text, int(0, 5), nanos, nanos, attributes, int(0, 3), int(0, 2), text, Arbitrary.array(Arbitrary.all([nanos, text, attributes]), { maxLength: 2 }), Arbitrary.array(Arbitrary.all([hex(16), hex(8), attributes]), { maxLength: 2 })]),
  ([traceId, spanId, parent, name, kind, start, end, attrs, dropped, code, message, events, links]): Span => ({
    traceId,
    spanId,
    parentSpanId: kind % 2 === 0 ? parent : undefined,
    name,
    kind,
    startTimeUnixNano: start,
    endTimeUnixNano: end,
    attributes: attrs,
    droppedAttributesCount: dropped,
    events: events.map(([t, n, a]) => ({ timeUnixNano: t, name: n, attributes: a, droppedAttributesCount: dropped })),
    droppedEventsCount: dropped,
    links: links.map(([t, s, a]) => ({ traceId: t, spanId: s, attributes: a, droppedAttributesCount: 0, ...(dropped > 1 ? { flags: 257 } : {}) })),
    droppedLinksCount: 0,
    status: code === 2 ? { code, message } : { code }
  })
)

const resource = Arbitrary.map(attributes, (a) => ({ attributes: a, droppedAttributesCount: 0 }))

const traces: Arbitrary.Arbitrary<TracesData> = Arbitrary.map(
  Arbitrary.all([resource, text, Arbitrary.array(span, { maxLength: 8 }), int(1, 3)]),
  ([r, version, spans, copies]) => ({
    resourceSpans: [{ resource: r, scopeSpans: [{ scope: { name: "effect", version }, spans: Array.from({ length: copies }, () => spans).flat() }] }]
  })
)

const logs: Arbitrary.Arbitrary<LogsData> = Arbitrary.map(
  Arbitrary.all([resource, Arbitrary.array(Arbitrary.all([nanos, int(1, 24), text, value, attributes, hex(16), hex(8), int(0, 2)]), { maxLength: 8 })]),
  ([r, records]) => ({
    resourceLogs: [{
      resource: r,
      scopeLogs: [{
        scope: { name: "effect" },
        logRecords: records.map(([t, severity, severityText, body, attrs, traceId, spanId, shape]) => ({
          timeUnixNano: t,
          observedTimeUnixNano: t,
          severityNumber: severity,
          severityText,
          body,
          attributes: attrs,
          droppedAttributesCount: shape,
          ...(shape === 0 ? {} : { traceId, spanId }),
          ...(shape === 2 ? { flags: 1 } : {})
        }))
      }]
    }]
  })
)

/** A string as UTF-8 carries it (a lone surrogate becomes U+FFFD: UTF-8 has no other way to say it). */
const utf8 = (s: string): string => new TextDecoder().decode(new TextEncoder().encode(s))

const same = (ours: Uint8Array, theirs: Uint8Array) => {
  assert.strictEqual(ours.length, theirs.length)
  assert.isTrue(Buffer.from(ours).equals(Buffer.from(theirs)), "the same bytes")
}

describe("OTLP/protobuf encoding", () => {
  it.prop("traces: the bytes effect's encoder writes", { data: traces }, ({ data }) => {
    same(encodeTraces(data), bodyOf(reference.traces(data as never)))
  }, { arbitrary: { runs: 300 } })

  it.prop("logs: the bytes effect's encoder writes", { data: logs }, ({ data }) => {
    same(encodeLogs(data), bodyOf(reference.logs(data as never)))
  }, { arbitrary: { runs: 300 } })

  it.prop("traces: read back by a reader of the wire format, what was written", { data: traces }, ({ data }) => {
    const spans = data.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))
    const read = readTraces(encodeTraces(data)).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))
    const shape = (s: { traceId: string; spanId: string; parentSpanId?: string | undefined; name: string; kind: number; startTimeUnixNano: unknown; attributes: ReadonlyArray<KeyValue> }) =>
      [s.traceId, s.spanId, s.parentSpanId, utf8(s.name), s.kind, String(s.startTimeUnixNano), s.attributes.map((a) => utf8(a.key))]
    assert.deepStrictEqual(read.map(shape), spans.map(shape))
  }, { arbitrary: { runs: 100 } })

  it.prop("logs: read back by a reader of the wire format, what was written", { data: logs }, ({ data }) => {
    const records = data.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords ?? []))
    const read = readLogs(encodeLogs(data)).resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords))
    assert.deepStrictEqual(
      read.map((r) => [r.severityText === undefined ? "" : r.severityText, r.traceId, r.spanId, r.attributes.map((a) => a.key)]),
      records.map((r) => [r.severityText === undefined ? "" : utf8(r.severityText), r.traceId, r.spanId, r.attributes.map((a) => utf8(a.key))])
    )
  }, { arbitrary: { runs: 100 } })

  it("a batch of a thousand spans, whose lengths take three bytes", () => {
    const s: Span = {
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      parentSpanId: "00f067aa0ba902b7",
      name: "chat gpt-4o",
      kind: 3,
      startTimeUnixNano: "1764444444123456789",
      endTimeUnixNano: "1764444444987654321",
      attributes: [{ key: "gen_ai.usage.input_tokens", value: { intValue: 1234 } }, { key: "anna.channel", value: { stringValue: "telegram" } }],
      droppedAttributesCount: 0,
      events: [],
      droppedEventsCount: 0,
      links: [],
      droppedLinksCount: 0,
      status: { code: 1 }
    }
    const data: TracesData = { resourceSpans: [{ resource: { attributes: [], droppedAttributesCount: 0 }, scopeSpans: [{ scope: { name: "effect" }, spans: Array.from({ length: 1000 }, () => s) }] }] }
    const ours = encodeTraces(data)
    assert.isAbove(ours.length, 128 * 128)
    same(ours, bodyOf(reference.traces(data as never)))
  })
})
