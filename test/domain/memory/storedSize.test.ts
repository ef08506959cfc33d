/** splitForStorage: every part fits the stored-size limit and, read in order, is the message. */
import { assert, describe, it } from "@effect/vitest"
import { sizeProblem, splitForStorage, storedBytes } from "../../../src/domain/memory/storedSize.ts"
import { MAX_MESSAGE_BYTES } from "../../../src/domain/memory/types.ts"
import { type ContentBlock, type Message, messageText } from "../../../src/domain/message.ts"

const blocksOf = (ms: ReadonlyArray<Message>): Array<ContentBlock> =>
  ms.flatMap((m) => (typeof m.content === "string" ? [{ type: "text" as const, text: m.content }] : [...m.content]))

describe("splitForStorage", () => {
  it("returns a message that fits as it is", () => {
    const m: Message = { role: "assistant", content: "short" }
    assert.deepStrictEqual(splitForStorage(m), [m])
  })

  it("splits a plain string (with lone surrogates and escapes) into strings that fit, losslessly", () => {
    const text = ("\"\\\n" + "\ud800" + "世界🎉abc").repeat(900_000)
    const parts = splitForStorage({ role: "assistant", content: text })
    assert.isAbove(parts.length, 1)
    for (const p of parts) {
      assert.strictEqual(typeof p.content, "string")
      assert.isUndefined(sizeProblem(p.content))
    }
    assert.isTrue(parts.map((p) => (typeof p.content === "string" ? p.content : "")).join("") === text)
  })

  it("keeps tool calls whole and in order after the text they followed", () => {
    const big = "x".repeat(MAX_MESSAGE_BYTES + 10)
    const content: ReadonlyArray<ContentBlock> = [
      { type: "text", text: big },
      { type: "tool_use", id: "c1", name: "bash", input: { command: "ls" } },
      { type: "text", text: "after" }
    ]
    const parts = splitForStorage({ role: "assistant", content })
    for (const p of parts) assert.isAtMost(storedBytes(p.content), MAX_MESSAGE_BYTES)
    const blocks = blocksOf(parts)
    assert.deepStrictEqual(blocks.filter((b) => b.type === "tool_use").map((b) => b.type === "tool_use" ? b.id : ""), ["c1"])
    assert.isTrue(parts.map((p) => messageText(p)).join("") === messageText({ role: "assistant", content }))
  })
})
