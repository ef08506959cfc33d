/**
 * Playbook — the procedural memory (issue 15): confidence-scored rules kept as human-readable YAML,
 * one file per agent (`$ANNA_HOME/workspaces/<agent>/playbook.yaml`, the operator's folder, never
 * mounted into a sandbox) and one global (`$ANNA_HOME/playbook.yaml`). An agent sees its own rules
 * and the global ones, its own taking precedence over a global rule with the same id.
 *
 * Owns the files (atomic writes: temp file + rename; a hand-edited file with a mistake is reported
 * with its line and never overwritten; files re-read only when they change), the rules' lifecycle
 * (proposals deduplicated, feedback, sweep, inversion proposals and their application, promotion of
 * a user-scoped rule), and choosing the rules to inject for a turn. Does not own diary entries, what
 * was injected when (Diary), or when feedback happens (Learning).
 *
 * Feedback has two weights (issue 23): the operator's applies at once, and so does a user's on a rule
 * of their own; a chat user's feedback on a rule for every user is a vote (RuleVotes), which moves
 * that user's own view at once and the rule itself only when CONSENSUS_USERS distinct users agree,
 * each user counted once (src/domain/learning/consensus.ts). So `list` is what every user is given,
 * and `view` what one user is given.
 *
 * `agentId` undefined means the global playbook alone.
 *
 * On PostgreSQL (issue 28) the rules are rows of the playbook_rules table rather than files, so that
 * several gateways share them; `rules` and `replace` are how `anna playbook export|import` give the
 * operator the same YAML to edit by hand.
 *
 * Layers: `YamlPlaybook.layer` (src/layers/learning/YamlPlaybook.ts).
 */
import { Context, type Effect } from "effect"
import type { InversionProposal } from "../domain/learning/antiPattern.ts"
import type { Outcome, SweepReport } from "../domain/learning/confidence.ts"
import type { Tally } from "../domain/learning/consensus.ts"
import type { SelectedContext } from "../domain/learning/context.ts"
import type { PlaybookError, RuleNotFound, RuleRejected } from "../domain/learning/errors.ts"
import type { PlaybookRule, SourcedRule } from "../domain/learning/rule.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export interface RuleProposal {
  readonly agentId: string | undefined
  /** The user it was learned from (the rule is then theirs only); undefined: every user. */
  readonly user: string | undefined
  readonly text: string
  readonly tags: ReadonlyArray<string>
  readonly sourceEntries: ReadonlyArray<string>
  readonly antiPattern: boolean
  /**
   * Limits on the rules scoped to `user` in the file, checked in the same step as the insert (under
   * the file's lock, and again when another process changed the file meanwhile), so proposals made
   * at once cannot overshoot them. A proposal that would pass one is refused (RuleRejected).
   */
  readonly limits?: UserRuleLimits | undefined
}

export interface UserRuleLimits {
  /** New rules created in the last 24 hours. */
  readonly perDay: number
  /** Rules in all. */
  readonly total: number
}

/** What `replace` did: rule ids added, changed and removed, and how many rules stayed as they were. */
export interface ReplaceReport {
  readonly added: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly unchanged: number
  /** PostgreSQL: ids of rows that did not decode, now replaced by the new rules (or deleted). */
  readonly invalid: ReadonlyArray<string>
}

/** One playbook's rules as stored, and (PostgreSQL) the rows left out because they do not decode. */
export interface StoredRules {
  readonly rules: ReadonlyArray<PlaybookRule>
  readonly invalid: ReadonlyArray<{ readonly id: string; readonly reason: string }>
}

export interface ProposalResult {
  /** The new rule, or the one it duplicates (as it is now). */
  readonly rule: PlaybookRule
  readonly created: boolean
  /** A duplicate of a rule of the same scope: the tags it gained (none when nothing changed). */
  readonly addedTags: ReadonlyArray<string>
}

/** Who gives feedback: the operator (CLI, admin), whose word applies at once, or a chat user. */
export type FeedbackFrom = "operator" | { readonly user: string }

export interface RuleFeedback {
  /** The rule as the giver now sees it (a user: with their own adjustment of a shared rule). */
  readonly rule: PlaybookRule
  /**
   * `applied`: the rule changed for everyone it is for (the operator's feedback, a user's on their own
   * rule, or the feedback that completed a consensus on a shared rule); `noted`: a user's feedback on a
   * shared rule that moved only their own view.
   */
  readonly effect: "applied" | "noted"
  /** A user's feedback on a shared rule: distinct users whose latest feedback agrees (the user included); else 0. */
  readonly agreeing: number
}

