/**
 * The WeChat channel's CLI side through the real CLI against the fake iLink API:
 * `anna channel login wechat` (the QR code shown with its URL, a new code when one expires, scanned →
 * confirmed → the token saved in the wechat channel's settings, masked in `anna channel list`; the
 * expiry limit; Ctrl-C saves nothing), `anna doctor` (a valid and an expired session) and `anna
 * notify` to a WeChat user.
 */
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest"
import * as SqliteChannelLedger from "../../../src/layers/channels/SqliteChannelLedger.ts"
import { contextKey } from "../../../src/layers/channels/WechatChannel.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { ChannelLedger } from "../../../src/services/ChannelLedger.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { anna, finish, newHome, start, waitForOutput } from "../../support/cli.ts"
import { type FakeWechat, startFakeWechat } from "../../support/fakeWechat/server.ts"
import { homeDatabase } from "../../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

let wx: FakeWechat
beforeEach(async () => {
  wx = await startFakeWechat({ qrHoldMs: 20_000 })
})
afterEach(async () => {
  await wx.close()
})

const home = async () => {
  const h = newHome()
  homes.push(h)
  const set = await anna(h, "channel", "set", "wechat", "--config", `base_url=${wx.baseUrl}`, "--config", `cdn_base_url=${wx.cdnBaseUrl}`)
  expect(set.code, set.stderr).toBe(0)
  return h
}

/** Until the CLI is long-polling the status of QR code number `n`. */
const polling = (n: number) =>
  wx.waitFor(
    () => wx.callsTo("get_qrcode_status").some((c) => JSON.stringify(c.body) === JSON.stringify({ qrcode: `qr-${n}` })),
    `the status poll of qr-${n}`,
    30_000
  )

describe("anna channel login wechat", () => {
  it("shows the code, renews an expired one, and saves the token once scanned and confirmed", async () => {
    const h = await home()
    const child = start(h, ["channel", "login", "wechat"])
    const run = finish(child)
    await waitForOutput(child, "Scan this QR code with WeChat")
    await polling(1)
    wx.setQr("expired")
    await waitForOutput(child, "here is a new one")
    await wx.waitFor(() => wx.qrs.length === 2, "a second code", 30_000)
    wx.setQr("scaned")
    await waitForOutput(child, "confirm the login in WeChat")
    wx.setQr("confirmed")
    const r = await run
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain(wx.qrs[0]?.url ?? "?")
    expect(r.stdout).toContain(wx.qrs[1]?.url ?? "?")
    // The terminal drawing of the code (block characters).
    expect(r.stdout).toMatch(/[█▀▄]/)
    expect(r.stdout).toContain(`Logged in: WeChat bot ${wx.botId}`)
    expect(r.stdout).toContain("anna channel enable wechat")
    expect(r.stdout + r.stderr).not.toContain(wx.token)

    const list = await anna(h, "channel", "list", "--json")
    const wechat = (JSON.parse(list.stdout) as ReadonlyArray<{ id: string; config: Record<string, unknown> }>).find((c) => c.id === "wechat")
    expect(wechat?.config).toMatchObject({ bot_id: wx.botId, owner_id: "owner01@im.wechat", base_url: wx.baseUrl, cdn_base_url: wx.cdnBaseUrl })
    expect(typeof wechat?.config.token).toBe("string")
    expect(String(wechat?.config.token)).not.toBe(wx.token)
    expect(list.stdout).not.toContain(wx.token)
  }, 90_000)

  it("--json gives up after the code expired three times, saving nothing", async () => {
    const h = await home()
    const child = start(h, ["channel", "login", "wechat", "--json"])
    const run = finish(child)
    for (let n = 1; n <= 3; n++) {
      await polling(n)
      wx.setQr("expired")
      if (n < 3) await wx.waitFor(() => wx.qrs.length === n + 1, `code ${n + 1}`, 30_000)
    }
    const r = await run
    expect(r.code).toBe(1)
    expect(r.stdout).toBe("")
    expect(r.stderr).toContain("expired 3 times")
    expect(r.stderr).toContain("Scan this QR code")
    const list = await anna(h, "channel", "list", "--json")
    expect(list.stdout).not.toContain("token")
  }, 90_000)

  it("Ctrl-C while waiting stops the login and saves nothing", async () => {
    const h = await home()
    const child = start(h, ["channel", "login", "wechat"])
    const run = finish(child)
    await polling(1)
    child.kill("SIGINT")
    const r = await run
    expect(r.code === 130 || r.signal === "SIGINT", `${r.code} ${r.signal}`).toBe(true)
    const list = await anna(h, "channel", "list", "--json")
    expect(list.stdout).not.toContain("token")
  }, 90_000)

  it("refuses a platform that does not log in by QR code", async () => {
    const h = await home()
    const r = await anna(h, "channel", "login", "telegram")
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("anna channel set telegram")
  }, 30_000)
})

