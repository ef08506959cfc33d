/**
 * Channels as configuration: which ids exist, how `KEY=VALUE` settings become a channel's config
 * (checked per channel: the HTTP channel takes `host` and `port`), and which values are secrets that
 * are never printed in full.
 */
import { maskKey, maskUrl } from "../model/types.ts"

/** Channels the gateway can run (the terminal chat is a command, not a channel). */
export const CHANNEL_IDS = ["http", "telegram", "qq", "feishu", "wechat"] as const

export const isChannelId = (id: string): boolean => (CHANNEL_IDS as ReadonlyArray<string>).includes(id)

export const unknownChannel = (id: string): string => `unknown channel "${id}"; channels are ${CHANNEL_IDS.join(", ")}`

const HTTP_KEYS = ["host", "port"]

/**
 * `pairs` merged onto the stored config, or the reason they are refused. For the HTTP channel,
 * `port` becomes a number (0 = any free port); for the others values stay strings and an empty
 * value removes the key.
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
      if (key === "port") {
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
