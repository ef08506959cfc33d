import { assert, describe, it } from "@effect/vitest"
import { renderSummary, repairPairing, summaryContextTokens } from "../../../src/domain/memory/render.ts"
import { type ContentBlock, estimateMessageTokens, type Message, type ToolUseBlock } from "../../../src/domain/message.ts"

const user = (text: string): Message => ({ role: "user", content: text })
const assistantText = (text: string): Message => ({ role: "assistant", content: [{ type: "text", text }] })
const toolUse = (id: string, name = "bash", input: ToolUseBlock["input"] = { cmd: "ls" }): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input
})
const toolResult = (id: string, content: string = "ok"): ContentBlock => ({ type: "tool_result", tool_use_id: id, content })
const totalTokens = (ms: ReadonlyArray<Message>) => ms.reduce((n, m) => n + estimateMessageTokens(m), 0)

describe("renderSummary", () => {
  const s = {
    id: 42,
    kind: "condensed" as const,
    depth: 2,
    earliestAt: Date.UTC(2024, 0, 2, 3, 4, 5),
    latestAt: Date.UTC(2024, 5, 6, 7, 8, 9),
    content: "We agreed on the deployment plan."
  }

  it("is a user message naming id, kind, depth and time range", () => {
    const m = renderSummary(s)
    assert.strictEqual(m.role, "user")
    assert.isString(m.content)
    const text = typeof m.content === "string" ? m.content : ""
    assert.include(text, `id="sum_42"`)
    assert.include(text, `kind="condensed"`)
    assert.include(text, `depth="2"`)
    assert.include(text, `from="2024-01-02T03:04Z"`)
    assert.include(text, `to="2024-06-06T07:08Z"`)
    assert.include(text, "We agreed on the deployment plan.")
    assert.include(text, `"expand" and id "sum_42"`)
  })

  it("costs the tokens of its rendering", () => {
    assert.strictEqual(summaryContextTokens(s), estimateMessageTokens(renderSummary(s)))
    assert.isAbove(summaryContextTokens(s), summaryContextTokens({ ...s, content: "" }))
  })
})

