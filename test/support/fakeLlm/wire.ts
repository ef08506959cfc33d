/** Shared pieces of the fake LLM server's protocol modules. */
import type { ServerResponse } from "node:http"
import type { RecordedRequest, Scripted } from "./script.ts"

export interface Protocol {
  readonly name: "anthropic" | "openai" | "openai-response"
  /** Whether this protocol serves the POST path. */
  readonly handles: (path: string) => boolean
  /** Answers one POST with a scripted answer (never "hang": the server handles that). */
  readonly respond: (request: RecordedRequest, scripted: Scripted, res: ServerResponse) => void
  /** Answers GET /v1/models in this protocol's format. */
  readonly listModels: (models: ReadonlyArray<string>, res: ServerResponse) => void
}

export const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers })
  res.end(text)
}

/** Starts an SSE response. */
export const sse = (res: ServerResponse) =>
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })

/** Splits text into chunks of at most `size` characters (never splitting a surrogate pair). */
export const chunks = (text: string, size: number): Array<string> => {
  const chars = [...text]
  const out: Array<string> = []
  for (let i = 0; i < chars.length; i += Math.max(1, size)) out.push(chars.slice(i, i + Math.max(1, size)).join(""))
  return out.length === 0 ? [""] : out
}

/** Rough token count for default usage figures. */
export const roughTokens = (value: unknown): number => Math.ceil(JSON.stringify(value ?? "").length / 4)
