import { assert, describe, it } from "@effect/vitest"
import { pickModel } from "../../src/programs/onboard.ts"

const models = (...ids: Array<string>) => ids.map((id) => ({ id }))

describe("onboarding's default model", () => {
  it("prefers a Sonnet for Anthropic, a small GPT on OpenAI's endpoint, and what the server lists first elsewhere", () => {
    assert.strictEqual(pickModel("anthropic", models("claude-opus-4", "claude-sonnet-4-5", "claude-haiku"), true), "claude-sonnet-4-5")
    assert.strictEqual(pickModel("anthropic", models("claude-haiku"), true), "claude-haiku")
    assert.strictEqual(pickModel("openai", models("o3", "gpt-4o", "gpt-4.1-mini"), true), "gpt-4.1-mini")
    assert.strictEqual(pickModel("openai", models("o3", "gpt-5"), true), "gpt-5")
    assert.strictEqual(pickModel("openai", models("llama3.1:8b", "qwen2.5"), false), "llama3.1:8b")
    assert.isUndefined(pickModel("openai", [], false))
  })
})
