/**
 * OTLP/protobuf bodies of traces and logs (issue 27), written in one pass into one growing buffer.
 *
 * Why not effect's own encoder (`OtlpSerialization.layerProtobuf`): it builds a `Uint8Array` for
 * every field and concatenates them level by level, which made encoding ~30 % of what exporting
 * costs a turn (BENCHMARKS.md, issue 27). This one writes the same bytes (the tests hold it to
 * effect's output) with a nested message's length written after its body: one byte is kept for the
 * length, and in the rare case the body is 128 bytes or longer it moves up by the extra bytes.
 *
 * The wire format is opentelemetry-proto's (trace/v1, logs/v1, common/v1, resource/v1): field
 * numbers and types below are theirs; which optional fields are left out when empty follows effect's
 * encoder, so a collector sees the same message either way. Metrics keep effect's encoder: they are
 * sent once an interval, not per turn.
 */

/** An OTLP AnyValue as effect's exporters build it (OtlpResource.unknownToAttributeValue). */
export interface AnyValue {
  readonly stringValue?: string | null | undefined
  readonly boolValue?: boolean | null | undefined
  readonly intValue?: string | number | null | undefined
  readonly doubleValue?: number | null | undefined
  readonly arrayValue?: { readonly values: ReadonlyArray<AnyValue> } | undefined
  readonly kvlistValue?: { readonly values: ReadonlyArray<KeyValue> } | undefined
  readonly bytesValue?: Uint8Array | undefined
}

export interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

/** A 64-bit unsigned value as the exporters give it: a decimal string (nanoseconds), a number, or its two 32-bit halves. */
export type Fixed64 = string | number | bigint | { readonly low: number; readonly high: number }

export interface Resource {
  readonly attributes: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount: number
}

export interface InstrumentationScope {
  readonly name: string
  readonly version?: string | undefined
  readonly attributes?: ReadonlyArray<KeyValue> | undefined
  readonly droppedAttributesCount?: number | undefined
}

export interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly traceState?: string | undefined
  readonly parentSpanId?: string | undefined
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: Fixed64
  readonly endTimeUnixNano: Fixed64
  readonly attributes: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount: number
  readonly events: ReadonlyArray<{
    readonly timeUnixNano: Fixed64
    readonly name: string
    readonly attributes: ReadonlyArray<KeyValue>
    readonly droppedAttributesCount: number
  }>
  readonly droppedEventsCount: number
  readonly links: ReadonlyArray<{
    readonly traceId: string
    readonly spanId: string
    readonly traceState?: string | undefined
    readonly attributes: ReadonlyArray<KeyValue>
    readonly droppedAttributesCount: number
    readonly flags?: number | undefined
  }>
  readonly droppedLinksCount: number
  readonly status: { readonly code: number; readonly message?: string | undefined }
  readonly flags?: number | undefined
}

export interface TracesData {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource: Resource
    readonly scopeSpans: ReadonlyArray<{ readonly scope: InstrumentationScope; readonly spans: ReadonlyArray<Span>; readonly schemaUrl?: string | undefined }>
    readonly schemaUrl?: string | undefined
  }>
}

export interface LogRecord {
  readonly timeUnixNano: Fixed64
  readonly observedTimeUnixNano?: Fixed64 | undefined
  readonly severityNumber?: number | undefined
  readonly severityText?: string | undefined
  readonly body?: AnyValue | undefined
  readonly attributes: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount?: number | undefined
  readonly flags?: number | undefined
  readonly traceId?: string | Uint8Array | undefined
  readonly spanId?: string | Uint8Array | undefined
}

export interface LogsData {
  readonly resourceLogs: ReadonlyArray<{
    readonly resource?: Resource | undefined
    readonly scopeLogs: ReadonlyArray<{
      readonly scope?: InstrumentationScope | undefined
      readonly logRecords?: ReadonlyArray<LogRecord> | undefined
      readonly schemaUrl?: string | null | undefined
    }>
    readonly schemaUrl?: string | undefined
  }>
}

