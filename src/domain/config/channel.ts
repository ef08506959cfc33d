/**
 * Channels as configuration: which ids exist, how `KEY=VALUE` settings become a channel's config
 * (checked per channel: the HTTP channel takes `host`, `port`, `request_timeout_seconds`,
 * `headers_timeout_seconds` and `max_connections`), and which values are secrets that
 * are never printed in full.
 */
import { maskKey, maskUrl } from "../model/types.ts"

/** Channels the gateway can run (the terminal chat is a command, not a channel). */
export const CHANNEL_IDS = ["http", "telegram", "qq", "feishu", "wechat"] as const

export const isChannelId = (id: string): boolean => (CHANNEL_IDS as ReadonlyArray<string>).includes(id)

export const unknownChannel = (id: string): string => `unknown channel "${id}"; channels are ${CHANNEL_IDS.join(", ")}`

const HTTP_KEYS = ["host", "port", "request_timeout_seconds", "headers_timeout_seconds", "max_connections"]

/**
 * The HTTP server's limits. Node's own defaults (300 s for a whole request, 60 s for its headers, no
 * connection cap) let a client that stops sending hold a connection for minutes; these are tighter.
 * The request timeout covers receiving the request only, never the (streamed) answer.
 */
export const HTTP_LIMIT_DEFAULTS = {
  request_timeout_seconds: 60,
  headers_timeout_seconds: 20,
  max_connections: 512
} as const

type LimitKey = keyof typeof HTTP_LIMIT_DEFAULTS

const LIMIT_RANGES: Readonly<Record<LimitKey, readonly [number, number, string]>> = {
  request_timeout_seconds: [1, 3_600, "seconds to receive a whole request"],
  headers_timeout_seconds: [1, 3_600, "seconds to receive a request's headers"],
  max_connections: [1, 100_000, "open connections at once"]
}

const isLimitKey = (key: string): key is LimitKey => Object.hasOwn(HTTP_LIMIT_DEFAULTS, key)

/**
 * The limits a stored http channel config asks for, defaults filling what it leaves out (the default
 * headers timeout is cut to a shorter request timeout: Node refuses a longer one).
 */
export const httpLimits = (config: Readonly<Record<string, unknown>>): {
  readonly requestTimeoutSeconds: number
  readonly headersTimeoutSeconds: number
  readonly maxConnections: number
} => {
  const stored = (key: LimitKey): number | undefined => {
    const v = config[key]
    return typeof v === "number" && Number.isInteger(v) && v >= LIMIT_RANGES[key][0] ? v : undefined
  }
  const requestTimeoutSeconds = stored("request_timeout_seconds") ?? HTTP_LIMIT_DEFAULTS.request_timeout_seconds
  return {
    requestTimeoutSeconds,
    headersTimeoutSeconds: stored("headers_timeout_seconds") ?? Math.min(HTTP_LIMIT_DEFAULTS.headers_timeout_seconds, requestTimeoutSeconds),
    maxConnections: stored("max_connections") ?? HTTP_LIMIT_DEFAULTS.max_connections
  }
}

/**
 * `pairs` merged onto the stored config, or the reason they are refused. For the HTTP channel,
 * `port` and the limits become numbers (0 = any free port; an empty limit goes back to its default);
 * for the others values stay strings and an empty value removes the key.
 */
export const mergeChannelConfig = (
  id: string,
  current: Readonly<Record<string, unknown>>,
  pairs: Readonly<Record<string, string>>
): { readonly config: Record<string, unknown> } | { readonly problem: string } => {
  const config: Record<string, unknown> = { ...current }
  for (const [rawKey, rawValue] of Object.entries(pairs)) {
    const key = rawKey.trim()
    const value = rawValue.trim()
    if (key === "") return { problem: "--config takes KEY=VALUE with a non-empty KEY" }
    if (id === "http") {
      if (!HTTP_KEYS.includes(key)) return { problem: `the http channel takes ${HTTP_KEYS.join(", ")}, not "${key}"` }
      if (isLimitKey(key) && value === "") {
        delete config[key] // back to the default
      } else if (isLimitKey(key)) {
        const [min, max, what] = LIMIT_RANGES[key]
        const n = Number(value)
        if (!Number.isInteger(n) || n < min || n > max) {
          return { problem: `${key} must be a whole number from ${min} to ${max} (${what}), got "${value}"` }
        }
        config[key] = n
      } else if (key === "port") {
        const port = Number(value)
        if (value === "" || !Number.isInteger(port) || port < 0 || port > 65535) {
          return { problem: `port must be a whole number from 0 to 65535 (0 = any free port), got "${value}"` }
        }
        config.port = port
      } else {
        if (value === "") return { problem: "host must not be empty (e.g. 127.0.0.1, or 0.0.0.0 for every interface)" }
        config.host = value
      }
    } else if (value === "") {
      delete config[key]
    } else {
      config[key] = value
    }
  }
  if (id === "http") {
    const limits = httpLimits(config)
    // Node refuses a headers timeout longer than the whole request's (only one set explicitly can be).
    if (limits.headersTimeoutSeconds > limits.requestTimeoutSeconds) {
      return {
        problem: `headers_timeout_seconds (${limits.headersTimeoutSeconds}) must not exceed request_timeout_seconds (${limits.requestTimeoutSeconds})`
      }
    }
  }
  return { config }
}

const SECRET = /token|secret|password|key/i

/** A value that is a URL: its user info and query can hold credentials whatever the key is called. */
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i

/**
 * The config with secret-looking values masked (`abc…wxyz`) and URLs' credentials hidden
 * (`https://user:***@host/?token=***`), for text and JSON output alike.
 */
export const shownConfig = (config: Readonly<Record<string, unknown>>): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(config).map(([k, v]) => [
      k,
      typeof v !== "string" ? v : SECRET.test(k) ? maskKey(v) : URL_LIKE.test(v) ? maskUrl(v) : v
    ])
  )
