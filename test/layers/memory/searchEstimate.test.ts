/**
 * A common term's matches in a scope, estimated from its newest matches (layers/memory/memorySearch.ts
 * `estimateMatching`, issue 25): the share of the scope's rows from the oldest of them on, counted per
 * conversation and in proportion inside the one that straddles it.
 */
import { assert, describe, it } from "@effect/vitest"
import { estimateMatching, type Range } from "../../../src/layers/memory/memorySearch.ts"

const range = (first: number, last: number, n = last - first + 1): Range => ({ first, last, n })
const every = (step: number, from: number, to: number) => Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step)

describe("estimateMatching", () => {
  it("a term in every other row of the newest conversation: half the scope's rows", () => {
    // Two sessions of 1,000 rows one after the other; the newest matches start in the second.
    const ranges = [range(1, 1000), range(1001, 2000)]
    assert.strictEqual(estimateMatching(ranges, 2000, every(2, 1002, 2000)), 1001)
  })

  it("counts whole conversations after the oldest match and a share of the one it falls in", () => {
    // Sessions sharing the id space with others: 500 rows spread over 1..1000, 500 over 1001..2000.
    const ranges = [range(1, 1000, 500), range(1001, 2000, 500)]
    // 60 matches from id 501 on, where the scope has 250 + 500 rows: 8 % of its 1,000.
    assert.strictEqual(estimateMatching(ranges, 1000, every(25, 501, 1976)), 80)
  })

  it("stays between the matches seen and the scope's rows", () => {
    const ranges = [range(1, 100)]
    assert.strictEqual(estimateMatching(ranges, 100, every(1, 1, 100)), 100)
    assert.strictEqual(estimateMatching(ranges, 100, [100]), 100)
    assert.strictEqual(estimateMatching([range(1, 10, 10)], 1_000, every(1, 1, 10)), 1_000)
    assert.strictEqual(estimateMatching([], 0, [5]), 0)
  })

  it("scope All is one range of every id", () => {
    // The newest 2,000 matches of a term in every tenth row.
    assert.closeTo(estimateMatching([range(1, 1_000_000)], 1_000_000, every(10, 980_010, 1_000_000)), 100_000, 100)
  })
})
