/**
 * The heuristic reflection (no model): each signal (tool errors, corrections and complaints, thanks
 * and praise, in English and a few other languages), the status table, the quality formula, the
 * "asked:" accomplishments and the tags; and properties over any messages.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { DIARY_STATUSES, MAX_DIARY_ITEM_LENGTH, MAX_DIARY_ITEMS } from "../../../src/domain/learning/diary.ts"
import {
  frequentWords,
  heuristicEntry,
  heuristicQuality,
  heuristicStatus,
  MAX_ASKED_LENGTH,
  QUALITY_ANSWERED,
  QUALITY_BASE,
  QUALITY_COMPLAINT,
  QUALITY_MAX_COUNTED,
  QUALITY_PRAISE,
  QUALITY_TOOL_ERROR
} from "../../../src/domain/learning/heuristic.ts"
import { Message } from "../../../src/domain/message.ts"

const user = (text: string): Message => ({ role: "user", content: text })
const assistant = (text: string): Message => ({ role: "assistant", content: [{ type: "text", text }] })
const call = (id: string, name: string): Message => ({
  role: "assistant", content: [{ type: "text", text: "let me check" }, { type: "tool_use", id, name, input: { cmd: "ls" } }]
})
const result = (id: string, content: string, isError: boolean): Message => ({
  role: "tool_result", content: [{ type: "tool_result", tool_use_id: id, content, is_error: isError }]
})

/** A request, an answer, then the user's reply. */
const replyOf = (reply: string) => heuristicEntry([user("please rename the files"), assistant("done, renamed 3 files"), user(reply)])

describe("heuristic reflection: signals", () => {
  it("a failed tool call is a challenge naming the tool and the first line of its error", () => {
    const e = heuristicEntry([user("list my files"), call("t1", "bash"), result("t1", "\nls: cannot access 'x': No such file\nmore", true)])
    expect(e.challenges).toEqual(["tool bash failed: ls: cannot access 'x': No such file"])
    expect(e.status).toBe("mixed")
  })

  it("a tool result without is_error, or with is_error false, is no challenge", () => {
    const e = heuristicEntry([user("list my files"), call("t1", "bash"), result("t1", "a b c", false), assistant("a, b and c")])
    expect(e.challenges).toEqual([])
    expect(e.status).toBe("success")
  })

  it("a failed result whose call is not in the burst names the tool as unknown; block contents are read", () => {
    const e = heuristicEntry([
      user("go"),
      { role: "user", content: [{ type: "tool_result", tool_use_id: "gone", content: [{ type: "text", text: "timeout after 30s" }], is_error: true }] }
    ])
    expect(e.challenges).toEqual(["tool (unknown) failed: timeout after 30s"])
  })

  for (
    const complaint of [
      "No, that's not it",
      "that's wrong",
      "That’s wrong, the other folder",
      "this is NOT what I asked",
      "it doesn't work",
      "Still broken.",
      "you forgot the hidden files",
      "nope.",
      "Das ist falsch",
      "ça marche pas",
      "no funciona",
      "klappt nicht",
      "不对，是另一个文件夹"
    ]
  ) {
    it(`"${complaint}" after an answer is a correction: failure, and the challenge quotes it`, () => {
      const e = replyOf(complaint)
      expect(e.status).toBe("failure")
      expect(e.challenges).toEqual([`user objected: ${complaint.replace("’", "'")}`])
    })
  }

  for (const praise of ["thanks!", "Thank you", "great", "PERFECT", "works now", "danke schön", "merci", "¡gracias!", "谢谢"]) {
    it(`"${praise}" after an answer is praise: success`, () => {
      expect(replyOf(praise).status).toBe("success")
    })
  }

  for (const neutral of ["not great", "no thanks needed, next: the logs", "nothing works like grep", "I know the answer", "congratulations on the news"]) {
    it(`"${neutral}" is neither praise nor a correction (negation, word boundaries)`, () => {
      const e = replyOf(neutral)
      expect(e.challenges).toEqual([])
      expect(e.qualityScore).toBe(QUALITY_BASE + QUALITY_ANSWERED)
    })
  }

  it("the first request is not judged: \"it doesn't work, thanks in advance\" before any answer is neither", () => {
    const e = heuristicEntry([user("my script doesn't work, thanks in advance"), assistant("the path was wrong; fixed")])
    expect(e.status).toBe("success")
    expect(e.challenges).toEqual([])
    expect(e.qualityScore).toBe(QUALITY_BASE + QUALITY_ANSWERED)
  })
})

