/**
 * RuleVotes — chat users' feedback on shared playbook rules (issue 23): each user's latest vote per
 * rule, whether it was counted into the rule for everyone, and the user's own adjustment of it (the
 * rules are in YAML files; these per-user records are not the operator's to edit, and many users'
 * rows would bloat the files). The decisions are the pure ones of src/domain/learning/consensus.ts;
 * this store makes each cast one atomic step, across processes too (the gateway and `anna chat` or
 * `anna diary reflect` may give feedback on the same rule at once). SQLite (migration 0024).
 *
 * Owns the votes. Does not own the rules or applying steps to them (Playbook).
 *
 * Layers: `SqliteRuleVotes.layer` (src/layers/learning/SqliteRuleVotes.ts).
 */
import { Context, type Effect } from "effect"
import type { Outcome } from "../domain/learning/confidence.ts"
import type { Cast, Tally } from "../domain/learning/consensus.ts"
import type { StorageError } from "../domain/storage/errors.ts"

/** A shared rule: the playbook it lives in ('' the global one, else the agent's id) and its id. */
export interface RuleKey {
  readonly scope: string
  readonly ruleId: string
}

/** The scope of a playbook: '' for the global one, else the agent's id. */
export const scopeOf = (agentId: string | undefined): string => agentId ?? ""

export class RuleVotes extends Context.Service<RuleVotes, {
  /** The user's feedback on a shared rule (castVote, stored in one transaction). */
  readonly cast: (key: RuleKey, userId: string, outcome: Outcome, at: number) => Effect.Effect<Cast, StorageError>
  /** Takes back the counting of these users' votes (their steps could not be written to the rule). */
  readonly uncount: (key: RuleKey, userIds: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
  /** The user's non-zero adjustments of shared rules in these scopes, keyed `{scope}\0{ruleId}`. */
  readonly personal: (userId: string, scopes: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, number>, StorageError>
  /** The votes on a rule, counted. */
  readonly tally: (key: RuleKey) => Effect.Effect<Tally, StorageError>
  /** Forgets a rule's votes (it was removed). */
  readonly forget: (key: RuleKey) => Effect.Effect<void, StorageError>
  /**
   * A removed user's votes go to the id they are removed as (issue 23, UserRemoval): a vote counted
   * into a rule stays counted and its user is still counted once, and their own adjustments reach no
   * later user of the same id. How many.
   */
  readonly moveUser: (userId: string, removedAs: string) => Effect.Effect<number, StorageError>
}>()("anna/RuleVotes") {}

/** The key `personal` uses for a rule. */
export const personalKey = (key: RuleKey): string => `${key.scope}\0${key.ruleId}`
