/**
 * The Bot API's wire format for the fake: request bodies (JSON, urlencoded, multipart/form-data, plus
 * the query string), parameter coercion as Telegram does it (form fields are strings; JSON-valued
 * fields such as reply_markup arrive serialized), and the `{ ok, result | error_code, description }`
 * envelopes.
 */
import type { IncomingMessage, ServerResponse } from "node:http"

/** A failed call, answered as `{"ok":false,"error_code":code,"description":…}` with HTTP status `code`. */
export class ApiError extends Error {
  readonly code: number
  readonly description: string
  readonly parameters: { readonly retry_after: number } | undefined
  constructor(code: number, description: string, parameters?: { readonly retry_after: number }) {
    super(description)
    this.code = code
    this.description = description
    this.parameters = parameters
  }
}

export const badRequest = (what: string): ApiError => new ApiError(400, `Bad Request: ${what}`)

/** A file part of a multipart request. */
export class UploadedFile {
  /** The multipart field name (grammy: a random id referenced as `attach://<id>`). */
  readonly field: string
  readonly filename: string | undefined
  readonly contentType: string | undefined
  readonly bytes: Uint8Array
  constructor(field: string, filename: string | undefined, contentType: string | undefined, bytes: Uint8Array) {
    this.field = field
    this.filename = filename
    this.contentType = contentType
    this.bytes = bytes
  }
}

/** Parameters of one call: JSON values, form strings, or uploaded files. */
export type Params = Readonly<Record<string, unknown>>

const MAX_BODY_BYTES = 60 * 1024 * 1024

export const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((done, fail) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) req.destroy(new Error("request body too large"))
      else chunks.push(chunk)
    })
    req.on("end", () => done(Buffer.concat(chunks)))
    req.on("error", fail)
  })

/** The call's parameters: query string first, then the body (which wins). */
export const parseParams = (contentType: string | undefined, body: Buffer, query: URLSearchParams): Params => {
  const params: Record<string, unknown> = Object.fromEntries(query)
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? ""
  if (body.length === 0) return params
  if (type === "application/json") {
    let parsed: unknown
    try {
      parsed = JSON.parse(body.toString("utf8"))
    } catch {
      throw badRequest("can't parse JSON object")
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw badRequest("JSON object expected")
    return { ...params, ...parsed }
  }
  if (type === "application/x-www-form-urlencoded") {
    return { ...params, ...Object.fromEntries(new URLSearchParams(body.toString("utf8"))) }
  }
  if (type === "multipart/form-data") {
    const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? "")
    const b = boundary?.[1] ?? boundary?.[2]
    if (b === undefined) throw badRequest("can't parse multipart/form-data: no boundary")
    return { ...params, ...fromMultipart(parseMultipart(body, b)) }
  }
  return params
}

interface Part {
  readonly name: string
  readonly filename: string | undefined
  readonly contentType: string | undefined
  readonly data: Buffer
}

/**
 * A hand parser for RFC 7578 bodies. Lenient where senders differ: grammy writes headers without a
 * space after the colon (`content-disposition:form-data;name="x";filename=photo.jpg`) and leaves the
 * filename unquoted; curl and browsers quote it and add spaces.
 */
export const parseMultipart = (body: Buffer, boundary: string): Array<Part> => {
  const invalid = () => badRequest("can't parse multipart/form-data body")
  const first = Buffer.from(`--${boundary}`)
  const separator = Buffer.from(`\r\n--${boundary}`)
  const parts: Array<Part> = []
  let pos = body.indexOf(first)
  if (pos < 0) throw invalid()
  pos += first.length
  for (;;) {
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return parts
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2
    const end = body.indexOf(separator, pos)
    if (end < 0) throw invalid()
    const part = body.subarray(pos, end)
    const headerEnd = part.indexOf("\r\n\r\n")
    if (headerEnd < 0) throw invalid()
    const headers = new Map<string, string>()
    for (const line of part.subarray(0, headerEnd).toString("utf8").split("\r\n")) {
      const colon = line.indexOf(":")
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
    }
    const disposition = headers.get("content-disposition") ?? ""
    const attributes = new Map<string, string>()
    for (const m of disposition.matchAll(/;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g)) {
      attributes.set((m[1] ?? "").toLowerCase(), m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "").trim())
    }
    const name = attributes.get("name")
    if (name === undefined) throw invalid()
    parts.push({ name, filename: attributes.get("filename"), contentType: headers.get("content-type"), data: part.subarray(headerEnd + 4) })
    pos = end + separator.length
  }
}

