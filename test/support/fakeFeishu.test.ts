/**
 * The fake Feishu/Lark open platform (test/support/fakeFeishu) driven by the real
 * `@larksuiteoapi/node-sdk`: tenant token, bot info, messages (create, reply, patch, uuid), image
 * resources, image uploads (multipart, checked as Feishu does) and image messages, the long
 * connection (endpoint, protobuf frames, acks, pings, reconnects), card buttons and card actions
 * (answers recorded from the acks), event callbacks, and the failure
 * modes. Waits are on the fake's events (`waitFor`), never on the clock.
 */
import * as Lark from "@larksuiteoapi/node-sdk"
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { type FakeFeishu, startFakeFeishu } from "./fakeFeishu/server.ts"

let fake: FakeFeishu
let ws: Lark.WSClient | undefined

const quiet: Lark.Logger = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined, trace: () => undefined }

beforeEach(async () => {
  fake = await startFakeFeishu()
})
afterEach(async () => {
  ws?.close({ force: true })
  ws = undefined
  await fake.close()
})

const client = (secret = fake.appSecret) =>
  new Lark.Client({ appId: fake.appId, appSecret: secret, domain: fake.baseUrl, cache: new Lark.DefaultCache(), logger: quiet })

const card = (text: string) => JSON.stringify({ config: { update_multi: true }, elements: [{ tag: "markdown", content: text }] })

/** The axios error's Feishu code and HTTP status. */
const refusal = async (p: Promise<unknown>): Promise<{ status: number; code: number }> => {
  const e: unknown = await p.then(() => undefined, (x: unknown) => x)
  const response = (e as { response?: { status?: number; data?: { code?: number } } } | undefined)?.response
  expect(response).toBeDefined()
  return { status: response?.status ?? 0, code: response?.data?.code ?? 0 }
}