const withStores = <A, E>(h: string, self: Effect.Effect<A, E, ConfigStore | ChannelLedger>) =>
  Effect.runPromise(self.pipe(Effect.provide(
    Layer.mergeAll(SqliteRuntimeConfig.layerWithStores(h), SqliteChannelLedger.layer).pipe(Layer.provideMerge(homeDatabase(h)))
  )))

interface Check {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
  readonly fix?: string
}
const wechatCheck = async (h: string): Promise<Check | undefined> => {
  const r = await anna(h, "doctor", "--json")
  return (JSON.parse(r.stdout) as { checks: ReadonlyArray<Check> }).checks.find((c) => c.name === "wechat")
}

describe("anna doctor and anna notify with WeChat", () => {
  it("anna doctor says the session works, then that it expired and to log in again", async () => {
    const h = await home()
    await anna(h, "channel", "set", "wechat", "--config", `token=${wx.token}`, "--config", "bot_id=b0f1c2d3@im.bot")
    await anna(h, "channel", "enable", "wechat")
    const ok = await wechatCheck(h)
    expect(ok?.ok, JSON.stringify(ok)).toBe(true)
    expect(ok?.detail).toContain("bot b0f1c2d3@im.bot")
    wx.expireSession()
    const expired = await wechatCheck(h)
    expect(expired?.ok).toBe(false)
    expect(expired?.detail).toContain("session expired")
    expect(expired?.detail).toContain("anna channel login wechat")
    expect(expired?.fix).toContain("anna channel login wechat")
  }, 60_000)

  it("anna doctor says how to log in when there is no token", async () => {
    const h = await home()
    await anna(h, "channel", "enable", "wechat")
    const check = await wechatCheck(h)
    expect(check?.ok).toBe(false)
    expect(check?.detail).toContain("not logged in")
  }, 60_000)

  it("anna notify writes to a WeChat user in the conversation of their last message", async () => {
    const h = await home()
    await anna(h, "channel", "set", "wechat", "--config", `token=${wx.token}`)
    await anna(h, "channel", "enable", "wechat")
    const m = wx.sendUserMessage({ from: "o9ann@im.wechat", text: "hello" })
    // What the running channel keeps of that message: the user, and the conversation's token.
    const ann = await withStores(h, Effect.gen(function*() {
      const user = yield* (yield* ConfigStore).upsertUser("wechat", "o9ann@im.wechat", "Ann")
      yield* (yield* ChannelLedger).setCursor(contextKey("o9ann@im.wechat"), String(m.context_token))
      return user
    }))
    const r = await anna(h, "notify", ann.id, "Backup **done**", "--json")
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({ user: ann.id, channel: "wechat", delivered: true })
    expect(wx.messages("o9ann@im.wechat")).toEqual([
      expect.objectContaining({ text: "Backup done", contextToken: m.context_token })
    ])
  }, 60_000)
})