describe("repairPairing", () => {
  it("returns well-formed input identical, with the same objects", () => {
    const input: Array<Message> = [
      user("list the files"),
      { role: "assistant", content: [{ type: "text", text: "Sure." }, toolUse("a")] },
      { role: "tool_result", content: [toolResult("a", "a.txt\nb.txt")] },
      assistantText("There are two files."),
      { role: "user", content: [{ type: "image", source: { type: "url", url: "https://x.test/i.png" } }] }
    ]
    const out = repairPairing(input)
    assert.strictEqual(out.length, input.length)
    for (const [i, m] of input.entries()) assert.strictEqual(out[i], m)
    assert.deepStrictEqual(out, input)
  })

  it("keeps parallel tool calls answered in one message or across several", () => {
    const oneMessage: Array<Message> = [
      { role: "assistant", content: [toolUse("a"), toolUse("b")] },
      { role: "tool_result", content: [toolResult("a"), toolResult("b")] }
    ]
    const out1 = repairPairing(oneMessage)
    for (const [i, m] of oneMessage.entries()) assert.strictEqual(out1[i], m)
    const split: Array<Message> = [
      { role: "assistant", content: [toolUse("a"), toolUse("b")] },
      { role: "tool_result", content: [toolResult("a")] },
      { role: "tool_result", content: [toolResult("b")] },
      assistantText("done")
    ]
    const out2 = repairPairing(split)
    assert.strictEqual(out2.length, 4)
    for (const [i, m] of split.entries()) assert.strictEqual(out2[i], m)
  })

  it("drops an unanswered tool_use and keeps the rest of its message", () => {
    const input: Array<Message> = [
      { role: "assistant", content: [{ type: "text", text: "Checking." }, toolUse("x")] },
      user("never mind")
    ]
    assert.deepStrictEqual(repairPairing(input), [
      { role: "assistant", content: [{ type: "text", text: "Checking." }] },
      user("never mind")
    ])
  })

  it("drops a message that held only unanswered tool_use blocks", () => {
    const input: Array<Message> = [user("hi"), { role: "assistant", content: [toolUse("x"), toolUse("y")] }]
    assert.deepStrictEqual(repairPairing(input), [user("hi")])
  })

  it("drops only the unanswered call of a parallel pair", () => {
    const input: Array<Message> = [
      { role: "assistant", content: [toolUse("a"), toolUse("b")] },
      { role: "tool_result", content: [toolResult("a", "A")] }
    ]
    const out = repairPairing(input)
    assert.deepStrictEqual(out, [
      { role: "assistant", content: [toolUse("a")] },
      { role: "tool_result", content: [toolResult("a", "A")] }
    ])
  })

  it("turns an orphan tool_result into plain content", () => {
    const input: Array<Message> = [
      { role: "tool_result", content: [toolResult("gone", "the output")] },
      assistantText("ok")
    ]
    assert.deepStrictEqual(repairPairing(input), [
      { role: "tool_result", content: [{ type: "text", text: "the output" }] },
      assistantText("ok")
    ])
  })

  it("turns an orphan tool_result with blocks into those blocks, dropping empty text", () => {
    const image: ContentBlock = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }
    const input: Array<Message> = [{
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "gone", content: [{ type: "text", text: "" }, { type: "text", text: "x" }, image] }]
    }]
    assert.deepStrictEqual(repairPairing(input), [{ role: "user", content: [{ type: "text", text: "x" }, image] }])
  })

  it("does not pair a result separated from its call by a plain message", () => {
    const input: Array<Message> = [
      { role: "assistant", content: [toolUse("a")] },
      user("interruption"),
      { role: "tool_result", content: [toolResult("a", "late")] }
    ]
    assert.deepStrictEqual(repairPairing(input), [
      user("interruption"),
      { role: "tool_result", content: [{ type: "text", text: "late" }] }
    ])
  })

  it("converts a tool_result placed in an assistant message", () => {
    const input: Array<Message> = [
      { role: "assistant", content: [toolUse("a")] },
      { role: "assistant", content: [toolResult("a", "wrong side")] }
    ]
    assert.deepStrictEqual(repairPairing(input), [{ role: "assistant", content: [{ type: "text", text: "wrong side" }] }])
  })

  it("drops empty messages and empty text blocks", () => {
    const input: Array<Message> = [
      user(""),
      { role: "assistant", content: [] },
      { role: "assistant", content: [{ type: "text", text: "" }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "gone", content: "" }] },
      { role: "assistant", content: [{ type: "text", text: "" }, { type: "text", text: "kept" }] },
      user("also kept")
    ]
    assert.deepStrictEqual(repairPairing(input), [assistantText("kept"), user("also kept")])
  })

  it("never returns more tokens than it was given", () => {
    const cases: Array<Array<Message>> = [
      [{ role: "assistant", content: [toolUse("a"), toolUse("b", "read", { path: "/very/long/path/".repeat(10) })] }],
      [{ role: "tool_result", content: [toolResult("x", "result text ".repeat(20))] }],
      [
        { role: "assistant", content: [toolUse("a")] },
        user("cut"),
        { role: "tool_result", content: [toolResult("a", "r".repeat(100)), toolResult("zz", "")] },
        { role: "assistant", content: [{ type: "text", text: "" }, toolUse("q")] }
      ],
      [
        { role: "assistant", content: [toolUse("a"), toolUse("b")] },
        { role: "tool_result", content: [toolResult("b")] },
        { role: "tool_result", content: [toolResult("a")] }
      ]
    ]
    for (const c of cases) assert.isAtMost(totalTokens(repairPairing(c)), totalTokens(c))
  })

  it("is idempotent", () => {
    const input: Array<Message> = [
      { role: "assistant", content: [toolUse("a"), { type: "text", text: "hm" }] },
      user("x"),
      { role: "tool_result", content: [toolResult("a", "orphan")] },
      { role: "assistant", content: [toolUse("b")] },
      { role: "tool_result", content: [toolResult("b")] }
    ]
    const once = repairPairing(input)
    const twice = repairPairing(once)
    assert.deepStrictEqual(twice, once)
    for (const [i, m] of once.entries()) assert.strictEqual(twice[i], m)
  })

  it("leaves every tool_use answered right after and every tool_result paired", () => {
    const input: Array<Message> = [
      { role: "assistant", content: [toolUse("a"), toolUse("b")] },
      { role: "tool_result", content: [toolResult("a")] },
      user("stop"),
      { role: "tool_result", content: [toolResult("b")] },
      { role: "assistant", content: [toolUse("c")] },
      { role: "tool_result", content: [toolResult("c")] }
    ]
    const out = repairPairing(input)
    out.forEach((m, i) => {
      if (typeof m.content === "string") return
      for (const b of m.content) {
        if (b.type === "tool_use") {
          const next = out[i + 1]
          assert.isDefined(next)
          const answered = next !== undefined && typeof next.content !== "string" &&
            next.content.some((x) => x.type === "tool_result" && x.tool_use_id === b.id)
          assert.isTrue(answered, `tool_use ${b.id} unanswered`)
        }
        if (b.type === "tool_result") {
          const prev = out[i - 1]
          const paired = prev !== undefined && prev.role === "assistant" && typeof prev.content !== "string" &&
            prev.content.some((x) => x.type === "tool_use" && x.id === b.tool_use_id)
          assert.isTrue(paired, `tool_result ${b.tool_use_id} unpaired`)
        }
      }
    })
  })
})
