/**
 * The frames of Feishu/Lark's long connection (`pbbp2.Frame`, protobuf), as the SDK's WSClient
 * encodes and decodes them, written out by hand for the fake:
 *
 * ```proto
 * message Header { required string key = 1; required string value = 2; }
 * message Frame {
 *   required uint64 SeqID = 1; required uint64 LogID = 2; required int32 service = 3;
 *   required int32 method = 4;            // 0 control (ping/pong), 1 data (event/card)
 *   repeated Header headers = 5;          // type, message_id, sum, seq, trace_id, biz_rt, …
 *   optional string payloadEncoding = 6; optional string payloadType = 7;
 *   optional bytes payload = 8;           // JSON: the event; the ack {"code":200}; the pong's config
 *   optional string LogIDNew = 9;
 * }
 * ```
 */

export interface Frame {
  readonly SeqID: number
  readonly LogID: number
  readonly service: number
  readonly method: number
  readonly headers: ReadonlyArray<{ readonly key: string; readonly value: string }>
  readonly payload?: Uint8Array | undefined
}

export const FRAME_CONTROL = 0
export const FRAME_DATA = 1

const varint = (n: number): Array<number> => {
  const out: Array<number> = []
  let v = BigInt(n)
  if (v < 0n) v = BigInt.asUintN(64, v)
  do {
    let byte = Number(v & 0x7fn)
    v >>= 7n
    if (v > 0n) byte |= 0x80
    out.push(byte)
  } while (v > 0n)
  return out
}

const key = (field: number, wire: number) => varint((field << 3) | wire)

const bytesField = (field: number, bytes: Uint8Array): Array<number> => [...key(field, 2), ...varint(bytes.length), ...bytes]

const stringField = (field: number, s: string) => bytesField(field, new TextEncoder().encode(s))

export const encodeFrame = (f: Frame): Uint8Array => {
  const out: Array<number> = [
    ...key(1, 0), ...varint(f.SeqID),
    ...key(2, 0), ...varint(f.LogID),
    ...key(3, 0), ...varint(f.service),
    ...key(4, 0), ...varint(f.method)
  ]
  for (const h of f.headers) out.push(...bytesField(5, new Uint8Array([...stringField(1, h.key), ...stringField(2, h.value)])))
  if (f.payload !== undefined) out.push(...bytesField(8, f.payload))
  return new Uint8Array(out)
}

class Reader {
  pos = 0
  readonly buf: Uint8Array
  constructor(buf: Uint8Array) {
    this.buf = buf
  }
  done() {
    return this.pos >= this.buf.length
  }
  varint(): bigint {
    let result = 0n
    let shift = 0n
    for (;;) {
      const b = this.buf[this.pos++]
      if (b === undefined) throw new Error("truncated varint")
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return result
      shift += 7n
      if (shift > 63n) throw new Error("varint too long")
    }
  }
  bytes(): Uint8Array {
    const n = Number(this.varint())
    if (this.pos + n > this.buf.length) throw new Error("truncated field")
    const out = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return out
  }
  skip(wire: number) {
    if (wire === 0) this.varint()
    else if (wire === 2) this.bytes()
    else if (wire === 1) this.pos += 8
    else if (wire === 5) this.pos += 4
    else throw new Error(`wire type ${wire}`)
  }
}

const decodeHeader = (buf: Uint8Array): { key: string; value: string } => {
  const r = new Reader(buf)
  let k = ""
  let v = ""
  while (!r.done()) {
    const tag = Number(r.varint())
    const field = tag >> 3
    if (field === 1 && (tag & 7) === 2) k = new TextDecoder().decode(r.bytes())
    else if (field === 2 && (tag & 7) === 2) v = new TextDecoder().decode(r.bytes())
    else r.skip(tag & 7)
  }
  return { key: k, value: v }
}

export const decodeFrame = (buf: Uint8Array): Frame => {
  const r = new Reader(buf)
  let SeqID = 0
  let LogID = 0
  let service = 0
  let method = 0
  const headers: Array<{ key: string; value: string }> = []
  let payload: Uint8Array | undefined
  while (!r.done()) {
    const tag = Number(r.varint())
    const field = tag >> 3
    const wire = tag & 7
    if (wire === 0 && field >= 1 && field <= 4) {
      const v = Number(BigInt.asIntN(64, r.varint()))
      if (field === 1) SeqID = v
      else if (field === 2) LogID = v
      else if (field === 3) service = v
      else method = v
    } else if (wire === 2 && field === 5) headers.push(decodeHeader(r.bytes()))
    else if (wire === 2 && field === 8) payload = new Uint8Array(r.bytes())
    else r.skip(wire)
  }
  return { SeqID, LogID, service, method, headers, payload }
}

export const headerOf = (f: Frame, name: string): string | undefined => f.headers.find((h) => h.key === name)?.value
