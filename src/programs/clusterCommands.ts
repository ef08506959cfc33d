/**
 * `anna cluster status [--json]` (issue 28): the gateways of a cluster as the database knows them —
 * each node's runner address, whether it is up (wrote its row in the last few seconds), how many
 * shards it holds, its live and running sessions, the singletons it runs, its version. Read from
 * `cluster_nodes` (src/layers/cluster/NodeRegistry.ts) on the PostgreSQL database
 * `ANNA_DATABASE_URL` names; no gateway is asked, so it works while nodes are down.
 */
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { SqlClient } from "effect/sql"
import { readNodes, STALE_SECONDS } from "../layers/cluster/NodeRegistry.ts"
import { databaseLocation, InvalidEnvironment } from "./env.ts"
import { Database } from "./layers.ts"
import { printJson, table } from "./output.ts"

const status = Command.make("status", {
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of a table"), Flag.withDefault(false))
}, (f) =>
  Effect.gen(function*() {
    const where = yield* databaseLocation
    if (where._tag === "Sqlite") {
      return yield* new InvalidEnvironment({
        message: "this deployment is not a cluster: its database is the SQLite file (gateways form a cluster on PostgreSQL: set ANNA_DATABASE_URL and ANNA_RUNNER_ADDRESS)"
      })
    }
    const nodes = yield* readNodes(yield* SqlClient.SqlClient)
    const rows = nodes.map((n) => ({
      node: n.nodeId,
      address: n.address,
      up: n.up,
      seenSecondsAgo: n.ageSeconds,
      startedAt: n.startedAt,
      version: n.version,
      shards: n.shards,
      sessions: n.live.length,
      running: n.live.filter((s) => s.running).length,
      singletons: n.singletons
    }))
    const up = rows.filter((r) => r.up)
    const summary = {
      nodes: rows,
      up: up.length,
      down: rows.length - up.length,
      shards: up.reduce((s, r) => s + r.shards, 0),
      sessions: up.reduce((s, r) => s + r.sessions, 0)
    }
    if (f.json) return yield* printJson(summary)
    if (rows.length === 0) {
      return yield* Console.log("No gateway node has joined a cluster on this database (a gateway joins when ANNA_RUNNER_ADDRESS is set).")
    }
    yield* Console.log(`${summary.up} node(s) up, ${summary.down} down; ${summary.shards} shard(s) held; ${summary.sessions} live session(s)`)
    yield* Console.log(table(
      ["NODE", "ADDRESS", "STATE", "SEEN", "SHARDS", "SESSIONS", "RUNNING", "SINGLETONS", "VERSION"],
      rows.map((r) => [
        r.node,
        r.address,
        r.up ? "up" : `down (no news for over ${STALE_SECONDS} s)`,
        `${r.seenSecondsAgo} s ago`,
        String(r.shards),
        String(r.sessions),
        String(r.running),
        r.singletons.join(", ") || "-",
        r.version
      ])
    ))
  })).pipe(
    Command.withDescription("Show the cluster's gateway nodes: address, up or down, shards, live sessions, singletons (--json)"),
    Command.provide(Database)
  )

export const clusterCommand = Command.make("cluster").pipe(
  Command.withDescription("The gateways of a cluster on PostgreSQL (ANNA_RUNNER_ADDRESS): status"),
  Command.withSubcommands([status])
)
