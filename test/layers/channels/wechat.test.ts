/**
 * The WeChat channel against the fake iLink API (test/support/fakeWechat), over a real runtime
 * (SQLite, LCM memory, the OpenAI SDK against the fake LLM server): DMs with the context_token
 * echoed, long replies split at 2,000, commands, images (decrypted), the cursor across restarts,
 * duplicate deliveries, resumed replies, 5xx retries, an expired session, and notify (text, and
 * pictures uploaded encrypted to the CDN).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, Option, Schedule } from "effect"
import { afterEach, beforeEach } from "vitest"
import * as WechatChannel from "../../../src/layers/channels/WechatChannel.ts"
import { ChannelLedger } from "../../../src/services/ChannelLedger.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeWechat, startFakeWechat } from "../../support/fakeWechat/server.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { allAnswered as allAnsweredOn, channelHarness, lastUser, lastUserText, stackOn, startChannel as startChannelOf } from "../../support/channelHarness.ts"

const suite = fakeLlmSuite()
/** A 1×1 PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64")
/** The start of a JPEG (its signature and a JFIF header): 48 bytes, a whole number of AES blocks. */
const JPEG = Buffer.concat([Buffer.from("ffd8ffe000104a46494600010100000100010000", "hex"), Buffer.alloc(28, 7)])

let wx: FakeWechat
beforeEach(async () => {
  wx = await startFakeWechat({ pollHoldMs: 5_000 })
})
afterEach(async () => {
  await wx.close()
})

const options = (overrides: Partial<WechatChannel.WechatOptions> = {}): WechatChannel.WechatOptions => ({
  endpoint: { baseUrl: wx.baseUrl, token: wx.token },
  cdnBaseUrl: wx.cdnBaseUrl,
  botId: wx.botId,
  ownerId: "owner01@im.wechat",
  allowedUsers: undefined,
  ...overrides
})

const { newHome, chatRequests } = channelHarness(suite, "wechat")
const startChannel = (o: WechatChannel.WechatOptions) => startChannelOf(WechatChannel.make(o))
const allAnswered = allAnsweredOn("wechat", "15 seconds")
const wait = <T>(what: string, f: () => T | undefined | false) => Effect.promise(() => wx.waitFor(f, what))

const ANN = "o9ann@im.wechat"