/** Fields become strings, file parts UploadedFiles; `attach://<name>` values are replaced by that file. */
const fromMultipart = (parts: ReadonlyArray<Part>): Record<string, unknown> => {
  const files = new Map<string, UploadedFile>()
  const fields: Record<string, unknown> = {}
  for (const p of parts) {
    if (p.filename === undefined) fields[p.name] = p.data.toString("utf8")
    else files.set(p.name, new UploadedFile(p.name, p.filename, p.contentType, new Uint8Array(p.data)))
  }
  const attached = new Set<string>()
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value !== "string" || !value.startsWith("attach://")) continue
    const name = value.slice("attach://".length)
    const file = files.get(name)
    if (file === undefined) throw badRequest(`can't find attached file "${name}"`)
    fields[key] = file
    attached.add(name)
  }
  for (const [name, file] of files) if (!attached.has(name) && !(name in fields)) fields[name] = file
  return fields
}

// ------------------------------------------------------------------------------- parameter coercion

export const optString = (params: Params, key: string): string | undefined => {
  const v = params[key]
  if (v === undefined || v === null) return undefined
  if (typeof v === "string") return v
  if (typeof v === "number" || typeof v === "boolean") return String(v)
  throw badRequest(`field "${key}" must be of type String`)
}

export const optInt = (params: Params, key: string): number | undefined => {
  const v = params[key]
  if (v === undefined || v === null || v === "") return undefined
  const n = typeof v === "number" ? v : typeof v === "string" && /^\s*-?\d+\s*$/.test(v) ? Number(v) : Number.NaN
  if (!Number.isSafeInteger(n)) throw badRequest(`field "${key}" must be of type Integer`)
  return n
}

export const optBool = (params: Params, key: string): boolean | undefined => {
  const v = params[key]
  if (v === undefined || v === null || v === "") return undefined
  return v === true || v === "true" || v === "1" || v === 1
}

/** A JSON-valued parameter: an object in a JSON body, a serialized string in a form or query. */
export const optJson = (params: Params, key: string, onInvalid: string): unknown => {
  const v = params[key]
  if (v === undefined || v === null || v === "") return undefined
  if (typeof v !== "string") return v
  try {
    return JSON.parse(v)
  } catch {
    throw badRequest(onInvalid)
  }
}

export const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

// ---------------------------------------------------------------------------------------- envelopes

const writeJson = (res: ServerResponse, status: number, body: unknown): void => {
  if (res.writableEnded || res.destroyed) return
  const data = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data) })
  res.end(data)
}

export const sendResult = (res: ServerResponse, result: unknown): void => writeJson(res, 200, { ok: true, result })

export const sendError = (res: ServerResponse, error: ApiError): void =>
  writeJson(res, error.code, {
    ok: false,
    error_code: error.code,
    description: error.description,
    ...(error.parameters === undefined ? {} : { parameters: error.parameters })
  })

/** What Telegram's nginx front answers when the Bot API server behind it is down: HTML, not JSON. */
export const sendBadGateway = (res: ServerResponse): void => {
  if (res.writableEnded || res.destroyed) return
  const html = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n"
    + "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
  res.writeHead(502, { "content-type": "text/html", "content-length": Buffer.byteLength(html) })
  res.end(html)
}
