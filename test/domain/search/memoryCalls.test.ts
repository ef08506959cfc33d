/**
 * How a message's searchable text is split from the memory tool's own calls and results (issue 24):
 * for any content, nothing is lost or doubled (the two parts are the message's text, block by block),
 * a message without memory blocks is its text exactly, and the plan names the memory columns only
 * when asked to (or for `tool:memory`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { Content, type ContentBlock, messageText } from "../../../src/domain/message.ts"
import { MEMORY_TOOL, memoryCallIds, searchText } from "../../../src/domain/search/memoryCalls.ts"
import { planSearch, type QueryPlan } from "../../../src/domain/search/query.ts"

/** Content whose tool calls are often the memory tool's, and whose results often answer them. */
const content = Arbitrary.schema(Content).pipe(
  Arbitrary.map((c): Content =>
    typeof c === "string" ? c : c.map((b, i): ContentBlock =>
      b.type === "tool_use" && i % 2 === 0
        ? { ...b, name: MEMORY_TOOL, id: `m${i}` }
        : b.type === "tool_result" && i % 3 !== 0
        ? { ...b, tool_use_id: `m${i - 1}` }
        : b
    )
  )
)
const ids = Arbitrary.array(Arbitrary.schema(Schema.String), { maxLength: 3 })

const plan = (input: string, includeMemoryCalls?: boolean): QueryPlan => {
  const p = planSearch(input, "ranked", { includeMemoryCalls })
  if (p._tag === "Empty") throw new Error("expected a query plan")
  return p
}

describe("searchText", () => {
  it.prop("the two parts hold the message's text, each block once", { c: content, answered: ids }, ({ c, answered }) => {
    const all = [...answered, ...(typeof c === "string" ? [] : c.flatMap((b) => (b.type === "tool_result" && b.tool_use_id.startsWith("m") ? [b.tool_use_id] : [])))]
    for (const a of [answered, all]) {
      const { body, memory } = searchText(c, a)
      const whole = messageText({ role: "assistant", content: c })
      if (typeof c === "string") {
        assert.deepStrictEqual({ body, memory }, { body: whole, memory: "" })
        continue
      }
      // Every block's text is in exactly the part it belongs to, in order: together, the whole text.
      const isMemory = (b: ContentBlock) =>
        (b.type === "tool_use" && b.name === MEMORY_TOOL) || (b.type === "tool_result" && a.includes(b.tool_use_id))
      const apart = c.filter(isMemory).length
      if (apart === 0) assert.deepStrictEqual({ body, memory }, { body: whole, memory: "" })
      assert.strictEqual(body, messageText({ role: "assistant", content: c.filter((b) => !isMemory(b)) }))
      assert.strictEqual(memory, messageText({ role: "assistant", content: c.filter(isMemory) }))
      const separators = apart > 0 && apart < c.length ? 1 : 0
      assert.strictEqual(body.length + memory.length + separators, whole.length)
    }
  })

  it("a call of the memory tool, its result, and the rest", () => {
    const call: ContentBlock = { type: "tool_use", id: "m1", name: "memory", input: { action: "search", query: "deploy key" } }
    const bash: ContentBlock = { type: "tool_use", id: "b1", name: "bash", input: { command: "ls" } }
    const assistant: Content = [{ type: "text", text: "Let me look." }, call, bash]
    assert.deepStrictEqual(memoryCallIds(assistant), ["m1"])
    assert.deepStrictEqual(searchText(assistant, []), {
      body: "Let me look.\n[tool call bash] {\"command\":\"ls\"}",
      memory: "[tool call memory] {\"action\":\"search\",\"query\":\"deploy key\"}"
    })
    const results: Content = [
      { type: "tool_result", tool_use_id: "m1", content: "msg_3 the «deploy» «key»" },
      { type: "tool_result", tool_use_id: "b1", content: "a.txt", is_error: true }
    ]
    assert.deepStrictEqual(searchText(results, memoryCallIds(assistant)), {
      body: "[tool error] a.txt",
      memory: "[tool result] msg_3 the «deploy» «key»"
    })
    // Typed text that looks like a call is text.
    assert.deepStrictEqual(searchText("[tool call memory] {}", ["m1"]), { body: "[tool call memory] {}", memory: "" })
  })
})

describe("planSearch and the memory columns", () => {
  it("names them only when asked to, or for tool:memory", () => {
    assert.deepStrictEqual(plan("deploy 配置").groups.map((g) => g.match), ["body : \"deploy\"", "cjk : \"配置\""])
    assert.isFalse(plan("deploy").filters.memoryCalls)
    const included = plan("deploy* 配置 NOT key", true)
    assert.deepStrictEqual(included.groups.map((g) => g.match), ["{body memory} : \"deplo\" *", "{cjk memory_cjk} : \"配置\""])
    assert.deepStrictEqual(included.exclude, ["{body memory} : \"key\""])
    assert.isTrue(included.filters.memoryCalls)
    const tool = plan("tool:memory deploy")
    assert.isTrue(tool.filters.memoryCalls)
    assert.deepStrictEqual(tool.groups.map((g) => g.match), ["{body memory} : \"deploy\""])
    assert.isFalse(plan("NOT tool:memory deploy").filters.memoryCalls)
  })
})