describe("WeChat channel", () => {
  it.live("answers a DM in the message's conversation (context_token), as the user it creates, typing meanwhile", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Hello **Ann**, nice to meet you." }] }))
      const { channel, stop } = yield* startChannel(options())
      assert.include(channel.description, wx.botId)
      const m = wx.sendUserMessage({ from: ANN, text: "hi there" })
      const reply = yield* wait("the reply", () => wx.messages(ANN)[0])
      assert.strictEqual(reply.text, "Hello Ann, nice to meet you.")
      assert.strictEqual(reply.contextToken, m.context_token)
      assert.strictEqual(lastUserText(chatRequests().at(-1)), "hi there")
      assert.isAbove(wx.typing.filter((t) => t.to === ANN && t.status === 1).length, 0)
      const users = yield* (yield* ConfigStore).listUsers
      assert.isDefined(users.find((u) => u.identities.some((i) => i.platform === "wechat" && i.externalId === ANN)))
      yield* allAnswered
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a long answer arrives in parts of at most 2,000 characters, plain text, the code block kept whole", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const code = Array.from({ length: 40 }, (_, i) => `console.log("line ${i} <tag> & more")`).join("\n")
      const prose = Array.from({ length: 40 }, (_, i) => `Paragraph **${i}**: ${"words and more words ".repeat(5)}`).join("\n\n")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: `${prose}\n\n\`\`\`js\n${code}\n\`\`\`\n\nThe end.` }], chunk: 400 }))
      const { stop } = yield* startChannel(options())
      wx.sendUserMessage({ from: ANN, text: "write a lot" })
      yield* wait("the end", () => wx.messages(ANN).find((m) => m.text.includes("The end.")))
      yield* allAnswered
      yield* stop
      const parts = wx.messages(ANN)
      assert.isAbove(parts.length, 2)
      for (const p of parts) assert.isAtMost(p.text.length, 2000)
      assert.notInclude(parts.map((p) => p.text).join(""), "**")
      // Every line of the code is whole, and all of them are in one part.
      const withCode = parts.filter((p) => p.text.includes("console.log"))
      assert.strictEqual(withCode.length, 1)
      for (let i = 0; i < 40; i++) assert.include(withCode[0]?.text ?? "", `console.log("line ${i} <tag> & more")`)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("/new and /model are answered by the runtime, the models as a text list", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const { stop } = yield* startChannel(options())
      wx.sendUserMessage({ from: ANN, text: "/model" })
      const models = yield* wait("the model list", () => wx.messages(ANN)[0])
      assert.match(models.text, /Models you may pick:\s+(1\.|•|\*|-) fake-large/)
      wx.sendUserMessage({ from: ANN, text: "/new" })
      const fresh = yield* wait("/new", () => wx.messages(ANN)[1])
      assert.include(fresh.text, "Started a new conversation")
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(chatRequests(), [])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("an image reaches the model decrypted, as an image block with the text", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "a tiny image" }] }))
      const { stop } = yield* startChannel(options())
      wx.sendUserMessage({ from: ANN, text: "what is this?", image: PNG, imageKey: "base64hex", imageAddress: "full_url" })
      yield* wait("the reply", () => wx.messages(ANN).find((m) => m.text === "a tiny image"))
      wx.sendUserMessage({ from: ANN, image: PNG })
      yield* wait("the second reply", () => wx.messages(ANN)[1])
      wx.sendUserMessage({ from: ANN, text: "and this?", image: Buffer.from("MZ not an image at all"), imageKey: "base64raw" })
      yield* wait("the third reply", () => wx.messages(ANN)[2])
      // Over 10 MiB: not downloaded past the cap.
      const huge = Buffer.concat([PNG, Buffer.alloc(10 * 1024 * 1024)])
      wx.sendUserMessage({ from: ANN, text: "a big one", image: huge })
      yield* wait("the fourth reply", () => wx.messages(ANN)[3])
      yield* allAnswered
      yield* stop
      const [first, second, third, fourth] = chatRequests().map((r) => JSON.stringify(lastUser(r)))
      assert.include(fourth ?? "", "a big one")
      assert.include(fourth ?? "", "larger than")
      assert.notInclude(fourth ?? "", "data:image")
      assert.include(third ?? "", "and this?")
      assert.include(third ?? "", "not a PNG, JPEG, GIF or WebP image")
      assert.notInclude(third ?? "", "data:image")
      assert.include(first ?? "", "what is this?")
      assert.include(first ?? "", `data:image/png;base64,${PNG.toString("base64")}`)
      assert.include(second ?? "", `data:image/png;base64,${PNG.toString("base64")}`)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("the cursor survives a restart; a redelivered message is answered once", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      let n = 0
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: `answer ${++n}` }] }))
      const first = yield* startChannel(options())
      const one = wx.sendUserMessage({ from: ANN, text: "one" })
      yield* wait("answer 1", () => wx.messages(ANN).find((m) => m.text === "answer 1"))
      wx.redeliver(String(one.message_id))
      wx.sendUserMessage({ from: ANN, text: "two" })
      yield* wait("answer 2", () => wx.messages(ANN).find((m) => m.text === "answer 2"))
      yield* allAnswered
      const cursor = yield* ChannelLedger.use((l) => l.cursor("wechat"))
      assert.strictEqual(Option.getOrUndefined(cursor), wx.cursorAfter(3))
      yield* first.stop
      // While the gateway is down: one new message, and the first one delivered again.
      wx.sendUserMessage({ from: ANN, text: "three" })
      wx.redeliver(String(one.message_id))
      const polls = wx.callsTo("getupdates").length
      const second = yield* startChannel(options())
      yield* wait("answer 3", () => wx.messages(ANN).find((m) => m.text === "answer 3"))
      wx.sendUserMessage({ from: ANN, text: "four" })
      yield* wait("answer 4", () => wx.messages(ANN).find((m) => m.text === "answer 4"))
      yield* second.stop
      const resumed = wx.calls.slice(0).filter((c) => c.method === "getupdates").slice(polls)[0]
      assert.deepStrictEqual(resumed?.body, { get_updates_buf: wx.cursorAfter(3), base_info: { channel_version: "1.0.0", bot_agent: "anna" } })
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["one", "two", "three", "four"])
      assert.deepStrictEqual(wx.messages(ANN).map((m) => m.text), ["answer 1", "answer 2", "answer 3", "answer 4"])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a reply a restart interrupted is finished without sending its parts again", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const prose = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: ${"words and more words ".repeat(5)}`).join("\n\n")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: prose }] }))
      // Before the "crash": the message was claimed, the cursor moved past it, and one part was out.
      const m = wx.sendUserMessage({ from: ANN, text: "tell me a story" })
      const ledger = yield* ChannelLedger
      yield* ledger.claim("wechat", String(m.message_id), JSON.stringify(m))
      yield* ledger.recordReply("wechat", String(m.message_id), ["anna-sent-before"])
      yield* ledger.setCursor("wechat", wx.cursorAfter(1))
      const { stop } = yield* startChannel(options())
      yield* allAnswered
      yield* stop
      const parts = wx.messages(ANN)
      assert.isAbove(parts.length, 0)
      assert.notInclude(parts[0]?.text ?? "", "Paragraph 0:")
      assert.include(parts.at(-1)?.text ?? "", "Paragraph 29:")
      assert.strictEqual(chatRequests().length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("allowed_users ignores strangers; group messages and the bot's own messages are not answered", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const { stop } = yield* startChannel(options({ allowedUsers: new Set([ANN, "o9bob@im.wechat"]) }))
      wx.sendUserMessage({ from: "o9eve@im.wechat", text: "hi from a stranger" })
      wx.sendUserMessage({ from: "o9bob@im.wechat", text: "in a group", groupId: "g1@chatroom" })
      wx.sendUserMessage({ from: ANN, text: "an echo of the bot", messageType: 2 })
      wx.sendUserMessage({ from: ANN, text: "hi from a friend" })
      yield* wait("the friend answered", () => wx.messages(ANN)[0])
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["hi from a friend"])
      assert.deepStrictEqual(wx.sent.map((m) => m.text), ["re: hi from a friend"])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a 5xx on sendmessage and a 429 on getupdates are retried; the reply arrives once", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "patience pays" }] }))
      wx.failNext("getupdates", { status: 429, retryAfter: 1, times: 1 })
      const { stop } = yield* startChannel(options())
      wx.failNext("sendmessage", { status: 502, times: 2 })
      wx.sendUserMessage({ from: ANN, text: "hello?" })
      yield* wait("the reply after the 5xx", () => wx.messages(ANN)[0])
      yield* allAnswered
      yield* stop
      assert.strictEqual(wx.callsTo("sendmessage").filter((c) => c.status === 502).length, 2)
      assert.strictEqual(wx.callsTo("getupdates").filter((c) => c.status === 429).length, 1)
      assert.deepStrictEqual(wx.messages(ANN).map((m) => m.text), ["patience pays"])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("an expired session (ret -14) stops polling, says to log in again, and the doctor check says so", () => {
    const logs: Array<string> = []
    return Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const { stop } = yield* startChannel(options())
      yield* wait("a poll", () => wx.callsTo("getupdates").length > 0 || wx.calls.length > 0)
      wx.expireSession()
      yield* Effect.sync(() => logs.some((l) => l.includes("anna channel login wechat"))).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (seen) => seen }),
        Effect.timeout("15 seconds")
      )
      const expiredPolls = wx.callsTo("getupdates").filter((c) => c.ret === -14).length
      assert.strictEqual(expiredPolls, 1)
      const check = yield* Effect.flip(WechatChannel.checkSession(options()))
      assert.include(check, "anna channel login wechat")
      assert.include(check, "session expired")
      yield* allAnswered
      yield* stop
      assert.strictEqual(wx.callsTo("getupdates").filter((c) => c.ret === -14).length, 1)
      assert.notInclude(logs.join("\n"), wx.token)
    }).pipe(
      Effect.provide(Logger.layer([Logger.make((o) => {
        if (o.logLevel === "Error") logs.push(Array.isArray(o.message) ? o.message.join(" ") : String(o.message))
      })])),
      Effect.provide(stackOn(newHome()))
    )
  })

  it.live("the channel does not start without a login, and says how to log in", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(startChannel(options({ endpoint: { baseUrl: wx.baseUrl, token: undefined } })))
      assert.strictEqual(e._tag, "ChannelStartFailed")
      assert.include(e.message, "anna channel login wechat")
      const expired = yield* Effect.flip(startChannel(options({ endpoint: { baseUrl: wx.baseUrl, token: "someone-elses-token" } })))
      assert.include(expired.message, "anna channel login wechat")
      assert.notInclude(expired.message, "someone-elses-token")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("notify writes to a user in the conversation of their last message; refuses one who never wrote", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hi" }] }))
      const { channel, stop } = yield* startChannel(options())
      wx.sendUserMessage({ from: ANN, text: "hello" })
      const latest = wx.sendUserMessage({ from: ANN, text: "hello again" })
      yield* wait("both answered", () => wx.messages(ANN).length === 2)
      const config = yield* ConfigStore
      const ann = (yield* config.listUsers).find((u) => u.identities.some((i) => i.platform === "wechat" && i.externalId === ANN))
      yield* channel.notify({ userId: ann?.id ?? "" }, { text: "Your **backup** finished." })
      const note = yield* wait("the notification", () => wx.messages(ANN)[2])
      assert.strictEqual(note.text, "Your backup finished.")
      assert.strictEqual(note.contextToken, latest.context_token)
      yield* allAnswered
      yield* stop
      // The sending side alone (anna notify), with the ledger at hand.
      const sender = yield* WechatChannel.sender(options())
      yield* sender.notify({ userId: ann?.id ?? "" }, { text: "From the CLI." })
      yield* wait("the second notification", () => wx.messages(ANN).find((m) => m.text === "From the CLI."))
      yield* config.createUser("dave", "Dave")
      const refused = yield* Effect.flip(sender.notify({ userId: "dave" }, { text: "x" }))
      assert.include(refused.reason, "never written to the bot")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("notify with pictures: each is uploaded encrypted and sent after the text; the sender alone sends one without text", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hi" }] }))
      const { channel, stop } = yield* startChannel(options())
      const m = wx.sendUserMessage({ from: ANN, text: "hello" })
      yield* wait("the answer", () => wx.messages(ANN)[0])
      const config = yield* ConfigStore
      const ann = (yield* config.listUsers).find((u) => u.identities.some((i) => i.platform === "wechat" && i.externalId === ANN))
      yield* channel.notify({ userId: ann?.id ?? "" }, {
        text: "Your **chart** and a photo.",
        images: [{ mediaType: "image/png", bytes: PNG, name: "chart.png" }, { mediaType: "image/jpeg", bytes: JPEG, name: "photo.jpg" }]
      })
      const sent = wx.messages(ANN).slice(1)
      assert.deepStrictEqual(sent.map((s) => s.text), ["Your chart and a photo.", "", ""])
      assert.isTrue(sent[1]?.image?.equals(PNG))
      assert.isTrue(sent[2]?.image?.equals(JPEG))
      for (const s of sent) assert.strictEqual(s.contextToken, m.context_token)
      // What reached the CDN: the pictures, encrypted (never in the clear), for Ann.
      assert.strictEqual(wx.uploads.length, 2)
      assert.isTrue(wx.uploads[0]?.plain.equals(PNG))
      assert.isFalse(wx.uploads[0]?.encrypted.includes(PNG.subarray(0, 16)))
      assert.deepStrictEqual(wx.callsTo("getuploadurl").map((c) => (c.body as { to_user_id?: string; media_type?: number }).to_user_id), [ANN, ANN])
      // The image item as iLink's own client writes it: the key as base64 of its hex, the encrypted size.
      const items = wx.callsTo("sendmessage").flatMap((c) => (c.body as { msg: { item_list: Array<{ type: number; image_item?: unknown }> } }).msg.item_list)
      const image = items.find((i) => i.type === 2)?.image_item as { media: { aes_key: string; encrypt_type: number }; mid_size: number } | undefined
      assert.match(Buffer.from(image?.media.aes_key ?? "", "base64").toString("latin1"), /^[0-9a-f]{32}$/)
      assert.strictEqual(image?.media.encrypt_type, 1)
      assert.strictEqual(image?.mid_size, wx.uploads[0]?.encrypted.length)
      yield* allAnswered
      yield* stop
      // The sending side alone (anna notify), against a server that gives the full upload address.
      wx.answerUploadFullUrl(true)
      const sender = yield* WechatChannel.sender(options())
      yield* sender.notify({ userId: ann?.id ?? "" }, { text: "", images: [{ mediaType: "image/png", bytes: PNG, name: "again.png" }] })
      const last = wx.messages(ANN).slice(4)
      assert.strictEqual(last.length, 1)
      assert.strictEqual(last[0]?.text, "")
      assert.isTrue(last[0]?.image?.equals(PNG))
      assert.isTrue(wx.uploads[2]?.viaFullUrl)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a 5xx from getuploadurl and from the CDN upload is retried; the picture arrives once", () =>
    Effect.gen(function*() {
      const m = wx.sendUserMessage({ from: ANN, text: "hello" })
      yield* ChannelLedger.use((l) => l.setCursor(WechatChannel.contextKey(ANN), String(m.context_token)))
      const sender = yield* WechatChannel.sender(options())
      wx.failNext("getuploadurl", { status: 503 })
      wx.failNext("cdn_upload", { status: 500, times: 2 })
      yield* sender.notify({ userId: "ann", chatId: ANN }, { text: "the picture", images: [{ mediaType: "image/png", bytes: PNG, name: "p.png" }] })
      assert.deepStrictEqual(wx.callsTo("getuploadurl").map((c) => c.status), [503, 200])
      assert.deepStrictEqual(wx.callsTo("cdn_upload").map((c) => c.status), [500, 500, 200])
      assert.strictEqual(wx.uploads.length, 1)
      const sent = wx.messages(ANN)
      assert.deepStrictEqual(sent.map((s) => s.text), ["the picture", ""])
      assert.isTrue(sent[1]?.image?.equals(PNG))
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a picture iLink refuses fails notify with the platform's reason and sends nothing; one over 10 MiB is refused before any upload", () =>
    Effect.gen(function*() {
      const m = wx.sendUserMessage({ from: ANN, text: "hello" })
      yield* ChannelLedger.use((l) => l.setCursor(WechatChannel.contextKey(ANN), String(m.context_token)))
      const sender = yield* WechatChannel.sender(options())
      const message = { text: "look", images: [{ mediaType: "image/png", bytes: PNG, name: "p.png" }] }
      // The CDN refuses (4xx): not retried, its x-error-message named.
      wx.failNext("cdn_upload", { status: 403, message: "upload quota exceeded" })
      const cdn = yield* Effect.flip(sender.notify({ userId: "ann", chatId: ANN }, message))
      assert.strictEqual(cdn._tag, "ChannelError")
      assert.include(cdn.reason, "upload quota exceeded")
      assert.deepStrictEqual(wx.callsTo("cdn_upload").map((c) => c.status), [403])
      // getuploadurl refuses (ret ≠ 0): its errmsg named.
      wx.failNext("getuploadurl", { ret: -5, message: "media type not allowed" })
      const ilink = yield* Effect.flip(sender.notify({ userId: "ann", chatId: ANN }, message))
      assert.include(ilink.reason, "media type not allowed")
      // Too large: refused here, saying the limit.
      const big = Buffer.concat([PNG, Buffer.alloc(10 * 1024 * 1024)])
      const uploadsAsked = wx.callsTo("getuploadurl").length
      const large = yield* Effect.flip(sender.notify({ userId: "ann", chatId: ANN }, { text: "big", images: [{ mediaType: "image/png", bytes: big, name: "big.png" }] }))
      assert.include(large.reason, "10 MiB")
      assert.strictEqual(wx.callsTo("getuploadurl").length, uploadsAsked)
      // Nothing reached the user, not even the text.
      assert.deepStrictEqual(wx.messages(ANN), [])
      assert.deepStrictEqual(wx.uploads, [])
    }).pipe(Effect.provide(stackOn(newHome()))))
})
