import { assert, describe, it } from "@effect/vitest"
import {
  type ChunkLimits,
  contextTokens,
  freshTailStart,
  type ItemMeta,
  planCondensedChunks,
  planLeafChunks,
  selectForBudget,
  type Span,
  unitsOf
} from "../../../src/domain/memory/context.ts"

/** Builds items from a compact description, positions 1.. in order. */
type Spec =
  | { readonly m: number; readonly cont?: boolean }
  | { readonly s: number; readonly depth: number }

const build = (specs: ReadonlyArray<Spec>): Array<ItemMeta> =>
  specs.map((spec, i) =>
    "m" in spec
      ? { position: i + 1, kind: "message", refId: 100 + i, tokens: spec.m, continuesUnit: spec.cont === true, depth: -1 }
      : { position: i + 1, kind: "summary", refId: 500 + i, tokens: spec.s, continuesUnit: false, depth: spec.depth }
  )

const msgs = (n: number, tokens = 10): Array<Spec> => Array.from({ length: n }, () => ({ m: tokens }))
const sums = (n: number, depth: number, tokens = 10): Array<Spec> => Array.from({ length: n }, () => ({ s: tokens, depth }))
const tokensOf = (items: ReadonlyArray<ItemMeta>, span: Span) =>
  items.slice(span.start, span.end).reduce((n, it) => n + it.tokens, 0)

describe("freshTailStart", () => {
  it("starts at the freshTail-th message from the end", () => {
    const items = build(msgs(10))
    assert.strictEqual(freshTailStart(items, 3), 7)
    assert.strictEqual(freshTailStart(items, 1), 9)
    assert.strictEqual(freshTailStart(items, 10), 0)
  })

  it("is the end (empty tail) for freshTail 0 and 0 for no items", () => {
    assert.strictEqual(freshTailStart(build(msgs(5)), 0), 5)
    assert.strictEqual(freshTailStart([], 5), 0)
  })

  it("starts at the first message when there are fewer messages than freshTail", () => {
    assert.strictEqual(freshTailStart(build(msgs(3)), 20), 0)
    // summaries before the messages stay outside the tail
    const items = build([...sums(2, 0), ...msgs(3)])
    assert.strictEqual(freshTailStart(items, 20), 2)
  })

  it("counts messages only, not summaries", () => {
    const items = build([...msgs(2), { s: 10, depth: 0 }, ...msgs(2)])
    // 3 messages from the end: indices 4, 3, then 1 (skipping the summary at 2)
    assert.strictEqual(freshTailStart(items, 3), 1)
  })

  it("never starts inside a tool unit", () => {
    // 0 user, 1 assistant tool_use, 2-3 tool results (continue the unit), 4 assistant
    const items = build([{ m: 10 }, { m: 10 }, { m: 10, cont: true }, { m: 10, cont: true }, { m: 10 }])
    assert.strictEqual(freshTailStart(items, 1), 4)
    assert.strictEqual(freshTailStart(items, 2), 1)
    assert.strictEqual(freshTailStart(items, 3), 1)
    assert.strictEqual(freshTailStart(items, 4), 1)
    assert.strictEqual(freshTailStart(items, 5), 0)
    for (let t = 0; t <= 6; t++) {
      const start = freshTailStart(items, t)
      assert.isFalse(items[start]?.continuesUnit === true, `tail ${t} starts inside a unit at ${start}`)
    }
  })
})

describe("unitsOf", () => {
  it("splits a range into atomic units", () => {
    const items = build([{ m: 1 }, { m: 1 }, { m: 1, cont: true }, { m: 1, cont: true }, { m: 1 }, { m: 1 }])
    assert.deepStrictEqual(unitsOf(items, 0, 6), [
      { start: 0, end: 1 },
      { start: 1, end: 4 },
      { start: 4, end: 5 },
      { start: 5, end: 6 }
    ])
  })

  it("covers a sub-range exactly and is empty for an empty range", () => {
    const items = build([{ m: 1 }, { m: 1 }, { m: 1, cont: true }, { m: 1 }])
    assert.deepStrictEqual(unitsOf(items, 1, 3), [{ start: 1, end: 3 }])
    assert.deepStrictEqual(unitsOf(items, 2, 2), [])
    const units = unitsOf(items, 0, 4)
    assert.strictEqual(units[0]?.start, 0)
    assert.strictEqual(units[units.length - 1]?.end, 4)
    for (let i = 1; i < units.length; i++) assert.strictEqual(units[i]?.start, units[i - 1]?.end)
  })
})

