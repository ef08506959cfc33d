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
 * `agentId` undefined means the global playbook alone.
 *
 * Layers: `YamlPlaybook.layer` (src/layers/learning/YamlPlaybook.ts).
 */
import { Context, type Effect } from "effect"
import type { InversionProposal } from "../domain/learning/antiPattern.ts"
import type { Outcome, SweepReport } from "../domain/learning/confidence.ts"
import type { SelectedContext } from "../domain/learning/context.ts"
import type { PlaybookError, RuleNotFound, RuleRejected } from "../domain/learning/errors.ts"
import type { PlaybookRule, SourcedRule } from "../domain/learning/rule.ts"

export interface RuleProposal {
  readonly agentId: string | undefined
  /** The user it was learned from (the rule is then theirs only); undefined: every user. */
  readonly user: string | undefined
  readonly text: string
  readonly tags: ReadonlyArray<string>
  readonly sourceEntries: ReadonlyArray<string>
  readonly antiPattern: boolean
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
  /** The rules to inject for a turn and their prompt section (nothing is written). */
  readonly context: (query: ContextQuery) => Effect.Effect<InjectionContext, PlaybookError>
  /**
   * Adds a rule to the agent's playbook (or the global one), unless it duplicates one the same users
   * see (normalised text or near duplicate): then that rule gains the new source entries and tags.
   */
  readonly propose: (proposal: RuleProposal) => Effect.Effect<{ readonly rule: PlaybookRule; readonly created: boolean }, PlaybookError | RuleRejected>
  /** Success or failure for each rule (in the file it lives in); unknown ids are skipped. Returns the updated rules. */
  readonly feedback: (agentId: string | undefined, ids: ReadonlyArray<string>, outcome: Outcome) => Effect.Effect<ReadonlyArray<PlaybookRule>, PlaybookError>
  /** The maintenance sweep of one file (the agent's own rules, or the global ones); written when something moved. */
  readonly sweep: (agentId: string | undefined) => Effect.Effect<SweepReport, PlaybookError>
  /** Inversion proposals for the agent's own rules (or the global ones). Nothing is written. */
  readonly review: (agentId: string | undefined) => Effect.Effect<ReadonlyArray<InversionProposal>, PlaybookError>
  /** Applies the proposals for these rule ids (an id with no proposal: RuleNotFound, nothing applied). */
  readonly apply: (agentId: string | undefined, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<InversionProposal>, PlaybookError | RuleNotFound>
  /** Makes a user-scoped rule apply to every user of the agent (`global`: moves it to the global playbook). */
  readonly promote: (agentId: string, id: string, options: { readonly global: boolean }) => Effect.Effect<PlaybookRule, PlaybookError | RuleNotFound>
  /** Removes a rule from the file it lives in. */
  readonly remove: (agentId: string | undefined, id: string) => Effect.Effect<PlaybookRule, PlaybookError | RuleNotFound>
  /** The files: the agent's (when given) and the global one. */
  readonly paths: (agentId: string | undefined) => { readonly agent?: string | undefined; readonly global: string }
}>()("anna/Playbook") {}
