/**
 * The notification limit's slots, in `notify_sent` (migrations/0032_notify_sent.sql), for the
 * Notifier: at most `limit` notifications per user in any `windowMs` (a sliding window).
 *
 * In the database, not in memory: several gateways on one PostgreSQL database push through their
 * own channels, and the limit is the user's, not a gateway's (issue 28); a restart must not hand a
 * looping agent a fresh minute either. The check and the slot taken are one write transaction, so
 * two gateways cannot both take the last slot.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import * as Sqlite from "../sql/Sqlite.ts"

export const make = (sql: SqlClient.SqlClient, limit: number, windowMs: number) => {
  const immediate = Sqlite.immediate(sql)

  /**
   * Takes a slot in the user's window at `now`: 0 when taken, else the milliseconds until the
   * oldest notification in the window leaves it.
   */
  const take = Effect.fn("NotifyLimit.take")(function*(userId: string, now: number) {
    return yield* immediate(Effect.gen(function*() {
      // Everyone's expired slots go here, so the table holds about a window of notifications at most.
      yield* sql`DELETE FROM notify_sent WHERE sent_at <= ${now - windowMs}`
      const recent = yield* sql<{ sent_at: number }>`SELECT sent_at FROM notify_sent WHERE user_id = ${userId}
        ORDER BY sent_at LIMIT ${limit}`
      if (recent.length >= limit) return Math.max(1, (recent[0]?.sent_at ?? now) + windowMs - now)
      yield* sql`INSERT INTO notify_sent (user_id, sent_at) VALUES (${userId}, ${now})`
      return 0
    }))
  })

  return { take }
}
