/**
 * Channels as configuration: which ids exist, each channel's settings as a Schema (what a stored
 * config must look like, with the defaults filled in), how `KEY=VALUE` pairs from the CLI become a
 * stored config (checked by that Schema, the error naming the key), and which values are secrets
 * that are never printed in full.
 *
 * Settings arrive from the CLI as strings and are stored as JSON: a setting's Schema accepts both
 * (`"9000"` and `9000` are the same port) and the stored form is the Schema's encoding, so what the
 * CLI stores and what the gateway decodes never disagree.
 */
import { Result, Schema, SchemaGetter } from "effect"
import { maskKey, maskUrl } from "../model/types.ts"

/** Channels the gateway can run (the terminal chat is a command, not a gateway channel). */
export const CHANNEL_IDS = ["http", "telegram", "qq", "feishu", "wechat"] as const

export type ChannelId = (typeof CHANNEL_IDS)[number]

export const isChannelId = (id: string): id is ChannelId => (CHANNEL_IDS as ReadonlyArray<string>).includes(id)

export const unknownChannel = (id: string): string => `unknown channel "${id}"; channels are ${CHANNEL_IDS.join(", ")}`

/** A whole number from `min` to `max`, given as a number or as its decimal text. */
export const WholeNumberSetting = (min: number, max: number, what: string) =>
  Schema.Union([Schema.Number, Schema.String]).pipe(
    Schema.check(Schema.makeFilter((v: number | string) => {
      const n = toNumber(v)
      return (Number.isInteger(n) && n >= min && n <= max) || `must be a whole number from ${min} to ${max} (${what}), got ${JSON.stringify(v)}`
    })),
    Schema.decodeTo(Schema.Number, {
      decode: SchemaGetter.transform(toNumber),
      encode: SchemaGetter.transform((n: number) => n)
    })
  )

const toNumber = (v: number | string): number => (typeof v === "number" ? v : v.trim() === "" ? Number.NaN : Number(v))

/** A non-empty text setting. */
export const TextSetting = (example: string) =>
  Schema.String.check(Schema.makeFilter((s: string) => s.trim() !== "", { message: `must not be empty (e.g. ${example})` }))

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

export const HTTP_DEFAULT_HOST = "127.0.0.1"
export const HTTP_DEFAULT_PORT = 8787

/** The `http` channel's settings (all optional: defaults fill the rest, see `httpOptions`). */
export const HttpSettings = Schema.Struct({
  host: Schema.optionalKey(TextSetting("127.0.0.1, or 0.0.0.0 for every interface")),
  port: Schema.optionalKey(WholeNumberSetting(0, 65535, "0 = any free port")),
  request_timeout_seconds: Schema.optionalKey(WholeNumberSetting(1, 3_600, "seconds to receive a whole request")),
  headers_timeout_seconds: Schema.optionalKey(WholeNumberSetting(1, 3_600, "seconds to receive a request's headers")),
  max_connections: Schema.optionalKey(WholeNumberSetting(1, 100_000, "open connections at once"))
}).pipe(
  // Node refuses a headers timeout longer than the whole request's (only one set explicitly can be).
  Schema.check(Schema.makeFilter((s) => {
    const o = httpOptions(s)
    return o.headersTimeoutSeconds <= o.requestTimeoutSeconds ||
      `headers_timeout_seconds (${o.headersTimeoutSeconds}) must not exceed request_timeout_seconds (${o.requestTimeoutSeconds})`
  }))
)
export type HttpSettings = typeof HttpSettings.Type

/** What the HTTP server is started with: the settings with the defaults filled in. */
export interface HttpOptions {
  readonly host: string
  readonly port: number
  readonly requestTimeoutSeconds: number
  readonly headersTimeoutSeconds: number
  readonly maxConnections: number
}

/** The defaults fill what the settings leave out (the default headers timeout is cut to a shorter request timeout). */
export function httpOptions(s: HttpSettings): HttpOptions {
  const requestTimeoutSeconds = s.request_timeout_seconds ?? HTTP_LIMIT_DEFAULTS.request_timeout_seconds
  return {
    host: s.host ?? HTTP_DEFAULT_HOST,
    port: s.port ?? HTTP_DEFAULT_PORT,
    requestTimeoutSeconds,
    headersTimeoutSeconds: s.headers_timeout_seconds ?? Math.min(HTTP_LIMIT_DEFAULTS.headers_timeout_seconds, requestTimeoutSeconds),
    maxConnections: s.max_connections ?? HTTP_LIMIT_DEFAULTS.max_connections
  }
}

/** Who in a group the bot answers: `mention` (an @mention of it, a reply to it, a command), `always`, `off`. */
export const GROUP_MODES = ["mention", "always", "off"] as const
export type GroupMode = (typeof GROUP_MODES)[number]

const GroupModeSetting = Schema.Literals(GROUP_MODES).annotate({
  message: `must be one of ${GROUP_MODES.join(", ")} (mention: when @mentioned or replied to)`
})

