/**
 * The gateway as a user runs it (`anna gateway`, real process): an OpenAI client talks to an agent,
 * the gateway is stopped with SIGTERM (exit 0) and started again, and the same session resumes with
 * its history — on the SQLite file and on PostgreSQL (ANNA_DATABASE_URL, issue 26); a request sent
 * with an Idempotency-Key before the restart is replayed after it, not run again (issue 28).
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll } from "vitest"
import { annaEnv, newHome } from "../support/cli.ts"
import { startGateway } from "../support/gateway.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { DB_PASSWORD, processDatabases } from "../support/processDatabases.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})


describe.each(processDatabases())("e2e: gateway restart on $name", (db) => {
  it("a session resumes with its history after the gateway restarts", async () => {
    const home = newHome()
    homes.push(home)
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-restart", ...(await db.env()) }
    fake.respondWith((req) => {
      const messages = (req.body as { messages?: Array<{ role: string }> }).messages ?? []
      return { kind: "reply", parts: [{ type: "text", text: `reply #${messages.filter((m) => m.role === "user").length}` }] }
    })
    // First start onboards from the environment (provider + agent "default").
    const first = await startGateway(home, env)
    assert.strictEqual((await annaEnv(home, env, "agent", "set", "default", "--tools", "memory")).code, 0)
    assert.strictEqual((await annaEnv(home, env, "user", "add", "gina")).code, 0)
    const token = (await annaEnv(home, env, "user", "token", "gina")).stdout.trim()
    const ask = async (url: string, content: string) => {
      const client = new OpenAI({ baseURL: url, apiKey: token, maxRetries: 0 })
      const r = await client.chat.completions.create({ model: "default", user: "trip-planning", messages: [{ role: "user", content }] })
      return r.choices[0]?.message.content
    }
    assert.strictEqual(await ask(first.url, "We are planning a trip to Lisbon."), "reply #1")
    // A request with an Idempotency-Key (issue 28): its answer outlives the process.
    const keyed = (url: string) =>
      fetch(`${url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": "book-hotel-1" },
        body: JSON.stringify({ model: "default", user: "trip-planning", messages: [{ role: "user", content: "Book the hotel." }] })
      })
    const booked = await keyed(first.url)
    const bookedBody = (await booked.json()) as { id: string; choices: Array<{ message: { content: string } }> }
    assert.deepStrictEqual([booked.status, bookedBody.choices[0]?.message.content], [200, "reply #2"])
    const modelCalls = fake.requests.length
    first.child.kill("SIGTERM")
    const firstRun = await first.done
    assert.strictEqual(firstRun.code, 0)
    // The state is where the setting says, and the URL's password is printed nowhere.
    assert.include(firstRun.stderr, db.name === "SQLite" ? `database ${join(home, "anna.db")} ready` : "database PostgreSQL postgres://anna:***@")
    assert.strictEqual(existsSync(join(home, "anna.db")), db.name === "SQLite")
    assert.notInclude(firstRun.stderr + firstRun.stdout, DB_PASSWORD)

    const second = await startGateway(home, env)
    try {
      // The retry after the restart replays the stored answer: no model call, the message stored once.
      const again = await keyed(second.url)
      assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
      assert.deepStrictEqual(await again.json(), bookedBody)
      assert.strictEqual(fake.requests.length, modelCalls)
      assert.strictEqual(await ask(second.url, "Which city were we planning for?"), "reply #3")
      const body = JSON.stringify(fake.requests[fake.requests.length - 1]?.body ?? "")
      assert.include(body, "We are planning a trip to Lisbon.")
      assert.include(body, "reply #1")
    } finally {
      second.child.kill("SIGTERM")
      assert.strictEqual((await second.done).code, 0)
    }
  }, 120_000)
})

describe("e2e: anna chat", () => {
  it("answers with -p through the real runtime and continues the same conversation next time", async () => {
    const home = newHome()
    homes.push(home)
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-chat" }
    fake.respondWith((req) => {
      const messages = (req.body as { messages?: Array<{ role: string }> }).messages ?? []
      return { kind: "reply", parts: [{ type: "text", text: `I have seen ${messages.filter((m) => m.role === "user").length} of your messages.` }] }
    })
    assert.strictEqual((await annaEnv(home, env, "onboard", "--from-env")).code, 0)
    assert.strictEqual((await annaEnv(home, env, "agent", "set", "default", "--tools", "memory")).code, 0)
    const first = await annaEnv(home, env, "chat", "-p", "Hello, I like chess.")
    assert.deepStrictEqual([first.code, first.stdout.trim()], [0, "I have seen 1 of your messages."])
    const second = await annaEnv(home, env, "chat", "-p", "What do I like?", "--json")
    assert.strictEqual(second.code, 0, second.stderr)
    const parsed = JSON.parse(second.stdout) as { reply: string; stopReason: string; sessionKey: string }
    assert.deepStrictEqual([parsed.reply, parsed.stopReason], ["I have seen 2 of your messages.", "end_turn"])
    assert.match(parsed.sessionKey, /^default:cli:u_[a-z0-9]+:dm$/)
    assert.include(JSON.stringify(fake.requests[fake.requests.length - 1]?.body ?? ""), "Hello, I like chess.")
  }, 60_000)
})