describe("fake Feishu", () => {
  it("issues a tenant token to the right app and answers bot info with it; refuses a wrong secret", async () => {
    const info = await client().request<{ code: number; bot: { open_id: string } }>({ method: "GET", url: "/open-apis/bot/v3/info" })
    expect(info.code).toBe(0)
    expect(info.bot.open_id).toBe(fake.botOpenId)
    expect(fake.calls.map((c) => c.path)).toEqual(["/open-apis/auth/v3/tenant_access_token/internal", "/open-apis/bot/v3/info"])
    const e: unknown = await client("wrong").request({ method: "GET", url: "/open-apis/bot/v3/info" }).then(() => undefined, (x: unknown) => x)
    expect(String(e)).toMatch(/10014|status code 400/)
    expect(fake.calls.at(-1)?.code).toBe(10014)
  })

  it("creates, replies to and patches cards; a uuid sends once; refuses a patch of a non-shared card", async () => {
    const c = client()
    const user = "ou_user1"
    const event = fake.sendUserMessage({ from: user, text: "hi" })
    const r = await c.im.message.reply({ path: { message_id: event.messageId }, data: { msg_type: "interactive", content: card("**one**"), uuid: "u1" } })
    const id = r.data?.message_id ?? ""
    const again = await c.im.message.reply({ path: { message_id: event.messageId }, data: { msg_type: "interactive", content: card("**one**"), uuid: "u1" } })
    expect(again.data?.message_id).toBe(id)
    await c.im.message.patch({ path: { message_id: id }, data: { content: card("two") } })
    const created = await c.im.message.create({ params: { receive_id_type: "open_id" }, data: { receive_id: user, msg_type: "text", content: JSON.stringify({ text: "plain" }) } })
    const messages = fake.messages(fake.dmChat(user))
    expect(messages.map((m) => m.text)).toEqual(["two", "plain"])
    expect(messages[0]?.history.map((h) => h.text)).toEqual(["**one**", "two"])
    expect(messages[0]?.parentId).toBe(event.messageId)
    const bad = await refusal(c.im.message.patch({ path: { message_id: created.data?.message_id ?? "" }, data: { content: card("x") } }))
    expect(bad).toEqual({ status: 400, code: 230001 })
  })

  it("refuses cards when told to, and fails calls as scripted (429 with reset, then success)", async () => {
    const c = client()
    fake.sendUserMessage({ from: "ou_u2", text: "hi" })
    const chat = fake.dmChat("ou_u2")
    fake.rejectCards(1)
    expect(await refusal(c.im.message.create({ params: { receive_id_type: "chat_id" }, data: { receive_id: chat, msg_type: "interactive", content: card("x") } }))).toEqual({ status: 400, code: 230099 })
    fake.failNext({ match: "POST /open-apis/im/v1/messages", status: 429, code: 99991400, resetSeconds: 1 })
    expect(await refusal(c.im.message.create({ params: { receive_id_type: "chat_id" }, data: { receive_id: chat, msg_type: "interactive", content: card("x") } }))).toEqual({ status: 429, code: 99991400 })
    await c.im.message.create({ params: { receive_id_type: "chat_id" }, data: { receive_id: chat, msg_type: "interactive", content: card("ok") } })
    expect(fake.messages(chat).map((m) => m.text)).toEqual(["ok"])
    fake.revokeTokens()
    expect((await refusal(c.im.message.create({ params: { receive_id_type: "chat_id" }, data: { receive_id: chat, msg_type: "interactive", content: card("x") } }))).code).toBe(99991663)
  })

  it("serves an image of a user's message through the resource API", async () => {
    const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3])
    const event = fake.sendUserMessage({ from: "ou_u3", image: bytes })
    const message = (event.envelope.event as { message: { content: string; message_type: string } }).message
    expect(message.message_type).toBe("image")
    const key = (JSON.parse(message.content) as { image_key: string }).image_key
    const res = await client().im.messageResource.get({ path: { message_id: event.messageId, file_key: key }, params: { type: "image" } })
    const chunks: Array<Buffer> = []
    for await (const chunk of res.getReadableStream()) chunks.push(chunk as Buffer)
    expect(new Uint8Array(Buffer.concat(chunks))).toEqual(bytes)
  })

  it("takes an image upload from the SDK (multipart, as its axios sends it), checks it as Feishu does, and sends it as an image message", async () => {
    const c = client()
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 9, 8, 7])
    // A bare Buffer goes out as a text field (no file name), which Feishu refuses (larksuite/node-sdk#44); a file stream is a file.
    expect(await refusal(c.im.image.create({ data: { image_type: "message", image: png } }))).toEqual({ status: 400, code: 234001 })
    const dir = mkdtempSync(join(tmpdir(), "fake-feishu-"))
    writeFileSync(join(dir, "a.png"), png)
    const uploaded = await c.im.image.create({ data: { image_type: "message", image: createReadStream(join(dir, "a.png")) } })
    const key = uploaded?.image_key ?? ""
    expect(key).toMatch(/^img_v3_/)
    expect(new Uint8Array(fake.uploaded(key)?.bytes ?? [])).toEqual(new Uint8Array(png))
    expect(fake.uploads.map((u) => u.imageType)).toEqual(["message"])
    expect(fake.calls.at(-1)?.body).toMatchObject({ image_type: "message", image: { name: "a.png", size: png.length } })
    fake.sendUserMessage({ from: "ou_u6", text: "hi" })
    const sent = await c.im.message.create({ params: { receive_id_type: "open_id" }, data: { receive_id: "ou_u6", msg_type: "image", content: JSON.stringify({ image_key: key }) } })
    const [message] = fake.messages(fake.dmChat("ou_u6"))
    expect(message?.messageId).toBe(sent.data?.message_id)
    expect(message?.msgType).toBe("image")
    expect(message?.imageKey).toBe(key)
    // Refusals: an unknown key, an empty file, bytes that are no image format Feishu takes, no image_type.
    expect(await refusal(c.im.message.create({ params: { receive_id_type: "open_id" }, data: { receive_id: "ou_u6", msg_type: "image", content: JSON.stringify({ image_key: "img_v3_nope" }) } }))).toEqual({ status: 400, code: 230001 })
    const file = (name: string, bytes: Uint8Array) => {
      writeFileSync(join(dir, name), bytes)
      return createReadStream(join(dir, name))
    }
    expect(await refusal(c.im.image.create({ data: { image_type: "message", image: file("empty.png", new Uint8Array()) } }))).toEqual({ status: 400, code: 234010 })
    expect(await refusal(c.im.image.create({ data: { image_type: "message", image: file("page.png", Buffer.from("<html>not an image</html>")) } }))).toEqual({ status: 400, code: 234011 })
    expect(await refusal(c.request({ method: "POST", url: "/open-apis/im/v1/images", data: { image_type: "message" } }))).toEqual({ status: 400, code: 234001 })
    const big = Buffer.alloc(10 * 1024 * 1024 + 1)
    png.copy(big)
    expect(await refusal(c.im.image.create({ data: { image_type: "message", image: file("big.png", big) } }))).toEqual({ status: 400, code: 234006 })
    expect(fake.uploads.length).toBe(1)
    rmSync(dir, { recursive: true, force: true })
  })

  it("pushes events over the long connection to the SDK's WSClient, records its acks and pings, and takes it back after a drop", async () => {
    const received: Array<string> = []
    const dispatcher = new Lark.EventDispatcher({ logger: quiet }).register({
      "im.message.receive_v1": async (data) => {
        received.push(data.message.message_id)
      }
    })
    ws = new Lark.WSClient({ appId: fake.appId, appSecret: fake.appSecret, domain: fake.baseUrl, logger: quiet })
    const first = fake.sendUserMessage({ from: "ou_u4", text: "queued before connecting" })
    await ws.start({ eventDispatcher: dispatcher })
    await fake.waitFor(() => received.includes(first.messageId), "the queued event")
    await fake.waitFor(() => fake.acks.length === 1 && fake.acks[0]?.code === 200, "its ack")
    await fake.waitFor(() => fake.pings > 0, "a ping")
    fake.disconnect()
    await fake.waitFor(() => fake.connectionsOpened === 2 && fake.openConnections === 1, "a reconnect")
    const second = fake.sendUserMessage({ from: "ou_u4", groupId: "oc_group1", text: "hello", mentionBot: true })
    await fake.waitFor(() => received.includes(second.messageId), "the event after the reconnect")
    fake.redeliver(second.messageId)
    await fake.waitFor(() => received.filter((id) => id === second.messageId).length === 2, "the redelivery")
  })

  it("reads a card's buttons, refuses a malformed action element, pushes card actions to the SDK and records the answer in the ack", async () => {
    const c = client()
    const user = "ou_u6"
    const event = fake.sendUserMessage({ from: user, text: "/model" })
    const withButtons = JSON.stringify({
      config: { update_multi: true },
      elements: [{ tag: "markdown", content: "pick" }, { tag: "action", actions: [{ tag: "button", text: { tag: "plain_text", content: "one" }, value: { k: 1 } }] }]
    })
    const sent = await c.im.message.reply({ path: { message_id: event.messageId }, data: { msg_type: "interactive", content: withButtons } })
    const id = sent.data?.message_id ?? ""
    expect(fake.buttons(id)).toEqual([{ label: "one", value: { k: 1 } }])
    const broken = JSON.stringify({ config: { update_multi: true }, elements: [{ tag: "action", actions: [{ tag: "button", value: {} }] }] })
    expect(await refusal(c.im.message.patch({ path: { message_id: id }, data: { content: broken } }))).toEqual({ status: 400, code: 230099 })
    const pressed: Array<unknown> = []
    const dispatcher = new Lark.EventDispatcher({ logger: quiet }).register({
      "card.action.trigger": async (data: unknown) => {
        pressed.push(data)
        return { toast: { type: "info", content: "ok" } }
      }
    })
    ws = new Lark.WSClient({ appId: fake.appId, appSecret: fake.appSecret, domain: fake.baseUrl, logger: quiet })
    await ws.start({ eventDispatcher: dispatcher })
    const press = fake.pressButton({ from: user, messageId: id, value: { k: 1 } })
    await fake.waitFor(() => fake.actionAnswers.find((a) => a.eventId === press.eventId), "the answer")
    expect(fake.actionAnswers[0]).toEqual({ eventId: press.eventId, code: 200, body: { toast: { type: "info", content: "ok" } } })
    // The SDK flattens it: header fields next to operator, action and context.
    expect(pressed[0]).toMatchObject({
      event_id: press.eventId,
      event_type: "card.action.trigger",
      operator: { open_id: user },
      action: { value: { k: 1 }, tag: "button" },
      context: { open_message_id: id, open_chat_id: fake.dmChat(user) }
    })
    fake.redeliverAction(press.eventId)
    await fake.waitFor(() => fake.actionAnswers.length === 2, "the redelivery's answer")
    expect(pressed.length).toBe(2)
  })

  it("POSTs event callbacks, encrypted and signed with the Encrypt Key", async () => {
    const secured = await startFakeFeishu({ encryptKey: "enc-key-123", verificationToken: "vt-1" })
    const seen: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = []
    const { createServer } = await import("node:http")
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString() })
        res.end("{}")
      })
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const port = (server.address() as { port: number }).port
    const event = secured.eventFor({ from: "ou_u5", text: "secret" })
    const answer = await secured.callback(`http://127.0.0.1:${port}/`, event.envelope, { encrypt: true })
    expect(answer.status).toBe(200)
    const body = JSON.parse(seen[0]?.body ?? "{}") as { encrypt?: string }
    expect(typeof body.encrypt).toBe("string")
    const decrypted = new Lark.AESCipher("enc-key-123").decrypt(body.encrypt ?? "")
    expect((JSON.parse(decrypted) as { header: { token: string } }).header.token).toBe("vt-1")
    expect(seen[0]?.headers["x-lark-signature"]).toMatch(/^[0-9a-f]{64}$/)
    await new Promise<void>((r) => server.close(() => r()))
    await secured.close()
  })
})
