/**
 * Issue 12's restart test for WeChat, through real gateway processes: 20 WeChat users write to the
 * bot (the fake iLink API, `base_url` pointed at it); every answer is three messages long and the
 * platform lets only the first one of each through before the gateway is killed with SIGKILL. After
 * a restart every inbound message must end with exactly its three parts, in order: the parts already
 * delivered are not sent again (iLink cannot edit), none is lost, none is doubled.
 */
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { annaEnv, finish, newHome, start, waitForOutput } from "../../support/cli.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeWechat, startFakeWechat } from "../../support/fakeWechat/server.ts"
import { recordedReplies, until } from "../../support/gatewayDb.ts"

const suite = fakeLlmSuite()
const USERS = 20

let wx: FakeWechat
beforeEach(async () => {
  wx = await startFakeWechat({ pollHoldMs: 5_000 })
})
afterEach(async () => {
  await wx.close()
})

const userText = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: ReadonlyArray<{ role: string; content: unknown }> }).messages ?? []
  const last = [...messages].reverse().find((m) => m.role === "user")
  return typeof last?.content === "string" ? last.content : ""
}

/** Three paragraphs of ~1,500 characters: three WeChat messages. */
const part = (q: string, n: number) => `Part ${n} of the answer to "${q}": ${"and so on ".repeat(150).trim()}.`
const full = (q: string) => [1, 2, 3].map((n) => part(q, n)).join("\n\n")



const user = (i: number) => `o9user${i}@im.wechat`

describe("e2e: WeChat replies survive a SIGKILL", () => {
  it("every inbound message gets its whole reply exactly once after a kill between its parts and a restart", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-wx" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      expect(r.code, `anna ${args.join(" ")}: ${r.stderr}`).toBe(0)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    // Tools that need no Docker (else every answer ends with a notice that tools are off).
    await cli("agent", "set", "default", "--tools", "notify")
    await cli("channel", "set", "wechat", "--config", `token=${wx.token}`, "--config", `base_url=${wx.baseUrl}`, "--config", `cdn_base_url=${wx.cdnBaseUrl}`)
    await cli("channel", "enable", "wechat")
    await cli("channel", "disable", "http")
    fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: full(userText(req)) }] }))

    // First life: each reply's first part goes through, the platform holds the rest.
    wx.holdSendsAfter(1)
    const first = start(home, ["gateway"], "info", env)
    const firstDone = finish(first)
    await waitForOutput(first, "press Ctrl+C")
    for (let i = 1; i <= USERS; i++) wx.sendUserMessage({ from: user(i), text: `question ${i}` })
    await wx.waitFor(() => Array.from({ length: USERS }, (_, i) => wx.messages(user(i + 1)).length === 1).every(Boolean), "a first part for every user", 60_000)
    await until(() => recordedReplies(join(home, "anna.db"), "wechat") === USERS, "every reply's first part on record")
    first.kill("SIGKILL")
    await firstDone
    for (let i = 1; i <= USERS; i++) expect(wx.messages(user(i)).map((m) => m.text)).toEqual([part(`question ${i}`, 1)])

    // Second life: the platform is fast again; the channel finishes what the first one began.
    wx.holdSendsAfter(undefined)
    const second = start(home, ["gateway"], "info", env)
    const secondDone = finish(second)
    try {
      await waitForOutput(second, "press Ctrl+C")
      await wx.waitFor(
        () => Array.from({ length: USERS }, (_, i) => wx.messages(user(i + 1)).length >= 3).every(Boolean),
        "every reply complete",
        60_000
      )
      // A further message is answered as usual (polling resumed from the saved cursor).
      wx.sendUserMessage({ from: user(1), text: "one more" })
      await wx.waitFor(() => wx.messages(user(1)).length === 6, "the answer to one more", 60_000)
    } finally {
      second.kill("SIGTERM")
    }
    expect((await secondDone).code).toBe(0)
    for (let i = 1; i <= USERS; i++) {
      const texts = wx.messages(user(i)).map((m) => m.text)
      const expected = [1, 2, 3].map((n) => part(`question ${i}`, n))
      expect(texts.slice(0, 3), user(i)).toEqual(expected)
      expect(texts.length, `${user(i)}: ${JSON.stringify(texts.map((t) => t.slice(0, 80)))}`).toBe(i === 1 ? 6 : 3)
    }
  }, 180_000)
})
