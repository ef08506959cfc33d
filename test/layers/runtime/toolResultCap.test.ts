/**
 * Every tool result the model receives is capped in one place, the agent loop's tool calls (issue
 * 23, item 8): a result or an error of any tool longer than MAX_TOOL_RESULT_CHARS is cut with a
 * note saying how much was left out, and what the hooks see (stored, shown) is what the model gets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ToolUseBlock } from "../../../src/domain/message.ts"
import { capToolResult, MAX_TOOL_RESULT_CHARS, type Tool, ToolError, toolRegistry } from "../../../src/domain/tool.ts"
import { runToolCalls } from "../../../src/layers/runtime/toolCalls.ts"

const ctx = { sessionKey: "s", userId: "u", agentId: "a" }
const BIG = MAX_TOOL_RESULT_CHARS * 4

const tool = (name: string, execute: Tool["execute"]): Tool => ({
  definition: { name, description: name, inputSchema: { type: "object" } },
  execute
})
const call = (name: string): ToolUseBlock => ({ type: "tool_use", id: `call-${name}`, name, input: {} })

describe("tool results are capped in the loop", () => {
  it.effect("a huge result and a huge error are both cut, with a note, and the hooks see the cut text", () =>
    Effect.gen(function*() {
      const registry = yield* toolRegistry([
        tool("flood", () => Effect.succeed("x".repeat(BIG))),
        tool("angry", () => Effect.fail(new ToolError({ tool: "angry", reason: "y".repeat(BIG) }))),
        tool("small", () => Effect.succeed("fine"))
      ])
      const seen: Array<string> = []
      const blocks = yield* runToolCalls(registry, [call("flood"), call("angry"), call("small")], ctx, {
        span: "test.tool",
        onEnd: (_call, output) => Effect.sync(() => void seen.push(output))
      })
      const [flood, angry, small] = blocks.map((b) => (typeof b.content === "string" ? b.content : ""))
      for (const text of [flood ?? "", angry ?? ""]) {
        assert.isAtMost(text.length, MAX_TOOL_RESULT_CHARS + 300)
        assert.include(text, `cut by anna: this tool result had ${BIG.toLocaleString("en-US")} characters`)
      }
      assert.isTrue(blocks[1]?.is_error)
      assert.strictEqual(small, "fine")
      assert.deepStrictEqual(seen, [flood, angry, small])
    }))

  it("never cuts inside a surrogate pair, and leaves a result at the cap alone", () => {
    assert.strictEqual(capToolResult("z".repeat(MAX_TOOL_RESULT_CHARS)), "z".repeat(MAX_TOOL_RESULT_CHARS))
    const emoji = `${"a".repeat(MAX_TOOL_RESULT_CHARS - 1)}😀😀`
    const cut = capToolResult(emoji)
    assert.isTrue(cut.startsWith("a".repeat(MAX_TOOL_RESULT_CHARS - 1)))
    assert.notInclude(cut.slice(0, MAX_TOOL_RESULT_CHARS + 1), "\ud83d\n")
    assert.isFalse(/[\ud800-\udbff](?![\udc00-\udfff])/.test(cut), "a lone high surrogate")
  })
})