describe("freshTailStart with a token cap", () => {
  it("moves forward a whole unit at a time until the tail fits the cap", () => {
    // 0..3 messages of 10; 4 tool_use 10 + 5,6 its results 10 each (one unit of 30); 7 of 10
    const items = build([...msgs(4), { m: 10 }, { m: 10, cont: true }, { m: 10, cont: true }, { m: 10 }])
    assert.strictEqual(freshTailStart(items, 20), 0)
    assert.strictEqual(freshTailStart(items, 20, 80), 0)
    assert.strictEqual(freshTailStart(items, 20, 79), 1)
    assert.strictEqual(freshTailStart(items, 20, 40), 4)
    // 39 cannot hold the unit [4..6] with the last message: only the newest unit stays
    assert.strictEqual(freshTailStart(items, 20, 39), 7)
    assert.strictEqual(freshTailStart(items, 2, 1000), freshTailStart(items, 2))
  })

  it("always keeps the newest unit, however large", () => {
    const items = build([...msgs(3), { m: 500 }, { m: 500, cont: true }])
    assert.strictEqual(freshTailStart(items, 20, 10), 3)
    assert.strictEqual(freshTailStart(build([{ m: 10 }, { m: 900 }]), 20, 5), 1)
  })
})

describe("selectForBudget", () => {
  // 0: 10, 1: 100 (a huge paste), 2: 10, then a 2-message tail of 5 each
  const items = build([{ m: 10 }, { m: 100 }, { m: 10 }, { m: 5 }, { m: 5 }])

  it("takes raw units newest first and stops at the first one that does not fit", () => {
    const sel = selectForBudget(items, 40, 2)
    assert.deepStrictEqual(sel.indices, [2, 3, 4])
    assert.strictEqual(sel.tailStart, 3)
    assert.strictEqual(sel.tokens, 20)
    assert.strictEqual(sel.omitted, 2)
  })

  it("keeps the whole fresh tail even over budget", () => {
    const sel = selectForBudget(items, 1, 2)
    assert.deepStrictEqual(sel.indices, [3, 4])
    assert.strictEqual(sel.tokens, 10)
    assert.strictEqual(sel.omitted, 3)
  })

  it("gives the summaries of the oldest history up last: before any raw message, oldest first", () => {
    // s0 (oldest, 30), s1 (20), then raw 10 × 4, then a tail of 2 × 5
    const mixed = build([{ s: 30, depth: 2 }, { s: 20, depth: 0 }, ...msgs(4), { m: 5 }, { m: 5 }])
    assert.deepStrictEqual(selectForBudget(mixed, 10 + 50 + 20, 2).indices, [0, 1, 4, 5, 6, 7])
    // room for one summary: the oldest
    assert.deepStrictEqual(selectForBudget(mixed, 10 + 35, 2).indices, [0, 6, 7])
    // the oldest does not fit, a newer one does
    assert.deepStrictEqual(selectForBudget(mixed, 10 + 25, 2).indices, [1, 6, 7])
  })

  it("caps the fresh tail at tailTokens, which leaves room for the summaries", () => {
    const mixed = build([{ s: 30, depth: 3 }, ...msgs(6, 20)])
    // a 20-message tail would be all six messages (120 > budget 100) and nothing older
    assert.deepStrictEqual(selectForBudget(mixed, 100, 20).indices, [1, 2, 3, 4, 5, 6])
    const capped = selectForBudget(mixed, 100, 20, 40)
    assert.strictEqual(capped.tailStart, 5)
    assert.deepStrictEqual(capped.indices, [0, 4, 5, 6])
    assert.strictEqual(capped.tokens, 90)
  })

  it("respects the budget when the tail fits", () => {
    const many = build(Array.from({ length: 60 }, (_, i) => (i % 9 === 4 ? { s: 1 + (i % 13), depth: i % 3 } : { m: 1 + ((i * 37) % 23) })))
    for (const budget of [50, 100, 200, 333, 500]) {
      for (const cap of [Number.POSITIVE_INFINITY, Math.floor(budget * 0.4)]) {
        const sel = selectForBudget(many, budget, 4, cap)
        const chosen = sel.indices.reduce((n, i) => n + (many[i]?.tokens ?? 0), 0)
        assert.strictEqual(sel.tokens, chosen)
        const tail = many.slice(sel.tailStart).reduce((n, it) => n + it.tokens, 0)
        if (tail <= budget) assert.isAtMost(chosen, budget)
        else assert.strictEqual(chosen, tail)
        assert.strictEqual(sel.indices.length + sel.omitted, many.length)
        // ascending, tail included
        for (let i = 1; i < sel.indices.length; i++) assert.isAbove(sel.indices[i] ?? 0, sel.indices[i - 1] ?? 0)
        for (let i = sel.tailStart; i < many.length; i++) assert.include(sel.indices, i)
        // the raw messages chosen before the tail are a contiguous run ending at the tail
        const raw = sel.indices.filter((i) => i < sel.tailStart && many[i]?.kind === "message")
        const first = raw[0]
        if (first !== undefined) {
          for (let i = first; i < sel.tailStart; i++) if (many[i]?.kind === "message") assert.include(raw, i)
        }
      }
    }
  })

  it("never cuts a tool unit: a unit is taken whole or not at all", () => {
    // unit [1..3] costs 30; with 25 of room it must be left out entirely
    const withUnit = build([{ m: 10 }, { m: 10 }, { m: 10, cont: true }, { m: 10, cont: true }, { m: 5 }])
    const sel = selectForBudget(withUnit, 30, 1)
    assert.deepStrictEqual(sel.indices, [4])
    const roomy = selectForBudget(withUnit, 35, 1)
    assert.deepStrictEqual(roomy.indices, [1, 2, 3, 4])
  })
})

