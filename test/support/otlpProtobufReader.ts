/**
 * Reads OTLP/protobuf request bodies (ExportTraceServiceRequest, ExportMetricsServiceRequest,
 * ExportLogsServiceRequest) into the shapes OTLP/JSON gives them, as a collector's `otlp` receiver
 * reads them: written from opentelemetry-proto's field numbers (trace/v1, metrics/v1, logs/v1,
 * common/v1, resource/v1), independently of the encoders under test. A body that breaks the wire
 * format (a truncated field, a length past the end, a wire type a field does not have) throws.
 */

interface Field {
  readonly wire: number
  /** A varint's or fixed64's value. */
  readonly n: bigint
  /** A length-delimited field's bytes. */
  readonly bytes: Uint8Array
}

type Message = ReadonlyMap<number, ReadonlyArray<Field>>

const EMPTY = new Uint8Array(0)

/** A message's fields by number, in order. */
const parse = (buf: Uint8Array): Message => {
  const fields = new Map<number, Array<Field>>()
  let pos = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      if (pos >= buf.length) throw new Error("protobuf: a varint runs past the end")
      const b = buf[pos++] as number
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return result
      shift += 7n
      if (shift > 63n) throw new Error("protobuf: a varint longer than 10 bytes")
    }
  }
  const fixed = (size: number): bigint => {
    if (pos + size > buf.length) throw new Error("protobuf: a fixed field runs past the end")
    let n = 0n
    for (let i = size - 1; i >= 0; i--) n = (n << 8n) | BigInt(buf[pos + i] as number)
    pos += size
    return n
  }
  while (pos < buf.length) {
    const tag = Number(varint())
    const number = tag >>> 3
    const wire = tag & 7
    if (number === 0) throw new Error("protobuf: field number 0")
    let field: Field
    if (wire === 0) field = { wire, n: varint(), bytes: EMPTY }
    else if (wire === 1) field = { wire, n: fixed(8), bytes: EMPTY }
    else if (wire === 5) field = { wire, n: fixed(4), bytes: EMPTY }
    else if (wire === 2) {
      const length = Number(varint())
      if (pos + length > buf.length) throw new Error(`protobuf: field ${number} is ${length} bytes, past the end`)
      field = { wire, n: 0n, bytes: buf.subarray(pos, pos + length) }
      pos += length
    } else throw new Error(`protobuf: wire type ${wire} (field ${number})`)
    const list = fields.get(number) ?? []
    list.push(field)
    fields.set(number, list)
  }
  return fields
}

const all = (m: Message, number: number, wire: number): ReadonlyArray<Field> => {
  const list = m.get(number) ?? []
  for (const f of list) if (f.wire !== wire) throw new Error(`protobuf: field ${number} has wire type ${f.wire}, not ${wire}`)
  return list
}
const last = (m: Message, number: number, wire: number): Field | undefined => all(m, number, wire).at(-1)
const messages = (m: Message, number: number): ReadonlyArray<Message> => all(m, number, 2).map((f) => parse(f.bytes))
const text = (m: Message, number: number): string | undefined => {
  const f = last(m, number, 2)
  return f === undefined ? undefined : new TextDecoder("utf-8", { fatal: true }).decode(f.bytes)
}
const hex = (m: Message, number: number): string | undefined => {
  const f = last(m, number, 2)
  return f === undefined ? undefined : Buffer.from(f.bytes).toString("hex")
}
const varintOf = (m: Message, number: number): number | undefined => {
  const f = last(m, number, 0)
  return f === undefined ? undefined : Number(f.n)
}

/** An AnyValue in OTLP/JSON's form (an int64 as a decimal string, as OTLP/JSON writes it). */
export const anyValue = (m: Message): Record<string, unknown> => {
  const s = text(m, 1)
  if (s !== undefined) return { stringValue: s }
  const b = last(m, 2, 0)
  if (b !== undefined) return { boolValue: b.n !== 0n }
  const i = last(m, 3, 0)
  if (i !== undefined) return { intValue: BigInt.asIntN(64, i.n).toString() }
  const d = last(m, 4, 1)
  if (d !== undefined) {
    const view = new DataView(new ArrayBuffer(8))
    view.setBigUint64(0, d.n, true)
    return { doubleValue: view.getFloat64(0, true) }
  }
  const array = last(m, 5, 2)
  if (array !== undefined) return { arrayValue: { values: messages(parse(array.bytes), 1).map(anyValue) } }
  const list = last(m, 6, 2)
  if (list !== undefined) return { kvlistValue: { values: messages(parse(list.bytes), 1).map(keyValue) } }
  const bytes = last(m, 7, 2)
  if (bytes !== undefined) return { bytesValue: Buffer.from(bytes.bytes).toString("base64") }
  return {}
}

const keyValue = (m: Message) => ({ key: text(m, 1) ?? "", value: anyValue(messages(m, 2)[0] ?? new Map()) })
const attributes = (m: Message, number: number) => messages(m, number).map(keyValue)
const resource = (m: Message) => {
  const r = messages(m, 1)[0]
  return r === undefined ? undefined : { attributes: attributes(r, 1) }
}

/** An ExportTraceServiceRequest as OTLP/JSON gives it (ids in hex). */
export const readTraces = (body: Uint8Array) => ({
  resourceSpans: messages(parse(body), 1).map((rs) => ({
    resource: resource(rs),
    scopeSpans: messages(rs, 2).map((ss) => ({
      spans: messages(ss, 2).map((s) => {
        const status = messages(s, 15)[0]
        const parent = hex(s, 4)
        return {
          traceId: hex(s, 1) ?? "",
          spanId: hex(s, 2) ?? "",
          ...(parent === undefined ? {} : { parentSpanId: parent }),
          name: text(s, 5) ?? "",
          kind: varintOf(s, 6) ?? 0,
          startTimeUnixNano: (last(s, 7, 1)?.n ?? 0n).toString(),
          endTimeUnixNano: (last(s, 8, 1)?.n ?? 0n).toString(),
          attributes: attributes(s, 9),
          events: messages(s, 11).map((e) => ({ name: text(e, 2) ?? "", attributes: attributes(e, 3) })),
          status: status === undefined ? {} : { code: varintOf(status, 3) ?? 0, ...(text(status, 2) === undefined ? {} : { message: text(status, 2) }) }
        }
      })
    }))
  }))
})

/** An ExportMetricsServiceRequest's metric names, as OTLP/JSON gives them. */
export const readMetrics = (body: Uint8Array) => ({
  resourceMetrics: messages(parse(body), 1).map((rm) => ({
    scopeMetrics: messages(rm, 2).map((sm) => ({ metrics: messages(sm, 2).map((metric) => ({ name: text(metric, 1) ?? "" })) }))
  }))
})

/** An ExportLogsServiceRequest as OTLP/JSON gives it (ids in hex). */
export const readLogs = (body: Uint8Array) => ({
  resourceLogs: messages(parse(body), 1).map((rl) => ({
    scopeLogs: messages(rl, 2).map((sl) => ({
      logRecords: messages(sl, 2).map((r) => {
        const body = messages(r, 5)[0]
        const traceId = hex(r, 9)
        const spanId = hex(r, 10)
        const severityText = text(r, 3)
        return {
          ...(body === undefined ? {} : { body: anyValue(body) }),
          ...(severityText === undefined ? {} : { severityText }),
          ...(traceId === undefined ? {} : { traceId }),
          ...(spanId === undefined ? {} : { spanId }),
          attributes: attributes(r, 6)
        }
      })
    }))
  }))
})
