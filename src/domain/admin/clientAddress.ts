/**
 * Who is logging in, as the login throttle counts them (issue 23), pure.
 *
 * - The client is the socket's peer, unless the peer is a trusted proxy (the `admin.trusted_proxies`
 *   setting: addresses and CIDRs). Then `X-Forwarded-For` is read from the right: each proxy appends
 *   the address it was reached from, so the right-most entry that is not itself a trusted proxy is
 *   the last address no one we trust could have made up. Entries to its left are the client's own
 *   words and never count. A peer outside the list is the client whatever it forwards.
 * - The throttle's key for an address: IPv4 as is (an IPv4-mapped IPv6 peer is its IPv4), IPv6 by
 *   its /64 — one machine is usually handed a whole /64, so a key per address would let it take a
 *   fresh one for every guess.
 */
import { BlockList, isIP } from "node:net"
import { ipv6Bytes } from "../webfetch/address.ts"

/** The parsed `admin.trusted_proxies` setting. */
export interface TrustedProxies {
  readonly check: (address: string) => boolean
}

const NONE: TrustedProxies = { check: () => false }

/** An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) as its IPv4; IPv6 lower-cased; anything else as given. */
export const plainAddress = (address: string): string => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped?.[1] !== undefined && isIP(mapped[1]) === 4) return mapped[1]
  return isIP(address) === 6 ? address.toLowerCase() : address
}

const entriesOf = (value: string): ReadonlyArray<string> => value.split(/[\s,]+/).filter((e) => e !== "")

/** Why `value` is not a list of addresses and CIDRs (comma- or space-separated), or undefined. */
export const trustedProxiesProblem = (value: string): string | undefined => {
  for (const entry of entriesOf(value)) {
    const [address = "", prefix, ...rest] = entry.split("/")
    const family = isIP(plainAddress(address))
    const max = family === 4 ? 32 : 128
    if (family === 0 || rest.length > 0 || (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= max))) {
      return `must be IP addresses or CIDRs, comma-separated (e.g. 10.0.0.5, 10.0.0.0/8, fd00::/8); "${entry}" is neither`
    }
  }
  return undefined
}

/** The setting as a matcher; entries it cannot read are skipped (the setting's check refuses them when set). */
export const parseTrustedProxies = (value: string): TrustedProxies => {
  const entries = entriesOf(value)
  if (entries.length === 0) return NONE
  const list = new BlockList()
  for (const entry of entries) {
    if (trustedProxiesProblem(entry) !== undefined) continue
    const [raw = "", prefix] = entry.split("/")
    const address = plainAddress(raw)
    const family = isIP(address) === 4 ? "ipv4" : "ipv6"
    if (prefix === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(prefix), family)
  }
  return {
    check: (address) => {
      const plain = plainAddress(address)
      const family = isIP(plain)
      return family !== 0 && list.check(plain, family === 4 ? "ipv4" : "ipv6")
    }
  }
}

/** One `X-Forwarded-For` entry as an address: brackets and a port (which some proxies add) dropped. */
const forwardedEntry = (entry: string): string | undefined => {
  const text = entry.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text)
  const withPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text)
  const address = plainAddress(bracketed?.[1] ?? withPort?.[1] ?? text)
  return isIP(address) === 0 ? undefined : address
}

/**
 * The client's address: the peer, or — when the peer is a trusted proxy — the right-most
 * `X-Forwarded-For` entry that is not a trusted proxy (all the request's X-Forwarded-For headers,
 * in order, as one list). An entry that is not an address stops the walk at the hop that wrote it.
 */
export const clientAddress = (peer: string | undefined, forwardedFor: ReadonlyArray<string>, trusted: TrustedProxies): string => {
  if (peer === undefined || peer === "") return "unknown"
  let client = plainAddress(peer)
  if (!trusted.check(client)) return client
  const hops = forwardedFor.flatMap((h) => h.split(","))
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = forwardedEntry(hops[i] ?? "")
    if (hop === undefined) return client
    client = hop
    if (!trusted.check(hop)) return hop
  }
  // Every hop was a trusted proxy: the left-most is as close to the client as anyone says.
  return client
}

/** The throttle's key for an address: IPv4 as is, IPv6 by its /64 (see the header). */
export const throttleKey = (address: string): string => {
  const plain = plainAddress(address)
  const bytes = isIP(plain) === 6 ? ipv6Bytes(plain) : undefined
  if (bytes === undefined) return plain
  const words = Array.from({ length: 4 }, (_, i) => (((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0)).toString(16))
  // Trailing zero words are left to "::" (2001:db8:0:0::/64 is 2001:db8::/64).
  while (words.length > 0 && words[words.length - 1] === "0") words.pop()
  return `${words.join(":")}::/64`
}
