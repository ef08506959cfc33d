/**
 * The login throttle's counts, in `login_failures` (migrations/0022_login_throttle.sql), for
 * SqliteAccounts. The schedule and why it is a backoff keyed by (username, address) rather than a
 * lockout of the username are in src/domain/admin/throttle.ts; who the address is, in
 * src/domain/admin/clientAddress.ts.
 *
 * In the database, not in memory: `anna admin unlock` runs in another process than the gateway, and
 * a restart must not hand an attacker a fresh count. An attempt counts as failed from its start (in
 * the same IMMEDIATE transaction as the check, so concurrent guesses cannot slip past the count
 * while the KDF runs) and is taken back when it succeeds. Throttled attempts do not count (they would
 * only push the wait further out for whoever shares the address).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { ADDRESS_BACKOFF, FORGET_AFTER_MS, PAIR_BACKOFF, waitMs } from "../../domain/admin/throttle.ts"
import * as Sqlite from "../sql/Sqlite.ts"

/** Kept of a username in a key: no account id is longer, and a guess need not cost more storage. */
const MAX_USERNAME_KEY = 128

interface Count {
  readonly kind: string
  readonly failures: number
  readonly last_failure_at: number
}

export const make = (sql: SqlClient.SqlClient) => {
  const immediate = Sqlite.immediate(sql)
  const userKey = (username: string) => username.slice(0, MAX_USERNAME_KEY)

  /**
   * Before a password is checked: the milliseconds to wait before this username may be tried from
   * this address (0: now, and the attempt is then counted as failed until `succeeded`).
   */
  const begin = Effect.fn("LoginThrottle.begin")(function*(username: string, address: string, now: number) {
    const user = userKey(username)
    return yield* immediate(Effect.gen(function*() {
      // Forgotten counts go here, so the table holds about a day of failures at most.
      yield* sql`DELETE FROM login_failures WHERE last_failure_at <= ${now - FORGET_AFTER_MS}`
      const rows = yield* sql<Count>`SELECT kind, failures, last_failure_at FROM login_failures
        WHERE (kind = 'pair' AND username = ${user} AND address = ${address}) OR (kind = 'address' AND username = '' AND address = ${address})`
      const wait = Math.max(0, ...rows.map((r) => waitMs(r.kind === "pair" ? PAIR_BACKOFF : ADDRESS_BACKOFF, r.failures, r.last_failure_at, now)))
      if (wait > 0) return wait
      for (const [kind, name] of [["pair", user], ["address", ""]] as const) {
        yield* sql`INSERT INTO login_failures (kind, username, address, failures, last_failure_at) VALUES (${kind}, ${name}, ${address}, 1, ${now})
          ON CONFLICT (kind, username, address) DO UPDATE SET failures = login_failures.failures + 1, last_failure_at = excluded.last_failure_at`
      }
      return 0
    }))
  })

  /** The attempt `begin` counted succeeded: the pair starts over, the address gets this one attempt back. */
  const succeeded = Effect.fn("LoginThrottle.succeeded")(function*(username: string, address: string) {
    yield* immediate(Effect.gen(function*() {
      yield* sql`DELETE FROM login_failures WHERE kind = 'pair' AND username = ${userKey(username)} AND address = ${address}`
      yield* sql`UPDATE login_failures SET failures = failures - 1 WHERE kind = 'address' AND username = '' AND address = ${address}`
      yield* sql`DELETE FROM login_failures WHERE kind = 'address' AND username = '' AND address = ${address} AND failures <= 0`
    }))
  })

  /**
   * Clears the username's counts from every address (or from `address` only, with that address's
   * own count across usernames); the addresses whose hold on the username was cleared.
   */
  const clear = Effect.fn("LoginThrottle.clear")(function*(username: string, address?: string | undefined) {
    const user = userKey(username)
    return yield* immediate(Effect.gen(function*() {
      const rows = yield* (address === undefined
        ? sql<{ address: string }>`DELETE FROM login_failures WHERE kind = 'pair' AND username = ${user} RETURNING address`
        : sql<{ address: string }>`DELETE FROM login_failures WHERE kind = 'pair' AND username = ${user} AND address = ${address} RETURNING address`)
      if (address !== undefined) yield* sql`DELETE FROM login_failures WHERE kind = 'address' AND username = '' AND address = ${address}`
      return rows.map((r) => r.address).sort()
    }))
  })

  return { begin, succeeded, clear }
}
