/**
 * The fake QQ Bot API (test/support/fakeQq) on its own, driven by raw `fetch` and a raw `ws`
 * client: tokens, the API's auth, passive replies and their msg_seq rule, scripted failures,
 * served attachments, and the gateway's opcodes (hello, identify, READY, heartbeat, dispatch,
 * resume with replay, reconnect, invalid session). Waits are on events, never on the clock.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import WebSocket from "ws"
import { CODE_DUPLICATE_SEQ, type FakeQq, INTENT_GROUP_AND_C2C, startFakeQq } from "./fakeQq/server.ts"

let fake: FakeQq
beforeEach(async () => {
  fake = await startFakeQq({ heartbeatIntervalMs: 500 })
})
afterEach(async () => {
  await fake.close()
})

const token = async (secret = fake.secret) => {
  const res = await fetch(fake.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ appId: fake.appId, clientSecret: secret })
  })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

const api = async (method: string, path: string, accessToken: string, body?: unknown) => {
  const res = await fetch(`${fake.baseUrl}${path}`, {
    method,
    headers: { authorization: `QQBot ${accessToken}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> }
}

const validToken = async () => String((await token()).json["access_token"])

/** A raw gateway client: every frame received, and a way to wait for one. */
const connect = async (url: string) => {
  const frames: Array<{ op: number; s?: number; t?: string; d?: unknown }> = []
  const ws = new WebSocket(url)
  const waiters: Array<() => void> = []
  ws.on("message", (data) => {
    frames.push(JSON.parse(data.toString()) as { op: number })
    for (const w of waiters.splice(0)) w()
  })
  let closeCode: number | undefined
  ws.on("close", (code) => {
    closeCode = code
    for (const w of waiters.splice(0)) w()
  })
  const until = <T>(f: () => T | undefined, what: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 10_000)
      const check = () => {
        const v = f()
        if (v !== undefined) {
          clearTimeout(timer)
          resolve(v)
        } else waiters.push(check)
      }
      check()
    })
  await until(() => frames.find((f) => f.op === 10), "hello")
  return { ws, frames, until, closeCode: () => closeCode, send: (p: unknown) => ws.send(JSON.stringify(p)) }
}

