/**
 * Live configuration, as an operator meets it: a gateway runs (real process), and what is changed with
 * the CLI meanwhile applies without a restart — the agent's model, context budget, tools and turn
 * limit and a new provider from the next turn, the HTTP channel's settings by restarting the channel —
 * on the SQLite file and on PostgreSQL (ANNA_DATABASE_URL, issue 26: there a change is notified).
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import OpenAI from "openai"
import { afterAll, beforeAll } from "vitest"
import { annaEnv, finish, newHome, start } from "../support/cli.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { processDatabases } from "../support/processDatabases.ts"
import { freePort } from "../support/ports.ts"

let fake: FakeLlm
let second: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
  second = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  await second.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

interface Body {
  readonly model?: string
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
  readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }>
}
const bodyOf = (f: FakeLlm, index: number) => (f.requests[index]?.body ?? {}) as Body
const toolNames = (b: Body) => (b.tools ?? []).map((t) => t.function.name)
const sentChars = (b: Body) => JSON.stringify(b.messages ?? []).length

describe.each(processDatabases())("e2e: configuration changes reach a running gateway on $name", (db) => {
  it("model, context budget, tools, turn limit and providers apply from the next turn; channel settings restart the channel", async () => {
    const home = newHome()
    homes.push(home)
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-live", ...(await db.env()) }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    await cli("agent", "set", "default", "--tools", "memory,agent")
    await cli("user", "add", "olga")
    const token = (await cli("user", "token", "olga")).trim()
    const firstPort = await freePort()
    await cli("channel", "set", "http", "--config", `port=${firstPort}`)

    const gateway = start(home, ["gateway"], "info", env)
    let log = ""
    const waiters: Array<() => void> = []
    const onData = (d: Buffer) => {
      log += d.toString()
      for (const w of waiters.splice(0)) w()
    }
    gateway.stdout?.on("data", onData)
    gateway.stderr?.on("data", onData)
    const count = (text: string) => log.split(text).length - 1
    /** Resolves once the gateway has logged `text` more than `seen` times (the log so far included). */
    const logged = (text: string, seen = 0) =>
      new Promise<void>((done) => {
        const check = () => (count(text) > seen ? done() : waiters.push(check))
        check()
      })
    const done = finish(gateway)
    try {
      await logged("press Ctrl+C")
      assert.include(log, `on http://127.0.0.1:${firstPort}/v1`)
      const ask = async (port: number, content: string) => {
        const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: token, maxRetries: 0 })
        const r = await client.chat.completions.create({ model: "default", user: "ops", messages: [{ role: "user", content }] })
        return r.choices[0]?.message.content ?? ""
      }
      // A long conversation first, so that a smaller budget shows in what the model is sent.
      fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: `noted. ${"filler words ".repeat(100)}` }] }))
      for (let i = 0; i < 14; i++) await ask(firstPort, `fact ${i}: ${"detail ".repeat(200)}`)
      const before = bodyOf(fake, fake.requests.length - 1)
      assert.strictEqual(before.model, "fake-large")
      assert.deepStrictEqual(toolNames(before), ["memory", "agent"])

      // Model, budget, tools: the very next turn uses them.
      await cli("agent", "set", "default", "--model", "openai/fake-small", "--context-tokens", "12000", "--tools", "memory")
      await ask(firstPort, "and now?")
      const after = bodyOf(fake, fake.requests.length - 1)
      assert.strictEqual(after.model, "fake-small")
      assert.deepStrictEqual(toolNames(after), ["memory"])
      // The smaller budget: the part of the conversation older than the fresh tail is compacted, not sent whole.
      assert.isBelow((after.messages ?? []).length, (before.messages ?? []).length)
      assert.isBelow(sentChars(after), sentChars(before))

      // Turn limit: a model that keeps calling tools is stopped after the new limit.
      await cli("agent", "set", "default", "--max-turns", "2")
      const calls = fake.requests.length
      fake.respondWith(() => ({ kind: "reply", parts: [{ type: "tool_call", id: `c${fake.requests.length}`, name: "memory", input: { action: "status" } }] }))
      const stopped = await ask(firstPort, "loop please")
      assert.include(stopped, "stopped after 2 model calls")
      // (Summaries of the compacted part may be asked for too; they come without tools.)
      assert.strictEqual(fake.requests.slice(calls).filter((r) => toolNames(r.body as Body).length > 0).length, 2)

      // A provider added now and chosen for the agent answers the next turn.
      await cli("provider", "add", "second", "--type", "openai", "--base-url", second.openAiUrl, "--api-key", "sk-second", "--default-model", "other-model")
      await cli("agent", "set", "default", "--model", "second/other-model", "--max-turns", "25")
      second.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "from the second provider" }] }))
      assert.include(await ask(firstPort, "who answers?"), "from the second provider")
      assert.strictEqual(bodyOf(second, second.requests.length - 1).model, "other-model")

      // Channel settings: the HTTP channel restarts on its new port; the old one is closed.
      const nextPort = await freePort()
      await cli("channel", "set", "http", "--config", `port=${nextPort}`)
      const upLine = `channel http: HTTP channel (OpenAI-compatible) on http://127.0.0.1:${nextPort}/v1`
      await logged(upLine)
      assert.include(await ask(nextPort, "still there?"), "from the second provider")
      const refused = await ask(firstPort, "old port?").then(() => "answered", (e: unknown) => String(e))
      assert.include(refused, "Connection error")

      // A disabled channel stops; enabled again, it comes back.
      await cli("channel", "disable", "http")
      await logged("channel http: stopping (disabled)")
      await cli("channel", "enable", "http")
      await logged(upLine, 1)
      assert.include(await ask(nextPort, "back?"), "from the second provider")
    } finally {
      gateway.kill("SIGTERM")
    }
    assert.strictEqual((await done).code, 0)
  }, 120_000)
})