const VARINT = 0
const FIXED64 = 1
const LENGTH = 2
const FIXED32 = 5

const TWO_32 = 4294967296

/** A hex digit's value by its character code (-1: not one). */
const HEX = new Int8Array(128).fill(-1)
for (let i = 0; i < 10; i++) HEX[48 + i] = i
for (let i = 0; i < 6; i++) {
  HEX[65 + i] = 10 + i
  HEX[97 + i] = 10 + i
}

const utf8 = new TextEncoder()

/** Bytes a varint of `n` (0 ≤ n < 2^53) takes. */
const varintSize = (n: number): number => {
  let size = 1
  while (n >= 128) {
    n = Math.floor(n / 128)
    size++
  }
  return size
}

class Writer {
  buf: Uint8Array
  view: DataView
  pos = 0

  constructor(size: number) {
    this.buf = new Uint8Array(size)
    this.view = new DataView(this.buf.buffer)
  }

  /** Room for `n` more bytes. */
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  /** A varint of 0 ≤ n < 2^53. */
  varint(n: number): void {
    this.room(8)
    const buf = this.buf
    while (n >= 128) {
      buf[this.pos++] = (n % 128) | 128
      n = Math.floor(n / 128)
    }
    buf[this.pos++] = n
  }

  /** A varint of any 64-bit value (a negative one as its two's complement: ten bytes). */
  varint64(n: bigint): void {
    let u = BigInt.asUintN(64, n)
    this.room(10)
    while (u >= 128n) {
      this.buf[this.pos++] = Number(u & 127n) | 128
      u >>= 7n
    }
    this.buf[this.pos++] = Number(u)
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire)
  }

  fixed32(field: number, value: number): void {
    this.tag(field, FIXED32)
    this.room(4)
    this.view.setUint32(this.pos, value >>> 0, true)
    this.pos += 4
  }

  fixed64(field: number, value: Fixed64): void {
    this.tag(field, FIXED64)
    this.room(8)
    let low: number
    let high: number
    if (typeof value === "object") {
      low = value.low >>> 0
      high = value.high >>> 0
    } else if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) {
      low = value % TWO_32
      high = Math.floor(value / TWO_32)
    } else {
      const u = BigInt.asUintN(64, BigInt(value))
      low = Number(u & 0xffffffffn)
      high = Number(u >> 32n)
    }
    this.view.setUint32(this.pos, low, true)
    this.view.setUint32(this.pos + 4, high, true)
    this.pos += 8
  }

  double(field: number, value: number): void {
    this.tag(field, FIXED64)
    this.room(8)
    this.view.setFloat64(this.pos, value, true)
    this.pos += 8
  }

  /** A length-delimited field's start: its tag and one byte kept for the length (`end` writes it). */
  begin(field: number): number {
    this.tag(field, LENGTH)
    this.room(1)
    return this.pos++
  }

  /** Writes the length of what was written since `begin` returned `at`, moving it up when the length takes more than a byte. */
  end(at: number): void {
    const length = this.pos - at - 1
    if (length < 128) {
      this.buf[at] = length
      return
    }
    const extra = varintSize(length) - 1
    this.room(extra)
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos)
    this.pos += extra
    let n = length
    let i = at
    while (n >= 128) {
      this.buf[i++] = (n % 128) | 128
      n = Math.floor(n / 128)
    }
    this.buf[i] = n
  }

  string(field: number, value: string): void {
    const at = this.begin(field)
    const n = value.length
    this.room(n * 3)
    const buf = this.buf
    let pos = this.pos
    let i = 0
    for (; i < n; i++) {
      const c = value.charCodeAt(i)
      if (c >= 128) break
      buf[pos++] = c
    }
    if (i < n) pos += utf8.encodeInto(value.slice(i), buf.subarray(pos)).written
    this.pos = pos
    this.end(at)
  }

  bytes(field: number, value: Uint8Array): void {
    const at = this.begin(field)
    this.room(value.length)
    this.buf.set(value, this.pos)
    this.pos += value.length
    this.end(at)
  }

  /** Bytes written as hex digits (a trace or span id). */
  hex(field: number, hex: string): void {
    const at = this.begin(field)
    const n = hex.length >> 1
    this.room(n)
    for (let i = 0; i < n; i++) {
      const c1 = hex.charCodeAt(2 * i)
      const c2 = hex.charCodeAt(2 * i + 1)
      // A character that is not a hex digit counts as 0 (the ids are the tracer's own).
      const h = c1 < 128 ? HEX[c1] ?? -1 : -1
      const l = c2 < 128 ? HEX[c2] ?? -1 : -1
      this.buf[this.pos++] = ((h < 0 ? 0 : h) << 4) | (l < 0 ? 0 : l)
    }
    this.end(at)
  }

  /** The bytes written, in a buffer of their own size. */
  done(): Uint8Array {
    return this.buf.slice(0, this.pos)
  }
}

