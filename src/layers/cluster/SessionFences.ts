/**
 * Sessions' fences and turn ids on PostgreSQL (issue 28; migrations/pg/0014_session_fences.sql,
 * src/domain/cluster/fence.ts): `take` moves a session's epoch on when this node starts its entity;
 * `firstStart` records a turn id and says whether it is new (a turn delivered again runs as resumed).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import * as Sqlite from "../sql/Sqlite.ts"

/** Turn ids are kept this long (a retry or a re-delivery comes within minutes). */
export const TURN_IDS_KEPT_HOURS = 24

export const make = (sql: SqlClient.SqlClient, nodeId: string) => {
  const locked = Sqlite.immediate(sql)
  return {
    /** The session's next epoch, now this node's (under the store's write lock, as every fenced write checks it). */
    take: (entityId: string) =>
      locked(sql<{ epoch: number }>`INSERT INTO session_fences (entity_id, epoch, node_id) VALUES (${entityId}, 1, ${nodeId})
        ON CONFLICT (entity_id) DO UPDATE SET epoch = session_fences.epoch + 1, node_id = excluded.node_id, taken_at = now()
        RETURNING epoch`).pipe(Effect.map((rows) => Number(rows[0]?.epoch ?? 0))),
    /** Records `turnId` as started here; false when it was started before (here or on another node). */
    firstStart: (turnId: string, entityId: string) =>
      sql<{ turn_id: string }>`INSERT INTO session_turns (turn_id, entity_id, node_id) VALUES (${turnId}, ${entityId}, ${nodeId})
        ON CONFLICT (turn_id) DO NOTHING RETURNING turn_id`.pipe(Effect.map((rows) => rows.length > 0)),
    /** Deletes turn ids older than TURN_IDS_KEPT_HOURS. */
    prune: sql`DELETE FROM session_turns WHERE started_at < now() - make_interval(hours => ${TURN_IDS_KEPT_HOURS})`.pipe(Effect.asVoid)
  }
}

export type SessionFences = ReturnType<typeof make>
