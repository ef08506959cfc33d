/**
 * The Feishu/Lark channel against the fake open platform (test/support/fakeFeishu) through the real
 * `@larksuiteoapi/node-sdk` (its Client and its WebSocket long connection), over a real runtime
 * (SQLite, the OpenAI SDK against the fake LLM server): DMs with streamed cards, groups by mode,
 * commands, long replies, refused cards, images, 429s, duplicate deliveries, reconnects, restarts
 * (exactly-once), the webhook mode (challenge, encrypted events), wrong credentials, notify (text
 * and pictures: uploads, retries, refusals).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterEach, beforeEach } from "vitest"
import { decodeChannelSettings } from "../../../src/domain/config/channel.ts"
import * as FeishuChannel from "../../../src/layers/channels/FeishuChannel.ts"
import * as Notifier from "../../../src/layers/channels/Notifier.ts"
import { CARD_LIMIT, THINKING } from "../../../src/layers/channels/feishu/reply.ts"
import { loadPlatform } from "../../../src/layers/channels/platforms.ts"
import { notifySource } from "../../../src/layers/tools/notify.ts"
import type { OutboundImage } from "../../../src/services/Channel.ts"
import { Channels } from "../../../src/services/Channels.ts"
import { ToolCatalog } from "../../../src/services/ToolCatalog.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import type { FeishuSettings } from "../../../src/domain/config/channel.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeFeishu, startFakeFeishu } from "../../support/fakeFeishu/server.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { allAnswered as allAnsweredOn, channelHarness, lastUserText, stackOn, startChannel as startChannelOf } from "../../support/channelHarness.ts"

const suite = fakeLlmSuite()
const ENCRYPT_KEY = "anna-encrypt-key-0123"
const VERIFICATION_TOKEN = "anna-verification-token"

let fs: FakeFeishu
beforeEach(async () => {
  fs = await startFakeFeishu({ encryptKey: ENCRYPT_KEY, verificationToken: VERIFICATION_TOKEN })
})
afterEach(async () => {
  await fs.close()
})

const options = (overrides: Partial<FeishuChannel.FeishuOptions> = {}): FeishuChannel.FeishuOptions => ({
  appId: fs.appId,
  appSecret: fs.appSecret,
  domain: fs.baseUrl,
  mode: "websocket",
  verificationToken: undefined,
  encryptKey: undefined,
  webhookPath: "/feishu/events",
  webhookHost: "127.0.0.1",
  webhookPort: 0,
  groupMode: "mention",
  allowedUsers: undefined,
  ...overrides
})

const { newHome, chatRequests } = channelHarness(suite, "feishu")
const startChannel = (o: FeishuChannel.FeishuOptions) => startChannelOf(FeishuChannel.make(o))
const allAnswered = allAnsweredOn("feishu", "20 seconds")
const wait = <T>(what: string, f: () => T | undefined | false) => Effect.promise(() => fs.waitFor(f, what))

const ANN = "ou_ann0000000000000000000000000001"
const BOB = "ou_bob0000000000000000000000000002"
const GROUP = "oc_group00000000000000000000000001"

const reply = (t: string) => ({ kind: "reply" as const, parts: [{ type: "text" as const, text: t }] })


/** A PNG header of `width`×`height` (signature and IHDR), then `extra` bytes. */
const png = (width: number, height: number, extra = 16): Uint8Array => {
  const b = new Uint8Array(33 + extra)
  b.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
  new DataView(b.buffer).setUint32(16, width)
  new DataView(b.buffer).setUint32(20, height)
  for (let i = 33; i < b.length; i++) b[i] = i % 251
  return b
}
const gif = (width: number, height: number): Uint8Array => {
  const b = new Uint8Array(40)
  b.set(new TextEncoder().encode("GIF89a"))
  new DataView(b.buffer).setUint16(6, width, true)
  new DataView(b.buffer).setUint16(8, height, true)
  b[39] = 0x3b
  return b
}
const webp = (): Uint8Array => {
  const b = new Uint8Array(44)
  b.set(new TextEncoder().encode("RIFF"))
  new DataView(b.buffer).setUint32(4, 36, true)
  b.set(new TextEncoder().encode("WEBPVP8 "), 8)
  b[43] = 7
  return b
}
const picture = (name: string, mediaType: string, bytes: Uint8Array): OutboundImage => ({ name, mediaType, bytes })
/** The images sent to a chat, as uploaded bytes in order. */
const imagesIn = (chat: string) =>
  fs.messages(chat).filter((m) => m.msgType === "image").map((m) => Array.from(fs.uploaded(m.imageKey ?? "")?.bytes ?? []))
