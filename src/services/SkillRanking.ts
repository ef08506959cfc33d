/**
 * SkillRanking — the skills in the order an agent's search gives them (issue 15): `anna skill rank`
 * and the admin API's `GET /api/skills/rank`. The candidates are the skills an agent sees with that
 * agent's counts (or, without an agent, the global skills with every agent's counts together), plus
 * a user's own skills that have recorded outcomes; they are ranked by one Thompson draw from each
 * skill's Beta(successes + 1, failures + 1), or by its mean or upper confidence bound (debugging).
 *
 * Owns choosing the candidates and their counts; not the counts themselves (SkillStats), the
 * installed skills (Skills) nor the ranking's math (src/domain/learning/thompson.ts). The draws come
 * from Effect's `Random` (a `seed` makes them reproducible).
 *
 * Layers: `SkillRanking.layer` (src/layers/learning/SkillRanking.ts).
 */
import { Context, type Effect } from "effect"
import type { RankBy } from "../domain/learning/thompson.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export interface RankQuery {
  /** The agent whose skills and counts (default: the global skills, every agent's counts together). */
  readonly agentId?: string | undefined
  /** Adds this user's own skills that have recorded outcomes (scope `user`). */
  readonly userId?: string | undefined
  /** Words every listed skill contains in its name or description. */
  readonly query?: string | undefined
  readonly by: RankBy
  /** For `sample`: the same seed gives the same draws. */
  readonly seed?: number | undefined
}

export interface RankedSkill {
  readonly rank: number
  readonly name: string
  readonly description: string
  readonly scope: "global" | "agent" | "user"
  readonly successes: number
  readonly failures: number
  readonly alpha: number
  readonly beta: number
  /** The draw, the mean or the bound, as `by` says. */
  readonly score: number
}

export class SkillRanking extends Context.Service<SkillRanking, {
  /** The matching skills best first, and how many candidates there were before the query. */
  readonly rank: (query: RankQuery) => Effect.Effect<{ readonly ranked: ReadonlyArray<RankedSkill>; readonly candidates: number }, StorageError>
}>()("anna/SkillRanking") {}
