/**
 * Diary — the working memory (issue 15): diary entries written by reflection after each burst, and
 * the ledger of what was used during a burst (the playbook rules injected into a turn, the skills
 * used), so that a burst's outcome can be fed back to exactly those. SQLite (migration 0021).
 *
 * Owns storing and querying entries and uses. Does not own reflecting (Learning) or the rules
 * themselves (Playbook).
 *
 * Layers: `SqliteDiary.layer` (src/layers/learning/SqliteDiary.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { DiaryEntry, DiaryStatus } from "../domain/learning/diary.ts"
import type { DiaryEntryNotFound } from "../domain/learning/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export interface DiaryFilter {
  readonly sessionKey?: string | undefined
  readonly agentId?: string | undefined
  readonly userId?: string | undefined
  /** Entries with this tag (case-insensitive). */
  readonly tag?: string | undefined
  readonly status?: DiaryStatus | undefined
  /** Newest first; default 50. */
  readonly limit?: number | undefined
  /** Entries to skip first, for the pages after the first (default 0). */
  readonly offset?: number | undefined
}

/** Something used during a burst: a playbook rule injected into a turn, or a skill the agent used. */
export interface BurstUse {
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
  readonly kind: "rule" | "skill"
  /** The rule's id, or the skill's name. */
  readonly ref: string
  /** For a skill: `operator` or `user` (the user's own skill); for a rule: "". */
  readonly scope: string
  readonly at: number
}

export class Diary extends Context.Service<Diary, {
  readonly add: (entry: DiaryEntry) => Effect.Effect<void, StorageError>
  readonly get: (id: string) => Effect.Effect<DiaryEntry, StorageError | DiaryEntryNotFound>
  readonly list: (filter: DiaryFilter) => Effect.Effect<ReadonlyArray<DiaryEntry>, StorageError>
  /** The session's latest entry (where its next burst starts). */
  readonly latest: (sessionKey: string) => Effect.Effect<Option.Option<DiaryEntry>, StorageError>
  /** Records uses (one row each; the same rule injected on every turn of a burst is one use per turn). */
  readonly recordUses: (uses: ReadonlyArray<BurstUse>) => Effect.Effect<void, StorageError>
  /** The session's uses not yet settled by an outcome, oldest first. */
  readonly openUses: (sessionKey: string) => Effect.Effect<ReadonlyArray<BurstUse>, StorageError>
  /**
   * Settles the session's open uses with an outcome's source (a diary entry id, or `feedback:<time>`)
   * and returns them; a use is settled once, so an outcome is never counted twice. With `until`, only
   * uses recorded at or before it (a reflection settles its burst's uses, not those of a turn that
   * started while it ran).
   */
  readonly settleUses: (sessionKey: string, settledBy: string, until?: number) => Effect.Effect<ReadonlyArray<BurstUse>, StorageError>
  /**
   * A removed user's entries and uses (issue 23): moved, with their session keys, to the id the user
   * is removed as (as memory moves their sessions: domain/config/removedUser.ts), or deleted when
   * `removedAs` is undefined. How many of each.
   */
  readonly removeUser: (
    userId: string,
    removedAs: string | undefined
  ) => Effect.Effect<{ readonly entries: number; readonly uses: number }, StorageError>
}>()("anna/Diary") {}
