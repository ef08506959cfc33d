/**
 * SkillRanking over the installed skills (Skills) and their outcomes (SkillStats): what
 * `anna skill rank` printed from its own code before the admin API needed the same answer.
 */
import { Effect, Layer, Random } from "effect"
import { type Arm, alphaOf, betaOf, rank as rankArms } from "../../domain/learning/thompson.ts"
import { matches, searchWords } from "../../domain/skills/skill.ts"
import { Skills } from "../../services/Skills.ts"
import { type RankQuery, SkillRanking } from "../../services/SkillRanking.ts"
import { type SkillRecord, SkillStats } from "../../services/SkillStats.ts"

const ZERO: Arm = { successes: 0, failures: 0 }

/** Counts by skill name, summed over the records (several agents' counts of a global skill). */
export const byName = (records: ReadonlyArray<SkillRecord>): ReadonlyMap<string, Arm> => {
  const out = new Map<string, Arm>()
  for (const r of records) {
    const had = out.get(r.name) ?? ZERO
    out.set(r.name, { successes: had.successes + r.successes, failures: had.failures + r.failures })
  }
  return out
}

interface Candidate {
  readonly name: string
  readonly description: string
  readonly scope: "global" | "agent" | "user"
  readonly arm: Arm
}

export const make = Effect.gen(function*() {
  const skills = yield* Skills
  const stats = yield* SkillStats

  const rank = Effect.fn("SkillRanking.rank")(function*(q: RankQuery) {
    const operator = [...(yield* skills.list(q.agentId))].sort((a, b) => a.name.localeCompare(b.name))
    // Without an agent: the global skills, with every agent's counts of them together.
    const arms = q.agentId === undefined ? byName(yield* stats.list(undefined, "")) : yield* stats.arms(q.agentId, "", operator.map((s) => s.name))
    const candidates: Array<Candidate> = operator.map((s) => ({ name: s.name, description: s.description, scope: s.scope, arm: arms.get(s.name) ?? ZERO }))
    if (q.userId !== undefined) {
      // The user's own skills live in their workspace; those anna has outcomes for are known here.
      for (const [name, arm] of byName(yield* stats.list(q.agentId, q.userId))) {
        if (!candidates.some((c) => c.name === name)) candidates.push({ name, description: "", scope: "user", arm })
      }
    }
    const words = searchWords(q.query ?? "")
    const found = candidates.filter((c) => matches(c, words))
    const draw = Effect.gen(function*() {
      const random = yield* Random.Random
      return rankArms(found, (c) => c.arm, q.by, () => random.nextDoubleUnsafe())
    })
    const ranked = q.seed !== undefined ? yield* draw.pipe(Random.withSeed(q.seed)) : yield* draw
    return {
      candidates: candidates.length,
      ranked: ranked.map(({ item, score }, i) => ({
        rank: i + 1,
        name: item.name,
        description: item.description,
        scope: item.scope,
        successes: item.arm.successes,
        failures: item.arm.failures,
        alpha: alphaOf(item.arm),
        beta: betaOf(item.arm),
        score
      }))
    }
  })

  return SkillRanking.of({ rank })
})

export const layer = Layer.effect(SkillRanking, make)
