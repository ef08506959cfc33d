/**
 * The fake iLink API (test/support/fakeWechat) speaks the wire the WeChat channel relies on: the QR
 * login's long-polled states, getupdates with its cursor (an old cursor redelivers), uint64 ids as
 * bare JSON numbers, sendmessage's context_token check, typing tickets, AES-128-ECB images on the
 * CDN, and injected failures (HTTP status, ret codes, an expired session).
 */
import { createDecipheriv } from "node:crypto"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { type FakeWechat, startFakeWechat } from "./fakeWechat/server.ts"

let wx: FakeWechat
beforeEach(async () => {
  wx = await startFakeWechat({ pollHoldMs: 300, qrHoldMs: 300 })
})
afterEach(async () => {
  await wx.close()
})

const post = async (method: string, body: unknown, token: string = wx.token) => {
  const res = await fetch(`${wx.baseUrl}/ilink/bot/${method}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", AuthorizationType: "ilink_bot_token", Authorization: `Bearer ${token}` },
    body: JSON.stringify(body)
  })
  return { status: res.status, text: await res.text(), headers: res.headers }
}

const json = (text: string) => JSON.parse(text) as Record<string, unknown>

describe("fake WeChat iLink API", () => {
  it("walks a QR code through wait, scaned and confirmed, each state answered once then held", async () => {
    const qr = json(await (await fetch(`${wx.baseUrl}/ilink/bot/get_bot_qrcode?bot_type=3`)).text())
    expect(qr.qrcode).toBe("qr-1")
    expect(String(qr.qrcode_img_content)).toMatch(/^https:\/\//)
    const status = async () => json(await (await fetch(`${wx.baseUrl}/ilink/bot/get_qrcode_status?qrcode=qr-1`)).text())
    expect((await status()).status).toBe("wait")
    const held = status()
    wx.setQr("scaned")
    expect((await held).status).toBe("scaned")
    wx.setQr("confirmed")
    const done = await status()
    expect(done).toMatchObject({ status: "confirmed", bot_token: wx.token, ilink_bot_id: wx.botId, baseurl: wx.baseUrl })
  })

  it("delivers from the cursor, again from an old cursor, with uint64 ids kept as bare numbers", async () => {
    wx.sendUserMessage({ from: "u1@im.wechat", text: "one" })
    const first = await post("getupdates", { get_updates_buf: "" })
    expect(first.text).toMatch(/"message_id":7000000000000000001,/)
    const buf = String(json(first.text).get_updates_buf)
    wx.sendUserMessage({ from: "u1@im.wechat", text: "two" })
    const second = json((await post("getupdates", { get_updates_buf: buf })).text)
    expect((second.msgs as Array<unknown>).length).toBe(1)
    expect(JSON.stringify(second.msgs)).toContain("two")
    // The old cursor again: the platform sends "two" once more.
    const again = json((await post("getupdates", { get_updates_buf: buf })).text)
    expect(JSON.stringify(again.msgs)).toContain("two")
    // Nothing new: held, then an empty batch with the same cursor.
    const idle = json((await post("getupdates", { get_updates_buf: String(second.get_updates_buf) })).text)
    expect(idle).toMatchObject({ ret: 0, msgs: [], get_updates_buf: second.get_updates_buf })
  })

  it("sendmessage needs the user's context_token; sendtyping the ticket getconfig gave", async () => {
    const m = wx.sendUserMessage({ from: "u2@im.wechat", text: "hi" })
    const ok = json((await post("sendmessage", { msg: { to_user_id: "u2@im.wechat", context_token: m.context_token, client_id: "c1", item_list: [{ type: 1, text_item: { text: "hello" } }] } })).text)
    expect(ok.ret).toBe(0)
    const bad = json((await post("sendmessage", { msg: { to_user_id: "u2@im.wechat", context_token: "forged", item_list: [{ type: 1, text_item: { text: "x" } }] } })).text)
    expect(bad.ret).toBe(-2)
    expect(wx.messages("u2@im.wechat")).toEqual([{ to: "u2@im.wechat", text: "hello", contextToken: m.context_token, clientId: "c1" }])
    expect(json((await post("sendtyping", { ilink_user_id: "u2@im.wechat", typing_ticket: "nope", status: 1 })).text).ret).toBe(-2)
    const ticket = json((await post("getconfig", { ilink_user_id: "u2@im.wechat" })).text).typing_ticket
    expect(json((await post("sendtyping", { ilink_user_id: "u2@im.wechat", typing_ticket: ticket, status: 1 })).text).ret).toBe(0)
    expect(wx.typing).toEqual([{ to: "u2@im.wechat", status: 1 }])
  })

  it("serves an image encrypted with AES-128-ECB under the key the message gives", async () => {
    const image = Buffer.from("\x89PNG\r\n\x1a\n some image bytes", "latin1")
    const m = wx.sendUserMessage({ from: "u3@im.wechat", image })
    const item = (m.item_list as Array<{ image_item: { aeskey: string; media: { encrypt_query_param: string } } }>)[0]
    const res = await fetch(`${wx.cdnBaseUrl}/download?encrypted_query_param=${encodeURIComponent(item?.image_item.media.encrypt_query_param ?? "")}`)
    const encrypted = Buffer.from(await res.arrayBuffer())
    expect(encrypted.length % 16).toBe(0)
    expect(encrypted.equals(image)).toBe(false)
    const d = createDecipheriv("aes-128-ecb", Buffer.from(item?.image_item.aeskey ?? "", "hex"), null)
    expect(Buffer.concat([d.update(encrypted), d.final()]).equals(image)).toBe(true)
  })

  it("answers a wrong token and an expired session with ret -14, and injects HTTP and ret failures", async () => {
    expect(json((await post("getconfig", {}, "wrong")).text)).toMatchObject({ ret: -14, errcode: -14 })
    wx.failNext("getconfig", { status: 429, retryAfter: 2, times: 1 })
    const limited = await post("getconfig", {})
    expect(limited.status).toBe(429)
    expect(limited.headers.get("retry-after")).toBe("2")
    wx.failNext("getconfig", { status: 500 })
    expect((await post("getconfig", {})).status).toBe(500)
    expect(json((await post("getconfig", {})).text).ret).toBe(0)
    wx.expireSession()
    expect(json((await post("getupdates", { get_updates_buf: "" })).text).errcode).toBe(-14)
  })
})