const uploadCalls = () => fs.calls.filter((c) => c.path === "/open-apis/im/v1/images")

describe("Feishu channel", () => {
  it.live("answers a DM with a thinking card that is updated as the answer streams, then made the final Markdown", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ ...reply("Hello **Ann**, nice to meet you. This answer streams in small pieces."), chunk: 6 }))
      const { channel, stop } = yield* startChannel(options())
      assert.include(channel.description, "long connection")
      fs.sendUserMessage({ from: ANN, text: "hi there" })
      const chat = fs.dmChat(ANN)
      const card = yield* wait("the final card", () => fs.messages(chat).find((m) => m.rich && m.text.includes("nice to meet you")))
      assert.strictEqual(card.text, "Hello **Ann**, nice to meet you. This answer streams in small pieces.")
      assert.strictEqual(card.history[0]?.text, THINKING)
      assert.isAtLeast(card.history.length, 3)
      const streamed = card.history.slice(1, -1)
      assert.isTrue(streamed.every((v) => !v.rich && "Hello **Ann**, nice to meet you. This answer streams in small pieces.".startsWith(v.text)))
      assert.strictEqual(fs.messages(chat).length, 1)
      assert.strictEqual(lastUserText(chatRequests().at(-1)), "hi there")
      const users = yield* (yield* ConfigStore).listUsers
      assert.isDefined(users.find((u) => u.identities.some((i) => i.platform === "feishu" && i.externalId === ANN)))
      yield* allAnswered
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("in a group answers an @mention (placeholder taken out) and a reply to its card, as replies; ignores the rest", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => reply(`re: ${lastUserText(req)}`))
      const { stop } = yield* startChannel(options())
      fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "just chatting among us" })
      const asked = fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "what is 2+2?", mentionBot: true })
      const answered = yield* wait("the mention answered", () => fs.messages(GROUP).find((m) => m.text === "re: what is 2+2?"))
      assert.strictEqual(answered.parentId, asked.messageId)
      fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "and 3+3?", parentId: answered.messageId })
      yield* wait("the reply answered", () => fs.messages(GROUP).find((m) => m.text === "re: and 3+3?"))
      fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "a post for the bot", mentionBot: true, post: true })
      yield* wait("the post answered", () => fs.messages(GROUP).find((m) => m.text === "re: a post for the bot"))
      fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "", mentionBot: true })
      yield* wait("a bare mention answered with the help", () => fs.messages(GROUP).find((m) => m.text.includes("/model")))
      yield* allAnswered
      yield* stop
      // After a restart the bot's cards are known by asking the platform who sent them.
      const again = yield* startChannel(options())
      const human = fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "a human's message" })
      fs.sendUserMessage({ from: ANN, groupId: GROUP, text: "replying to bob", parentId: human.messageId })
      fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "and 4+4?", parentId: answered.messageId })
      yield* wait("the reply after the restart answered", () => fs.messages(GROUP).find((m) => m.text === "re: and 4+4?"))
      yield* allAnswered
      yield* again.stop
      assert.notInclude(chatRequests().map(lastUserText), "just chatting among us")
      assert.notInclude(chatRequests().map(lastUserText), "replying to bob")
      assert.strictEqual(fs.messages(GROUP).length, 5)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("group_mode always answers every group message; off none; allowed_users ignores strangers", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => reply(`re: ${lastUserText(req)}`))
      const always = yield* startChannel(options({ groupMode: "always" }))
      fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "no mention needed" })
      yield* wait("the unmentioned message answered", () => fs.messages(GROUP).find((m) => m.text === "re: no mention needed"))
      yield* allAnswered
      yield* always.stop
      const off = yield* startChannel(options({ groupMode: "off", allowedUsers: new Set([ANN]) }))
      fs.sendUserMessage({ from: ANN, groupId: GROUP, text: "hello group", mentionBot: true })
      fs.sendUserMessage({ from: BOB, text: "hi from a stranger" })
      fs.sendUserMessage({ from: ANN, text: "hi from a friend" })
      yield* wait("the friend answered", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "re: hi from a friend"))
      yield* allAnswered
      yield* off.stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["no mention needed", "hi from a friend"])
      assert.deepStrictEqual(fs.messages(fs.dmChat(BOB)), [])
      assert.strictEqual(fs.messages(GROUP).length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("/model and /new are answered with text (numbered lists), without the model", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("model answer"))
      const { stop } = yield* startChannel(options())
      const chat = fs.dmChat(ANN)
      fs.sendUserMessage({ from: ANN, text: "/model" })
      const model = yield* wait("/model answered", () => fs.messages(chat).find((m) => m.text.includes("Model:")))
      assert.match(model.text, /Models you may pick:\n1\. /)
      fs.sendUserMessage({ from: ANN, text: "/new" })
      yield* wait("/new answered", () => fs.messages(chat).find((m) => m.text.includes("Started a new conversation")))
      yield* allAnswered
      yield* stop
      assert.strictEqual(chatRequests().length, 0)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a long answer with a code block arrives as several cards within the limit, the code kept whole", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const code = Array.from({ length: 80 }, (_, i) => `console.log("line ${i} <tag> & more")`).join("\n")
      const prose = Array.from({ length: 160 }, (_, i) => `Paragraph ${i}: ${"words and more words ".repeat(5)}`).join("\n\n")
      const answer = `${prose}\n\n\`\`\`js\n${code}\n\`\`\`\n\nThe end.`
      suite.fake.respondWith(() => ({ ...reply(answer), chunk: 2000 }))
      const { stop } = yield* startChannel(options())
      const chat = fs.dmChat(ANN)
      fs.sendUserMessage({ from: ANN, text: "write a lot" })
      yield* wait("the end", () => fs.messages(chat).find((m) => m.text.includes("The end.")))
      yield* allAnswered
      yield* stop
      const cards = fs.messages(chat)
      assert.isAbove(cards.length, 2)
      for (const c of cards) {
        assert.isAtMost(c.text.length, CARD_LIMIT)
        assert.isTrue(c.rich)
      }
      const withCode = cards.filter((c) => c.text.includes("```js"))
      assert.strictEqual(withCode.length, 1)
      for (let i = 0; i < 80; i++) assert.include(withCode[0]?.text ?? "", `console.log("line ${i} <tag> & more")`)
      assert.include(cards.map((c) => c.text).join("\n"), "Paragraph 159")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a card Feishu refuses to build is written again as plain text", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ ...reply("Some **bold** claim."), chunk: 100 }))
      const { stop } = yield* startChannel(options())
      fs.rejectCards(1)
      fs.sendUserMessage({ from: ANN, text: "format me" })
      const chat = fs.dmChat(ANN)
      const card = yield* wait("the plain card", () => fs.messages(chat).find((m) => m.text === "Some bold claim."))
      assert.isFalse(card.rich)
      assert.isTrue(fs.calls.some((c) => c.code === 230099))
      yield* allAnswered
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("an image (with text, and alone) reaches the model as an image block", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("a fine picture"))
      const { stop } = yield* startChannel(options())
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82, 1, 2, 3, 4])
      const b64 = Buffer.from(png).toString("base64")
      fs.sendUserMessage({ from: ANN, text: "what is this?", image: png })
      yield* wait("the first answer", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "a fine picture"))
      fs.sendUserMessage({ from: BOB, image: png })
      yield* wait("the second answer", () => fs.messages(fs.dmChat(BOB)).find((m) => m.text === "a fine picture"))
      yield* allAnswered
      yield* stop
      const [first, second] = chatRequests()
      assert.include(lastUserText(first), b64)
      assert.include(lastUserText(first), "what is this?")
      assert.include(lastUserText(first), "image/png")
      assert.include(lastUserText(second), b64)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("429s with Feishu's rate-limit code delay the reply, never lose or double it", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("patience pays"))
      const { stop } = yield* startChannel(options())
      fs.failNext({ match: "POST /open-apis/im/v1/messages", status: 429, code: 99991400, msg: "request trigger frequency limit", resetSeconds: 1, times: 2 })
      fs.sendUserMessage({ from: ANN, text: "hello?" })
      yield* wait("the reply after the 429s", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "patience pays"))
      yield* allAnswered
      yield* stop
      assert.strictEqual(fs.calls.filter((c) => c.status === 429).length, 2)
      assert.strictEqual(fs.messages(fs.dmChat(ANN)).length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a duplicate delivery, a dropped connection and a restart: every message answered exactly once", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      let n = 0
      suite.fake.respondWith(() => reply(`answer ${++n}`))
      const chat = fs.dmChat(ANN)
      const first = yield* startChannel(options())
      const one = fs.sendUserMessage({ from: ANN, text: "one" })
      yield* wait("answer 1", () => fs.messages(chat).find((m) => m.text === "answer 1"))
      fs.redeliver(one.messageId)
      fs.disconnect()
      yield* wait("the reconnect", () => fs.connectionsOpened >= 2 && fs.openConnections === 1)
      fs.redeliver(one.messageId)
      fs.sendUserMessage({ from: ANN, text: "two" })
      yield* wait("answer 2", () => fs.messages(chat).find((m) => m.text === "answer 2"))
      yield* allAnswered
      yield* first.stop
      // While the gateway is down: one new message, and the old one delivered again.
      fs.sendUserMessage({ from: ANN, text: "three" })
      fs.redeliver(one.messageId)
      const second = yield* startChannel(options())
      yield* wait("answer 3", () => fs.messages(chat).find((m) => m.text === "answer 3"))
      yield* allAnswered
      yield* second.stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["one", "two", "three"])
      assert.deepStrictEqual(fs.messages(chat).map((m) => m.text), ["answer 1", "answer 2", "answer 3"])
      assert.isTrue(fs.acks.every((a) => a.code === 200))
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a reply a restart interrupted is finished into the same card", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "hang" }))
      const chat = fs.dmChat(ANN)
      const first = yield* startChannel(options())
      fs.sendUserMessage({ from: ANN, text: "a question" })
      const thinking = yield* wait("the thinking card", () => fs.messages(chat).find((m) => m.text === THINKING))
      yield* wait("the model asked", () => chatRequests().length === 1)
      yield* first.stop
      suite.fake.respondWith(() => reply("the answer, after all"))
      const second = yield* startChannel(options())
      const card = yield* wait("the answer", () => fs.messages(chat).find((m) => m.text === "the answer, after all"))
      yield* allAnswered
      yield* second.stop
      assert.strictEqual(card.messageId, thinking.messageId)
      assert.strictEqual(fs.messages(chat).length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("webhook mode: answers the challenge (plain and encrypted), checks token and signature, answers an encrypted event", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("via webhook"))
      const { channel, stop } = yield* startChannel(options({ mode: "webhook", encryptKey: ENCRYPT_KEY, verificationToken: VERIFICATION_TOKEN }))
      const url = /on (http:\/\/\S+?)\)/.exec(channel.description)?.[1] ?? ""
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/feishu\/events$/)
      const challenge = { type: "url_verification", challenge: "c-123", token: VERIFICATION_TOKEN }
      const plain = yield* Effect.promise(() => fs.callback(url, challenge))
      assert.deepStrictEqual(plain, { status: 200, body: { challenge: "c-123" } })
      const encrypted = yield* Effect.promise(() => fs.callback(url, challenge, { encrypt: true }))
      assert.deepStrictEqual(encrypted, { status: 200, body: { challenge: "c-123" } })
      const wrongToken = yield* Effect.promise(() => fs.callback(url, { ...challenge, token: "nope" }))
      assert.strictEqual(wrongToken.status, 401)
      // The shared listener: POST only, on the path only.
      const status = (u: string, init: RequestInit) => Effect.promise(() => fetch(u, init).then((r) => r.status))
      assert.strictEqual(yield* status(url, { method: "GET" }), 405)
      assert.strictEqual(yield* status(url.replace("/feishu/events", "/other"), { method: "POST", body: "{}" }), 404)
      const event = fs.eventFor({ from: ANN, text: "over the webhook" })
      const forged = yield* Effect.promise(() => fs.callback(url, event.envelope, { encrypt: true, badSignature: true }))
      assert.strictEqual(forged.status, 401)
      const delivered = yield* Effect.promise(() => fs.callback(url, event.envelope, { encrypt: true }))
      assert.strictEqual(delivered.status, 200)
      const again = yield* Effect.promise(() => fs.callback(url, event.envelope, { encrypt: true }))
      assert.strictEqual(again.status, 200)
      yield* wait("the answer", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "via webhook"))
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["over the webhook"])
      assert.strictEqual(fs.messages(fs.dmChat(ANN)).length, 1)
      assert.strictEqual(fs.openConnections, 0)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("webhook mode without a verification token does not start, saying what to set", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(startChannel(options({ mode: "webhook" })))
      assert.strictEqual(e._tag, "ChannelStartFailed")
      assert.include(e.message, "verification_token")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a long connection the platform refuses fails the start, saying why", () =>
    Effect.gen(function*() {
      fs.failNext({ match: "POST /callback/ws/endpoint", status: 200, code: 1000040350, msg: "exceed connection limit" })
      const e = yield* Effect.flip(startChannel(options()))
      assert.strictEqual(e._tag, "ChannelStartFailed")
      assert.include(e.message, "the long connection was refused")
      assert.include(e.message, "exceed connection limit")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("an expired tenant token is fetched again and the reply goes out", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("still here"))
      const { stop } = yield* startChannel(options())
      const tokensBefore = fs.calls.filter((c) => c.path.endsWith("/tenant_access_token/internal")).length
      fs.revokeTokens()
      fs.sendUserMessage({ from: ANN, text: "are you there?" })
      yield* wait("the reply", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "still here"))
      yield* allAnswered
      yield* stop
      assert.isTrue(fs.calls.some((c) => c.code === 99991663))
      assert.strictEqual(fs.calls.filter((c) => c.path.endsWith("/tenant_access_token/internal")).length, tokensBefore + 1)
      assert.strictEqual(fs.messages(fs.dmChat(ANN)).length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a wrong app secret fails the start and the doctor check, saying what to do", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(startChannel(options({ appSecret: "wrong-secret-value" })))
      assert.strictEqual(e._tag, "ChannelStartFailed")
      assert.include(e.message, "refused the app credentials")
      assert.include(e.message, "anna channel set feishu --config app_id=")
      assert.notInclude(e.message, "wrong-secret-value")
      const settings = { app_id: fs.appId, app_secret: "wrong-secret-value", base_url: fs.baseUrl }
      const bad = yield* Effect.flip(FeishuChannel.platformChannel.check(settings))
      assert.include(bad, "refused the app credentials")
      const good = yield* FeishuChannel.platformChannel.check({ ...settings, app_secret: fs.appSecret })
      assert.include(good, "anna test bot")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.effect("base_url takes the Feishu and the Lark domains (and their short names); settings are checked", () =>
    Effect.sync(() => {
      const decode = (config: Record<string, unknown>) => decodeChannelSettings<FeishuSettings>("feishu", config)
      const base = { app_id: "cli_a1b2c3d4e5f60718", app_secret: "s3cret" }
      const domainOf = (config: Record<string, unknown>) => {
        const r = decode(config)
        return r._tag === "Success" ? FeishuChannel.feishuOptions(r.success).domain : r.failure
      }
      assert.strictEqual(domainOf(base), "https://open.feishu.cn")
      assert.strictEqual(domainOf({ ...base, base_url: "lark" }), "https://open.larksuite.com")
      assert.strictEqual(domainOf({ ...base, base_url: "feishu" }), "https://open.feishu.cn")
      assert.strictEqual(domainOf({ ...base, base_url: "https://open.larksuite.com/" }), "https://open.larksuite.com")
      assert.include(domainOf({ ...base, app_id: "12345" }), "app_id")
      assert.include(domainOf({ ...base, allowed_users: "12345" }), "open_ids")
      assert.include(domainOf({ ...base, mode: "poll" }), "websocket or webhook")
    }))

  it.live("the Lark domain is used as given: the channel runs against a base_url that is not Feishu's", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("hello from lark"))
      const { channel, stop } = yield* startChannel(options({ domain: fs.baseUrl.replace("127.0.0.1", "localhost") }))
      assert.include(channel.description, "localhost")
      fs.sendUserMessage({ from: ANN, text: "hi" })
      yield* wait("the answer", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "hello from lark"))
      yield* allAnswered
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("the notify tool writes to the session's user on Feishu when the agent calls it", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const { channel, stop } = yield* startChannel(options())
      const channels = Channels.of({
        status: Effect.succeed([{ id: "feishu", state: "running" as const, description: channel.description }]),
        notify: (_id, target, message) => channel.notify(target, message)
      })
      const notifier = yield* Notifier.make.pipe(Effect.provideService(Channels, channels))
      yield* (yield* ToolCatalog).register(notifySource(notifier))
      let call = 0
      suite.fake.respondWith((req) => {
        const tools = ((req.body as { tools?: ReadonlyArray<{ function?: { name?: string } }> }).tools ?? []).map((t) => t.function?.name)
        if (!tools.includes("notify")) return reply("no notify tool offered")
        return ++call === 1
          ? { kind: "reply", parts: [{ type: "tool_call", id: "c1", name: "notify", input: { text: "Reminder: **stretch**" } }] }
          : reply("I will remind you.")
      })
      fs.sendUserMessage({ from: ANN, text: "remind me to stretch" })
      const chat = fs.dmChat(ANN)
      yield* wait("the reply", () => fs.messages(chat).find((m) => m.text === "I will remind you." && m.rich))
      const reminder = fs.messages(chat).find((m) => m.text === "Reminder: **stretch**")
      assert.isDefined(reminder)
      assert.isTrue(reminder?.rich)
      assert.include(JSON.stringify(chatRequests().at(-1)?.body ?? {}), "Delivered on feishu.")
      yield* allAnswered
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("notify reaches a user by open_id once they have written; refuses one who never did", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("hi"))
      const { channel, stop } = yield* startChannel(options())
      fs.sendUserMessage({ from: ANN, text: "hello" })
      yield* wait("hi", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "hi"))
      yield* allAnswered
      const users = yield* (yield* ConfigStore).listUsers
      const ann = users.find((u) => u.identities.some((i) => i.platform === "feishu" && i.externalId === ANN))
      assert.isDefined(ann)
      yield* channel.notify({ userId: ann?.id ?? "" }, { text: "Your **backup** finished." })
      const note = yield* wait("the notification", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "Your **backup** finished."))
      assert.isTrue(note.rich)
      const create = fs.calls.find((c) => c.path === "/open-apis/im/v1/messages" && JSON.stringify(c.body).includes("backup"))
      assert.include(JSON.stringify(create?.body), ANN)
      yield* (yield* ConfigStore).createUser("dave", "Dave")
      const refused = yield* Effect.flip(channel.notify({ userId: "dave" }, { text: "x" }))
      assert.include(refused.reason, "never written to the bot")
      yield* stop
      // The sender alone (anna notify) delivers the same way, without a connection.
      const senderOnly = yield* FeishuChannel.sender(options())
      yield* senderOnly.notify({ userId: ann?.id ?? "" }, { text: "from the CLI" })
      yield* wait("the CLI notification", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "from the CLI"))
    }).pipe(Effect.provide(stackOn(newHome()))))
  it.live("notify with pictures (PNG, GIF, WebP) uploads each and sends it as an image message, then the text as a card", () =>
    Effect.gen(function*() {
      const ann = yield* (yield* ConfigStore).upsertUser("feishu", ANN, "Ann")
      const { channel, stop } = yield* startChannel(options())
      const images = [picture("chart.png", "image/png", png(2, 2)), picture("anim.gif", "image/gif", gif(10, 10)), picture("photo.webp", "image/webp", webp())]
      yield* channel.notify({ userId: ann.id }, { text: "Here is the **chart**.", images })
      const chat = fs.dmChat(ANN)
      const sent = fs.messages(chat)
      assert.deepStrictEqual(sent.map((m) => m.msgType), ["image", "image", "image", "interactive"])
      assert.deepStrictEqual(imagesIn(chat), images.map((i) => Array.from(i.bytes)))
      assert.deepStrictEqual(fs.uploads.map((u) => [u.imageType, u.fileName, u.contentType]), [
        ["message", "image.png", "image/png"],
        ["message", "image.gif", "image/gif"],
        ["message", "image.webp", "image/webp"]
      ])
      assert.strictEqual(sent[3]?.text, "Here is the **chart**.")
      assert.isTrue(sent[3]?.rich)
      // Sent to the user's open_id, each with an idempotency uuid of its own.
      const creates = fs.calls.filter((c) => c.path === "/open-apis/im/v1/messages" && c.status === 200)
      assert.isTrue(creates.every((c) => JSON.stringify(c.body).includes(ANN)))
      assert.strictEqual(new Set(creates.map((c) => (c.body as { uuid?: string }).uuid)).size, 4)
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a picture upload that fails with a 5xx is retried; one Feishu refuses fails the notify with its reason, the text still delivered", () =>
    Effect.gen(function*() {
      const ann = yield* (yield* ConfigStore).upsertUser("feishu", ANN, "Ann")
      const { channel, stop } = yield* startChannel(options())
      const chat = fs.dmChat(ANN)
      fs.failNext({ match: "POST /open-apis/im/v1/images", status: 503, code: 1500, msg: "internal error" })
      yield* channel.notify({ userId: ann.id }, { text: "after a hiccup", images: [picture("a.png", "image/png", png(3, 3))] })
      assert.deepStrictEqual(uploadCalls().map((c) => c.status), [503, 200])
      assert.deepStrictEqual(imagesIn(chat), [Array.from(png(3, 3))])
      assert.deepStrictEqual(fs.messages(chat).map((m) => m.text), ["", "after a hiccup"])
      fs.failNext({ match: "POST /open-apis/im/v1/images", status: 400, code: 234011, msg: "Can't regonnize the image format." })
      const refused = yield* Effect.flip(channel.notify({ userId: ann.id }, { text: "the text goes anyway", images: [picture("b.png", "image/png", png(4, 4))] }))
      assert.strictEqual(refused._tag, "ChannelError")
      assert.include(refused.reason, "234011")
      assert.include(refused.reason, "Can't regonnize the image format.")
      assert.include(refused.reason, "b.png")
      assert.include(refused.reason, "the text was delivered")
      assert.strictEqual(uploadCalls().length, 3)
      assert.deepStrictEqual(fs.messages(chat).map((m) => m.text), ["", "after a hiccup", "the text goes anyway"])
      assert.strictEqual(imagesIn(chat).length, 1)
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("pictures Feishu does not take (over 10 MB, a GIF over 2000×2000, not an image) are refused before any upload, saying why", () =>
    Effect.gen(function*() {
      const ann = yield* (yield* ConfigStore).upsertUser("feishu", ANN, "Ann")
      const { channel, stop } = yield* startChannel(options())
      const chat = fs.dmChat(ANN)
      const big = yield* Effect.flip(channel.notify({ userId: ann.id }, { text: "big", images: [picture("big.png", "image/png", png(100, 100, 10 * 1024 * 1024))] }))
      assert.include(big.reason, "big.png")
      assert.include(big.reason, "at most 10 MB")
      const wide = yield* Effect.flip(channel.notify({ userId: ann.id }, { text: "", images: [picture("ok.png", "image/png", png(5, 5)), picture("wide.gif", "image/gif", gif(2001, 10))] }))
      assert.include(wide.reason, "wide.gif is 2001×10 pixels")
      assert.include(wide.reason, "2000×2000")
      assert.notInclude(wide.reason, "text was delivered")
      const fake = yield* Effect.flip(channel.notify({ userId: ann.id }, { text: "", images: [picture("page.png", "image/png", new TextEncoder().encode("<html>"))] }))
      assert.include(fake.reason, "not a PNG, JPEG, GIF or WebP")
      assert.strictEqual(uploadCalls().length, 0)
      assert.deepStrictEqual(fs.messages(chat).map((m) => m.text), ["big"])
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("the sending side alone (anna notify, through the platform table) sends pictures the same way", () =>
    Effect.gen(function*() {
      const ann = yield* (yield* ConfigStore).upsertUser("feishu", ANN, "Ann")
      const platform = yield* loadPlatform("feishu")
      const alone = yield* platform?.sender({ app_id: fs.appId, app_secret: fs.appSecret, base_url: fs.baseUrl }) ?? Effect.fail("no platform")
      yield* alone.notify({ userId: ann.id }, { text: "from the CLI", images: [picture("cli.jpg", "image/jpeg", new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]))] })
      yield* alone.notify({ userId: ann.id }, { text: "  ", images: [picture("only.png", "image/png", png(6, 6))] })
      const chat = fs.dmChat(ANN)
      assert.deepStrictEqual(fs.messages(chat).map((m) => [m.msgType, m.text]), [["image", ""], ["interactive", "from the CLI"], ["image", ""]])
      assert.deepStrictEqual(imagesIn(chat), [[0xff, 0xd8, 0xff, 0xe0, 1, 2, 3], Array.from(png(6, 6))])
      assert.strictEqual(fs.uploads[0]?.contentType, "image/jpeg")
    }).pipe(Effect.provide(stackOn(newHome()))))
})
