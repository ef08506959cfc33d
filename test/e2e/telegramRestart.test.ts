/**
 * Issue 12's restart test, through real gateway processes: 20 Telegram chats write to the bot (the
 * fake Bot API, `base_url` pointed at it), the model starts streaming every answer and stalls; the
 * gateway is killed with SIGKILL while the 20 replies are half written, then started again with a
 * model that answers. Every inbound message must end with exactly one complete reply: the messages
 * the first process began are finished in place (edited), none is sent twice, none is left half.
 */
import { assert, describe, it } from "@effect/vitest"
import { join } from "node:path"
import { afterEach, beforeEach } from "vitest"
import { annaEnv, finish, newHome, start, waitForOutput } from "../support/cli.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { type FakeTelegram, startFakeTelegram } from "../support/fakeTelegram/server.ts"
import { recordedReplies, until, openHomeDb } from "../support/gatewayDb.ts"

const suite = fakeLlmSuite()
const TOKEN = "424242:RestartTestTokenRestartTestToken"
const CHATS = 20

let tg: FakeTelegram
beforeEach(async () => {
  tg = await startFakeTelegram({ token: TOKEN, botUsername: "restart_bot" })
})
afterEach(async () => {
  await tg.close()
})

const userText = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: ReadonlyArray<{ role: string; content: unknown }> }).messages ?? []
  const last = [...messages].reverse().find((m) => m.role === "user")
  return typeof last?.content === "string" ? last.content : ""
}


const full = (q: string) => `The complete answer to "${q}", with everything it needs to say, in full.`

describe("e2e: Telegram replies survive a SIGKILL", () => {
  it("every inbound message gets exactly one complete reply after a kill during streaming and a restart", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-tg" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    await cli("agent", "set", "default", "--tools", "notify")
    await cli("channel", "set", "telegram", "--config", `token=${TOKEN}`, "--config", `base_url=${tg.apiRoot}`)
    await cli("channel", "enable", "telegram")
    await cli("channel", "disable", "http")

    // First life: every answer starts, then the model stalls mid-stream.
    fake.respondWith((req) => ({ kind: "disconnect", parts: [{ type: "text", text: full(userText(req)) }], afterEvents: 3, stall: true }))
    const first = start(home, ["gateway"], "info", env)
    const firstDone = finish(first)
    await waitForOutput(first, "press Ctrl+C")
    for (let i = 1; i <= CHATS; i++) tg.sendUserMessage({ chatId: 1000 + i, chatType: "private", from: { id: 1000 + i }, text: `question ${i}` })
    await tg.waitFor(
      () => (Array.from({ length: CHATS }, (_, i) => tg.messages(1001 + i).length > 0).every(Boolean) ? true : undefined),
      "a half-written reply in every chat"
    )
    // Kill once each reply's first message is on record (the platform has no idempotency key: a kill
    // in the milliseconds between Telegram's answer to sendMessage and the ledger's write would leave
    // that one message behind; README says so).
    await until(() => recordedReplies(join(home, "anna.db"), "telegram") === CHATS, "every reply's message id recorded")
    for (let i = 1; i <= CHATS; i++) assert.notInclude(tg.messages(1000 + i)[0]?.text ?? "", "in full.", "the first life must not finish")
    first.kill("SIGKILL")
    await firstDone

    // Second life: the model answers; the channel finishes what the first one began.
    fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: full(userText(req)) }] }))
    const second = start(home, ["gateway"], "info", env)
    let secondLog = ""
    second.stderr?.on("data", (d: Buffer) => (secondLog += d.toString()))
    const secondDone = finish(second)
    try {
      await waitForOutput(second, "press Ctrl+C")
      await tg.waitFor(
        () => (Array.from({ length: CHATS }, (_, i) => tg.messages(1001 + i)[0]?.text.endsWith("in full.")).every(Boolean) ? true : undefined),
        "a complete reply in every chat"
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}\n${Array.from({ length: CHATS }, (_, i) => JSON.stringify(tg.messages(1001 + i).map((m) => m.text))).join("\n")}\n${secondLog}`)
      })
      // The gateway offers the notify tool while a channel that can deliver runs.
      const offered = (fake.requests.at(-1)?.body as { tools?: ReadonlyArray<{ function?: { name?: string } }> } | undefined)?.tools ?? []
      assert.deepStrictEqual(offered.map((t) => t.function?.name), ["notify"])
      for (let i = 1; i <= CHATS; i++) {
        const messages = tg.messages(1000 + i)
        assert.strictEqual(messages.length, 1, `chat ${1000 + i}: ${JSON.stringify(messages.map((m) => m.text))}`)
        assert.strictEqual(messages[0]?.text, full(`question ${i}`))
      }
    } finally {
      second.kill("SIGTERM")
    }
    assert.strictEqual((await secondDone).code, 0)
    // Memory holds each question once, answered once: the resumed turn did not store it again.
    const sqlite = openHomeDb(home, { readOnly: true })
    try {
      const rows = sqlite.all(
        "SELECT m.text AS text, m.role AS role FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id WHERE c.session_key LIKE '%:telegram:%' ORDER BY c.id, m.seq"
      )
      for (let i = 1; i <= CHATS; i++) {
        assert.strictEqual(rows.filter((r) => r["role"] === "user" && r["text"] === `question ${i}`).length, 1, `question ${i} stored once`)
        assert.strictEqual(rows.filter((r) => r["role"] === "assistant" && r["text"] === full(`question ${i}`)).length, 1, `answer ${i} stored once`)
      }
    } finally {
      sqlite.close()
    }
  }, 120_000)
})
