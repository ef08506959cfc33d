/**
 * The cluster's nodes as the database knows them (issue 28): every few seconds each node writes its
 * row of `cluster_nodes` (migrations/pg/0013_cluster_nodes.sql) — its runner address, how many shards
 * it holds, its live sessions — and deletes it when it stops. A row not written for three periods is
 * a node that died (or froze); it is left out of `live` and shown as such by `anna cluster status`.
 *
 * Clocks: every time is the database's (`now()`), so nodes with skewed clocks agree.
 */
import { Cause, Duration, Effect, Layer, Schedule, type Scope } from "effect"
import { ShardId, Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import type { ClusterSettings } from "../../domain/cluster/settings.ts"
import { formatHostPort } from "../../domain/cluster/settings.ts"
import { type LiveSession, SessionPool } from "../../services/SessionPool.ts"
import { NodeRegistry, type NodeRow, PUBLISH_SECONDS, STALE_SECONDS } from "../../services/NodeRegistry.ts"
import type { ChannelStatus } from "../../services/Channels.ts"
import * as SessionFences from "./SessionFences.ts"

/** How often old turn ids and dead nodes' rows are deleted. */
export const PRUNE_MINUTES = 10

interface Raw {
  readonly node_id: string
  readonly address: string
  readonly version: string
  readonly started_at: Date | string
  readonly age: number | string
  readonly shards: number
  readonly singletons: unknown
  readonly live: unknown
}

const toRow = (r: Raw): NodeRow => {
  const age = Number(r.age)
  return {
    nodeId: r.node_id,
    address: r.address,
    version: r.version,
    startedAt: r.started_at instanceof Date ? r.started_at.toISOString() : String(r.started_at),
    ageSeconds: Math.round(age * 10) / 10,
    up: age <= STALE_SECONDS,
    shards: r.shards,
    singletons: Array.isArray(r.singletons) ? r.singletons.map(String) : [],
    live: Array.isArray(r.live) ? (r.live as ReadonlyArray<LiveSession>) : []
  }
}

/** The rows of `cluster_nodes`, `first`'s first, then by node id. */
export const readNodes = (sql: SqlClient.SqlClient, first = "") =>
  Effect.map(
    sql<Raw>`SELECT node_id, address, version, started_at, extract(epoch FROM now() - seen_at) AS age, shards, singletons, live
      FROM cluster_nodes ORDER BY node_id <> ${first}, node_id`,
    (rows) => rows.map(toRow)
  )

/** The shards of the default group this node holds now. */
const shardsHeld = (sharding: Sharding.Sharding["Service"], shards: number): number => {
  let n = 0
  for (let i = 1; i <= shards; i++) if (sharding.hasShardId(ShardId.make("default", i))) n++
  return n
}

/**
 * NodeRegistry for this node; needs anna's SqlClient (PostgreSQL), Sharding and this node's own
 * SessionPool (the local one: what it publishes). Its row is written at once, then every
 * PUBLISH_SECONDS, and deleted when the layer closes.
 */
export { NodeRegistry, PUBLISH_SECONDS, STALE_SECONDS }

export const layer = (settings: ClusterSettings, version: string) =>
  Layer.effect(
    NodeRegistry,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sharding = yield* Sharding.Sharding
      const local = yield* SessionPool
      const singletons = new Set<string>()
      let channels: Effect.Effect<ReadonlyArray<ChannelStatus>> | undefined
      const address = formatHostPort(settings.address)
      const publish = Effect.gen(function*() {
        const live = JSON.stringify(yield* local.live)
        const held = shardsHeld(sharding, settings.shards)
        const running = JSON.stringify([...singletons].sort())
        const channelsNow = JSON.stringify(channels === undefined ? [] : yield* channels)
        yield* sql`INSERT INTO cluster_nodes (node_id, address, version, shards, singletons, channels, live)
          VALUES (${settings.nodeId}, ${address}, ${version}, ${held}, ${running}::jsonb, ${channelsNow}::jsonb, ${live}::jsonb)
          ON CONFLICT (node_id) DO UPDATE SET address = excluded.address, version = excluded.version, seen_at = now(),
            shards = excluded.shards, singletons = excluded.singletons, channels = excluded.channels, live = excluded.live`
      })
      // A node that restarts under the same id starts its row afresh (its start time is this one's).
      yield* sql`DELETE FROM cluster_nodes WHERE node_id = ${settings.nodeId}`
      yield* publish
      yield* publish.pipe(
        Effect.catchCause((c) => Effect.logWarning(`cluster: could not write this node's row: ${Cause.pretty(c)}`)),
        Effect.repeat(Schedule.spaced(Duration.seconds(PUBLISH_SECONDS))),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() => sql`DELETE FROM cluster_nodes WHERE node_id = ${settings.nodeId}`.pipe(Effect.ignore))
      // Pruning, by every node (each statement is harmless twice): turn ids past their day, and the
      // rows of nodes gone for a day (`anna cluster status` shows a dead node as down until then).
      const fences = SessionFences.make(sql, settings.nodeId)
      yield* Effect.andThen(fences.prune, sql`DELETE FROM cluster_nodes WHERE seen_at < now() - interval '1 day'`).pipe(
        Effect.catchCause((c) => Effect.logWarning(`cluster: pruning failed: ${Cause.pretty(c)}`)),
        Effect.repeat(Schedule.spaced(Duration.minutes(PRUNE_MINUTES))),
        Effect.forkScoped
      )
      const nodes = readNodes(sql, settings.nodeId)
      return NodeRegistry.of({
        nodeId: settings.nodeId,
        nodes: Effect.orDie(nodes),
        live: Effect.gen(function*() {
          const own = yield* local.live
          const others = yield* sql<{ live: unknown }>`SELECT live FROM cluster_nodes
            WHERE node_id <> ${settings.nodeId} AND seen_at > now() - make_interval(secs => ${STALE_SECONDS})`.pipe(
            Effect.catchCause((c) => Effect.logWarning(`cluster: could not read the other nodes' sessions: ${Cause.pretty(c)}`).pipe(Effect.as([])))
          )
          const all = [...own, ...others.flatMap((r) => (Array.isArray(r.live) ? (r.live as ReadonlyArray<LiveSession>) : []))]
          return all.sort((a, b) => b.lastTurnAt - a.lastTurnAt)
        }),
        reportChannels: (status) =>
          Effect.andThen(
            Effect.sync(() => {
              channels = status
            }),
            publish.pipe(Effect.ignore)
          ),
        remoteChannels: sql<{ node_id: string; channels: unknown }>`SELECT node_id, channels FROM cluster_nodes
          WHERE node_id <> ${settings.nodeId} AND seen_at > now() - make_interval(secs => ${STALE_SECONDS})
          ORDER BY seen_at DESC`.pipe(
          Effect.map((rows) =>
            rows.flatMap((r) => (Array.isArray(r.channels) ? (r.channels as ReadonlyArray<ChannelStatus>).map((status) => ({ node: r.node_id, status })) : []))
          ),
          Effect.catchCause((c) => Effect.logWarning(`cluster: could not read the other nodes' channels: ${Cause.pretty(c)}`).pipe(Effect.as([])))
        ),
        singleton: <E, R>(name: string, run: Effect.Effect<void, E, R>): Effect.Effect<void, never, R | Scope.Scope> =>
          sharding.registerSingleton(
            name,
            Effect.acquireUseRelease(
              Effect.sync(() => singletons.add(name)),
              () => Effect.andThen(Effect.logInfo(`cluster: this node runs ${name} now`), run),
              () => Effect.sync(() => singletons.delete(name))
            ).pipe(Effect.catchCause((c) => Cause.hasInterruptsOnly(c) ? Effect.failCause(c) : Effect.logError(`cluster: ${name} failed: ${Cause.pretty(c)}`)))
          )
      })
    })
  )
