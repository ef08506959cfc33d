import { assert, describe, it } from "@effect/vitest"
import {
  continuesUnit,
  estimateMessageTokens,
  estimateTextTokens,
  hasCjk,
  IMAGE_TOKENS,
  type Message,
  MESSAGE_OVERHEAD_TOKENS,
  messageText,
  toolResultIds,
  toolUseIds
} from "../../src/domain/message.ts"

describe("estimateTextTokens", () => {
  it("is zero for the empty string", () => {
    assert.strictEqual(estimateTextTokens(""), 0)
  })

  it("counts ASCII as bytes / 4, rounded up", () => {
    assert.strictEqual(estimateTextTokens("a"), 1)
    assert.strictEqual(estimateTextTokens("abcd"), 1)
    assert.strictEqual(estimateTextTokens("abcde"), 2)
    assert.strictEqual(estimateTextTokens("x".repeat(400)), 100)
    assert.strictEqual(estimateTextTokens("x".repeat(401)), 101)
  })

  it("counts CJK by UTF-8 bytes (3 per character), not by UTF-16 length", () => {
    // 4 characters × 3 bytes = 12 bytes → 3 tokens (UTF-16 length would give 1).
    assert.strictEqual(estimateTextTokens("记忆系统"), 3)
    assert.strictEqual(estimateTextTokens("你好"), 2)
    // Japanese kana and Korean Hangul are 3 bytes each too.
    assert.strictEqual(estimateTextTokens("こんにちは"), 4)
    assert.strictEqual(estimateTextTokens("안녕하세요"), 4)
  })

  it("counts astral characters (emoji) as 4 bytes", () => {
    assert.strictEqual(estimateTextTokens("😀"), 1)
    assert.strictEqual(estimateTextTokens("😀😀"), 2)
    // mixed: 2 ASCII + 1 emoji = 6 bytes
    assert.strictEqual(estimateTextTokens("ab😀"), 2)
  })

  it("grows monotonically when text is appended", () => {
    let prev = 0
    let text = ""
    for (const ch of "Hello, 世界! 😀 done.") {
      text += ch
      const t = estimateTextTokens(text)
      assert.isAtLeast(t, prev)
      prev = t
    }
  })
})

describe("estimateMessageTokens", () => {
  it("adds the framing overhead to string content", () => {
    assert.strictEqual(estimateMessageTokens({ role: "user", content: "abcd" }), MESSAGE_OVERHEAD_TOKENS + 1)
    assert.strictEqual(estimateMessageTokens({ role: "user", content: "" }), MESSAGE_OVERHEAD_TOKENS)
  })

  it("charges a fixed amount per image whatever its size", () => {
    const small: Message = {
      role: "user",
      content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }]
    }
    const large: Message = {
      role: "user",
      content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "A".repeat(100_000) } }]
    }
    const url: Message = { role: "user", content: [{ type: "image", source: { type: "url", url: "https://x.test/a.png" } }] }
    assert.strictEqual(estimateMessageTokens(small), MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS)
    assert.strictEqual(estimateMessageTokens(large), MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS)
    assert.strictEqual(estimateMessageTokens(url), MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS)
  })

  it("sums text blocks", () => {
    const m: Message = {
      role: "assistant",
      content: [{ type: "text", text: "abcd" }, { type: "text", text: "abcdefgh" }]
    }
    assert.strictEqual(estimateMessageTokens(m), MESSAGE_OVERHEAD_TOKENS + 1 + 2)
  })

  it("charges tool_use for its name and JSON input", () => {
    const input = { cmd: "ls", args: ["-la", "/tmp"], nested: { deep: [1, 2, 3] } }
    const m: Message = { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "bash", input }] }
    const expected = MESSAGE_OVERHEAD_TOKENS + estimateTextTokens("bash") + estimateTextTokens(JSON.stringify(input))
    assert.strictEqual(estimateMessageTokens(m), expected)
  })

  it("charges tool_result for string content and for nested blocks", () => {
    const str: Message = {
      role: "tool_result",
      content: [{ type: "tool_result", tool_use_id: "t1", content: "x".repeat(40) }]
    }
    assert.strictEqual(estimateMessageTokens(str), MESSAGE_OVERHEAD_TOKENS + 10)
    const blocks: Message = {
      role: "tool_result",
      content: [{
        type: "tool_result",
        tool_use_id: "t1",
        content: [
          { type: "text", text: "x".repeat(8) },
          { type: "image", source: { type: "url", url: "https://x.test/i.png" } }
        ]
      }]
    }
    assert.strictEqual(estimateMessageTokens(blocks), MESSAGE_OVERHEAD_TOKENS + 2 + IMAGE_TOKENS)
  })
})

