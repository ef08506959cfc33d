/**
 * The fake server's Anthropic protocol, checked against the official SDK's own readers (not our
 * layer): if these pass, the fake speaks what the SDK expects of api.anthropic.com.
 */
import Anthropic, { APIError } from "@anthropic-ai/sdk"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { streamError } from "../../support/fakeLlm/anthropic.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"

describe("fake LLM server: Anthropic Messages protocol", () => {
  let fake: FakeLlm
  let sdk: Anthropic
  beforeAll(async () => {
    fake = await startFakeLlm()
    sdk = new Anthropic({ apiKey: "sk-ant-fake", baseURL: fake.url, maxRetries: 0 })
  })
  afterAll(() => fake.close())

  const hello = { model: "claude-x", max_tokens: 64, messages: [{ role: "user" as const, content: "Hi" }] }
  const toolReply = {
    kind: "reply" as const,
    parts: [{ type: "text" as const, text: "Looking it up." }, { type: "tool_call" as const, id: "toolu_01", name: "lookup", input: { q: "weather", days: [1, 2] } }],
    usage: { input: 30, output: 12 },
    chunk: 4
  }

  /** POSTs a body as the SDK would and returns the raw answer. */
  const post = (body: unknown, version = "2026-10-21") =>
    fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": version, authorization: "Bearer k" },
      body: JSON.stringify(body)
    })

  it("answers without `stream` with one Message the SDK parses", async () => {
    fake.script(toolReply)
    const message = await sdk.messages.create(hello)
    assert.deepEqual(message.content, [
      { type: "text", text: "Looking it up.", citations: null },
      { type: "tool_use", id: "toolu_01", name: "lookup", input: { q: "weather", days: [1, 2] }, caller: { type: "direct" } }
    ])
    assert.strictEqual(message.stop_reason, "tool_use")
    assert.strictEqual(message.model, "claude-x")
    assert.deepInclude(message.usage, { input_tokens: 30, output_tokens: 12 })
  })

  it("streams what the SDK's own accumulator turns into the same Message", async () => {
    fake.script(toolReply)
    const message = await sdk.messages.stream(hello).finalMessage()
    assert.deepEqual(message.content.map((b) => (b.type === "tool_use" ? [b.id, b.input] : b.type === "text" ? b.text : b.type)), [
      "Looking it up.",
      ["toolu_01", { q: "weather", days: [1, 2] }]
    ])
    assert.strictEqual(message.stop_reason, "tool_use")
    assert.deepInclude(message.usage, { input_tokens: 30, output_tokens: 12 })
  })

  it("names its SSE events as the service does, opening tool input with an empty fragment", async () => {
    fake.script({ ...toolReply, parts: [{ type: "tool_call", id: "toolu_02", name: "n", input: { a: 1 } }], chunk: 100 })
    const res = await post({ ...hello, stream: true })
    assert.strictEqual(res.headers.get("content-type"), "text/event-stream")
    const raw = await res.text()
    const names = [...raw.matchAll(/^event: (\w+)$/gm)].map((m) => m[1])
    assert.deepEqual(names, [
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    const fragments = [...raw.matchAll(/"partial_json":("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1] ?? "null"))
    assert.deepEqual(fragments, ["", "{\"a\":1}"])
  })

  it("sends errors in the service's body with request-id and retry-after", async () => {
    fake.script({ kind: "error", status: 529 }, { kind: "error", status: 429, retryAfter: 3 })
    const overloaded = await post(hello)
    assert.strictEqual(overloaded.status, 529)
    const body = (await overloaded.json()) as { type: string; error: unknown; request_id: string }
    assert.deepEqual([body.type, body.error], ["error", { type: "overloaded_error", message: "Overloaded" }])
    assert.strictEqual(overloaded.headers.get("request-id"), body.request_id)
    const limited = await post(hello)
    assert.strictEqual(limited.headers.get("retry-after"), "3")
    assert.deepInclude(((await limited.json()) as { error: object }).error, { type: "rate_limit_error" })
  })

  it("can fail inside a started stream with an SSE error event, which the SDK throws", async () => {
    fake.script(streamError())
    const stream = await sdk.messages.create({ ...hello, stream: true })
    const seen: Array<string> = []
    const error = await (async () => {
      try {
        for await (const e of stream) seen.push(e.type)
      } catch (e) {
        return e
      }
    })()
    assert.deepEqual(seen, ["message_start"], "ping is skipped by the SDK")
    assert.instanceOf(error, APIError)
    assert.strictEqual(error instanceof APIError ? error.type : null, "overloaded_error")
  })

  it("refuses what the service refuses, in its words", async () => {
    const answer = async (body: unknown, version?: string) => {
      const res = await post(body, version)
      const json = (await res.json()) as { error?: { message: string } }
      return [res.status, json.error?.message ?? "accepted"] as const
    }
    const assistantCall = { role: "assistant", content: [{ type: "tool_use", id: "toolu_9", name: "n", input: {} }] }
    const result = { type: "tool_result", tool_use_id: "toolu_9", content: "r" }
    assert.deepEqual(await answer({ ...hello, temperature: 0.5 }), [400, "temperature: Extra inputs are not permitted"])
    assert.deepEqual(await answer({ ...hello, temperature: 0.5 }, "2023-06-01"), [200, "accepted"])
    assert.deepEqual(await answer({ model: "claude-x", messages: hello.messages }), [400, "max_tokens: Field required"])
    assert.deepEqual(await answer(hello, ""), [400, "anthropic-version: header is required"])
    assert.deepEqual(await answer({ ...hello, messages: [hello.messages[0], assistantCall, { role: "user", content: [{ type: "text", text: "t" }, result] }] }), [
      400,
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_9. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    ])
    assert.deepEqual(await answer({ ...hello, messages: [hello.messages[0], assistantCall, { role: "user", content: [result] }] }), [200, "accepted"])
    const orphan = await answer({ ...hello, messages: [{ role: "user", content: [result] }] })
    assert.match(orphan[1], /^messages\.0\.content\.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9/)
    const bmp = await answer({ ...hello, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/bmp", data: "AA" } }] }] })
    assert.strictEqual(bmp[0], 400)
  })

  it("pages GET /v1/models as the service does", async () => {
    fake.models = ["m-a", "m-b", "m-c"]
    const page = async (query: string) => {
      const res = await fetch(`${fake.url}/v1/models${query}`, { headers: { "anthropic-version": "2026-10-21" } })
      return (await res.json()) as { data: Array<{ id: string; type: string; display_name: string }>; has_more: boolean; first_id: string; last_id: string }
    }
    const first = await page("?limit=2")
    assert.deepEqual([first.data.map((m) => m.id), first.has_more, first.first_id, first.last_id], [["m-a", "m-b"], true, "m-a", "m-b"])
    assert.deepInclude(first.data[0], { type: "model", display_name: "M A" })
    const second = await page("?limit=2&after_id=m-b")
    assert.deepEqual([second.data.map((m) => m.id), second.has_more], [["m-c"], false])
    const listed: Array<string> = []
    for await (const m of sdk.models.list({ limit: 1 })) listed.push(m.id)
    assert.deepEqual(listed, ["m-a", "m-b", "m-c"], "the SDK's auto-paging follows has_more / last_id")
  })
})
