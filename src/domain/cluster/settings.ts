/**
 * The cluster settings (issue 28), from the environment: a gateway joins a cluster when
 * `ANNA_RUNNER_ADDRESS` is set (with PostgreSQL as its database). Every value effect/cluster uses is
 * derived here and passed explicitly — its own `ShardingConfig.layerFromEnv` would read bare `HOST`,
 * `PORT` and `SHARDS_PER_GROUP`, and a hosting platform's `PORT` must not become the runner port.
 *
 *   ANNA_RUNNER_ADDRESS           host:port other nodes reach this one at (required to cluster)
 *   ANNA_RUNNER_LISTEN            host:port the runner listens on (default: the advertised address)
 *   ANNA_NODE_ID                  this node's name (default: the host name and the runner port)
 *   ANNA_CLUSTER_SHARDS           shards sessions are spread over (default 300; the same on every node)
 *   ANNA_CLUSTER_LEASE_SECONDS    how long a silent node keeps its shards (default 10; refreshed every fifth of it)
 *   ANNA_CLUSTER_SHUTDOWN_SECONDS how long a stopping node lets running turns finish (default 120)
 *
 * Pure: `clusterSettings` takes a lookup of the variables and says what is wrong in one line.
 */
import { Result } from "effect"

export interface HostPort {
  readonly host: string
  readonly port: number
}

export interface ClusterSettings {
  readonly address: HostPort
  readonly listen: HostPort
  readonly nodeId: string
  readonly shards: number
  readonly leaseSeconds: number
  readonly shutdownSeconds: number
}

/** The variables read (in the order a person reads about them). */
export const clusterVariables = [
  "ANNA_RUNNER_ADDRESS",
  "ANNA_RUNNER_LISTEN",
  "ANNA_NODE_ID",
  "ANNA_CLUSTER_SHARDS",
  "ANNA_CLUSTER_LEASE_SECONDS",
  "ANNA_CLUSTER_SHUTDOWN_SECONDS"
] as const

export const DEFAULT_SHARDS = 300
export const DEFAULT_LEASE_SECONDS = 10
export const DEFAULT_SHUTDOWN_SECONDS = 120

/** `host:port` (an IPv6 host in brackets), or why not. */
export const parseHostPort = (raw: string, name: string): Result.Result<HostPort, string> => {
  const s = raw.trim()
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(s)
  const port = m === null ? Number.NaN : Number(m[3])
  if (m === null || !Number.isInteger(port) || port < 1 || port > 65535) {
    return Result.fail(`${name}=${JSON.stringify(raw)} is not host:port (e.g. 10.0.0.5:34431, the address other nodes reach this one at)`)
  }
  return Result.succeed({ host: m[1] ?? m[2] ?? "", port })
}

const positiveInt = (raw: string | undefined, name: string, fallback: number, max: number): Result.Result<number, string> => {
  if (raw === undefined || raw.trim() === "") return Result.succeed(fallback)
  const n = Number(raw.trim())
  if (!Number.isInteger(n) || n < 1 || n > max) return Result.fail(`${name}=${JSON.stringify(raw)} is not a whole number from 1 to ${max}`)
  return Result.succeed(n)
}

/** A node id as the host name gives it: letters, digits, `.`, `-`, `_` (others become `-`), at most 64. */
export const nodeIdFrom = (hostName: string, port: number): string =>
  `${hostName.replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 56) || "node"}-${port}`

/**
 * The cluster settings, or undefined when `ANNA_RUNNER_ADDRESS` is unset (one gateway, no cluster);
 * a value anna cannot use is one line naming the variable.
 */
export const clusterSettings = (
  get: (name: string) => string | undefined,
  hostName: string
): Result.Result<ClusterSettings | undefined, string> => {
  const raw = get("ANNA_RUNNER_ADDRESS")
  if (raw === undefined || raw.trim() === "") {
    const stray = clusterVariables.slice(1).find((name) => (get(name) ?? "").trim() !== "")
    return stray === undefined
      ? Result.succeed(undefined)
      : Result.fail(`${stray} is set but ANNA_RUNNER_ADDRESS is not: set ANNA_RUNNER_ADDRESS=host:port to join a cluster, or unset ${stray}`)
  }
  return Result.gen(function*() {
    const address = yield* parseHostPort(raw, "ANNA_RUNNER_ADDRESS")
    const listenRaw = get("ANNA_RUNNER_LISTEN")
    const listen = listenRaw === undefined || listenRaw.trim() === "" ? address : yield* parseHostPort(listenRaw, "ANNA_RUNNER_LISTEN")
    const idRaw = (get("ANNA_NODE_ID") ?? "").trim()
    if (idRaw !== "" && !/^[A-Za-z0-9._-]{1,64}$/.test(idRaw)) {
      return yield* Result.fail(`ANNA_NODE_ID=${JSON.stringify(idRaw)} must be 1 to 64 letters, digits, '.', '-' or '_'`)
    }
    const shards = yield* positiveInt(get("ANNA_CLUSTER_SHARDS"), "ANNA_CLUSTER_SHARDS", DEFAULT_SHARDS, 10_000)
    const leaseSeconds = yield* positiveInt(get("ANNA_CLUSTER_LEASE_SECONDS"), "ANNA_CLUSTER_LEASE_SECONDS", DEFAULT_LEASE_SECONDS, 3600)
    if (leaseSeconds < 2) return yield* Result.fail(`ANNA_CLUSTER_LEASE_SECONDS=${leaseSeconds} is too short: at least 2`)
    const shutdownSeconds = yield* positiveInt(get("ANNA_CLUSTER_SHUTDOWN_SECONDS"), "ANNA_CLUSTER_SHUTDOWN_SECONDS", DEFAULT_SHUTDOWN_SECONDS, 3600)
    return {
      address,
      listen,
      nodeId: idRaw === "" ? nodeIdFrom(hostName, address.port) : idRaw,
      shards,
      leaseSeconds,
      shutdownSeconds
    }
  })
}

/** `host:port` as written (an IPv6 host in brackets). */
export const formatHostPort = (a: HostPort): string => (a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`)
