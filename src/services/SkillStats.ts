/**
 * SkillStats — how well each skill has worked (issue 15): success and failure counts, from which a
 * skill's Beta(α = successes + 1, β = failures + 1) is ranked by Thompson sampling
 * (src/domain/learning/thompson.ts). Operator skills are counted per agent (user ''), a chat user's
 * own skills per agent and user. SQLite (migration 0021, table skill_stats).
 *
 * Layers: `SqliteSkillStats.layer` (src/layers/learning/SqliteSkillStats.ts).
 */
import { Context, type Effect } from "effect"
import type { Outcome } from "../domain/learning/confidence.ts"
import type { Arm } from "../domain/learning/thompson.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export interface SkillKey {
  readonly agentId: string
  /** '' for the operator's skills. */
  readonly userId: string
  readonly name: string
}

export interface SkillRecord extends SkillKey, Arm {
  readonly updatedAt: number
}

export class SkillStats extends Context.Service<SkillStats, {
  /** The counts of these skills (absent ones: 0/0). */
  readonly arms: (agentId: string, userId: string, names: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Arm>, StorageError>
  /** Every recorded skill of an agent (all users when userId is undefined). */
  readonly list: (agentId: string | undefined, userId?: string) => Effect.Effect<ReadonlyArray<SkillRecord>, StorageError>
  readonly record: (key: SkillKey, outcome: Outcome) => Effect.Effect<Arm, StorageError>
  /** Deletes a removed user's records (their own skills went with their workspace); how many. */
  readonly removeUser: (userId: string) => Effect.Effect<number, StorageError>
}>()("anna/SkillStats") {}