/** An http(s) URL without a trailing slash (a platform's API root). */
const BaseUrlSetting = (example: string) =>
  Schema.String.check(Schema.makeFilter((s: string) => /^https?:\/\/[^\s/]+(\/\S*)?$/i.test(s.trim()) || `must be an http(s) URL (e.g. ${example})`))

/** Platform user ids, comma-separated (digits, as Telegram numbers them). */
const IdListSetting = Schema.String.check(Schema.makeFilter((s: string) =>
  s.split(",").every((id) => /^-?\d+$/.test(id.trim())) || "must be user ids separated by commas (e.g. 12345,67890)"
))

export const TELEGRAM_DEFAULT_BASE_URL = "https://api.telegram.org"

/** The `telegram` channel's settings: the bot token from @BotFather; the rest optional. */
export const TelegramSettings = Schema.Struct({
  token: Schema.String.check(Schema.makeFilter((s: string) =>
    /^\d+:[A-Za-z0-9_-]{20,}$/.test(s.trim()) || "must be the bot token @BotFather gave (digits, a colon, then 20 or more letters, digits, _ or -)"
  )),
  base_url: Schema.optionalKey(BaseUrlSetting(TELEGRAM_DEFAULT_BASE_URL)),
  group_mode: Schema.optionalKey(GroupModeSetting),
  allowed_users: Schema.optionalKey(IdListSetting)
})
export type TelegramSettings = typeof TelegramSettings.Type

/**
 * Settings of the platforms this version cannot run yet (QQ, Feishu/Lark, WeChat): any
 * text keys, stored as given, so an operator can prepare them; their channels will bring their own
 * Schemas.
 */
export const PendingPlatformSettings = Schema.Record(Schema.String, Schema.String)

/** The Schema of a channel's stored settings. */
export const channelSettingsSchema = (id: ChannelId): Schema.Codec<unknown, Readonly<Record<string, unknown>>> =>
  (id === "http" ? HttpSettings : id === "telegram" ? TelegramSettings : PendingPlatformSettings) as unknown as Schema.Codec<
    unknown,
    Readonly<Record<string, unknown>>
  >

/** The keys a channel's Schema knows, or undefined when it takes any key. */
const knownKeys = (id: ChannelId): ReadonlyArray<string> | undefined =>
  id === "http" ? Object.keys(HttpSettings.fields) : id === "telegram" ? Object.keys(TelegramSettings.fields) : undefined

/** "Expected …\n  at ["port"]" → `port: …` (the first problem, in the user's terms). */
export const settingsProblem = (id: string, error: Schema.SchemaError): string => {
  const lines = error.message.split("\n")
  const at = lines.find((l) => l.trim().startsWith("at "))
  const key = at === undefined ? undefined : /\["([^"]+)"\]/.exec(at)?.[1]
  const what = (lines[0] ?? "invalid").trim()
  return `channel ${id}: ${key === undefined ? "" : `${key} `}${what}`
}

/** A stored config decoded by its channel's Schema, or what is wrong with it (naming the key). */
export const decodeChannelSettings = <A = unknown>(id: ChannelId, config: Readonly<Record<string, unknown>>): Result.Result<A, string> => {
  const keys = knownKeys(id)
  const unknown = keys === undefined ? [] : Object.keys(config).filter((k) => !keys.includes(k))
  const first = unknown[0]
  if (first !== undefined) return Result.fail(`the ${id} channel takes ${(keys ?? []).join(", ")}, not "${first}"`)
  const decoded = Schema.decodeUnknownResult(channelSettingsSchema(id))(config)
  return decoded._tag === "Failure" ? Result.fail(settingsProblem(id, decoded.failure)) : Result.succeed(decoded.success as A)
}

/**
 * `pairs` merged onto the stored config and checked by the channel's Schema, or the reason they are
 * refused. An empty value removes the key (its default applies again). The result is the Schema's
 * encoding, so numbers given as text are stored as numbers.
 */
export const mergeChannelConfig = (
  id: ChannelId,
  current: Readonly<Record<string, unknown>>,
  pairs: Readonly<Record<string, string>>
): { readonly config: Record<string, unknown> } | { readonly problem: string } => {
  const merged: Record<string, unknown> = { ...current }
  for (const [rawKey, rawValue] of Object.entries(pairs)) {
    const key = rawKey.trim()
    const value = rawValue.trim()
    if (key === "") return { problem: "--config takes KEY=VALUE with a non-empty KEY" }
    if (value === "") delete merged[key]
    else merged[key] = value
  }
  const decoded = decodeChannelSettings(id, merged)
  if (decoded._tag === "Failure") return { problem: decoded.failure }
  const encoded = Schema.encodeUnknownResult(channelSettingsSchema(id))(decoded.success)
  return encoded._tag === "Failure" ? { problem: settingsProblem(id, encoded.failure) } : { config: { ...encoded.success } }
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
