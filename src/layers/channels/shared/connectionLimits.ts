/**
 * The limits every HTTP server anna listens with applies to its connections (the gateway's server
 * and the platforms' webhook listeners), so that slow or greedy clients cannot starve the others
 * (issue 23, item 7: 600 slow sockets from one client made authenticated requests fail).
 *
 * - At most `maxConnectionsPerAddress` connections open from one client address (an IPv6 client
 *   counts by its /64, which one host usually has whole); one more is destroyed as it is accepted,
 *   before a byte of it is parsed. Without it, one client fills the total cap and everyone else is
 *   refused.
 * - At most `maxConnections` in all (Node closes the excess at accept).
 * - A request's headers must arrive within `headersTimeoutMs` of its first byte, the whole request
 *   within `requestTimeoutMs` (else 408 and close). Node checks both on a sweep every
 *   `connectionsCheckingInterval` (30 s by default, which would let a stalled client stay that much
 *   longer); we sweep four times per headers timeout. Trickling bytes does not reset either clock.
 * - A keep-alive connection idle for KEEP_ALIVE_TIMEOUT_MS between requests is closed.
 *
 * Behind a reverse proxy every connection comes from the proxy's address: the per-address cap is
 * then a cap on the proxy, and slow clients are the proxy's to bound.
 */
import { createServer, type Server } from "node:http"
import { isIPv6, type Socket } from "node:net"
import { HTTP_LIMIT_DEFAULTS } from "../../../domain/config/channel.ts"

/** Connections one client address may hold open at once (browsers open 6, Telegram's webhook 40). */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = HTTP_LIMIT_DEFAULTS.max_connections_per_address

/** Idle time allowed between two requests on a keep-alive connection (Node's default, made explicit). */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000

export interface ConnectionLimits {
  readonly requestTimeoutMs: number
  /** At most `requestTimeoutMs` (Node refuses a longer one). */
  readonly headersTimeoutMs: number
  readonly maxConnections: number
  readonly maxConnectionsPerAddress: number
}

/** Expands an IPv6 address to its 8 groups (no zone, no embedded IPv4 in the first 4). */
const groups6 = (address: string): Array<string> => {
  const [head = "", tail] = address.split("%")[0]?.split("::") ?? [""]
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const fill = tail === undefined ? [] : Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => "0")
  return [...left, ...fill, ...right]
}

/**
 * Who a connection counts against: the IPv4 address (also when written IPv4-mapped, `::ffff:a.b.c.d`),
 * or the /64 prefix of an IPv6 one.
 */
export const clientKey = (address: string): string => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped?.[1] !== undefined) return mapped[1]
  if (!isIPv6(address.split("%")[0] ?? "")) return address
  return `${groups6(address).slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, "")).join(":")}::/64`
}

/**
 * Counts each address's open connections on `server` and destroys, as it is accepted, one that
 * would take its address past `max`.
 */
const capPerAddress = (server: Server, max: number): void => {
  const open = new Map<string, number>()
  // Added after Node's own "connection" listener, but in the same tick as the accept: the socket
  // is gone before any data of it is read.
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress
    if (address === undefined) return void socket.destroy()
    const key = clientKey(address)
    const count = open.get(key) ?? 0
    if (count >= max) return void socket.destroy()
    open.set(key, count + 1)
    socket.once("close", () => {
      const left = (open.get(key) ?? 1) - 1
      if (left <= 0) open.delete(key)
      else open.set(key, left)
    })
  })
}

/** A Node HTTP server with these limits (attach the request handler with `server.on("request", …)`). */
export const limitedServer = (limits: ConnectionLimits): Server => {
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs)
  const server = createServer({
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(headersTimeout / 4)))
  })
  server.maxConnections = limits.maxConnections
  capPerAddress(server, limits.maxConnectionsPerAddress)
  return server
}
