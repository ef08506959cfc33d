/**
 * UserRemoval — removing a user for good (issue 23): `anna user remove`, the admin API's
 * `DELETE /api/users/:id` and the console's Remove button all come here, so they do the same. A user
 * id can be given again once its user is removed, and the new user must inherit nothing of the old
 * one. What happens to each kind of data:
 *
 * - gone: identities, tokens, chat states, the console account and its browser sessions (ConfigStore),
 *   scheduled jobs (their run history stays), the user's own playbook rules, their skills' records,
 *   their workspaces, their place in agents' access lists;
 * - sessions: kept or deleted, as the operator chooses; kept ones, with the agents' profiles of the
 *   user and their diary entries, move to the id the user is removed as (`alice~removed-<uid>`, which
 *   no user can be given: domain/config/removedUser.ts), where operators still read them; deleted
 *   ones go with those profiles and diary entries;
 * - usage, their feedback on shared playbook rules, their heartbeat's run history and the lineage of
 *   their revoked tokens: move to the removed id either way (spend stays accounted, counted votes stay
 *   counted, their own adjustments of shared rules reach nobody).
 *
 * The removal is recorded first (the user can no longer log in, chat or run anything, and a running
 * gateway's watcher ends their live sessions), then each kind of data is moved or deleted by its own
 * store; every step can run again. When a step fails the removal stays unfinished (RemovalUnfinished
 * says what failed): the id cannot be given to a new user until `remove` runs again and finishes.
 *
 * Owns the order and the report; the data is each store's.
 *
 * Layers: `UserRemoval.layer` (src/layers/admin/UserRemoval.ts).
 */
import { Context, type Effect } from "effect"
import type { InvalidConfig, RemovalUnfinished } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"

/** What a removal did (on a run that finishes an earlier one: what this run did). */
export interface UserRemovalReport {
  readonly userId: string
  /** The id the user's kept data now carries. */
  readonly removedAs: string
  readonly sessions: "kept" | "deleted"
  /** This run finished a removal an earlier run began. */
  readonly resumed: boolean
  readonly identities: number
  readonly tokens: number
  readonly chatStates: number
  readonly account: boolean
  /** Scheduled jobs removed (their run history stays). */
  readonly jobs: ReadonlyArray<string>
  /** Kept sessions, by their new keys. */
  readonly keptSessions: ReadonlyArray<string>
  readonly deletedSessions: ReadonlyArray<{ readonly sessionKey: string; readonly messages: number; readonly summaries: number }>
  /** Agents' profiles of the user: kept (moved) or deleted, with the sessions. */
  readonly profiles: number
  /** Diary entries: kept (moved) or deleted, with the sessions. */
  readonly diaryEntries: number
  /** Skills' outcome records of the user's own skills, deleted. */
  readonly skillStats: number
  /** Model calls made for the user, moved to the removed id. */
  readonly usageRecords: number
  /** Their feedback on shared playbook rules (RuleVotes), moved to the removed id. */
  readonly ruleVotes: number
  /** The user's own playbook rules, removed. */
  readonly rules: number
  /** Agents whose workspace of the user was deleted. */
  readonly workspaces: ReadonlyArray<string>
  /** Agents whose access list named the user (the id is taken out). */
  readonly accessLists: ReadonlyArray<string>
}

export type SessionChoice = "keep" | "delete"

export class UserRemoval extends Context.Service<UserRemoval, {
  /**
   * Removes `userId`, or finishes its unfinished removal. `sessions` is required for a new removal;
   * finishing one follows the choice it began with (a different one is refused). InvalidConfig when
   * there is no such user and no unfinished removal.
   */
  readonly remove: (
    userId: string,
    sessions: SessionChoice | undefined
  ) => Effect.Effect<UserRemovalReport, InvalidConfig | RemovalUnfinished | StorageError>
}>()("anna/UserRemoval") {}
