/**
 * The Telegram channel against the fake Bot API (test/support/fakeTelegram) through grammy, over a
 * real runtime (SQLite, LCM memory, the OpenAI SDK against the fake LLM server): DMs, identities,
 * groups by mode, commands, duplicate deliveries and restarts (exactly-once), long replies, 429s,
 * notify, and a refused token.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:net"
import { afterEach, beforeEach } from "vitest"
import * as Notifier from "../../../src/layers/channels/Notifier.ts"
import * as TelegramChannel from "../../../src/layers/channels/TelegramChannel.ts"
import { Channels } from "../../../src/services/Channels.ts"
import { ToolCatalog } from "../../../src/services/ToolCatalog.ts"
import { notifySource } from "../../../src/layers/tools/notify.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeTelegram, startFakeTelegram } from "../../support/fakeTelegram/server.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { allAnswered as allAnsweredOn, channelHarness, lastUserText, stackOn, startChannel as startChannelOf } from "../../support/channelHarness.ts"

const suite = fakeLlmSuite()
const TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"

let tg: FakeTelegram
beforeEach(async () => {
  tg = await startFakeTelegram({ token: TOKEN, botUsername: "anna_test_bot" })
})
afterEach(async () => {
  await tg.close()
})

const options = (overrides: Partial<TelegramChannel.TelegramOptions> = {}): TelegramChannel.TelegramOptions => ({
  token: TOKEN,
  baseUrl: tg.apiRoot,
  groupMode: "mention",
  allowedUsers: undefined,
  ...overrides
})

const { newHome, chatRequests } = channelHarness(suite, "telegram")
const startChannel = (o: TelegramChannel.TelegramOptions) => startChannelOf(TelegramChannel.make(o))
const allAnswered = allAnsweredOn("telegram", "10 seconds")
const wait = <T>(what: string, f: () => T | undefined) => Effect.promise(() => tg.waitFor(f, what))

describe("Telegram channel", () => {
  it.live("answers a DM with the model's reply, as the user it creates, with typing while the turn runs", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Hello **Ann**, nice to meet you." }] }))
      const { stop } = yield* startChannel(options())
      tg.sendUserMessage({ chatId: 501, chatType: "private", from: { id: 501, username: "ann" }, text: "hi there" })
      const reply = yield* wait("a reply in chat 501", () => tg.messages(501).find((m) => m.text.includes("nice to meet you")))
      assert.include(reply.text, "Hello Ann, nice to meet you.")
      assert.strictEqual(reply.parseMode, "HTML")
      assert.include(reply.raw, "<b>Ann</b>")
      assert.strictEqual(lastUserText(chatRequests().at(-1)), "hi there")
      assert.isAbove(tg.chatActions(501).length, 0)
      const users = yield* (yield* ConfigStore).listUsers
      const ann = users.find((u) => u.identities.some((i) => i.platform === "telegram" && i.externalId === "501"))
      assert.isDefined(ann)
      assert.deepStrictEqual(tg.commands().map((c) => c.command).slice(0, 3), ["new", "compact", "abort"])
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a redelivered update is answered once; so are updates across a restart", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      let n = 0
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: `answer ${++n}` }] }))
      const first = yield* startChannel(options())
      const u1 = tg.sendUserMessage({ chatId: 7, chatType: "private", from: { id: 7 }, text: "one" })
      yield* wait("answer 1", () => tg.messages(7).find((m) => m.text === "answer 1"))
      tg.redeliver(u1.update_id)
      tg.sendUserMessage({ chatId: 7, chatType: "private", from: { id: 7 }, text: "two" })
      yield* wait("answer 2", () => tg.messages(7).find((m) => m.text === "answer 2"))
      yield* allAnswered
      yield* first.stop
      // While the gateway is down: one new message, and the old one delivered again.
      tg.sendUserMessage({ chatId: 7, chatType: "private", from: { id: 7 }, text: "three" })
      tg.redeliver(u1.update_id)
      const second = yield* startChannel(options())
      yield* wait("answer 3", () => tg.messages(7).find((m) => m.text === "answer 3"))
      tg.sendUserMessage({ chatId: 7, chatType: "private", from: { id: 7 }, text: "four" })
      yield* wait("answer 4", () => tg.messages(7).find((m) => m.text === "answer 4"))
      yield* second.stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["one", "two", "three", "four"])
      assert.deepStrictEqual(tg.messages(7).map((m) => m.text), ["answer 1", "answer 2", "answer 3", "answer 4"])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("in a group answers a mention, a reply to it and a command, not the rest (group_mode mention)", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const { stop } = yield* startChannel(options())
      const group = { chatId: -100, chatType: "supergroup" as const, from: { id: 9, username: "bob" } }
      tg.sendUserMessage({ ...group, text: "just chatting among us" })
      tg.sendUserMessage({ ...group, text: "@anna_test_bot what is 2+2?", mentionBot: true })
      const answered = yield* wait("the mention answered", () => tg.messages(-100).find((m) => m.text === "re: what is 2+2?"))
      tg.sendUserMessage({ ...group, text: "and 3+3?", replyToBotMessageId: answered.messageId })
      yield* wait("the reply answered", () => tg.messages(-100).find((m) => m.text === "re: and 3+3?"))
      tg.sendUserMessage({ ...group, text: "/whoami@anna_test_bot" })
      const whoami = yield* wait("/whoami answered", () => tg.messages(-100).find((m) => m.text.includes("bob")))
      assert.include(whoami.text, "telegram")
      yield* stop
      assert.notInclude(chatRequests().map(lastUserText), "just chatting among us")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("group_mode off ignores groups, allowed_users ignores strangers; DMs of allowed users are answered", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }] }))
      const { stop } = yield* startChannel(options({ groupMode: "off", allowedUsers: new Set(["42"]) }))
      tg.sendUserMessage({ chatId: -5, chatType: "group", from: { id: 42 }, text: "@anna_test_bot hi", mentionBot: true })
      tg.sendUserMessage({ chatId: 43, chatType: "private", from: { id: 43 }, text: "hi from a stranger" })
      tg.sendUserMessage({ chatId: 42, chatType: "private", from: { id: 42 }, text: "hi from a friend" })
      yield* wait("the friend answered", () => tg.messages(42).find((m) => m.text === "ok"))
      yield* stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["hi from a friend"])
      assert.deepStrictEqual(tg.messages(-5), [])
      assert.deepStrictEqual(tg.messages(43), [])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a long answer with a code block arrives in parts of at most 4,096, each valid, the code kept whole", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const code = Array.from({ length: 60 }, (_, i) => `console.log("line ${i} <tag> & more")`).join("\n")
      const prose = Array.from({ length: 80 }, (_, i) => `Paragraph ${i}: ${"words and more words ".repeat(5)}`).join("\n\n")
      const answer = `${prose}\n\n\`\`\`js\n${code}\n\`\`\`\n\nThe end.`
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: answer }], chunk: 400 }))
      const { stop } = yield* startChannel(options())
      tg.sendUserMessage({ chatId: 11, chatType: "private", from: { id: 11 }, text: "write a lot" })
      yield* wait("the end", () => tg.messages(11).find((m) => m.text.includes("The end.")))
      yield* stop
      const parts = tg.messages(11)
      assert.isAbove(parts.length, 1)
      for (const p of parts) assert.isAtMost(p.text.length, 4096)
      const all = parts.map((p) => p.text).join("\n")
      for (let i = 0; i < 60; i++) assert.include(all, `console.log("line ${i} <tag> & more")`)
      assert.include(parts.map((p) => p.raw).join(""), "<pre>")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a 429 with retry_after delays the reply, never loses it", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "patience pays" }] }))
      const { stop } = yield* startChannel(options())
      tg.failNext("sendMessage", { status: 429, retryAfter: 1, times: 2 })
      tg.sendUserMessage({ chatId: 12, chatType: "private", from: { id: 12 }, text: "hello?" })
      yield* wait("the reply after the 429s", () => tg.messages(12).find((m) => m.text === "patience pays"))
      yield* stop
      assert.strictEqual(tg.calls.filter((c) => c.method === "sendMessage" && c.status === 429).length, 2)
      assert.strictEqual(tg.messages(12).length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("notify reaches a user in their private chat once they have written; refuses one who never did", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hi" }] }))
      const { channel, stop } = yield* startChannel(options())
      tg.sendUserMessage({ chatId: 77, chatType: "private", from: { id: 77, username: "carol" }, text: "hello" })
      yield* wait("hi", () => tg.messages(77).find((m) => m.text === "hi"))
      const users = yield* (yield* ConfigStore).listUsers
      const carol = users.find((u) => u.identities.some((i) => i.platform === "telegram" && i.externalId === "77"))
      assert.isDefined(carol)
      yield* channel.notify({ userId: carol?.id ?? "" }, { text: "Your **backup** finished." })
      const note = yield* wait("the notification", () => tg.messages(77).find((m) => m.text === "Your backup finished."))
      assert.include(note.raw, "<b>backup</b>")
      // A picture, with the text as its caption.
      const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64")
      yield* channel.notify({ userId: carol?.id ?? "" }, { text: "The **chart**", images: [{ mediaType: "image/png", bytes: png, name: "chart.png" }] })
      const photo = yield* wait("the photo", () => tg.messages(77).find((m) => m.kind === "photo"))
      assert.strictEqual(photo.text, "The chart")
      assert.isAbove(photo.photo?.length ?? 0, 0)
      yield* (yield* ConfigStore).createUser("dave", "Dave")
      const refused = yield* Effect.flip(channel.notify({ userId: "dave" }, { text: "x" }))
      assert.include(refused.reason, "never written to the bot")
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a refused token fails the start saying what to do", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(startChannel(options({ token: "999:wrongwrongwrongwrongwrongwrong" })))
      assert.strictEqual(e._tag, "ChannelStartFailed")
      assert.include(e.message, "refused the bot token")
      assert.include(e.message, "anna channel set telegram --config token=")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("the notify tool writes to the session's user on Telegram when the agent calls it", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const { channel, stop } = yield* startChannel(options())
      // The gateway's Channels over this one running channel (the supervisor is tested on its own).
      const channels = Channels.of({
        status: Effect.succeed([{ id: "telegram", state: "running" as const, description: channel.description }]),
        notify: (_id, target, message) => channel.notify(target, message)
      })
      const notifier = yield* Notifier.make.pipe(Effect.provideService(Channels, channels))
      yield* (yield* ToolCatalog).register(notifySource(notifier))
      let call = 0
      suite.fake.respondWith((req) => {
        const tools = ((req.body as { tools?: ReadonlyArray<{ function?: { name?: string } }> }).tools ?? []).map((t) => t.function?.name)
        if (!tools.includes("notify")) return { kind: "reply", parts: [{ type: "text", text: "no notify tool offered" }] }
        return ++call === 1
          ? { kind: "reply", parts: [{ type: "tool_call", id: "c1", name: "notify", input: { text: "Reminder: **stretch**" } }] }
          : { kind: "reply", parts: [{ type: "text", text: "I will remind you." }] }
      })
      tg.sendUserMessage({ chatId: 88, chatType: "private", from: { id: 88 }, text: "remind me to stretch" })
      yield* wait("the reply", () => tg.messages(88).find((m) => m.text === "I will remind you." && m.parseMode === "HTML"))
      const reminder = tg.messages(88).find((m) => m.text === "Reminder: stretch")
      assert.isDefined(reminder)
      assert.include(reminder?.raw ?? "", "<b>stretch</b>")
      const toolResult = JSON.stringify(chatRequests().at(-1)?.body ?? {})
      assert.include(toolResult, "Delivered on telegram.")
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("/model answers with its numbered list and an inline keyboard; a press picks that model for the chat", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default", { allowedModels: ["fake-small", "fake-xl"] })
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `model ${String((req.body as { model?: string }).model)}` }] }))
      const { stop } = yield* startChannel(options())
      const dm = { chatId: 61, chatType: "private" as const, from: { id: 61 } }
      tg.sendUserMessage({ ...dm, text: "/model" })
      const picker = yield* wait("the model picker", () =>
        tg.messages(61).find((m) => m.replyMarkup !== undefined && "inline_keyboard" in m.replyMarkup))
      assert.include(picker.text, "1. fake-large (current)\n2. fake-small\n3. fake-xl")
      const keyboard = picker.replyMarkup !== undefined && "inline_keyboard" in picker.replyMarkup ? picker.replyMarkup.inline_keyboard : []
      assert.deepStrictEqual(keyboard.map((row) => row.map((b) => ("callback_data" in b ? [b.text, b.callback_data] : [b.text]))), [
        [["✓ fake-large", "/model 1"]],
        [["fake-small", "/model 2"]],
        [["fake-xl", "/model 3"]]
      ])
      const press = tg.pressButton({ ...dm, messageId: picker.messageId, data: "/model 3" })
      yield* wait("the pick confirmed", () => tg.messages(61).find((m) => m.text === "This conversation now uses fake-xl."))
      yield* wait("the press acknowledged", () => tg.answeredCallbacks.find((c) => c.callbackQueryId === press.callback_query?.id))
      yield* wait("the keyboard removed", () => (tg.messages(61).find((m) => m.messageId === picker.messageId)?.replyMarkup === undefined ? true : undefined))
      tg.sendUserMessage({ ...dm, text: "which model?" })
      yield* wait("a turn on the picked model", () => tg.messages(61).find((m) => m.text === "model fake-xl"))
      // A press with data no keyboard of ours sends is acknowledged and does nothing.
      const stray = tg.pressButton({ ...dm, messageId: picker.messageId, data: "/new" })
      yield* wait("the stray press acknowledged", () => tg.answeredCallbacks.find((c) => c.callbackQueryId === stray.callback_query?.id))
      yield* allAnswered
      assert.isUndefined(tg.messages(61).find((m) => m.text.startsWith("New conversation")))
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a photo reaches the model as an image with its caption; a file that is no image is refused in words", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "a red dot" }] }))
      const { stop } = yield* startChannel(options())
      // A 1×1 PNG.
      const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64")
      tg.sendUserMessage({ chatId: 62, chatType: "private", from: { id: 62 }, text: "what is this?", photo: { bytes: png } })
      yield* wait("the answer", () => tg.messages(62).find((m) => m.text === "a red dot"))
      const sent = JSON.stringify(chatRequests().at(-1)?.body ?? {})
      assert.include(sent, `data:image/png;base64,${png.toString("base64")}`)
      assert.include(sent, "what is this?")
      const fake = Buffer.from("GIF89a-but-not-really-an-image".replace("GIF89a", "NOTGIF"))
      tg.sendUserMessage({ chatId: 62, chatType: "private", from: { id: 62 }, text: "and this?", photo: { bytes: fake, mime: "image/jpeg" } })
      yield* wait("the second answer", () => (tg.messages(62).filter((m) => m.text === "a red dot").length === 2 ? true : undefined))
      const second = lastUserText(chatRequests().at(-1))
      assert.include(second, "and this?\n[an image could not be read: the file is not a PNG, JPEG, GIF or WebP image")
      assert.notInclude(second, "image_url")
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("webhook mode: setWebhook with the secret, updates claimed before the 200, a redelivery answered once, a wrong secret refused", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const port = yield* Effect.promise(freePort)
      const url = `http://127.0.0.1:${port}/tg/hook`
      const webhook = { url, secret: "s3cret-Value_1", host: "127.0.0.1", port, path: "/tg/hook" }
      const { stop, channel } = yield* startChannel(options({ webhook }))
      assert.include(channel.description, `webhook ${url}`)
      assert.deepStrictEqual(tg.webhook, { url, secret: "s3cret-Value_1" })
      assert.strictEqual(tg.callsTo("getUpdates").length, 0)
      const u = tg.sendUserMessage({ chatId: 71, chatType: "private", from: { id: 71 }, text: "over the hook" })
      yield* wait("the answer", () => tg.messages(71).find((m) => m.text === "re: over the hook"))
      tg.redeliver(u.update_id)
      yield* wait("the redelivery accepted", () => (tg.webhookDeliveries.filter((d) => d.updateId === u.update_id && d.status === 200).length === 2 ? true : undefined))
      tg.sendUserMessage({ chatId: 71, chatType: "private", from: { id: 71 }, text: "second" })
      yield* wait("the second answer", () => tg.messages(71).find((m) => m.text === "re: second"))
      assert.deepStrictEqual(tg.messages(71).map((m) => m.text), ["re: over the hook", "re: second"])
      // Someone who does not know the secret cannot inject updates.
      const forged = yield* Effect.promise(() =>
        fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "guess" }, body: JSON.stringify({ ...u, update_id: 1 }) }))
      assert.strictEqual(forged.status, 401)
      const huge = yield* Effect.promise(() =>
        fetch(url, { method: "POST", headers: { "x-telegram-bot-api-secret-token": "s3cret-Value_1" }, body: "x".repeat(2 * 1024 * 1024) }).then((r) => r.status, () => 413))
      assert.strictEqual(huge, 413)
      yield* stop
      // The webhook stays set while the gateway is down: Telegram keeps the updates for it.
      assert.isDefined(tg.webhook)
    }).pipe(Effect.provide(stackOn(newHome()))))
})

/** A port nothing listens on now. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