const optionalString = (w: Writer, field: number, value: string | null | undefined): void => {
  if (value !== undefined && value !== null && value !== "") w.string(field, value)
}

const anyValue = (w: Writer, v: AnyValue): void => {
  if (v.stringValue !== undefined && v.stringValue !== null) w.string(1, v.stringValue)
  else if (v.boolValue !== undefined && v.boolValue !== null) {
    w.tag(2, VARINT)
    w.varint(v.boolValue ? 1 : 0)
  } else if (v.intValue !== undefined && v.intValue !== null) {
    w.tag(3, VARINT)
    const i = v.intValue
    if (typeof i === "number" && Number.isSafeInteger(i) && i >= 0) w.varint(i)
    else w.varint64(BigInt(i))
  } else if (v.doubleValue !== undefined && v.doubleValue !== null) w.double(4, v.doubleValue)
  else if (v.arrayValue !== undefined) {
    const at = w.begin(5)
    for (const item of v.arrayValue.values) {
      const inner = w.begin(1)
      anyValue(w, item)
      w.end(inner)
    }
    w.end(at)
  } else if (v.kvlistValue !== undefined) {
    const at = w.begin(6)
    keyValues(w, 1, v.kvlistValue.values)
    w.end(at)
  } else if (v.bytesValue !== undefined) w.bytes(7, v.bytesValue)
}

const keyValues = (w: Writer, field: number, list: ReadonlyArray<KeyValue>): void => {
  for (let i = 0; i < list.length; i++) {
    const kv = list[i] as KeyValue
    const at = w.begin(field)
    w.string(1, kv.key)
    const value = w.begin(2)
    anyValue(w, kv.value)
    w.end(value)
    w.end(at)
  }
}

const varintField = (w: Writer, field: number, n: number): void => {
  w.tag(field, VARINT)
  w.varint(n)
}

const resource = (w: Writer, field: number, r: Resource): void => {
  const at = w.begin(field)
  keyValues(w, 1, r.attributes)
  if (r.droppedAttributesCount > 0) varintField(w, 2, r.droppedAttributesCount)
  w.end(at)
}

const scope = (w: Writer, field: number, s: InstrumentationScope): void => {
  const at = w.begin(field)
  w.string(1, s.name)
  optionalString(w, 2, s.version)
  if (s.attributes !== undefined) keyValues(w, 3, s.attributes)
  if (s.droppedAttributesCount !== undefined && s.droppedAttributesCount !== 0) varintField(w, 4, s.droppedAttributesCount)
  w.end(at)
}

