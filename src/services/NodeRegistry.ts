/**
 * NodeRegistry — this gateway as a node of a cluster (issue 28): its id, the cluster's nodes as the
 * database knows them (`cluster_nodes`), every node's live sessions, and running work on one node at
 * a time (singletons: platform pollers, the scheduler, sweeps). Present only on a cluster: a single
 * gateway has none, and runs that work itself.
 *
 * Layers: `NodeRegistry.layer` (src/layers/cluster/NodeRegistry.ts), part of `ClusterNode.layer`.
 */
import { Context, type Effect, type Scope } from "effect"
import type { ChannelStatus } from "./Channels.ts"
import type { LiveSession } from "./SessionPool.ts"

/** How often a node writes its row of `cluster_nodes`. */
export const PUBLISH_SECONDS = 2
/** A row older than this is a node that is gone (died, froze, or was cut off). */
export const STALE_SECONDS = 3 * PUBLISH_SECONDS

export interface NodeRow {
  readonly nodeId: string
  readonly address: string
  readonly version: string
  readonly startedAt: string
  /** Seconds since the node last wrote its row (by the database's clock). */
  readonly ageSeconds: number
  readonly up: boolean
  readonly shards: number
  readonly singletons: ReadonlyArray<string>
  readonly live: ReadonlyArray<LiveSession>
}

export class NodeRegistry extends Context.Service<NodeRegistry, {
  readonly nodeId: string
  /** Every node's live sessions (this node's as of now, the others' as last written). */
  readonly live: Effect.Effect<ReadonlyArray<LiveSession>>
  /** The nodes' rows, this node's first. */
  readonly nodes: Effect.Effect<ReadonlyArray<NodeRow>>
  /**
   * Runs `run` on one node of the cluster at a time (effect/cluster's singleton `name`): here while
   * this node holds its shard, interrupted when it moves; a failure is logged (not retried until the
   * singleton moves). For the duration of the scope.
   */
  readonly singleton: <E, R>(name: string, run: Effect.Effect<void, E, R>) => Effect.Effect<void, never, R | Scope.Scope>
  /** The chat platforms' channels this node runs now (published with its row; undefined: none). */
  readonly reportChannels: (status: Effect.Effect<ReadonlyArray<ChannelStatus>> | undefined) => Effect.Effect<void>
  /** The channels other nodes run, as they last published them. */
  readonly remoteChannels: Effect.Effect<ReadonlyArray<{ readonly node: string; readonly status: ChannelStatus }>>
}>()("anna/NodeRegistry") {}

