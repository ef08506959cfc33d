/**
 * The retrieval evaluation's dataset (bench/support/retrievalData.ts) keeps its promises, checked
 * again from the stored sessions rather than from the templates: every context-dependent question
 * shares no content word with its evidence turn and at least one with a turn at ±1..±2 of it,
 * every multi-hop question has two evidence turns or more, and one seed gives one dataset.
 */
import { assert, describe, it } from "@effect/vitest"
import { makeChecker, makeDataset } from "../../bench/support/retrievalData.ts"
import { messageText } from "../../src/domain/message.ts"

const options = { seed: 5, users: 3, sessionsPerUser: 4, fillerExchanges: 60 }

describe("retrieval dataset", () => {
  const data = makeDataset(options)
  const session = new Map(data.sessions.map((s) => [s.ref.key, s.messages]))

  it("has context-dependent questions in English and Chinese, and multi-hop ones", () => {
    const count = (c: string) => data.questions.filter((q) => q.category === c).length
    assert.isAbove(count("context"), 10)
    assert.isAbove(count("context (Chinese)"), 5)
    assert.isAbove(count("multi-hop"), 5)
  })

  it("context questions: no content word in their evidence turn, at least one in a neighbouring turn", () => {
    const checker = makeChecker()
    try {
      for (const q of data.questions.filter((q) => q.category === "context" || q.category === "context (Chinese)")) {
        const messages = session.get(q.sessionKey) ?? []
        assert.strictEqual(q.evidence.length, 1, q.text)
        const seq = q.evidence[0] ?? 0
        const text = (at: number) => {
          const m = messages[at - 1]
          return m === undefined ? "" : messageText(m)
        }
        assert.deepStrictEqual([...checker.sharedWith(q.text, text(seq))], [], `${q.text} <- ${text(seq)}`)
        const around = [seq - 2, seq - 1, seq + 1, seq + 2].map(text).join("\n")
        assert.isAbove(checker.sharedWith(q.text, around).size, 0, `${q.text} | ${around}`)
      }
    } finally {
      checker.close()
    }
  })

  it("multi-hop questions have two evidence turns or more, all in their session", () => {
    for (const q of data.questions.filter((q) => q.category === "multi-hop")) {
      const messages = session.get(q.sessionKey) ?? []
      assert.isAtLeast(new Set(q.evidence).size, 2, q.text)
      for (const seq of q.evidence) assert.isDefined(messages[seq - 1], q.text)
    }
  })

  it("is deterministic: one seed, one dataset; another seed, another", () => {
    const again = makeDataset(options)
    assert.strictEqual(JSON.stringify(again), JSON.stringify(data))
    assert.notStrictEqual(JSON.stringify(makeDataset({ ...options, seed: 6 }).questions), JSON.stringify(data.questions))
  })
})