describe("messageText", () => {
  it("returns string content as is", () => {
    assert.strictEqual(messageText({ role: "user", content: "hello\nworld" }), "hello\nworld")
  })

  it("joins blocks with newlines and describes non-text blocks", () => {
    const m: Message = {
      role: "assistant",
      content: [
        { type: "text", text: "Let me look." },
        { type: "image", source: { type: "url", url: "https://x.test/a.png" } },
        { type: "tool_use", id: "t1", name: "read", input: { path: "/a.txt" } }
      ]
    }
    assert.strictEqual(messageText(m), `Let me look.\n[image]\n[tool call read] {"path":"/a.txt"}`)
  })

  it("marks tool results and tool errors", () => {
    const ok: Message = { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: "42" }] }
    const err: Message = {
      role: "tool_result",
      content: [{ type: "tool_result", tool_use_id: "t1", content: "boom", is_error: true }]
    }
    const notErr: Message = {
      role: "tool_result",
      content: [{ type: "tool_result", tool_use_id: "t1", content: "fine", is_error: false }]
    }
    const nested: Message = {
      role: "tool_result",
      content: [{
        type: "tool_result",
        tool_use_id: "t1",
        content: [{ type: "text", text: "line 1" }, { type: "image", source: { type: "url", url: "u" } }]
      }]
    }
    assert.strictEqual(messageText(ok), "[tool result] 42")
    assert.strictEqual(messageText(err), "[tool error] boom")
    assert.strictEqual(messageText(notErr), "[tool result] fine")
    assert.strictEqual(messageText(nested), "[tool result] line 1\n[image]")
  })
})

describe("tool ids", () => {
  it("lists tool_use and tool_result ids in order", () => {
    const a: Message = {
      role: "assistant",
      content: [
        { type: "tool_use", id: "a", name: "x", input: null },
        { type: "text", text: "and" },
        { type: "tool_use", id: "b", name: "y", input: {} }
      ]
    }
    const r: Message = {
      role: "tool_result",
      content: [
        { type: "tool_result", tool_use_id: "b", content: "" },
        { type: "tool_result", tool_use_id: "a", content: "" }
      ]
    }
    assert.deepStrictEqual(toolUseIds(a), ["a", "b"])
    assert.deepStrictEqual(toolResultIds(a), [])
    assert.deepStrictEqual(toolResultIds(r), ["b", "a"])
    assert.deepStrictEqual(toolUseIds({ role: "user", content: "text" }), [])
    assert.deepStrictEqual(toolResultIds({ role: "user", content: "text" }), [])
  })
})

describe("continuesUnit", () => {
  const results: Message = { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] }

  it("is false for the first message", () => {
    assert.isFalse(continuesUnit(results, undefined))
  })

  it("is false for a message without tool results", () => {
    assert.isFalse(continuesUnit({ role: "user", content: "hi" }, { role: "assistant", hasToolResults: false }))
    assert.isFalse(
      continuesUnit({ role: "assistant", content: [{ type: "text", text: "x" }] }, { role: "assistant", hasToolResults: false })
    )
  })

  it("is true for tool results right after an assistant turn", () => {
    assert.isTrue(continuesUnit(results, { role: "assistant", hasToolResults: false }))
  })

  it("is true for tool results after other tool results", () => {
    assert.isTrue(continuesUnit(results, { role: "tool_result", hasToolResults: true }))
    assert.isTrue(continuesUnit(results, { role: "user", hasToolResults: true }))
  })

  it("is false for tool results after a plain user message", () => {
    assert.isFalse(continuesUnit(results, { role: "user", hasToolResults: false }))
  })
})

describe("hasCjk", () => {
  it("detects Chinese, Japanese and Korean text", () => {
    assert.isTrue(hasCjk("记忆"))
    assert.isTrue(hasCjk("ひらがな"))
    assert.isTrue(hasCjk("カタカナ"))
    assert.isTrue(hasCjk("한국어"))
    assert.isTrue(hasCjk("mixed 中文 text"))
    // CJK punctuation and full-width forms
    assert.isTrue(hasCjk("。"))
    assert.isTrue(hasCjk("ＡＢＣ"))
    // CJK Extension B (astral plane, a surrogate pair)
    assert.isTrue(hasCjk("𠀀"))
  })

  it("is false for Latin, Cyrillic, accents and emoji", () => {
    assert.isFalse(hasCjk(""))
    assert.isFalse(hasCjk("hello world"))
    assert.isFalse(hasCjk("Привет"))
    assert.isFalse(hasCjk("café naïve"))
    assert.isFalse(hasCjk("😀🎉"))
  })
})
