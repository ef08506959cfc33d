/**
 * A gateway as a node of a cluster (issue 28): the cluster's Sharding (./Cluster.ts), this node's row
 * in `cluster_nodes` (./NodeRegistry.ts) and the Session entity (./SessionEntity.ts), over this node's
 * own SessionPool. Provides the SessionPool the rest of the gateway uses — each call goes to the
 * session's owner — and NodeRegistry and Sharding; needs the local SessionPool (the one the entity's
 * handlers run turns on) and anna's SqlClient on the same PostgreSQL database as `url`.
 */
import { deepestReason } from "../../domain/causeText.ts"
import { Data, Effect, Layer, type Redacted } from "effect"
import { type ClusterSettings, formatHostPort } from "../../domain/cluster/settings.ts"
import * as Cluster from "./Cluster.ts"
import * as NodeRegistry from "./NodeRegistry.ts"
import * as SessionEntity from "./SessionEntity.ts"

/** This node could not join its cluster (the runner's port, the database): one line saying why. */
export class ClusterUnavailable extends Data.TaggedError("ClusterUnavailable")<{ readonly message: string }> {}

export const layer = (settings: ClusterSettings, url: Redacted.Redacted<string>, version: string) =>
  SessionEntity.layer(settings.nodeId).pipe(
    Layer.provideMerge(NodeRegistry.layer(settings, version)),
    Layer.provideMerge(Cluster.layer(settings, url)),
    Layer.catchCause((cause) =>
      Layer.effectContext(Effect.fail(new ClusterUnavailable({
        message: `this gateway could not join the cluster as ${settings.nodeId} (runner ${formatHostPort(settings.listen)}): ${deepestReason(cause)}`
      })))
    )
  )
