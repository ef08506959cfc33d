import { assert, describe, it } from "@effect/vitest"
import { type VerifyInput, verifySession } from "../../../src/domain/memory/verify.ts"

/**
 * A valid session: messages seq 1..6 (ids 101..106, at 1000 × seq), leaf summaries 1 (seq 1-2)
 * and 2 (seq 3-4), condensed summary 3 of depth 1 over them; the live context is [3, msg 5, msg 6].
 */
const valid = (): VerifyInput => ({
  sessionKey: "a:cli:u:main",
  messages: Array.from({ length: 6 }, (_, i) => ({ id: 101 + i, seq: i + 1, createdAt: 1000 * (i + 1) })),
  summaries: [
    { id: 1, kind: "leaf", depth: 0, earliestAt: 1000, latestAt: 2000, firstSeq: 1, lastSeq: 2 },
    { id: 2, kind: "leaf", depth: 0, earliestAt: 3000, latestAt: 4000, firstSeq: 3, lastSeq: 4 },
    { id: 3, kind: "condensed", depth: 1, earliestAt: 1000, latestAt: 4000, firstSeq: 1, lastSeq: 4 }
  ],
  summaryMessages: [
    { summaryId: 1, messageId: 101 },
    { summaryId: 1, messageId: 102 },
    { summaryId: 2, messageId: 103 },
    { summaryId: 2, messageId: 104 }
  ],
  summaryParents: [{ condensedId: 3, constituentId: 1 }, { condensedId: 3, constituentId: 2 }],
  items: [
    { position: 1, messageId: null, summaryId: 3 },
    { position: 5, messageId: 105, summaryId: null },
    { position: 6, messageId: 106, summaryId: null }
  ]
})

const expectProblem = (input: VerifyInput, fragment: string) => {
  const problems = verifySession(input)
  assert.isTrue(
    problems.some((p) => p.includes(fragment)),
    `expected a problem containing ${JSON.stringify(fragment)}, got ${JSON.stringify(problems)}`
  )
  for (const p of problems) assert.isTrue(p.startsWith("a:cli:u:main: "))
}

