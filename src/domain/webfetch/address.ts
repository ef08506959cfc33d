/**
 * The SSRF guard's rules, pure: which IP addresses and host names webfetch refuses to reach, and why.
 * A chat user is assumed hostile: they will try loopback, the private networks, the cloud metadata
 * address, and every spelling of those that a parser or a tunnel format lets through — IPv4-mapped
 * and -compatible IPv6, NAT64, 6to4, Teredo. Odd IPv4 spellings (`2130706433`, `0x7f.1`, `127.1`,
 * `0177.0.0.1`) are normalised by the WHATWG URL parser before they get here.
 *
 * The checks run on every address a host name resolves to, at connect time (see
 * layers/webfetch/guardedGet.ts), and on every redirect's target.
 */
import { BlockList, isIP } from "node:net"

/** What an agent's `webfetch` plugin configuration may relax. */
export interface FetchPolicy {
  /** Reach loopback, private, link-local, CGNAT… addresses too (never the metadata addresses). */
  readonly allowPrivate: boolean
  /** Host names (lower case) or IP literals that may be reached whatever they resolve to (never metadata). */
  readonly allowHosts: ReadonlyArray<string>
}

export const STRICT: FetchPolicy = { allowPrivate: false, allowHosts: [] }

/** Cloud instance-metadata endpoints: refused even when the policy allows private addresses. */
const METADATA_ADDRESSES = new Set(["169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200"])
const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal", "metadata.azure.com"])

const rules4: ReadonlyArray<readonly [string, number, string]> = [
  ["0.0.0.0", 8, "the unspecified/\"this\" network (0.0.0.0/8)"],
  ["10.0.0.0", 8, "a private address (10.0.0.0/8)"],
  ["100.64.0.0", 10, "a carrier-grade NAT address (100.64.0.0/10)"],
  ["127.0.0.0", 8, "a loopback address (127.0.0.0/8)"],
  ["169.254.0.0", 16, "a link-local address (169.254.0.0/16)"],
  ["172.16.0.0", 12, "a private address (172.16.0.0/12)"],
  ["192.0.0.0", 24, "an IETF protocol address (192.0.0.0/24)"],
  ["192.0.2.0", 24, "a documentation address (192.0.2.0/24)"],
  ["192.88.99.0", 24, "a 6to4 relay address (192.88.99.0/24)"],
  ["192.168.0.0", 16, "a private address (192.168.0.0/16)"],
  ["198.18.0.0", 15, "a benchmarking address (198.18.0.0/15)"],
  ["198.51.100.0", 24, "a documentation address (198.51.100.0/24)"],
  ["203.0.113.0", 24, "a documentation address (203.0.113.0/24)"],
  ["224.0.0.0", 4, "a multicast address (224.0.0.0/4)"],
  ["240.0.0.0", 4, "a reserved or broadcast address (240.0.0.0/4)"]
]

const rules6: ReadonlyArray<readonly [string, number, string]> = [
  ["::", 128, "the unspecified address (::)"],
  ["::1", 128, "the loopback address (::1)"],
  ["100::", 64, "a discard-only address (100::/64)"],
  ["64:ff9b:1::", 48, "a local-use NAT64 address (64:ff9b:1::/48)"],
  ["2001::", 32, "a Teredo tunnel address (2001::/32)"],
  ["2001:db8::", 32, "a documentation address (2001:db8::/32)"],
  ["fc00::", 7, "a unique-local (private) address (fc00::/7)"],
  ["fe80::", 10, "a link-local address (fe80::/10)"],
  ["fec0::", 10, "a site-local address (fec0::/10)"],
  ["ff00::", 8, "a multicast address (ff00::/8)"]
]

const blockList = (rules: ReadonlyArray<readonly [string, number, string]>, family: "ipv4" | "ipv6") =>
  rules.map(([net, prefix, reason]) => {
    const list = new BlockList()
    list.addSubnet(net, prefix, family)
    return { list, reason }
  })
const lists4 = blockList(rules4, "ipv4")
const lists6 = blockList(rules6, "ipv6")