export interface ContextQuery {
  readonly agentId: string
  /** Rules scoped to another user are never chosen. */
  readonly userId: string
  readonly tags: ReadonlyArray<string>
}

export interface InjectionContext extends SelectedContext {
  /** The prompt section (formatForPrompt), "" when no rule was chosen. */
  readonly text: string
}

export class Playbook extends Context.Service<Playbook, {
  /** The agent's rules and the global ones it does not shadow (or the global ones alone), by id. */
  readonly list: (agentId: string | undefined) => Effect.Effect<ReadonlyArray<SourcedRule>, PlaybookError>
  readonly get: (agentId: string | undefined, id: string) => Effect.Effect<SourcedRule, PlaybookError | RuleNotFound>
  /** Every tag of the rules `list(agentId)` gives (normalised), to match words of a message against. */
  readonly tags: (agentId: string) => Effect.Effect<ReadonlySet<string>, PlaybookError>
  /**
   * `list(agentId)` as `userId` is given it: the rules for every user with that user's own adjustment
   * (their feedback not in the shared rule) applied; other users' rules as they are (callers filter).
   */
  readonly view: (agentId: string, userId: string) => Effect.Effect<ReadonlyArray<SourcedRule>, PlaybookError | StorageError>
  /** The rules to inject for a turn (the user's view) and their prompt section (nothing is written). */
  readonly context: (query: ContextQuery) => Effect.Effect<InjectionContext, PlaybookError | StorageError>
  /**
   * Adds a rule to the agent's playbook (or the global one), unless it duplicates one the same users
   * see (normalised text or near duplicate): then a rule of the same scope gains the new source
   * entries and tags, and a rule for every user proposed again by one user is left as it is.
   */
  readonly propose: (proposal: RuleProposal) => Effect.Effect<ProposalResult, PlaybookError | RuleRejected>
  /**
   * Success or failure for each rule (the one in the file it lives in), from the operator or a user
   * (see the header); unknown ids, and rules scoped to another user, are skipped.
   */
  readonly feedback: (
    agentId: string | undefined,
    ids: ReadonlyArray<string>,
    outcome: Outcome,
    from: FeedbackFrom
  ) => Effect.Effect<ReadonlyArray<RuleFeedback>, PlaybookError | StorageError>
  /** Users' feedback on a rule (where `get` finds it): their latest votes, and how many are counted into it. */
  readonly votes: (agentId: string | undefined, id: string) => Effect.Effect<Tally, PlaybookError | RuleNotFound | StorageError>
  /** The maintenance sweep of one file (the agent's own rules, or the global ones); written when something moved. */
  readonly sweep: (agentId: string | undefined) => Effect.Effect<SweepReport, PlaybookError>
  /** Inversion proposals for the agent's own rules (or the global ones). Nothing is written. */
  readonly review: (agentId: string | undefined) => Effect.Effect<ReadonlyArray<InversionProposal>, PlaybookError>
  /** Applies the proposals for these rule ids (an id with no proposal: RuleNotFound, nothing applied). */
  readonly apply: (agentId: string | undefined, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<InversionProposal>, PlaybookError | RuleNotFound>
  /** Makes a user-scoped rule apply to every user of the agent (`global`: moves it to the global playbook). */
  readonly promote: (agentId: string, id: string, options: { readonly global: boolean }) => Effect.Effect<PlaybookRule, PlaybookError | RuleNotFound>
  /** Removes a rule from the file it lives in (and forgets users' feedback on it). */
  readonly remove: (agentId: string | undefined, id: string) => Effect.Effect<PlaybookRule, PlaybookError | RuleNotFound>
  /**
   * The rules of one file alone (the agent's own, or the global ones), in order, as stored. On
   * PostgreSQL a row that does not decode is left out and named in `invalid` (export is how such a
   * row is fixed), where every other method refuses the scope.
   */
  readonly rules: (agentId: string | undefined) => Effect.Effect<StoredRules, PlaybookError>
  /**
   * Replaces the rules of one file (the agent's own, or the global ones) with `rules`, in one update
   * (nothing is written when they are the same, in the same order); users' feedback on a removed rule
   * is forgotten. On PostgreSQL rows that do not decode are replaced too.
   */
  readonly replace: (agentId: string | undefined, rules: ReadonlyArray<PlaybookRule>) => Effect.Effect<ReplaceReport, PlaybookError>
  /** Where the rules are: the agent's file (when given) and the global one; on PostgreSQL, the table and scope in words. */
  readonly paths: (agentId: string | undefined) => { readonly agent?: string | undefined; readonly global: string }
}>()("anna/Playbook") {}
