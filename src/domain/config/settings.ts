/**
 * Gateway-wide settings (the `settings` table): the keys anna knows, their defaults and how a value
 * is checked. `anna settings list|get|set|unset` reads and writes them; the runtime reads them on
 * every turn, so a change applies to the next turn without a restart.
 */
import { trustedProxiesProblem } from "../admin/clientAddress.ts"

export interface SettingSpec {
  readonly key: string
  readonly description: string
  readonly defaultValue: string
  /** Why `value` cannot be stored, or undefined when it can. */
  readonly problem: (value: string) => string | undefined
}

const wholeNumber = (min: number, max: number) => (value: string): string | undefined => {
  const n = Number(value)
  return value.trim() !== "" && Number.isInteger(n) && n >= min && n <= max ? undefined : `must be a whole number from ${min} to ${max}`
}

export const SETTINGS: ReadonlyArray<SettingSpec> = [
  {
    key: "admin.trusted_proxies",
    description:
      "Reverse proxies in front of the gateway (addresses or CIDRs, comma-separated; empty: none): from them, the login throttle takes the client from X-Forwarded-For (the right-most entry that is not one of them), read at each login",
    defaultValue: "",
    problem: trustedProxiesProblem
  },
  {
    key: "http.fetch_image_urls",
    description:
      "Image URLs in /v1/chat/completions: off (only inline data: URLs; an http(s) one is refused with a 400) or on (anna fetches the image itself behind webfetch's SSRF guard — no loopback, private or metadata address — and passes its bytes on); read at each request",
    defaultValue: "off",
    problem: (v) => (v === "on" || v === "off" ? undefined : "must be on or off")
  },
  {
    key: "http.image_url_hosts",
    description:
      "Hosts (names or IP literals, comma-separated; empty: none) that image URLs may reach even when they are loopback or private, with http.fetch_image_urls on; metadata addresses never",
    defaultValue: "",
    problem: (v) => (v.split(",").every((h) => /^[A-Za-z0-9.:_[\]-]*$/.test(h.trim())) ? undefined : "must be host names or IP addresses separated by commas")
  },
  {
    key: "sandbox.max_per_user",
    description: "Live sandbox containers one user may have at once (one per conversation that ran a command recently)",
    defaultValue: "3",
    problem: wholeNumber(1, 1000)
  },
  {
    key: "sandbox.max_total",
    description: "Live sandbox containers on this gateway at once",
    defaultValue: "16",
    problem: wholeNumber(1, 10_000)
  },
  {
    key: "sandbox.disk_bound",
    description:
      "How a workspace's disk quota is held: filesystem (a filesystem of the quota's size per workspace, a hard bound; needs anna to run as root, fails closed otherwise), quota (a soft check after every command), auto (filesystem where anna can mount, else quota)",
    defaultValue: "auto",
    problem: (v) => (v === "auto" || v === "filesystem" || v === "quota" ? undefined : "must be auto, filesystem or quota")
  },
  {
    key: "scheduler.catch_up",
    description: "Scheduled jobs missed while the gateway was down: run once at start (run) or skip them (skip); a job's own --catch-up wins",
    defaultValue: "run",
    problem: (v) => (v === "run" || v === "skip" ? undefined : "must be run or skip")
  },
  {
    key: "scheduler.heartbeat_interval",
    description: "How often agents read HEARTBEAT.md in their workspaces and act on it (a duration such as 30m; off disables)",
    defaultValue: "30m",
    problem: (v) => (v === "off" || /^(\d+[smhd])+$/.test(v) && !/^(0+[smhd])+$/.test(v) ? undefined : "must be a duration such as 30m or 1h, or off")
  }
]

export const settingSpec = (key: string): SettingSpec | undefined => SETTINGS.find((s) => s.key === key)

export const unknownSetting = (key: string): string => `unknown setting "${key}"; settings are ${SETTINGS.map((s) => s.key).join(", ")}`

/** A stored value, or the default when none is stored or the stored one no longer passes its check. */
export const settingValue = (key: string, stored: string | undefined): string => {
  const spec = settingSpec(key)
  if (spec === undefined) return stored ?? ""
  return stored !== undefined && spec.problem(stored) === undefined ? stored : spec.defaultValue
}
