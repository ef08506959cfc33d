/**
 * The reflection prompt (issue 15): the transcript the summary model reads (roles, tool calls, tool
 * results cut, errors marked, the END kept within the budget and the cut said), and how its answer
 * is read (fences, the outermost object, the Schema, lists and items capped, at most 3 rules).
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Result, Schema } from "effect"
import { MAX_DIARY_ITEM_LENGTH, MAX_DIARY_ITEMS } from "../../../src/domain/learning/diary.ts"
import {
  extractJson,
  MAX_REFLECTION_RULES,
  parseReflection,
  REFLECTION_SYSTEM,
  reflectionPrompt,
  renderMessage,
  renderTranscript,
  retryMessage,
  TOOL_RESULT_CHARS
} from "../../../src/domain/learning/reflectionPrompt.ts"
import { MAX_RULE_TEXT } from "../../../src/domain/learning/rule.ts"
import { estimateTextTokens, type Message } from "../../../src/domain/message.ts"

const answer = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    accomplishments: ["Fixed the Dockerfile"],
    decisions: ["Pinned the base image"],
    challenges: ["The build failed twice"],
    key_learnings: ["Pin image tags"],
    tags: ["Docker", "docker", " CI "],
    status: "success",
    quality_score: 0.8,
    rules: [{ text: "Pin base image tags in Dockerfiles", tags: ["Docker"] }],
    ...over
  })

describe("the transcript", () => {
  it("shows roles, text, tool calls with their input, results cut to 500 characters and errors marked", () => {
    const long = "x".repeat(TOOL_RESULT_CHARS + 100)
    const messages: ReadonlyArray<Message> = [
      { role: "user", content: "Build the image" },
      { role: "assistant", content: [{ type: "text", text: "Running it." }, { type: "tool_use", id: "t1", name: "bash", input: { command: "docker build ." } }] },
      { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t1", content: long }] },
      { role: "tool_result", content: [{ type: "tool_result", tool_use_id: "t2", content: "permission denied", is_error: true }] }
    ]
    const { text, cut } = renderTranscript(messages)
    assert.strictEqual(cut, 0)
    assert.include(text, "User: Build the image")
    assert.include(text, "Assistant: Running it.\n[tool bash: {\"command\":\"docker build .\"}]")
    assert.include(text, `Tool result: ${"x".repeat(TOOL_RESULT_CHARS)}… [100 more characters]`)
    assert.notInclude(text, "x".repeat(TOOL_RESULT_CHARS + 1))
    assert.include(text, "Tool result: [tool error] permission denied")
  })

  it("keeps the end of a long burst within the budget and says how many messages were cut", () => {
    const messages: ReadonlyArray<Message> = Array.from({ length: 50 }, (_, i) => ({
      role: i % 2 === 0 ? "user" as const : "assistant" as const,
      content: `message ${i} ${"word ".repeat(40)}`
    }))
    const { text, cut } = renderTranscript(messages, 300)
    assert.isAbove(cut, 0)
    assert.match(text, new RegExp(`^\\[${cut} earlier messages of this burst cut to fit`))
    assert.include(text, "message 49 ")
    assert.notInclude(text, "message 0 ")
    assert.include(text, `message ${cut} `)
    assert.notInclude(text, `message ${cut - 1} `)
  })

  it("keeps the end of one message alone over the budget", () => {
    const { text, partial } = renderTranscript([{ role: "user", content: `${"a".repeat(5000)}THE END` }], 100)
    assert.isTrue(partial)
    assert.match(text, /^\[start of this message cut\] …a+THE END$/)
    assert.isAtMost(estimateTextTokens(text), 100)
  })

  it.prop(
    "never passes the budget (plus its one-line note) and always keeps the last message's end",
    {
      texts: Arbitrary.array(Arbitrary.schema(Schema.String), { minLength: 1, maxLength: 30 }),
      budget: Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 20, maximum: 2000 })))
    },
    ({ texts, budget }) => {
      const messages = texts.map((t, i): Message => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${t}#${i}` }))
      const { text } = renderTranscript(messages, budget)
      const body = text.replace(/^\[\d+ earlier messages? of this burst cut to fit; the transcript starts mid-burst\]\n\n/, "")
      assert.isAtMost(estimateTextTokens(body), budget + messages.length)
      assert.isTrue(text.endsWith(`#${messages.length - 1}`))
    }
  )

  it("the prompt asks for the JSON object only, with every field and the rules' limits", () => {
    const prompt = reflectionPrompt([{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }])
    for (const field of ["accomplishments", "decisions", "challenges", "key_learnings", "tags", "status", "quality_score", "rules", "anti_pattern"]) {
      assert.include(prompt.system, `"${field}"`)
    }
    assert.include(prompt.system, "ONLY a JSON object")
    assert.include(prompt.system, `at most ${MAX_REFLECTION_RULES} playbook rules`)
    assert.include(prompt.system, "no personal details")
    assert.strictEqual(prompt.system, REFLECTION_SYSTEM)
    assert.include(prompt.user, "User: hi\n\nAssistant: hello")
    assert.strictEqual(renderMessage({ role: "assistant", content: [{ type: "image", source: { type: "url", url: "u" } }] }), "Assistant: [image]")
  })
})

describe("reading the answer", () => {
  it("takes the object out of fences and prose, normalises tags and rules", () => {
    const parsed = parseReflection(`Sure! Here it is:\n\`\`\`json\n${answer()}\n\`\`\`\nHope that helps {really}.`)
    assert.isTrue(Result.isSuccess(parsed))
    if (!Result.isSuccess(parsed)) return
    assert.deepStrictEqual(parsed.success.tags, ["docker", "ci"])
    assert.strictEqual(parsed.success.status, "success")
    assert.strictEqual(parsed.success.qualityScore, 0.8)
    assert.deepStrictEqual(parsed.success.keyLearnings, ["Pin image tags"])
    assert.deepStrictEqual(parsed.success.rules, [{ text: "Pin base image tags in Dockerfiles", tags: ["docker"], antiPattern: false }])
  })

  it("caps lists, items, rules and rule texts; rules may be absent", () => {
    const many = Array.from({ length: 15 }, (_, i) => `item ${i} ${"y".repeat(600)}`)
    const rules = Array.from({ length: 5 }, (_, i) => ({ text: `rule ${i}\n${"z".repeat(700)}`, anti_pattern: i === 0 }))
    const parsed = parseReflection(answer({ accomplishments: many, challenges: ["  ", "real"], rules }))
    assert.isTrue(Result.isSuccess(parsed))
    if (!Result.isSuccess(parsed)) return
    assert.strictEqual(parsed.success.accomplishments.length, MAX_DIARY_ITEMS)
    for (const a of parsed.success.accomplishments) assert.strictEqual(a.length, MAX_DIARY_ITEM_LENGTH)
    assert.deepStrictEqual(parsed.success.challenges, ["real"])
    assert.strictEqual(parsed.success.rules.length, MAX_REFLECTION_RULES)
    assert.strictEqual(parsed.success.rules[0]?.text.length, MAX_RULE_TEXT)
    assert.notInclude(parsed.success.rules[0]?.text ?? "\n", "\n")
    assert.isTrue(parsed.success.rules[0]?.antiPattern)
    const none = parseReflection(answer({ rules: undefined }))
    assert.deepStrictEqual(Result.isSuccess(none) ? none.success.rules : undefined, [])
  })

  it("says why an answer cannot be used: no object, bad JSON, wrong fields", () => {
    const reason = (text: string) => {
      const r = parseReflection(text)
      return Result.isFailure(r) ? r.failure : "decoded"
    }
    assert.strictEqual(reason("I could not do that."), "the reply contains no JSON object")
    assert.match(reason("{ accomplishments: [ }"), /^the JSON does not parse: /)
    assert.match(reason(answer({ status: "great" })), /^the JSON does not match the format: .*status/s)
    assert.match(reason(answer({ quality_score: 1.5 })), /^the JSON does not match the format: /)
    assert.match(reason(JSON.stringify({ accomplishments: [] })), /decisions/)
    assert.strictEqual(extractJson('a {"b": "}{"} c {d} e'), '{"b": "}{"}')
    assert.strictEqual(extractJson('x {"a": {"b": 1} y }'), '{"a": {"b": 1} y }')
    assert.strictEqual(extractJson('x {"a": {"b": 1}'), '{"a": {"b": 1}')
    assert.strictEqual(extractJson("no object }"), undefined)
  })

  it("the retry quotes the error on one line and asks for the object again", () => {
    const m = retryMessage("the JSON does not match the format:\n  status: expected success")
    assert.include(m, "the JSON does not match the format: status: expected success")
    assert.include(m, "ONLY the JSON object")
  })
})
