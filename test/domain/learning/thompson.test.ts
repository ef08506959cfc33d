/**
 * Skills ranked by Thompson sampling (issue 15), with a seeded random source: a skill with 50
 * successes and 2 failures ranks first in at least 90 % of draws, a new skill still ranks first
 * sometimes; the mean and UCB rankings are deterministic; the Beta sampler's mean is right.
 */
import { assert, describe, it } from "@effect/vitest"
import { alphaOf, type Arm, betaOf, mean, rank, sampleBeta, sampleGamma, ucb, type Uniform } from "../../../src/domain/learning/thompson.ts"

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
const mulberry32 = (seed: number): Uniform => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Skill extends Arm {
  readonly name: string
}
const A: Skill = { name: "A", successes: 50, failures: 2 }
const B: Skill = { name: "B", successes: 0, failures: 0 }
const C: Skill = { name: "C", successes: 5, failures: 5 }
const SKILLS = [A, B, C]
const names = (ranked: ReadonlyArray<{ readonly item: Skill }>) => ranked.map((r) => r.item.name)

describe("Beta parameters", () => {
  it("are α = successes + 1 and β = failures + 1; the mean is α / (α + β)", () => {
    assert.strictEqual(alphaOf(A), 51)
    assert.strictEqual(betaOf(A), 3)
    assert.strictEqual(alphaOf(B), 1)
    assert.strictEqual(betaOf(B), 1)
    assert.strictEqual(mean(A), 51 / 54)
    assert.strictEqual(mean(B), 0.5)
    assert.strictEqual(mean(C), 0.5)
  })
})

describe("Thompson sampling", () => {
  it("ranks 50/2 first in ≥ 90 % of 4,000 draws, and a new skill (0/0) first at least once", () => {
    const random = mulberry32(15)
    const draws = 4000
    const first = { A: 0, B: 0, C: 0 }
    for (let i = 0; i < draws; i++) {
      const ranked = rank(SKILLS, (s) => s, "sample", random)
      assert.strictEqual(ranked.length, 3)
      const top = ranked[0]?.item.name
      if (top === "A" || top === "B" || top === "C") first[top]++
      // Scores are draws in [0, 1], best first.
      for (let j = 0; j < ranked.length; j++) {
        const s = ranked[j]?.score ?? -1
        assert.isTrue(s >= 0 && s <= 1)
        if (j > 0) assert.isAtMost(s, ranked[j - 1]?.score ?? 2)
      }
    }
    assert.strictEqual(first.A + first.B + first.C, draws)
    assert.isAtLeast(first.A / draws, 0.9)
    assert.isAtLeast(first.B, 1)
    // The new skill explores more than the even one (Beta(1,1) reaches ~0.94 far more often than Beta(6,6)).
    assert.isAbove(first.B, first.C)
  })

  it("is reproducible from the seed", () => {
    const a = mulberry32(7)
    const b = mulberry32(7)
    for (let i = 0; i < 50; i++) {
      assert.deepStrictEqual(rank(SKILLS, (s) => s, "sample", a), rank(SKILLS, (s) => s, "sample", b))
    }
  })
})

describe("deterministic rankings", () => {
  const never: Uniform = () => {
    throw new Error("mean and UCB rankings draw no random number")
  }

  it("by mean: A first, then the even ones in input order", () => {
    assert.deepStrictEqual(names(rank(SKILLS, (s) => s, "mean", never)), ["A", "B", "C"])
    assert.deepStrictEqual(names(rank([C, B, A], (s) => s, "mean", never)), ["A", "C", "B"])
    assert.deepStrictEqual(rank(SKILLS, (s) => s, "mean", never).map((r) => r.score), [51 / 54, 0.5, 0.5])
  })

  it("by UCB (mean + √(2 ln T / n)): the untried skill first, then A, then C", () => {
    // n = α + β: A 54, B 2, C 12; T = 68.
    const total = 68
    const expected = [
      ["B", 0.5 + Math.sqrt((2 * Math.log(total)) / 2)],
      ["A", 51 / 54 + Math.sqrt((2 * Math.log(total)) / 54)],
      ["C", 0.5 + Math.sqrt((2 * Math.log(total)) / 12)]
    ]
    const ranked = rank(SKILLS, (s) => s, "ucb", never)
    assert.deepStrictEqual(ranked.map((r) => [r.item.name, r.score]), expected)
    assert.strictEqual(ucb(B, total), expected[0]?.[1])
    // The same order again, whatever the input order.
    assert.deepStrictEqual(names(rank([C, A, B], (s) => s, "ucb", never)), ["B", "A", "C"])
    // With a single untried arm, T is taken as at least 2 (ln 2 > 0), so the bound still explores.
    assert.strictEqual(ucb(B, 1), 0.5 + Math.sqrt(Math.log(2)))
  })

  it("keeps an empty list empty", () => {
    assert.deepStrictEqual(rank([], (s: Skill) => s, "sample", never), [])
  })
})