describe("verifySession", () => {
  it("accepts a valid structure", () => {
    assert.deepStrictEqual(verifySession(valid()), [])
  })

  it("accepts a session of raw messages only, and an empty session", () => {
    const v = valid()
    assert.deepStrictEqual(
      verifySession({
        ...v,
        summaries: [],
        summaryMessages: [],
        summaryParents: [],
        items: v.messages.map((m) => ({ position: m.seq, messageId: m.id, summaryId: null }))
      }),
      []
    )
    assert.deepStrictEqual(
      verifySession({ sessionKey: "a:cli:u:main", messages: [], summaries: [], summaryMessages: [], summaryParents: [], items: [] }),
      []
    )
  })

  it("reports a missing message seq", () => {
    const v = valid()
    expectProblem({ ...v, messages: v.messages.filter((m) => m.seq !== 5) }, "a message is missing")
  })

  it("reports a live item covering the wrong range", () => {
    const v = valid()
    expectProblem({
      ...v,
      items: [
        { position: 1, messageId: null, summaryId: 3 },
        { position: 5, messageId: 106, summaryId: null },
        { position: 6, messageId: 105, summaryId: null }
      ]
    }, "expected to start at 5")
  })

  it("reports messages the live context does not reach", () => {
    const v = valid()
    expectProblem({ ...v, items: v.items.slice(0, 2) }, "messages are unreachable")
  })

  it("reports an item referencing both or neither of a message and a summary", () => {
    const v = valid()
    expectProblem(
      { ...v, items: [...v.items.slice(0, 2), { position: 6, messageId: 106, summaryId: 2 }] },
      "must reference exactly one message or summary"
    )
    expectProblem(
      { ...v, items: [...v.items.slice(0, 2), { position: 6, messageId: null, summaryId: null }] },
      "must reference exactly one message or summary"
    )
  })

  it("reports a summary that is neither live nor part of another summary", () => {
    const v = valid()
    expectProblem({
      ...v,
      summaries: [...v.summaries, { id: 4, kind: "leaf", depth: 0, earliestAt: 5000, latestAt: 6000, firstSeq: 5, lastSeq: 6 }],
      summaryMessages: [...v.summaryMessages, { summaryId: 4, messageId: 105 }, { summaryId: 4, messageId: 106 }]
    }, "summary 4 is neither live nor part of another summary")
  })

  it("reports a live summary that also has a parent", () => {
    const v = valid()
    expectProblem({
      ...v,
      items: [
        { position: 1, messageId: null, summaryId: 1 },
        { position: 3, messageId: null, summaryId: 2 },
        ...v.items.slice(1)
      ]
    }, "live summary 1 also has a parent")
  })

  it("reports a condensed summary with the wrong depth", () => {
    const v = valid()
    expectProblem(
      { ...v, summaries: v.summaries.map((s) => (s.id === 3 ? { ...s, depth: 2 } : s)) },
      "condensed summary 3 has depth 2, but its deepest constituent has depth 0"
    )
    expectProblem(
      { ...v, summaries: v.summaries.map((s) => (s.id === 3 ? { ...s, depth: 0 } : s)) },
      "condensed summary 3 (depth 0) contains summary 1 of depth 0"
    )
  })

  it("accepts a condensed summary over mixed depths one deeper than the deepest (compaction to fit)", () => {
    const v = valid()
    // summary 2 as a condensed summary of depth 1 over a new leaf 4 and leaf 5; summary 3 then mixes depths 0 and 1
    const mixed: VerifyInput = {
      ...v,
      summaries: [
        v.summaries[0],
        { id: 4, kind: "leaf", depth: 0, earliestAt: 3000, latestAt: 3000, firstSeq: 3, lastSeq: 3 },
        { id: 5, kind: "leaf", depth: 0, earliestAt: 4000, latestAt: 4000, firstSeq: 4, lastSeq: 4 },
        { id: 2, kind: "condensed", depth: 1, earliestAt: 3000, latestAt: 4000, firstSeq: 3, lastSeq: 4 },
        { id: 3, kind: "condensed", depth: 2, earliestAt: 1000, latestAt: 4000, firstSeq: 1, lastSeq: 4 }
      ].flatMap((s) => (s === undefined ? [] : [s])),
      summaryMessages: [
        ...v.summaryMessages.filter((l) => l.summaryId === 1),
        { summaryId: 4, messageId: 103 },
        { summaryId: 5, messageId: 104 }
      ],
      summaryParents: [...v.summaryParents, { condensedId: 2, constituentId: 4 }, { condensedId: 2, constituentId: 5 }]
    }
    assert.deepStrictEqual(verifySession(mixed), [])
    expectProblem(
      { ...mixed, summaries: mixed.summaries.map((s) => (s.id === 3 ? { ...s, depth: 1 } : s)) },
      "condensed summary 3 (depth 1) contains summary 2 of depth 1"
    )
  })

  it("reports a condensed summary with fewer than two constituents", () => {
    const v = valid()
    expectProblem(
      { ...v, summaryParents: v.summaryParents.slice(0, 1) },
      "condensed summary 3 has 1 constituent(s), expected at least 2"
    )
  })

  it("reports a leaf with the wrong depth", () => {
    const v = valid()
    expectProblem({ ...v, summaries: v.summaries.map((s) => (s.id === 1 ? { ...s, depth: 1 } : s)) }, "leaf summary 1 has depth 1")
  })

  it("reports a time range that does not cover the sources", () => {
    const v = valid()
    expectProblem(
      { ...v, summaries: v.summaries.map((s) => (s.id === 1 ? { ...s, earliestAt: 1500 } : s)) },
      "summary 1 time range does not cover its sources"
    )
    expectProblem(
      { ...v, summaries: v.summaries.map((s) => (s.id === 3 ? { ...s, latestAt: 3999 } : s)) },
      "summary 3 time range does not cover its sources"
    )
  })

  it("reports a recorded seq range that differs from what a summary covers", () => {
    const v = valid()
    expectProblem(
      { ...v, summaries: v.summaries.map((s) => (s.id === 2 ? { ...s, lastSeq: 5 } : s)) },
      "summary 2 records seq 3..5 but covers 3..4"
    )
  })

  it("reports a leaf whose sources are not consecutive", () => {
    const v = valid()
    expectProblem({
      ...v,
      summaryMessages: [
        { summaryId: 1, messageId: 101 },
        { summaryId: 1, messageId: 103 },
        { summaryId: 2, messageId: 102 },
        { summaryId: 2, messageId: 104 }
      ]
    }, "leaf summary 1 sources are not consecutive at seq 3")
  })

  it("reports a leaf linking to a missing message and a leaf without sources", () => {
    const v = valid()
    expectProblem(
      { ...v, summaryMessages: v.summaryMessages.map((l) => (l.messageId === 104 ? { ...l, messageId: 999 } : l)) },
      "leaf summary 2 links to missing message 999"
    )
    expectProblem(
      { ...v, summaryMessages: v.summaryMessages.filter((l) => l.summaryId !== 2) },
      "leaf summary 2 has no source messages"
    )
  })

  it("reports a summary with two parents", () => {
    const v = valid()
    expectProblem({
      ...v,
      summaries: [...v.summaries, { id: 4, kind: "condensed", depth: 1, earliestAt: 1000, latestAt: 4000, firstSeq: 1, lastSeq: 4 }],
      summaryParents: [...v.summaryParents, { condensedId: 4, constituentId: 1 }, { condensedId: 4, constituentId: 2 }]
    }, "summary 1 has more than one parent")
  })

  it("reports constituents that are not consecutive", () => {
    const v = valid()
    expectProblem(
      { ...v, summaryParents: [{ condensedId: 3, constituentId: 2 }, { condensedId: 3, constituentId: 1 }] },
      "condensed summary 3 constituents are not consecutive"
    )
  })

  it("reports an unknown summary kind", () => {
    const v = valid()
    expectProblem({ ...v, summaries: v.summaries.map((s) => (s.id === 1 ? { ...s, kind: "other" } : s)) }, "unknown kind other")
  })

  it("caps the report at 200 problems", () => {
    const messages = Array.from({ length: 500 }, (_, i) => ({ id: i + 1, seq: 2 * (i + 1), createdAt: i }))
    const problems = verifySession({ sessionKey: "k", messages, summaries: [], summaryMessages: [], summaryParents: [], items: [] })
    assert.strictEqual(problems.length, 200)
  })
})
