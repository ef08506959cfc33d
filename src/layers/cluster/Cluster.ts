/**
 * The cluster under anna's gateways (issue 28): effect/cluster's Sharding over TCP sockets between
 * nodes, with shard ownership in PostgreSQL (advisory locks, `cluster_runners`/`cluster_locks`).
 *
 * - Every ShardingConfig value is given here from ClusterSettings; nothing is read from the bare
 *   environment (`ShardingConfig.layerFromEnv` would take a hosting platform's `PORT`).
 * - The cluster's tables live on a small pool of their own (2 connections, one of them held for the
 *   shard locks), apart from anna's stores: a stalled store query never delays a lock refresh.
 * - No message storage: anna's session calls are volatile (a turn is not replayed from a queue; its
 *   caller retries, and turn ids make a retry harmless), so no `cluster_messages` rows accumulate.
 * - Runner health is checked by pinging the runner; a node that dies releases its locks when its
 *   database connection goes, a frozen one when its lease (ANNA_CLUSTER_LEASE_SECONDS) runs out.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Layer, Option, type Redacted } from "effect"
import { MessageStorage, RunnerAddress, RunnerHealth, Runners, ShardingConfig, SocketRunner, SqlRunnerStorage } from "effect/cluster"
import { RpcSerialization } from "effect/rpc"
import { layerClientProtocol, layerSocketServer } from "@effect/platform-node/NodeClusterSocket"
import type { ClusterSettings } from "../../domain/cluster/settings.ts"

/** The ShardingConfig of a node, every field explicit. */
export const shardingConfig = (settings: ClusterSettings): ShardingConfig.ShardingConfig["Service"] => ({
  ...ShardingConfig.defaults,
  runnerAddress: Option.some(RunnerAddress.make(settings.address.host, settings.address.port)),
  runnerListenAddress: Option.some(RunnerAddress.make(settings.listen.host, settings.listen.port)),
  runnerShardWeight: 1,
  availableShardGroups: ["default"],
  assignedShardGroups: ["default"],
  shardsPerGroup: settings.shards,
  shardLockExpiration: Duration.seconds(settings.leaseSeconds),
  shardLockRefreshInterval: Duration.millis(Math.max(500, Math.floor((settings.leaseSeconds * 1000) / 5))),
  shardLockDisableAdvisory: false,
  preemptiveShutdown: true,
  // A stopping node lets its running turns finish for this long before it lets their shards go.
  entityTerminationTimeout: Duration.seconds(settings.shutdownSeconds),
  entityMaxIdleTime: Duration.minutes(5),
  entityMailboxCapacity: "unbounded",
  maxResidentEntities: "unbounded",
  refreshAssignmentsInterval: Duration.seconds(1),
  runnerHealthCheckInterval: Duration.seconds(5),
  sendRetryInterval: Duration.millis(100),
  runnerJoinDebounce: Duration.zero,
  simulateRemoteSerialization: false
})

/** Sharding (and Runners) for this node, on the PostgreSQL database at `url`. */
export const layer = (settings: ClusterSettings, url: Redacted.Redacted<string>) => {
  const config = ShardingConfig.layer(shardingConfig(settings))
  const pool = PgClient.layer({ url, maxConnections: 2, applicationName: `anna cluster ${settings.nodeId}`, connectTimeout: 10_000 })
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(layerClientProtocol))
  return SocketRunner.layer.pipe(
    Layer.provide([layerSocketServer, layerClientProtocol]),
    Layer.provide(health),
    Layer.provide(MessageStorage.layerNoop),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layerWith({ prefix: "cluster" })).pipe(Layer.provide(pool))),
    Layer.provide(config),
    Layer.provide(RpcSerialization.layerSchemaBinary())
  )
}
