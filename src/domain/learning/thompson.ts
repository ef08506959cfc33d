/**
 * Skills ranked by a bandit (issue 15): each skill carries Beta(α, β) with α = successes + 1 and
 * β = failures + 1. Thompson sampling ranks by one draw from each skill's Beta (a new skill, Beta(1,1),
 * is uniform, so it still comes first sometimes: exploration); the deterministic rankings by mean and
 * by upper confidence bound are for debugging (`anna skill rank --by mean|ucb`). Pure: the random
 * source is a parameter (seeded in tests).
 */

/** Uniform in [0, 1). */
export type Uniform = () => number

export interface Arm {
  readonly successes: number
  readonly failures: number
}

export const alphaOf = (a: Arm): number => a.successes + 1
export const betaOf = (a: Arm): number => a.failures + 1

/** A standard normal draw (Box–Muller). */
const normal = (random: Uniform): number => {
  const u = 1 - random()
  const v = random()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
}

/** A Gamma(shape, 1) draw for shape ≥ 1 (Marsaglia–Tsang); shape < 1 boosted (Gamma(a+1)·U^(1/a)). */
export const sampleGamma = (shape: number, random: Uniform): number => {
  if (shape < 1) return sampleGamma(shape + 1, random) * (1 - random()) ** (1 / shape)
  const d = shape - 1 / 3
  const c = 1 / Math.sqrt(9 * d)
  for (;;) {
    let x: number
    let v: number
    do {
      x = normal(random)
      v = 1 + c * x
    } while (v <= 0)
    v = v * v * v
    const u = 1 - random()
    if (u < 1 - 0.0331 * x * x * x * x) return d * v
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v
  }
}

/** A Beta(α, β) draw: X/(X+Y) with X ~ Gamma(α), Y ~ Gamma(β). */
export const sampleBeta = (alpha: number, beta: number, random: Uniform): number => {
  const x = sampleGamma(alpha, random)
  const y = sampleGamma(beta, random)
  return x + y === 0 ? 0.5 : x / (x + y)
}

/** The Beta's mean α / (α + β). */
export const mean = (a: Arm): number => alphaOf(a) / (alphaOf(a) + betaOf(a))

/**
 * Upper confidence bound (UCB1 over the Beta's pseudo-counts): mean + √(2 ln T / n), n = α + β of
 * the arm, T = the sum of n over the ranked arms.
 */
export const ucb = (a: Arm, total: number): number => {
  const n = alphaOf(a) + betaOf(a)
  return mean(a) + Math.sqrt((2 * Math.log(Math.max(total, 2))) / n)
}

export type RankBy = "sample" | "mean" | "ucb"

export interface Ranked<A> {
  readonly item: A
  /** The value it was ranked by (a draw, the mean or the bound). */
  readonly score: number
}

/** Items best first by `by` (ties keep the input order). */
export const rank = <A>(items: ReadonlyArray<A>, armOf: (a: A) => Arm, by: RankBy, random: Uniform): ReadonlyArray<Ranked<A>> => {
  const total = items.reduce((n, i) => n + alphaOf(armOf(i)) + betaOf(armOf(i)), 0)
  const scored = items.map((item, index) => {
    const arm = armOf(item)
    const score = by === "sample" ? sampleBeta(alphaOf(arm), betaOf(arm), random) : by === "mean" ? mean(arm) : ucb(arm, total)
    return { item, score, index }
  })
  return scored.sort((a, b) => b.score - a.score || a.index - b.index).map(({ item, score }) => ({ item, score }))
}