describe("the Beta sampler", () => {
  // The mean of N independent draws is off by more than 4 standard errors with probability ≈ 6·10⁻⁵
  // for a correct sampler; the seed is fixed, so the test is deterministic.
  const cases: ReadonlyArray<readonly [number, number]> = [[1, 1], [2, 5], [51, 3], [6, 6], [0.5, 0.5], [0.3, 2]]
  for (const [alpha, beta] of cases) {
    it(`Beta(${alpha}, ${beta}): the empirical mean is within 4 standard errors of α/(α+β), variance close too`, () => {
      const random = mulberry32(Math.round(alpha * 1000 + beta))
      const n = 20_000
      let sum = 0
      let sumSq = 0
      for (let i = 0; i < n; i++) {
        const x = sampleBeta(alpha, beta, random)
        assert.isTrue(x >= 0 && x <= 1)
        sum += x
        sumSq += x * x
      }
      const mu = alpha / (alpha + beta)
      const variance = (alpha * beta) / ((alpha + beta) ** 2 * (alpha + beta + 1))
      const se = Math.sqrt(variance / n)
      assert.isAtMost(Math.abs(sum / n - mu), 4 * se)
      // The sample variance: within 10 % (its relative standard error is ≤ 2 % at this N for these shapes).
      const sampleVariance = sumSq / n - (sum / n) ** 2
      assert.closeTo(sampleVariance / variance, 1, 0.1)
    })
  }

  /** The Beta CDF for integer α, β: P(X ≤ x) = P(at least α of α+β−1 uniforms are ≤ x). */
  const betaCdf = (alpha: number, beta: number, x: number): number => {
    const n = alpha + beta - 1
    let p = 0
    let choose = 1
    for (let j = 0; j <= n; j++) {
      if (j >= alpha) p += choose * x ** j * (1 - x) ** (n - j)
      choose = (choose * (n - j)) / (j + 1)
    }
    return p
  }

  for (const [alpha, beta] of [[1, 1], [2, 5], [6, 6], [51, 3]] as const) {
    it(`Beta(${alpha}, ${beta}): the draws pass a Kolmogorov–Smirnov test against the exact CDF (p = 0.001)`, () => {
      const random = mulberry32(alpha * 7919 + beta)
      const n = 20_000
      const xs = Array.from({ length: n }, () => sampleBeta(alpha, beta, random)).sort((a, b) => a - b)
      let d = 0
      xs.forEach((x, i) => {
        const f = betaCdf(alpha, beta, x)
        d = Math.max(d, (i + 1) / n - f, f - i / n)
      })
      // The KS statistic's 0.999 quantile is ≈ 1.95 / √n for large n.
      assert.isBelow(d, 1.95 / Math.sqrt(n))
    })
  }

  it("Gamma(k): the empirical mean is within 4 standard errors of k (variance k)", () => {
    for (const k of [0.5, 1, 3.5, 40]) {
      const random = mulberry32(k * 10)
      const n = 20_000
      let sum = 0
      for (let i = 0; i < n; i++) sum += sampleGamma(k, random)
      assert.isAtMost(Math.abs(sum / n - k), 4 * Math.sqrt(k / n))
    }
  })
})