describe("heuristic reflection: status table", () => {
  const s = (praise: number, complaints: number, toolErrors: number, answered: boolean) => heuristicStatus({ praise, complaints, toolErrors, answered })
  it("praise without complaint is success, even after tool errors", () => {
    expect(s(1, 0, 0, true)).toBe("success")
    expect(s(2, 0, 3, false)).toBe("success")
  })
  it("complaint without praise is failure, with or without tool errors", () => {
    expect(s(0, 1, 0, true)).toBe("failure")
    expect(s(0, 2, 4, true)).toBe("failure")
  })
  it("praise and complaint together are mixed", () => {
    expect(s(1, 1, 0, true)).toBe("mixed")
  })
  it("tool errors without praise or complaint are mixed", () => {
    expect(s(0, 0, 1, true)).toBe("mixed")
  })
  it("no signal: success when the assistant answered, else mixed", () => {
    expect(s(0, 0, 0, true)).toBe("success")
    expect(s(0, 0, 0, false)).toBe("mixed")
  })
  it("the same table through whole bursts", () => {
    expect(heuristicEntry([user("hi"), assistant("hello"), user("great, but it still fails")]).status).toBe("mixed")
    expect(heuristicEntry([user("run it"), { role: "assistant", content: [{ type: "tool_use", id: "t", name: "bash", input: {} }] }]).status).toBe("mixed")
    expect(heuristicEntry([user("run it"), call("t", "bash")]).status).toBe("success")
    expect(heuristicEntry([user("run it")]).status).toBe("mixed")
    expect(heuristicEntry([]).status).toBe("mixed")
  })
})

describe("heuristic reflection: quality score", () => {
  const q = (praise: number, complaints: number, toolErrors: number, answered: boolean) => heuristicQuality({ praise, complaints, toolErrors, answered })
  it("is the documented sum, clamped to [0, 1] and rounded to two decimals", () => {
    expect(q(0, 0, 0, false)).toBe(QUALITY_BASE)
    expect(q(0, 0, 0, true)).toBe(0.6)
    expect(q(1, 0, 0, true)).toBe(0.75)
    expect(q(0, 1, 0, true)).toBe(0.4)
    expect(q(0, 0, 2, true)).toBe(0.5)
    expect(q(1, 1, 1, true)).toBe(0.5)
    expect(q(0, 3, 3, false)).toBe(0)
    expect(q(3, 0, 0, true)).toBe(1)
  })
  it(`counts at most ${QUALITY_MAX_COUNTED} signals of a kind`, () => {
    expect(q(10, 0, 0, false)).toBe(q(QUALITY_MAX_COUNTED, 0, 0, false))
    expect(q(0, 10, 0, true)).toBe(q(0, QUALITY_MAX_COUNTED, 0, true))
    expect(q(0, 0, 10, true)).toBe(Math.round((QUALITY_BASE + QUALITY_ANSWERED - QUALITY_MAX_COUNTED * QUALITY_TOOL_ERROR) * 100) / 100)
  })
  it("a complaint weighs more than praise", () => {
    expect(QUALITY_COMPLAINT).toBeGreaterThan(QUALITY_PRAISE)
  })
})

