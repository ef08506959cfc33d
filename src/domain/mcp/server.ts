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

/** An HTTP header's name (RFC 9110 token). */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/

export interface Header {
  readonly name: string
  readonly value: string
}

/** `K=V` (or `K: V`) from `--header`, or why not. */
export const parseHeader = (raw: string): Header | { readonly problem: string } => {
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

/** A new server as given (`anna mcp add`'s flags, the admin API's body): a remote one has a URL, a stdio one a command. */
export interface ServerParts {
  readonly name: string
  readonly url?: string | undefined
  readonly transport?: "http" | "sse" | undefined
  readonly headers: ReadonlyArray<Header>
  readonly command: ReadonlyArray<string>
}

/** What `McpServers.add` takes, or what is wrong with the parts (one line, in the CLI's words). */
export const checkServer = (parts: ServerParts): { readonly input: McpServerInput } | { readonly problem: string } => {
  if (!isValidName(parts.name)) return { problem: `"${parts.name}" is not a server name: a-z, 0-9, '_' and '-', starting with a letter or digit, at most 32` }
  const hasUrl = parts.url !== undefined
  if (hasUrl === (parts.command.length > 0)) return { problem: "give either --url URL (a remote server) or -- COMMAND… (a stdio server), not both, not neither" }
  if (parts.url === undefined) {
    if (parts.headers.length > 0 || parts.transport !== undefined) return { problem: "--header and --transport are for remote servers (--url)" }
    return { input: { transport: "stdio", command: parts.command } }
  }
  const checked = checkUrl(parts.url)
  if ("problem" in checked) return checked
  const headers: Record<string, string> = {}
  for (const h of parts.headers) {
    if (!HEADER_NAME.test(h.name)) return { problem: `--header "${h.name}" is not a header name` }
    if (/[\r\n]/.test(h.value)) return { problem: `--header ${h.name}: the value has a line break` }
    headers[h.name] = h.value
  }
  return { input: { transport: parts.transport ?? "http", url: checked.url, headers } }
}
