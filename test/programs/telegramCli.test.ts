/**
 * The chat platforms' CLI side against their fakes (Telegram, and QQ for a second platform): `anna notify` (to the user's private
 * chat, Markdown rendered; refusals for an unknown user, a user who never wrote there, a channel
 * that cannot push or is not enabled, an empty message) and `anna doctor`'s token check.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import { afterAll, afterEach, beforeEach } from "vitest"
import { pickChannel } from "../../src/domain/channels/notify.ts"
import * as SqliteRuntimeConfig from "../../src/layers/config/SqliteConfigStore.ts"
import { ConfigStore, type User } from "../../src/services/ConfigStore.ts"
import { anna, newHome, type Run } from "../support/cli.ts"
import { startFakeQq } from "../support/fakeQq/server.ts"
import { type FakeTelegram, startFakeTelegram } from "../support/fakeTelegram/server.ts"
import { homeDatabase } from "../support/db.ts"

const TOKEN = "777000:NotifyTestTokenNotifyTestToken00"
const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

let tg: FakeTelegram
beforeEach(async () => {
  tg = await startFakeTelegram({ token: TOKEN, botUsername: "notify_bot" })
})
afterEach(async () => {
  await tg.close()
})

const withConfig = <A, E>(h: string, self: Effect.Effect<A, E, ConfigStore>) =>
  Effect.runPromise(self.pipe(Effect.provide(SqliteRuntimeConfig.layerWithStores(h).pipe(Layer.provideMerge(homeDatabase(h))))))

const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  assert.include(r.stderr, says)
}

/** A usage error: exit 2, the problem on the first line, then the command's usage. */
const misused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 2, r.stdout + r.stderr)
  assert.include(r.stderr.split("\n")[0], says)
  assert.match(r.stderr.split("\n")[1] ?? "", /^usage: anna /)
}

describe("anna notify", () => {
  it("delivers to the user's Telegram chat, rendered; refuses what it cannot deliver, saying why", async () => {
    const h = newHome()
    homes.push(h)
    await anna(h, "channel", "set", "telegram", "--config", `token=${TOKEN}`, "--config", `base_url=${tg.apiRoot}`)
    refused(await anna(h, "notify", "nobody", "hi"), `no user "nobody"`)
    const ann = await withConfig(h, ConfigStore.use((c) => c.upsertUser("telegram", "4242", "Ann")))
    await withConfig(h, ConfigStore.use((c) => c.createUser("bob", "Bob")))
    refused(await anna(h, "notify", ann.id, "hi"), "no channel that can deliver is enabled")
    await anna(h, "channel", "enable", "telegram")
    refused(await anna(h, "notify", "bob", "hi"), "has never written on telegram")
    misused(await anna(h, "notify", ann.id, "hi", "--channel", "http"), "cannot deliver")
    misused(await anna(h, "notify", ann.id, "  "), "the message is empty")
    // The fake only knows a chat once its user has written in it.
    tg.sendUserMessage({ chatId: 4242, chatType: "private", from: { id: 4242, first_name: "Ann" }, text: "hello" })

    const raw = await anna(h, "notify", ann.id, "Backup **done**: `3 GB`", "--json")
    assert.strictEqual(raw.code, 0, raw.stderr)
    const r = JSON.parse(raw.stdout) as { user: string; channel: string; delivered: boolean }
    assert.deepStrictEqual(r, { user: ann.id, channel: "telegram", delivered: true })
    const [message] = tg.messages(4242)
    assert.strictEqual(message?.text, "Backup done: 3 GB")
    assert.include(message?.raw ?? "", "<b>done</b>")
    assert.include(message?.raw ?? "", "<code>3 GB</code>")
  })

  it("picks the identity the user wrote from most recently among the channels that can push", () => {
    const user = (identities: User["identities"]): User => ({ id: "u", name: "", defaultAgentId: null, identities, createdAt: 0 })
    const both = user([{ platform: "http", externalId: "u", lastSeenAt: 900 }, { platform: "telegram", externalId: "1", lastSeenAt: 100 }])
    assert.deepStrictEqual(pickChannel(both, ["http", "telegram"], undefined), { channel: "telegram" })
    assert.deepStrictEqual(pickChannel(both, ["http"], undefined), {
      problem: "no channel that can deliver is enabled (telegram, feishu, qq, wechat); enable one with anna channel enable"
    })
    assert.deepStrictEqual(pickChannel(both, ["telegram"], "telegram"), { channel: "telegram" })
    assert.include(JSON.stringify(pickChannel(both, ["telegram"], "http")), "cannot deliver")
    assert.include(JSON.stringify(pickChannel(both, ["telegram"], "qq")), "not enabled")
  })

  it("anna doctor asks Telegram who the bot is, and says what to do about a refused token", async () => {
    const h = newHome()
    homes.push(h)
    await anna(h, "channel", "set", "telegram", "--config", `token=${TOKEN}`, "--config", `base_url=${tg.apiRoot}`)
    await anna(h, "channel", "enable", "telegram")
    const ok = await anna(h, "doctor", "--json")
    const checks = (JSON.parse(ok.stdout) as { checks: ReadonlyArray<{ name: string; ok: boolean; detail: string; fix?: string }> }).checks
    const bot = checks.find((c) => c.name === "telegram")
    assert.isTrue(bot?.ok, JSON.stringify(bot))
    assert.include(bot?.detail ?? "", "bot @notify_bot")
    await anna(h, "channel", "set", "telegram", "--config", "token=777000:SomeoneElsesTokenSomeoneElses00")
    const bad = await anna(h, "doctor", "--json")
    assert.strictEqual(bad.code, 1)
    const refusedCheck = (JSON.parse(bad.stdout) as { checks: ReadonlyArray<{ name: string; ok: boolean; detail: string; fix?: string }> }).checks
      .find((c) => c.name === "telegram")
    assert.isFalse(refusedCheck?.ok)
    assert.include(refusedCheck?.detail ?? "", "Telegram refused the bot token (401")
    assert.include(refusedCheck?.fix ?? "", "anna channel set telegram --config token=")
    assert.notInclude(bad.stdout, "SomeoneElsesTokenSomeoneElses00")
  })
})

describe("anna notify on a second platform (QQ)", () => {
  it("delivers through the QQ channel's sending side as an active message to the user's openid", async () => {
    const qq = await startFakeQq()
    try {
      const h = newHome()
      homes.push(h)
      await anna(h, "channel", "set", "qq", "--config", `app_id=${qq.appId}`, "--config", `app_secret=${qq.secret}`, "--config", `base_url=${qq.baseUrl}`, "--config", `token_url=${qq.tokenUrl}`)
      await anna(h, "channel", "enable", "qq")
      qq.sendUserMessage({ user: "ANN_OPENID", content: "hello" })
      const ann = await withConfig(h, ConfigStore.use((c) => c.upsertUser("qq", "ANN_OPENID", "Ann")))
      const raw = await anna(h, "notify", ann.id, "Backup **done**", "--json")
      assert.strictEqual(raw.code, 0, raw.stderr)
      assert.deepStrictEqual(JSON.parse(raw.stdout), { user: ann.id, channel: "qq", delivered: true })
      const [message] = qq.messages("ANN_OPENID")
      assert.strictEqual(message?.content, "Backup done")
      assert.isUndefined(message?.msgId)
    } finally {
      await qq.close()
    }
  })
})
