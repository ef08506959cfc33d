/**
 * Issue 12's restart test for Feishu/Lark, through real gateway processes: 20 users write to the bot
 * (the fake open platform, `base_url` pointed at it, the SDK's long connection); every answer is
 * streaming into its card when the gateway is killed with SIGKILL (the model stalls mid-answer).
 * After a restart every inbound message must end with exactly one complete reply: its first card is
 * the one the first life sent (finished in place), the second card follows once, nothing doubles.
 */
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { THINKING } from "../../../src/layers/channels/feishu/reply.ts"
import { annaEnv, finish, newHome, start, waitForOutput } from "../../support/cli.ts"
import { type FakeFeishu, startFakeFeishu } from "../../support/fakeFeishu/server.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { recordedReplies, until } from "../../support/gatewayDb.ts"

const suite = fakeLlmSuite()
const USERS = 20

let fs: FakeFeishu
beforeEach(async () => {
  fs = await startFakeFeishu()
})
afterEach(async () => {
  await fs.close()
})

const userText = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: ReadonlyArray<{ role: string; content: unknown }> }).messages ?? []
  const last = [...messages].reverse().find((m) => m.role === "user")
  return typeof last?.content === "string" ? last.content : ""
}

/** Two paragraphs of ~4,000 characters: two cards. */
const part = (q: string, n: number) => `Part ${n} of the answer to "${q}": ${"and so on ".repeat(400).trim()}.`
const full = (q: string) => [1, 2].map((n) => part(q, n)).join("\n\n")



const user = (i: number) => `ou_user${String(i).padStart(4, "0")}`

describe("e2e: Feishu replies survive a SIGKILL", () => {
  it("every inbound message gets exactly one complete reply, finished in its first card, after a kill mid-stream and a restart", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-fs" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      expect(r.code, `anna ${args.join(" ")}: ${r.stderr}`).toBe(0)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    // Tools that need no Docker (else every answer ends with a notice that tools are off).
    await cli("agent", "set", "default", "--tools", "notify")
    await cli("channel", "set", "feishu", "--config", `app_id=${fs.appId}`, "--config", `app_secret=${fs.appSecret}`, "--config", `base_url=${fs.baseUrl}`)
    await cli("channel", "enable", "feishu")
    await cli("channel", "disable", "http")
    // First life: every answer starts streaming, then the model stalls.
    fake.respondWith((req) => ({ kind: "disconnect", parts: [{ type: "text", text: full(userText(req)) }], afterEvents: 4, stall: true }))

    const first = start(home, ["gateway"], "info", env)
    const firstDone = finish(first)
    await waitForOutput(first, "press Ctrl+C")
    await fs.waitFor(() => fs.openConnections === 1, "the long connection", 30_000)
    const asked = Array.from({ length: USERS }, (_, i) => fs.sendUserMessage({ from: user(i + 1), text: `question ${i + 1}` }))
    const chats = asked.map((a) => a.chatId)
    await fs.waitFor(
      () => chats.every((c) => (fs.messages(c)[0]?.history.length ?? 0) >= 2),
      "every card showing the start of its answer",
      60_000
    )
    await until(() => recordedReplies(join(home, "anna.db"), "feishu") === USERS, "every first card on record")
    first.kill("SIGKILL")
    await firstDone
    const firstCards = chats.map((c) => fs.messages(c))
    for (const cards of firstCards) {
      expect(cards.length).toBe(1)
      expect(cards[0]?.history[0]?.text).toBe(THINKING)
      expect(cards[0]?.text).not.toContain("Part 2")
    }

    // Second life: the model answers; the channel finishes what the first one began.
    fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: full(userText(req)) }], chunk: 500 }))
    const second = start(home, ["gateway"], "info", env)
    const secondDone = finish(second)
    try {
      await waitForOutput(second, "press Ctrl+C")
      await fs.waitFor(() => chats.every((c) => fs.messages(c).some((m) => m.text.includes("Part 2"))), "every reply complete", 90_000)
      // A further message is answered as usual.
      fs.sendUserMessage({ from: user(1), text: "one more" })
      await fs.waitFor(() => fs.messages(chats[0] ?? "").some((m) => m.text.includes("Part 2 of the answer to \"one more\"")), "the answer to one more", 60_000)
    } finally {
      second.kill("SIGTERM")
    }
    expect((await secondDone).code).toBe(0)
    for (let i = 0; i < USERS; i++) {
      const cards = fs.messages(chats[i] ?? "")
      const q = `question ${i + 1}`
      const texts = cards.map((c) => c.text)
      expect(cards[0]?.messageId, user(i + 1)).toBe(firstCards[i]?.[0]?.messageId)
      expect(texts.slice(0, 2), user(i + 1)).toEqual([part(q, 1), part(q, 2)])
      expect(cards.length, `${user(i + 1)}: ${JSON.stringify(texts.map((t) => t.slice(0, 60)))}`).toBe(i === 0 ? 4 : 2)
    }
  }, 240_000)
})