describe("fake QQ", () => {
  it("issues tokens (expires_in as text) and refuses a wrong AppSecret or AppID with QQ's code", async () => {
    const ok = await token()
    expect(ok.status).toBe(200)
    expect(typeof ok.json["access_token"]).toBe("string")
    expect(ok.json["expires_in"]).toBe("7200")
    const wrong = await token("not-the-secret")
    expect(wrong.json).toEqual({ code: 100016, message: "invalid appid or secret" })
    const res = await fetch(fake.tokenUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ appId: "1", clientSecret: fake.secret }) })
    expect(await res.json()).toEqual({ code: 100007, message: "appid invalid" })
  })

  it("refuses API calls without a valid token, and after the tokens expire", async () => {
    expect((await api("GET", "/gateway", "nope")).status).toBe(401)
    const t = await validToken()
    const g = await api("GET", "/gateway", t)
    expect(g.status).toBe(200)
    expect(String(g.json["url"])).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/websocket$/)
    fake.expireTokens()
    const after = await api("GET", "/gateway", t)
    expect(after.status).toBe(401)
    expect(after.json["code"]).toBe(11244)
  })

  it("records passive replies with msg_id + msg_seq, refusing a repeated msg_seq and a sixth reply", async () => {
    const t = await validToken()
    const m = fake.sendUserMessage({ user: "U1", content: "hi" })
    const first = await api("POST", "/v2/users/U1/messages", t, { content: "one", msg_type: 0, msg_id: m.id, msg_seq: 1 })
    expect(first.status).toBe(200)
    expect(typeof first.json["id"]).toBe("string")
    const again = await api("POST", "/v2/users/U1/messages", t, { content: "one again", msg_type: 0, msg_id: m.id, msg_seq: 1 })
    expect(again.status).toBe(400)
    expect(again.json["code"]).toBe(CODE_DUPLICATE_SEQ)
    for (let seq = 2; seq <= 5; seq++) {
      expect((await api("POST", "/v2/users/U1/messages", t, { content: `part ${seq}`, msg_type: 0, msg_id: m.id, msg_seq: seq })).status).toBe(200)
    }
    expect((await api("POST", "/v2/users/U1/messages", t, { content: "six", msg_type: 0, msg_id: m.id, msg_seq: 6 })).status).toBe(400)
    expect(fake.messages("U1").map((x) => [x.content, x.msgSeq])).toEqual([["one", 1], ["part 2", 2], ["part 3", 3], ["part 4", 4], ["part 5", 5]])
    // A reply to a message of another chat, and empty text, are refused.
    expect((await api("POST", "/v2/users/U2/messages", t, { content: "x", msg_type: 0, msg_id: m.id })).status).toBe(400)
    expect((await api("POST", "/v2/users/U1/messages", t, { content: " ", msg_type: 0 })).status).toBe(400)
  })

  it("scripts 429 with Retry-After, then answers normally; serves attachments", async () => {
    const t = await validToken()
    fake.failNext("messages", { status: 429, retryAfter: 2 })
    const limited = await api("POST", "/v2/users/U1/messages", t, { content: "x", msg_type: 0 })
    expect(limited.status).toBe(429)
    expect(limited.headers.get("retry-after")).toBe("2")
    expect((await api("POST", "/v2/users/U1/messages", t, { content: "x", msg_type: 0 })).status).toBe(200)
    const m = fake.sendUserMessage({ user: "U1", content: "look", attachments: [{ bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47]) }] })
    const url = ((m.d["attachments"] as Array<{ url: string }> | undefined) ?? [])[0]?.url ?? ""
    const file = await fetch(url)
    expect(file.headers.get("content-type")).toBe("image/png")
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(new Uint8Array([0x89, 0x50, 0x4e, 0x47]))
  })

  it("takes rich media uploads as QQ documents them and sends them as msg_type 7 in the same kind of chat only", async () => {
    const t = await validToken()
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 7, 7, 7])
    const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")
    const up = await api("POST", "/v2/users/U1/files", t, { file_type: 1, file_data: b64(png), srv_send_msg: false })
    expect(up.status).toBe(200)
    expect(up.json["ttl"]).toBe(3600)
    expect(typeof up.json["file_uuid"]).toBe("string")
    const fileInfo = String(up.json["file_info"])
    expect(fake.uploads.map((u) => [u.kind, u.chat, u.fileType, u.srvSendMsg])).toEqual([["users", "U1", 1, false]])
    expect(fake.uploads[0]?.bytes).toEqual(png)
    // Uploaded, not sent.
    expect(fake.messages("U1")).toEqual([])
    // msg_type 7 needs a content and a known file_info, uploaded for this kind of chat.
    expect((await api("POST", "/v2/users/U1/messages", t, { msg_type: 7, media: { file_info: fileInfo } })).status).toBe(400)
    expect((await api("POST", "/v2/users/U1/messages", t, { content: " ", msg_type: 7, media: { file_info: "nope" } })).json["message"]).toBe("media file_info invalid")
    expect((await api("POST", "/v2/groups/G1/messages", t, { content: " ", msg_type: 7, media: { file_info: fileInfo } })).status).toBe(400)
    const sent = await api("POST", "/v2/users/U2/messages", t, { content: "a dot", msg_type: 7, media: { file_info: fileInfo } })
    expect(sent.status).toBe(200)
    expect(fake.messages("U2").map((m) => [m.msgType, m.content, m.image?.bytes])).toEqual([[7, "a dot", png]])
    // What QQ refuses.
    const refusal = async (body: Record<string, unknown>) => (await api("POST", "/v2/groups/G1/files", t, body)).json["message"]
    expect(await refusal({ file_type: 9, file_data: b64(png), srv_send_msg: false })).toBe("file_type invalid")
    expect(await refusal({ file_type: 4, file_data: b64(png), srv_send_msg: false })).toBe("file_type 4 is not open")
    expect(await refusal({ file_type: 1, file_data: b64(png) })).toBe("srv_send_msg invalid")
    expect(await refusal({ file_type: 1, srv_send_msg: false })).toBe("exactly one of url and file_data is required")
    expect(await refusal({ file_type: 1, file_data: "not base64!", srv_send_msg: false })).toBe("file_data is not base64")
    expect(await refusal({ file_type: 1, file_data: b64(new TextEncoder().encode("GIF89a....")), srv_send_msg: false })).toBe(
      "image format not supported (png/jpg)"
    )
    const big = new Uint8Array(10 * 1024 * 1024 + 1)
    big.set(png)
    expect(await refusal({ file_type: 1, file_data: b64(big), srv_send_msg: false })).toBe("file too large")
    // srv_send_msg true sends at once, as an active message; scripted failures and refusals.
    expect((await api("POST", "/v2/groups/G1/files", t, { file_type: 1, file_data: b64(png), srv_send_msg: true })).status).toBe(200)
    expect(fake.messages("G1").map((m) => [m.msgType, m.image?.bytes])).toEqual([[7, png]])
    fake.failNext("files", { status: 500 })
    expect((await api("POST", "/v2/users/U1/files", t, { file_type: 1, file_data: b64(png), srv_send_msg: false })).status).toBe(500)
    fake.refuseUploads(40034199, "picture rejected")
    const refused = await api("POST", "/v2/users/U1/files", t, { file_type: 1, file_data: b64(png), srv_send_msg: false })
    expect([refused.status, refused.json["code"], refused.json["message"]]).toEqual([400, 40034199, "picture rejected"])
    expect(fake.uploads.length).toBe(2)
  })

  it("speaks the gateway: hello, identify → READY, heartbeat ACK, dispatches with increasing s, resume replays", async () => {
    const t = await validToken()
    const url = String((await api("GET", "/gateway", t)).json["url"])
    const c = await connect(url)
    expect(c.frames[0]).toEqual({ op: 10, d: { heartbeat_interval: 500 } })
    // Messages sent before anyone identified wait for the session.
    fake.sendUserMessage({ user: "U1", content: "early" })
    c.send({ op: 2, d: { token: `QQBot ${t}`, intents: INTENT_GROUP_AND_C2C, shard: [0, 1] } })
    const ready = await c.until(() => c.frames.find((f) => f.t === "READY"), "READY")
    const sessionId = (ready.d as { session_id: string }).session_id
    expect(ready.s).toBe(1)
    await c.until(() => c.frames.find((f) => f.t === "C2C_MESSAGE_CREATE"), "the early message")
    c.send({ op: 1, d: 2 })
    await c.until(() => c.frames.find((f) => f.op === 11), "heartbeat ACK")
    expect(fake.heartbeats).toEqual([2])
    const g = fake.sendUserMessage({ user: "M1", group: "G1", content: " hello bot" })
    const event = await c.until(() => c.frames.find((f) => f.t === "GROUP_AT_MESSAGE_CREATE"), "the group message")
    expect(event.s).toBe(3)
    expect(event.d).toMatchObject({ id: g.id, group_openid: "G1", author: { member_openid: "M1" }, content: " hello bot" })
    fake.dropConnection()
    await c.until(() => c.closeCode(), "the drop")
    fake.sendUserMessage({ user: "U1", content: "while away" })
    const c2 = await connect(url)
    c2.send({ op: 6, d: { token: `QQBot ${t}`, session_id: sessionId, seq: 2 } })
    await c2.until(() => c2.frames.find((f) => f.t === "RESUMED"), "RESUMED")
    expect(c2.frames.filter((f) => f.op === 0).map((f) => [f.s, f.t])).toEqual([[3, "GROUP_AT_MESSAGE_CREATE"], [4, "C2C_MESSAGE_CREATE"], [5, "RESUMED"]])
    c2.ws.close()
  })

  it("refuses identify without the intent or with a bad token; op 9 for an unknown session; op 7 on request", async () => {
    const t = await validToken()
    const url = String((await api("GET", "/gateway", t)).json["url"])
    const noIntent = await connect(url)
    noIntent.send({ op: 2, d: { token: `QQBot ${t}`, intents: 1, shard: [0, 1] } })
    expect(await noIntent.until(() => noIntent.closeCode(), "close")).toBe(4014)
    const badToken = await connect(url)
    badToken.send({ op: 2, d: { token: "QQBot nope", intents: INTENT_GROUP_AND_C2C, shard: [0, 1] } })
    expect(await badToken.until(() => badToken.closeCode(), "close")).toBe(4004)
    const c = await connect(url)
    c.send({ op: 6, d: { token: `QQBot ${t}`, session_id: "unknown", seq: 1 } })
    expect(await c.until(() => c.frames.find((f) => f.op === 9), "op 9")).toEqual({ op: 9, d: false })
    c.send({ op: 2, d: { token: `QQBot ${t}`, intents: INTENT_GROUP_AND_C2C, shard: [0, 1] } })
    await c.until(() => c.frames.find((f) => f.t === "READY"), "READY")
    fake.requestReconnect()
    await c.until(() => c.frames.find((f) => f.op === 7), "op 7")
    fake.invalidateSession()
    await c.until(() => c.frames.filter((f) => f.op === 9).length === 2 || undefined, "a second op 9")
    c.ws.close()
  })
})
