/**
 * The scheduler once with real time, through real processes: a gateway with the Telegram channel
 * (the fake Bot API), a job added by the CLI while the gateway runs (`--every 2s`, delivered to a
 * Telegram user), and two scheduled reports arriving in the user's chat — waited for on the fake's
 * observed messages, never by sleeping. The history then shows the runs with their delivery.
 */
import { assert, describe, it } from "@effect/vitest"
import { afterEach, beforeEach } from "vitest"
import type { Run as JobRun } from "../../src/domain/scheduler/types.ts"
import type { User } from "../../src/services/ConfigStore.ts"
import { annaEnv, finish, newHome, start, waitForOutput } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { type FakeTelegram, startFakeTelegram } from "../support/fakeTelegram/server.ts"

const suite = fakeLlmSuite()
const TOKEN = "434343:ScheduleTestTokenScheduleTestToken"
const CHAT = 2001

let tg: FakeTelegram
beforeEach(async () => {
  tg = await startFakeTelegram({ token: TOKEN, botUsername: "schedule_bot" })
})
afterEach(async () => {
  await tg.close()
})

describe("e2e: a scheduled job delivers on Telegram in real time", () => {
  it("an `every 2s` job added while the gateway runs reaches the user twice", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-sched" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    await cli("channel", "set", "telegram", "--config", `token=${TOKEN}`, "--config", `base_url=${tg.apiRoot}`)
    await cli("channel", "enable", "telegram")
    await cli("channel", "disable", "http")
    let report = 0
    fake.respondWith((req) => {
      const asked = JSON.stringify(req.body).includes("status report please")
      return { kind: "reply", parts: [{ type: "text", text: asked ? `Scheduled report ${++report}.` : "Hello!" }] }
    })

    const gateway = start(home, ["gateway"], "info", env)
    let log = ""
    gateway.stderr?.on("data", (d: Buffer) => (log += d.toString()))
    const done = finish(gateway)
    try {
      await waitForOutput(gateway, "press Ctrl+C")
      // The user writes once, so anna knows them on Telegram.
      tg.sendUserMessage({ chatId: CHAT, chatType: "private", from: { id: CHAT }, text: "hi" })
      await tg.waitFor(() => tg.messages(CHAT).some((m) => m.text === "Hello!"), "the answer to hi")
      const users = JSON.parse(await cli("user", "list", "--json")) as ReadonlyArray<User>
      const user = users.find((u) => u.identities.some((i) => i.platform === "telegram" && i.externalId === String(CHAT)))
      if (user === undefined) return assert.fail(`no telegram user: ${JSON.stringify(users)}`)

      const job = JSON.parse(await cli("schedule", "add", "--agent", "default", "--every", "2s", "--prompt", "status report please",
        "--deliver", `${user.id}@telegram`, "--json")) as { id: string }
      await tg.waitFor(
        () => tg.messages(CHAT).filter((m) => m.text.startsWith("Scheduled report")).length >= 2,
        "two scheduled reports",
        30_000
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}\n${JSON.stringify(tg.messages(CHAT).map((m) => m.text))}\n${log}`)
      })
      const texts = tg.messages(CHAT).map((m) => m.text).filter((t) => t.startsWith("Scheduled report"))
      assert.deepStrictEqual(texts.slice(0, 2), ["Scheduled report 1.", "Scheduled report 2."])
      const runs = JSON.parse(await cli("schedule", "history", job.id, "--json")) as ReadonlyArray<JobRun & { start: string; end: string }>
      const delivered = runs.filter((r) => r.status === "ok" && r.deliveredTo === `${user.id}@telegram`)
      assert.isAtLeast(delivered.length, 2, JSON.stringify(runs))
      assert.isTrue(delivered.every((r) => r.reply?.startsWith("Scheduled report") === true && r.end >= r.start))
      await cli("schedule", "remove", job.id)
    } finally {
      gateway.kill("SIGTERM")
    }
    assert.strictEqual((await done).code, 0, log)
  }, 120_000)
})
