/** An MCP server an agent uses (issue 14): how to reach it, and the rules for its name and headers. */
import { Schema } from "effect"

export const TRANSPORTS = ["stdio", "http", "sse"] as const
export type McpTransport = (typeof TRANSPORTS)[number]

export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/
export const isValidName = (name: string): boolean => NAME_PATTERN.test(name)

export interface McpServer {
  readonly agentId: string
  readonly name: string
  readonly transport: McpTransport
  /** stdio: the command and its arguments, run inside the agent's sandbox. */
  readonly command: ReadonlyArray<string> | undefined
  /** http / sse: the server's URL. */
  readonly url: string | undefined
  /** Sent with every request to a remote server. Secrets: stored, never printed. */
  readonly headers: Readonly<Record<string, string>>
  readonly createdAt: number
  readonly updatedAt: number
}

/** What `add` takes: a command (stdio) or a URL (remote). */
export type McpServerInput =
  | { readonly transport: "stdio"; readonly command: ReadonlyArray<string> }
  | { readonly transport: "http" | "sse"; readonly url: string; readonly headers: Readonly<Record<string, string>> }

/** The row's JSON columns, decoded. */
export const CommandJson = Schema.fromJsonString(Schema.Array(Schema.String))
export const HeadersJson = Schema.fromJsonString(Schema.Record(Schema.String, Schema.String))

/** Header values as shown to people and in `--json`: the names only. */
export const maskHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.keys(headers).map((k) => [k, "***"]))

/** `K=V` (or `K: V`) from `--header`, or why not. */
export const parseHeader = (raw: string): { readonly name: string; readonly value: string } | { readonly problem: string } => {
  const m = /^([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*[=:]\s*(.*)$/.exec(raw)
  if (m === null || m[1] === undefined || m[2] === undefined) return { problem: `--header takes NAME=VALUE, not "${raw.split(/[=:]/)[0] ?? ""}…"` }
  if (/[\r\n]/.test(m[2])) return { problem: `--header ${m[1]}: the value has a line break` }
  return { name: m[1], value: m[2] }
}

/** A URL a remote server may have: http or https, or why not. */
export const checkUrl = (raw: string): { readonly url: string } | { readonly problem: string } => {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return { problem: `--url ${raw} is not a URL` }
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return { problem: `--url must be http or https, not ${u.protocol.replace(/:$/, "")}` }
  if (u.username !== "" || u.password !== "") return { problem: "--url must not carry credentials: give them with --header" }
  return { url: u.toString() }
}
