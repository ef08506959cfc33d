/**
 * `/abort` typed in `anna chat` while a reply streams (issue 24, item 6): the chat keeps reading
 * lines during a turn; `/abort` stops the turn at once, and another line typed meanwhile is queued,
 * said so, and sent when the turn ends — never lost. The real CLI on a pty, the fake LLM server.
 */
import { assert, describe, it } from "@effect/vitest"
import { annaEnv, newHome } from "../support/cli.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { ptyAnna } from "../support/pty.ts"

const suite = fakeLlmSuite({ reset: false })
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }

const lastUser = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? []
  return String([...messages].reverse().find((m) => m.role === "user")?.content ?? "")
}

describe("e2e: /abort typed while a reply streams", () => {
  it("stops the turn at once; a line typed meanwhile is queued, said so, and sent after it", async () => {
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-abort-typed", ...NO_DOCKER }
    assert.strictEqual((await annaEnv(home, env, "onboard", "--from-env")).code, 0)
    // The story's first words come, then the model goes quiet for good: only an abort ends that turn.
    suite.fake.respondWith((r) =>
      lastUser(r).includes("long story")
        ? { kind: "disconnect", parts: [{ type: "text", text: "Once upon a time, in a story that never ends." }], afterEvents: 3, stall: true }
        : { kind: "reply", parts: [{ type: "text", text: `echo: ${lastUser(r)}` }] }
    )
    const chat = ptyAnna(home, ["chat"], env)
    await chat.screen("> ")
    chat.type("tell me a long story\r")
    await chat.screen("Once")
    chat.type("and then this\r")
    await chat.screen("queued")
    chat.type("/abort\r")
    await chat.screen("[stopped]")
    // The queued line goes once the turn has ended.
    await chat.screen("echo: and then this")
    chat.type("/exit\r")
    const done = await chat.done
    assert.strictEqual(done.code, 0, chat.output())
    assert.notInclude(chat.output(), "Nothing is running")
    const asked = suite.fake.requests.filter((r) => r.method === "POST").map(lastUser)
    assert.deepStrictEqual(asked.filter((t) => t !== ""), ["tell me a long story", "and then this"], "/abort is not sent to the model")
  }, 90_000)
})