describe("heuristic reflection: accomplishments, tags, learnings", () => {
  it("accomplishments are \"asked: \" and the first line of at most three user messages, cut to 200 characters", () => {
    const long = "x".repeat(300)
    const e = heuristicEntry([user("fix the build\nit fails on CI"), assistant("ok"), user(long), user("   "), user("third"), user("fourth")])
    expect(e.accomplishments).toEqual(["asked: fix the build", `asked: ${"x".repeat(MAX_ASKED_LENGTH - 1)}…`, "asked: third"])
  })

  it("tags are the tools used, then up to three frequent meaningful words of the user, lowercased, no duplicates", () => {
    const e = heuristicEntry([
      user("Please deploy the Docker image to staging; the docker build uses the staging registry"),
      call("a", "Bash"),
      result("a", "ok", false),
      call("b", "webfetch"),
      call("c", "bash"),
      user("and check staging docker logs")
    ])
    expect(e.tags).toEqual(["bash", "webfetch", "docker", "staging", "deploy"])
  })

  it("frequent words skip stop words, short words, numbers and CJK runs", () => {
    expect(frequentWords("the the the and a 12345 ok 你好世界 kubernetes kubernetes helm")).toEqual(["kubernetes", "helm"])
  })

  it("key learnings and decisions stay empty: a heuristic cannot learn", () => {
    const e = replyOf("thanks")
    expect(e.keyLearnings).toEqual([])
    expect(e.decisions).toEqual([])
  })

  it("repeated identical tool errors are one challenge, and at most MAX_DIARY_ITEMS are kept", () => {
    const many = Array.from({ length: 30 }, (_, i) => [call(`t${i}`, `tool${i % 15}`), result(`t${i}`, "boom", true)]).flat()
    const e = heuristicEntry([user("go"), ...many])
    expect(e.challenges.length).toBe(MAX_DIARY_ITEMS)
    expect(new Set(e.challenges).size).toBe(MAX_DIARY_ITEMS)
    expect(e.qualityScore).toBe(0.45)
  })
})

/** Fragments that often hit a signal, so random bursts exercise every branch. */
const Fragment = Schema.Literals([
  "thanks", "no, ", "doesn't work", "great", "谢谢", "不对", "still broken", "\n", " ", "deploy", "docker", "the", "x".repeat(600), "é"
])
const BurstMessage = Schema.Tuple([
  Schema.Literals(["user", "assistant", "call", "error"]),
  Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 })),
  Schema.Array(Fragment).check(Schema.isMaxLength(12))
])
const burst = Arbitrary.schema(Schema.Array(BurstMessage).check(Schema.isMaxLength(40))).pipe(
  Arbitrary.map((ms) =>
    ms.map(([kind, id, fs]): Message => {
      const t = fs.join("")
      return kind === "user" ? user(t) : kind === "assistant" ? assistant(t) : kind === "call" ? call(`t${id}`, `tool${id}`) : result(`t${id}`, t, true)
    })
  )
)

const checkInvariants = (messages: ReadonlyArray<Message>) => {
  const e = heuristicEntry(messages)
  assert.include(DIARY_STATUSES, e.status)
  assert.isTrue(e.qualityScore >= 0 && e.qualityScore <= 1)
  for (const list of [e.accomplishments, e.decisions, e.challenges, e.keyLearnings, e.tags]) {
    assert.isAtMost(list.length, MAX_DIARY_ITEMS)
    for (const item of list) assert.isAtMost(item.length, MAX_DIARY_ITEM_LENGTH)
  }
}

describe("heuristic reflection: properties", () => {
  it.prop("any messages: a valid status, a score in [0, 1], lists and items within their limits", { ms: Arbitrary.schema(Schema.Array(Message)) }, ({ ms }) =>
    checkInvariants(ms), { arbitrary: { runs: 300 } })

  it.prop("bursts full of signals: the same invariants", { ms: burst }, ({ ms }) => checkInvariants(ms), { arbitrary: { runs: 500 } })
})
