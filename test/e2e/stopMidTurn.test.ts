/**
 * The gateway stopped (SIGTERM) while turns run (here: model calls that never answer): the HTTP
 * clients waiting on them get an OpenAI error — 503 with an error body when nothing was sent yet,
 * an error frame and `[DONE]` in a stream — never an empty 200. Real gateway process, real HTTP.
 */
import { assert, describe, it } from "@effect/vitest"

import { annaEnv, newHome } from "../support/cli.ts"
import { startGateway } from "../support/gateway.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"

const suite = fakeLlmSuite({ reset: false })

describe("e2e: the gateway stops during a turn", () => {
  it("answers the waiting clients with an error, streamed or not, and exits 0", async () => {
    const home = newHome()
    suite.keep(home)
    const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-stop" }
    assert.strictEqual((await annaEnv(home, env, "onboard", "--from-env")).code, 0)
    assert.strictEqual((await annaEnv(home, env, "agent", "set", "default", "--tools", "memory")).code, 0)
    assert.strictEqual((await annaEnv(home, env, "user", "add", "gina")).code, 0)
    const token = (await annaEnv(home, env, "user", "token", "gina")).stdout.trim()

    const { child, url, done, out } = await startGateway(home, env)

    // A plain request whose model call never answers; a streamed one whose answer stalls after
    // its first words (so its 200 and those words are out when the gateway stops).
    suite.fake.respondWith((req) =>
      JSON.stringify(req.body).includes("Stream it.")
        ? { kind: "disconnect", parts: [{ type: "text", text: "The first words of an answer that stalls." }], afterEvents: 3, stall: true }
        : { kind: "hang" }
    )
    const ask = (user: string, content: string, stream: boolean) =>
      fetch(`${url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "default", user, stream, messages: [{ role: "user", content }] })
      })
    const plain = ask("plain", "Take your time.", false).then(async (r) => ({ status: r.status, body: await r.text() }))
    const streamed = await ask("streamed", "Stream it.", true)
    assert.strictEqual(streamed.status, 200)
    // Read the stream until the first words arrive, then stop the gateway.
    const reader = streamed.body?.getReader()
    assert.isDefined(reader)
    const decoder = new TextDecoder()
    let sse = ""
    while (!sse.includes("t words ")) {
      const chunk = await reader?.read()
      if (chunk === undefined || chunk.done) break
      sse += decoder.decode(chunk.value, { stream: true })
    }
    const posts = () => suite.fake.requests.filter((r) => r.method === "POST" && r.path.endsWith("/chat/completions")).length
    await suite.fake.when(() => posts() >= 2, { what: "both model calls" })
    child.kill("SIGTERM")
    for (;;) {
      const chunk = await reader?.read()
      if (chunk === undefined || chunk.done) break
      sse += decoder.decode(chunk.value, { stream: true })
    }
    const p = await plain
    assert.strictEqual((await done).code, 0, out())

    // Nothing sent yet: 503 with an OpenAI error body.
    assert.strictEqual(p.status, 503, JSON.stringify(p))
    assert.deepStrictEqual(JSON.parse(p.body), {
      error: { message: "the gateway is shutting down (or restarting the HTTP channel); the answer was cut off before the turn ended", type: "server_error", param: null, code: "service_unavailable" }
    })
    // Already answering: the words sent, then an error frame and [DONE].
    const frames = sse.split("\n\n").filter((f) => f !== "")
    assert.include(sse, "\"The firs\"")
    assert.strictEqual(frames.at(-1), "data: [DONE]", sse)
    assert.deepStrictEqual(JSON.parse(frames.at(-2)?.slice("data: ".length) ?? ""), JSON.parse(p.body), sse)
  }, 60_000)
})
