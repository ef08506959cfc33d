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
 * The request timeout covers receiving the request only, never the (streamed) answer. The cap per
 * client address is below the total, so one client holding slow connections cannot lock the others
 * out (behind a reverse proxy every connection is the proxy's: raise it there).
 */
export const HTTP_LIMIT_DEFAULTS = {
  request_timeout_seconds: 60,
  headers_timeout_seconds: 10,
  max_connections: 512,
  max_connections_per_address: 64
} as const

export const HTTP_DEFAULT_HOST = "127.0.0.1"
export const HTTP_DEFAULT_PORT = 8787

/** The `http` channel's settings (all optional: defaults fill the rest, see `httpOptions`). */
export const HttpSettings = Schema.Struct({
  host: Schema.optionalKey(TextSetting("127.0.0.1, or 0.0.0.0 for every interface")),
  port: Schema.optionalKey(WholeNumberSetting(0, 65535, "0 = any free port")),
  request_timeout_seconds: Schema.optionalKey(WholeNumberSetting(1, 3_600, "seconds to receive a whole request")),
  headers_timeout_seconds: Schema.optionalKey(WholeNumberSetting(1, 3_600, "seconds to receive a request's headers")),
  max_connections: Schema.optionalKey(WholeNumberSetting(1, 100_000, "open connections at once")),
  max_connections_per_address: Schema.optionalKey(WholeNumberSetting(1, 100_000, "open connections at once from one client address"))
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
  readonly maxConnectionsPerAddress: number
}

/** The defaults fill what the settings leave out (the default headers timeout is cut to a shorter request timeout). */
export function httpOptions(s: HttpSettings): HttpOptions {
  const requestTimeoutSeconds = s.request_timeout_seconds ?? HTTP_LIMIT_DEFAULTS.request_timeout_seconds
  return {
    host: s.host ?? HTTP_DEFAULT_HOST,
    port: s.port ?? HTTP_DEFAULT_PORT,
    requestTimeoutSeconds,
    headersTimeoutSeconds: s.headers_timeout_seconds ?? Math.min(HTTP_LIMIT_DEFAULTS.headers_timeout_seconds, requestTimeoutSeconds),
    maxConnections: s.max_connections ?? HTTP_LIMIT_DEFAULTS.max_connections,
    maxConnectionsPerAddress: s.max_connections_per_address ?? HTTP_LIMIT_DEFAULTS.max_connections_per_address
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
  allowed_users: Schema.optionalKey(IdListSetting),
  /** Set: webhook mode (Telegram POSTs updates to this public https URL); unset: long polling. */
  webhook_url: Schema.optionalKey(BaseUrlSetting("https://bot.example.org/telegram")),
  /** Telegram sends it in X-Telegram-Bot-Api-Secret-Token; default: derived from the token. */
  webhook_secret: Schema.optionalKey(Schema.String.check(Schema.makeFilter((s: string) =>
    /^[A-Za-z0-9_-]{1,256}$/.test(s.trim()) || "must be 1 to 256 letters, digits, _ or - (Telegram's rule)"
  ))),
  webhook_host: Schema.optionalKey(TextSetting("127.0.0.1 behind a reverse proxy, or 0.0.0.0")),
  webhook_port: Schema.optionalKey(WholeNumberSetting(0, 65535, "the local port the webhook listens on"))
})
export type TelegramSettings = typeof TelegramSettings.Type

export const FEISHU_DEFAULT_BASE_URL = "https://open.feishu.cn"
export const LARK_BASE_URL = "https://open.larksuite.com"

/** Feishu/Lark open_ids (`ou_…`), comma-separated. */
const FeishuOpenIdListSetting = Schema.String.check(Schema.makeFilter((s: string) =>
  s.split(",").every((id) => /^ou_[A-Za-z0-9_-]+$/.test(id.trim())) || "must be Feishu/Lark open_ids separated by commas (e.g. ou_7d8a6e6df7621556ce0d21922b676706)"
))

/**
 * The `feishu` channel's settings (its channel: src/layers/channels/FeishuChannel.ts): the app's
 * credentials from the developer console; `base_url` the open-platform domain (`feishu` and `lark`
 * are shortcuts for the two official ones); `mode` websocket (default, no public URL) or webhook
 * (event callbacks POSTed to `webhook_path` on a listener of its own, `webhook_host:webhook_port`).
 */
export const FeishuSettings = Schema.Struct({
  app_id: Schema.String.check(Schema.makeFilter((s: string) =>
    /^cli_[0-9a-f]{16}$/i.test(s.trim()) || "must be the app's App ID from the developer console (cli_ and 16 hex digits)"
  )),
  app_secret: TextSetting("the App Secret from the developer console"),
  base_url: Schema.optionalKey(Schema.String.check(Schema.makeFilter((s: string) =>
    /^(feishu|lark)$/i.test(s.trim()) || /^https?:\/\/[^\s/]+(\/\S*)?$/i.test(s.trim()) ||
    `must be feishu, lark or an http(s) URL (e.g. ${FEISHU_DEFAULT_BASE_URL} or ${LARK_BASE_URL})`
  ))),
  mode: Schema.optionalKey(Schema.Literals(["websocket", "webhook"]).annotate({ message: "must be websocket or webhook" })),
  verification_token: Schema.optionalKey(TextSetting("the Verification Token under Events and Callbacks → Encryption Strategy")),
  encrypt_key: Schema.optionalKey(TextSetting("the Encrypt Key under Events and Callbacks → Encryption Strategy")),
  webhook_path: Schema.optionalKey(Schema.String.check(Schema.makeFilter((s: string) =>
    /^\/[A-Za-z0-9._~/-]*$/.test(s.trim()) || "must be a URL path starting with / (e.g. /feishu/events)"
  ))),
  webhook_host: Schema.optionalKey(TextSetting("127.0.0.1, or 0.0.0.0 for every interface")),
  webhook_port: Schema.optionalKey(WholeNumberSetting(0, 65535, "0 = any free port")),
  group_mode: Schema.optionalKey(GroupModeSetting),
  allowed_users: Schema.optionalKey(FeishuOpenIdListSetting)
})
export type FeishuSettings = typeof FeishuSettings.Type

export const QQ_DEFAULT_BASE_URL = "https://api.sgroup.qq.com"
export const QQ_DEFAULT_TOKEN_URL = "https://bots.qq.com/app/getAppAccessToken"

/** QQ openids (user_openid / member_openid), comma-separated. */
const QqOpenIdListSetting = Schema.String.check(Schema.makeFilter((s: string) =>
  s.split(",").every((id) => /^[A-Za-z0-9_-]{1,128}$/.test(id.trim())) ||
  "must be QQ openids (user_openid or member_openid: letters and digits) separated by commas"
))

/**
 * QQ channel settings (issue 12; its channel: src/layers/channels/QqChannel.ts): the bot's AppID and
 * AppSecret from q.qq.com; the API and token hosts; group mode and an allow-list of openids.
 */
export const QqSettings = Schema.Struct({
  app_id: Schema.String.check(Schema.makeFilter((s: string) =>
    /^\d{4,20}$/.test(s.trim()) || "must be the bot's AppID from q.qq.com (digits)"
  )),
  app_secret: Schema.String.check(Schema.makeFilter((s: string) =>
    /^\S{8,256}$/.test(s.trim()) || "must be the bot's AppSecret from q.qq.com (8 or more characters, no spaces)"
  )),
  base_url: Schema.optionalKey(BaseUrlSetting(QQ_DEFAULT_BASE_URL)),
  token_url: Schema.optionalKey(BaseUrlSetting(QQ_DEFAULT_TOKEN_URL)),
  group_mode: Schema.optionalKey(GroupModeSetting),
  allowed_users: Schema.optionalKey(QqOpenIdListSetting)
})
export type QqSettings = typeof QqSettings.Type

export const WECHAT_DEFAULT_BASE_URL = "https://ilinkai.weixin.qq.com"
export const WECHAT_DEFAULT_CDN_BASE_URL = "https://novac2c.cdn.weixin.qq.com/c2c"

/** WeChat ids (e.g. `o9cq8…@im.wechat`), comma-separated: no spaces, commas or control characters inside one. */
const WechatIdListSetting = Schema.String.check(Schema.makeFilter((s: string) =>
  s.split(",").every((id) => /^[^\s,\p{Cc}]{1,128}$/u.test(id.trim())) || "must be WeChat user ids separated by commas (e.g. o9cq80abc@im.wechat,o9cq80def@im.wechat)"
))

/**
 * WeChat channel settings (issue 12; its channel: src/layers/channels/WechatChannel.ts): the iLink
 * bot token and ids that `anna channel login wechat` saves after the QR scan; the rest optional.
 * DMs only (iLink bots are not in groups), so there is no group_mode.
 */
export const WechatSettings = Schema.Struct({
  token: Schema.optionalKey(TextSetting("saved by anna channel login wechat")),
  base_url: Schema.optionalKey(BaseUrlSetting(WECHAT_DEFAULT_BASE_URL)),
  cdn_base_url: Schema.optionalKey(BaseUrlSetting(WECHAT_DEFAULT_CDN_BASE_URL)),
  bot_id: Schema.optionalKey(TextSetting("the ilink_bot_id the login returned")),
  owner_id: Schema.optionalKey(TextSetting("the WeChat user id that scanned the login QR code")),
  allowed_users: Schema.optionalKey(WechatIdListSetting)
})
export type WechatSettings = typeof WechatSettings.Type

/** Each channel's settings Schema. */
const SETTINGS = {
  http: HttpSettings,
  telegram: TelegramSettings,
  feishu: FeishuSettings,
  qq: QqSettings,
  wechat: WechatSettings
} as const satisfies Record<ChannelId, unknown>

/** The Schema of a channel's stored settings. */
export const channelSettingsSchema = (id: ChannelId): Schema.Codec<unknown, Readonly<Record<string, unknown>>> =>
  SETTINGS[id] as unknown as Schema.Codec<unknown, Readonly<Record<string, unknown>>>

/** The keys a channel's Schema knows, or undefined when it takes any key. */
export const knownKeys = (id: ChannelId): ReadonlyArray<string> | undefined => {
  const schema: unknown = SETTINGS[id]
  return (typeof schema === "object" || typeof schema === "function") && schema !== null && "fields" in schema &&
      typeof schema.fields === "object" && schema.fields !== null
    ? Object.keys(schema.fields)
    : undefined
}

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
      typeof v !== "string" ? v : URL_LIKE.test(v) ? maskUrl(v) : SECRET.test(k) ? maskKey(v) : v
    ])
  )