const leafLimits = (over: Partial<ChunkLimits> = {}): ChunkLimits => ({
  freshTail: 5,
  minItems: 10,
  maxTokens: 1_000_000,
  maxItems: Number.MAX_SAFE_INTEGER,
  ...over
})

describe("planLeafChunks", () => {
  it("plans nothing below minItems messages outside the tail", () => {
    assert.deepStrictEqual(planLeafChunks(build(msgs(14)), leafLimits()), [])
    assert.deepStrictEqual(planLeafChunks(build(msgs(15)), leafLimits()), [{ start: 0, end: 10 }])
  })

  it("takes a whole run as one chunk when maxTokens is not reached", () => {
    assert.deepStrictEqual(planLeafChunks(build(msgs(40)), leafLimits()), [{ start: 0, end: 35 }])
  })

  it("closes chunks at maxTokens and leaves a short remainder", () => {
    // 35 messages of 100 tokens outside the tail; close at 1000 tokens (10 messages)
    const items = build(msgs(40, 100))
    const chunks = planLeafChunks(items, leafLimits({ maxTokens: 1000 }))
    assert.deepStrictEqual(chunks, [{ start: 0, end: 10 }, { start: 10, end: 20 }, { start: 20, end: 30 }])
    for (const c of chunks) assert.isAtLeast(tokensOf(items, c), 1000)
  })

  it("requires minItems even when maxTokens is reached early", () => {
    const items = build(msgs(30, 5000))
    const chunks = planLeafChunks(items, leafLimits({ maxTokens: 1000 }))
    assert.deepStrictEqual(chunks, [{ start: 0, end: 10 }, { start: 10, end: 20 }])
  })

  it("cuts chunks only at unit boundaries", () => {
    // a tool unit spans indices 8..12
    const specs: Array<Spec> = [
      ...msgs(8, 100),
      { m: 100 },
      { m: 100, cont: true },
      { m: 100, cont: true },
      { m: 100, cont: true },
      ...msgs(20, 100)
    ]
    const items = build(specs)
    const chunks = planLeafChunks(items, leafLimits({ maxTokens: 1000 }))
    assert.deepStrictEqual(chunks[0], { start: 0, end: 12 })
    for (const c of chunks) {
      assert.isFalse(items[c.start]?.continuesUnit === true)
      assert.isFalse(items[c.end]?.continuesUnit === true)
    }
  })

  it("plans each message run separately and never crosses summaries or the tail", () => {
    const items = build([...msgs(12), { s: 50, depth: 0 }, ...msgs(4), { s: 50, depth: 0 }, ...msgs(11), ...msgs(5)])
    const chunks = planLeafChunks(items, leafLimits())
    assert.deepStrictEqual(chunks, [{ start: 0, end: 12 }, { start: 18, end: 29 }])
    const tailStart = freshTailStart(items, 5)
    for (const c of chunks) {
      assert.isAtMost(c.end, tailStart)
      for (let i = c.start; i < c.end; i++) assert.strictEqual(items[i]?.kind, "message")
    }
  })
})

