/**
 * The login throttle's schedule (issue 23), pure: a backoff, never a lockout a stranger can cause.
 *
 * Failures are counted per (username, client address) and per client address alone:
 * - A username from one address: 5 failures are free (typos), then each further attempt waits
 *   30 s × 2^(failures − 5), at most an hour — about 12 guesses in the first hour, then one an hour.
 *   Failures from another address never touch this count, so a stranger guessing the admin's
 *   password slows only themselves: the admin, from anywhere else, logs in at once.
 * - An address, across usernames (spraying): 20 failures free, then 1 s × 2^(failures − 20), at most
 *   a minute. A short cap on purpose: people behind one NAT share an address, and this count must
 *   stay a slowdown for that address, not a lockout of every account from it.
 * A count is forgotten a day after its last failure; a success clears its (username, address) count
 * and takes its own attempt back from the address's count (so a valid account cannot wash an
 * address's failures away). `anna admin unlock` clears counts by hand.
 */

export interface Backoff {
  /** Failures allowed before any wait. */
  readonly free: number
  /** The wait after the first failure beyond `free`; it doubles with each further one… */
  readonly firstMs: number
  /** …up to this. */
  readonly maxMs: number
}

export const PAIR_BACKOFF: Backoff = { free: 5, firstMs: 30_000, maxMs: 3_600_000 }
export const ADDRESS_BACKOFF: Backoff = { free: 20, firstMs: 1_000, maxMs: 60_000 }
/** A count with no failure for this long starts again from zero. */
export const FORGET_AFTER_MS = 24 * 3_600_000

/** The wait owed after `failures` failures. */
export const backoffMs = (b: Backoff, failures: number): number =>
  failures < b.free ? 0 : Math.min(b.maxMs, b.firstMs * 2 ** Math.min(failures - b.free, 40))

/** Milliseconds until the next attempt may be made (0: now), from a count and its last failure. */
export const waitMs = (b: Backoff, failures: number, lastFailureAt: number, now: number): number =>
  now - lastFailureAt >= FORGET_AFTER_MS ? 0 : Math.max(0, lastFailureAt + backoffMs(b, failures) - now)