/** The 16 bytes of an IPv6 address (as `isIP` accepts it, without brackets or zone), or undefined. */
export const ipv6Bytes = (ip: string): Uint8Array | undefined => {
  if (isIP(ip) !== 6) return undefined
  let text = ip.toLowerCase()
  const words: Array<number> = []
  // a trailing dotted IPv4 (::ffff:127.0.0.1) is two words
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number)
    text = `${text.slice(0, dotted.index)}${(((a ?? 0) << 8) | (b ?? 0)).toString(16)}:${(((c ?? 0) << 8) | (d ?? 0)).toString(16)}`
  }
  const [head = "", tail] = text.split("::")
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((w) => Number.parseInt(w, 16)))
  const h = parse(head)
  const t = tail === undefined ? [] : parse(tail)
  words.push(...h, ...Array.from({ length: 8 - h.length - t.length }, () => 0), ...t)
  const bytes = new Uint8Array(16)
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8
    bytes[2 * i + 1] = w & 0xff
  })
  return bytes
}

const v4 = (b: Uint8Array, at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`
const allZero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0)

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), with the form's name. */
export const embeddedIpv4 = (ip: string): { readonly ipv4: string; readonly form: string } | undefined => {
  const b = ipv6Bytes(ip)
  if (b === undefined) return undefined
  if (allZero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return { ipv4: v4(b, 12), form: "IPv4-mapped IPv6" }
  if (allZero(b, 0, 12) && !allZero(b, 12, 16) && !(allZero(b, 12, 15) && b[15] === 1)) return { ipv4: v4(b, 12), form: "IPv4-compatible IPv6" }
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && allZero(b, 4, 12)) return { ipv4: v4(b, 12), form: "NAT64 (64:ff9b::/96)" }
  if (b[0] === 0x20 && b[1] === 0x02) return { ipv4: v4(b, 2), form: "6to4 (2002::/16)" }
  return undefined
}

const isMetadata = (ip: string): boolean => {
  if (METADATA_ADDRESSES.has(ip.toLowerCase())) return true
  const inner = embeddedIpv4(ip)
  return inner !== undefined && METADATA_ADDRESSES.has(inner.ipv4)
}

/** Why an address is not a public unicast address, or undefined when it is one. */
export const specialAddress = (ip: string): string | undefined => {
  if (ip.includes("%")) return `a scoped IPv6 address (${ip})`
  const family = isIP(ip)
  if (family === 4) return lists4.find((r) => r.list.check(ip, "ipv4"))?.reason
  if (family !== 6) return `not an IP address (${ip})`
  const inner = embeddedIpv4(ip)
  if (inner !== undefined) {
    const why = specialAddress(inner.ipv4)
    if (why !== undefined) return `${inner.form} form of ${inner.ipv4}, ${why}`
  }
  return lists6.find((r) => r.list.check(ip, "ipv6"))?.reason
}

/** Why the policy refuses to connect to `ip` (reached as `host`), or undefined when it may. */
export const refuseAddress = (ip: string, host: string, policy: FetchPolicy): string | undefined => {
  if (isMetadata(ip)) return `${ip} is a cloud metadata address (never allowed)`
  const why = specialAddress(ip)
  if (why === undefined) return undefined
  if (policy.allowPrivate || policy.allowHosts.includes(host.toLowerCase()) || policy.allowHosts.includes(ip.toLowerCase())) return undefined
  return host === ip ? `${ip} is ${why}` : `${host} resolves to ${ip}, ${why}`
}

/** Host names refused before any lookup (they name the machine itself or a metadata service). */
export const refuseHostName = (host: string, policy: FetchPolicy): string | undefined => {
  const h = host.toLowerCase().replace(/\.$/, "")
  if (METADATA_HOSTS.has(h)) return `${h} is a cloud metadata host (never allowed)`
  if (policy.allowPrivate || policy.allowHosts.includes(h)) return undefined
  if (h === "localhost" || h.endsWith(".localhost")) return `${h} names this machine (loopback)`
  if (h.endsWith(".internal") || h.endsWith(".local") || h.endsWith(".localdomain") || h.endsWith(".home.arpa")) {
    return `${h} is a local or internal name`
  }
  return undefined
}

/** A URL's host as the connection sees it: IPv6 brackets removed. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, "$1")

/**
 * Why a URL may not be fetched before any connection (scheme, credentials, host name, IP literal),
 * or undefined. Host names still need their resolved addresses checked (`refuseAddress`).
 */
export const refuseUrl = (url: URL, policy: FetchPolicy): string | undefined => {
  if (url.protocol !== "http:" && url.protocol !== "https:") return `only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, "")}`
  if (url.username !== "" || url.password !== "") return "URLs with a user name or password are not fetched"
  const host = hostOf(url)
  if (host === "") return "the URL has no host"
  if (isIP(host) !== 0) return refuseAddress(host, host, policy)
  return refuseHostName(host, policy)
}