const condLimits = (over: Partial<ChunkLimits> = {}): ChunkLimits => ({
  freshTail: 2,
  minItems: 2,
  maxTokens: 1_000_000,
  maxItems: 8,
  ...over
})

describe("planCondensedChunks", () => {
  it("groups runs of same-depth summaries", () => {
    const items = build([...sums(3, 0), ...sums(2, 1), ...msgs(2)])
    assert.deepStrictEqual(planCondensedChunks(items, condLimits()), [{ start: 0, end: 3 }, { start: 3, end: 5 }])
  })

  it("needs at least minItems summaries", () => {
    assert.deepStrictEqual(planCondensedChunks(build([...sums(1, 0), ...msgs(2)]), condLimits()), [])
    assert.deepStrictEqual(planCondensedChunks(build([...sums(1, 0), ...sums(1, 1), ...msgs(2)]), condLimits()), [])
    assert.deepStrictEqual(planCondensedChunks(build([...sums(3, 0), ...msgs(2)]), condLimits({ minItems: 4 })), [])
  })

  it("caps the fan-in at maxItems and leaves a remainder under minItems", () => {
    const ten = build([...sums(10, 0), ...msgs(2)])
    assert.deepStrictEqual(planCondensedChunks(ten, condLimits()), [{ start: 0, end: 8 }, { start: 8, end: 10 }])
    const nine = build([...sums(9, 0), ...msgs(2)])
    assert.deepStrictEqual(planCondensedChunks(nine, condLimits()), [{ start: 0, end: 8 }])
  })

  it("closes a chunk before it would pass maxTokens", () => {
    const items = build([...sums(6, 0, 100), ...msgs(2)])
    const chunks = planCondensedChunks(items, condLimits({ maxTokens: 250 }))
    assert.deepStrictEqual(chunks, [{ start: 0, end: 2 }, { start: 2, end: 4 }, { start: 4, end: 6 }])
    for (const c of chunks) assert.isAtMost(tokensOf(items, c), 250)
  })

  it("ignores summaries inside the fresh tail and messages between runs", () => {
    const items = build([...sums(2, 0), { m: 10 }, ...sums(2, 0), { m: 10 }])
    // freshTail 2 → tail starts at index 2
    assert.deepStrictEqual(planCondensedChunks(items, condLimits()), [{ start: 0, end: 2 }])
    const split = build([...sums(2, 0), ...msgs(1), ...sums(2, 0), ...msgs(1), ...msgs(2)])
    assert.deepStrictEqual(planCondensedChunks(split, condLimits()), [{ start: 0, end: 2 }, { start: 3, end: 5 }])
  })

  it("with anyDepth, groups adjacent summaries whatever their depths", () => {
    const items = build([{ s: 10, depth: 3 }, { s: 10, depth: 1 }, { s: 10, depth: 0 }, { m: 10 }, { s: 10, depth: 0 }, ...msgs(2)])
    assert.deepStrictEqual(planCondensedChunks(items, condLimits()), [])
    assert.deepStrictEqual(planCondensedChunks(items, condLimits({ anyDepth: true })), [{ start: 0, end: 3 }])
  })

  it("leaves the token-capped fresh tail alone", () => {
    const items = build([...sums(2, 0), { m: 30 }, ...sums(2, 0), { m: 30 }, { m: 5 }])
    // 20 messages: the tail starts at the first message; a cap of 40 tokens keeps the last two only
    assert.deepStrictEqual(planCondensedChunks(items, condLimits({ freshTail: 20 })), [{ start: 0, end: 2 }])
    assert.deepStrictEqual(planCondensedChunks(items, condLimits({ freshTail: 20, tailTokens: 40 })), [
      { start: 0, end: 2 },
      { start: 3, end: 5 }
    ])
  })
})

describe("contextTokens", () => {
  it("sums every item", () => {
    assert.strictEqual(contextTokens(build([{ m: 3 }, { s: 7, depth: 0 }, { m: 5, cont: true }])), 15)
    assert.strictEqual(contextTokens([]), 0)
  })
})
