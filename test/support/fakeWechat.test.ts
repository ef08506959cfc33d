/**
 * The fake iLink API (test/support/fakeWechat) speaks the wire the WeChat channel relies on: the QR
 * login's long-polled states, getupdates with its cursor (an old cursor redelivers), uint64 ids as
 * bare JSON numbers, sendmessage's context_token check, typing tickets, AES-128-ECB images on the
 * CDN, picture uploads (getuploadurl, the CDN's upload, image items), and injected failures (HTTP
 * status, ret codes, an expired session).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
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

  it("takes an encrypted picture through getuploadurl and the CDN, checking what the bot declared, and shows it in a message", async () => {
    const m = wx.sendUserMessage({ from: "u4@im.wechat", text: "hi" })
    const picture = Buffer.from("\x89PNG\r\n\x1a\n a picture the bot sends, 41 bytes", "latin1")
    const key = randomBytes(16)
    const c = createCipheriv("aes-128-ecb", key, null)
    const encrypted = Buffer.concat([c.update(picture), c.final()])
    const declared = {
      filekey: "fk1",
      media_type: 1,
      to_user_id: "u4@im.wechat",
      rawsize: picture.length,
      rawfilemd5: createHash("md5").update(picture).digest("hex"),
      filesize: encrypted.length,
      no_need_thumb: true,
      aeskey: key.toString("hex")
    }
    // What the bot declares is checked.
    expect(json((await post("getuploadurl", { ...declared, filesize: picture.length })).text)).toMatchObject({ ret: -2, errmsg: "filesize does not match rawsize" })
    expect(json((await post("getuploadurl", { ...declared, no_need_thumb: false })).text).errmsg).toBe("thumbnail missing")
    const answer = json((await post("getuploadurl", declared)).text)
    expect(answer.ret).toBe(0)
    expect(answer.upload_full_url).toBeUndefined()
    const upload = (body: Buffer, filekey = "fk1") =>
      fetch(`${wx.cdnBaseUrl}/upload?encrypted_query_param=${encodeURIComponent(String(answer.upload_param))}&filekey=${filekey}`, {
        method: "POST",
        headers: { "Content-Type": "application/octet-stream" },
        body: new Uint8Array(body)
      })
    // Bytes that are not the declared picture are refused with the reason in x-error-message.
    const wrong = await upload(Buffer.concat([encrypted.subarray(16), encrypted.subarray(0, 16)]))
    expect(wrong.status).toBe(400)
    expect(wrong.headers.get("x-error-message")).toMatch(/md5 mismatch|decrypt failed/)
    expect((await upload(encrypted, "other")).headers.get("x-error-message")).toBe("filekey mismatch")
    const ok = await upload(encrypted)
    expect(ok.status).toBe(200)
    const param = ok.headers.get("x-encrypted-param") ?? ""
    expect(param).not.toBe("")
    expect(wx.uploads).toHaveLength(1)
    expect(wx.uploads[0]?.plain.equals(picture)).toBe(true)
    // Served back encrypted, as the CDN does.
    const back = Buffer.from(await (await fetch(`${wx.cdnBaseUrl}/download?encrypted_query_param=${encodeURIComponent(param)}`)).arrayBuffer())
    expect(back.equals(encrypted)).toBe(true)
    const send = (aes_key: string) =>
      post("sendmessage", {
        msg: {
          to_user_id: "u4@im.wechat",
          context_token: m.context_token,
          client_id: "c-img",
          item_list: [{ type: 2, image_item: { media: { encrypt_query_param: param, aes_key, encrypt_type: 1 }, mid_size: encrypted.length } }]
        }
      })
    expect(json((await send(randomBytes(16).toString("base64"))).text)).toMatchObject({ ret: -2, errmsg: "invalid aes_key" })
    expect(json((await send(Buffer.from(key.toString("hex")).toString("base64"))).text).ret).toBe(0)
    const shown = wx.messages("u4@im.wechat")
    expect(shown).toHaveLength(1)
    expect(shown[0]?.text).toBe("")
    expect(shown[0]?.image?.equals(picture)).toBe(true)
  })

  it("injects CDN upload failures: a 5xx, and a 4xx with its reason", async () => {
    wx.failNext("cdn_upload", { status: 502 })
    const first = await fetch(`${wx.cdnBaseUrl}/upload?encrypted_query_param=x&filekey=y`, { method: "POST", body: new Uint8Array(16) })
    expect(first.status).toBe(502)
    wx.failNext("cdn_upload", { status: 403, message: "file too large" })
    const second = await fetch(`${wx.cdnBaseUrl}/upload?encrypted_query_param=x&filekey=y`, { method: "POST", body: new Uint8Array(16) })
    expect(second.status).toBe(403)
    expect(second.headers.get("x-error-message")).toBe("file too large")
    const third = await fetch(`${wx.cdnBaseUrl}/upload?encrypted_query_param=x&filekey=y`, { method: "POST", body: new Uint8Array(16) })
    expect(third.headers.get("x-error-message")).toBe("invalid encrypted_query_param")
    expect(wx.callsTo("cdn_upload").map((c) => c.status)).toEqual([502, 403, 400])
  })
})