const span = (w: Writer, s: Span): void => {
  const at = w.begin(2)
  w.hex(1, s.traceId)
  w.hex(2, s.spanId)
  optionalString(w, 3, s.traceState)
  if (s.parentSpanId !== undefined) w.hex(4, s.parentSpanId)
  w.string(5, s.name)
  varintField(w, 6, s.kind)
  w.fixed64(7, s.startTimeUnixNano)
  w.fixed64(8, s.endTimeUnixNano)
  keyValues(w, 9, s.attributes)
  if (s.droppedAttributesCount > 0) varintField(w, 10, s.droppedAttributesCount)
  for (const e of s.events) {
    const event = w.begin(11)
    w.fixed64(1, e.timeUnixNano)
    w.string(2, e.name)
    keyValues(w, 3, e.attributes)
    if (e.droppedAttributesCount > 0) varintField(w, 4, e.droppedAttributesCount)
    w.end(event)
  }
  if (s.droppedEventsCount > 0) varintField(w, 12, s.droppedEventsCount)
  for (const l of s.links) {
    const link = w.begin(13)
    w.hex(1, l.traceId)
    w.hex(2, l.spanId)
    optionalString(w, 3, l.traceState)
    keyValues(w, 4, l.attributes)
    if (l.droppedAttributesCount > 0) varintField(w, 5, l.droppedAttributesCount)
    if (l.flags !== undefined) w.fixed32(6, l.flags)
    w.end(link)
  }
  if (s.droppedLinksCount > 0) varintField(w, 14, s.droppedLinksCount)
  const status = w.begin(15)
  optionalString(w, 2, s.status.message)
  varintField(w, 3, s.status.code)
  w.end(status)
  if (s.flags !== undefined) w.fixed32(16, s.flags)
  w.end(at)
}

/** A TracesData message (what POST /v1/traces takes as application/x-protobuf). */
export const encodeTraces = (data: TracesData): Uint8Array => {
  let spans = 0
  for (const rs of data.resourceSpans) for (const ss of rs.scopeSpans) spans += ss.spans.length
  const w = new Writer(1024 + spans * 512)
  for (const rs of data.resourceSpans) {
    const r = w.begin(1)
    resource(w, 1, rs.resource)
    for (const ss of rs.scopeSpans) {
      const at = w.begin(2)
      scope(w, 1, ss.scope)
      for (const s of ss.spans) span(w, s)
      optionalString(w, 3, ss.schemaUrl)
      w.end(at)
    }
    optionalString(w, 3, rs.schemaUrl)
    w.end(r)
  }
  return w.done()
}

const idBytes = (w: Writer, field: number, id: string | Uint8Array | undefined): void => {
  if (id === undefined) return
  if (typeof id === "string") {
    if (id !== "") w.hex(field, id)
  } else if (id.length > 0) w.bytes(field, id)
}

const logRecord = (w: Writer, r: LogRecord): void => {
  const at = w.begin(2)
  w.fixed64(1, r.timeUnixNano)
  if (r.severityNumber !== undefined) varintField(w, 2, r.severityNumber)
  optionalString(w, 3, r.severityText)
  if (r.body !== undefined) {
    const body = w.begin(5)
    anyValue(w, r.body)
    w.end(body)
  }
  keyValues(w, 6, r.attributes)
  if (r.droppedAttributesCount !== undefined && r.droppedAttributesCount > 0) varintField(w, 7, r.droppedAttributesCount)
  if (r.flags !== undefined) w.fixed32(8, r.flags)
  idBytes(w, 9, r.traceId)
  idBytes(w, 10, r.spanId)
  if (r.observedTimeUnixNano !== undefined) w.fixed64(11, r.observedTimeUnixNano)
  w.end(at)
}

/** A LogsData message (what POST /v1/logs takes as application/x-protobuf). */
export const encodeLogs = (data: LogsData): Uint8Array => {
  let records = 0
  for (const rl of data.resourceLogs) for (const sl of rl.scopeLogs) records += sl.logRecords?.length ?? 0
  const w = new Writer(1024 + records * 256)
  for (const rl of data.resourceLogs) {
    const r = w.begin(1)
    if (rl.resource !== undefined) resource(w, 1, rl.resource)
    for (const sl of rl.scopeLogs) {
      const at = w.begin(2)
      if (sl.scope !== undefined) scope(w, 1, sl.scope)
      for (const record of sl.logRecords ?? []) logRecord(w, record)
      optionalString(w, 3, sl.schemaUrl)
      w.end(at)
    }
    optionalString(w, 3, rl.schemaUrl)
    w.end(r)
  }
  return w.done()
}
