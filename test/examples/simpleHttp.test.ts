/**
 * The custom deployment in examples/simple-http (Simple memory + HTTP channel, no sandbox), built
 * from the package's exports and run as its own process, answering the official OpenAI client.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { rmSync } from "node:fs"
import { resolve } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll } from "vitest"
import { annaEnv, newHome, waitForOutput } from "../support/cli.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { childEnv } from "../support/spawnAnna.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

describe("examples/simple-http", () => {
  it("runs as a custom deployment and answers an OpenAI client with memory/simple and no sandbox tools", async () => {
    const home = newHome()
    homes.push(home)
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-example" }
    assert.strictEqual((await annaEnv(home, env, "onboard", "--from-env")).code, 0)
    assert.strictEqual((await annaEnv(home, env, "user", "add", "carol")).code, 0)
    const token = JSON.parse((await annaEnv(home, env, "user", "token", "carol", "--json")).stdout) as { token: string }
    const child = spawn(process.execPath, ["--conditions=development", resolve(import.meta.dirname, "../../examples/simple-http/main.ts")], {
      env: { ...childEnv(home, {}), PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    try {
      let out = ""
      child.stdout.on("data", (d: Buffer) => (out += d.toString()))
      await waitForOutput(child, "(memory/simple")
      const url = /simple-http: listening on (\S+)/.exec(out)?.[1] ?? ""
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `reply to ${JSON.stringify(req.body).includes("remember the tulips") ? "tulips" : "?"}` }] }))
      const client = new OpenAI({ baseURL: url, apiKey: token.token })
      assert.deepStrictEqual((await client.models.list()).data.map((m) => m.id), ["default"])
      const r = await client.chat.completions.create({ model: "default", messages: [{ role: "user", content: "remember the tulips" }] })
      assert.strictEqual(r.choices[0]?.message.content, "reply to tulips")
      const tools = (fake.requests[fake.requests.length - 1]?.body as { tools?: Array<{ function: { name: string } }> } | undefined)?.tools ?? []
      assert.deepStrictEqual(tools.map((t) => t.function.name), ["memory", "scheduler", "webfetch", "agent"], "no sandbox: no workspace tools")
      const whoami = await client.chat.completions.create({ model: "default", messages: [{ role: "user", content: "/whoami" }] })
      assert.include(whoami.choices[0]?.message.content ?? "", "memory: memory/simple")
    } finally {
      child.kill("SIGTERM")
    }
  })
})
