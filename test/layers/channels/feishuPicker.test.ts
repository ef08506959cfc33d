/**
 * Native pickers on Feishu/Lark (issue 12) against the fake open platform (test/support/fakeFeishu)
 * through the real `@larksuiteoapi/node-sdk`, over a real runtime: `/model` gets a button per
 * option on its card (the current one marked); a press (`card.action.trigger`, over the long
 * connection or the callback URL) is answered with a toast, picks the model for the chat and takes
 * the buttons off; a redelivered press runs once; foreign button data does nothing; allowed_users
 * applies to the presser.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterEach, beforeEach } from "vitest"
import * as FeishuChannel from "../../../src/layers/channels/FeishuChannel.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeFeishu, startFakeFeishu } from "../../support/fakeFeishu/server.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { allAnswered as allAnsweredOn, channelHarness, stackOn, startChannel as startChannelOf } from "../../support/channelHarness.ts"

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

const { newHome, chatRequests } = channelHarness(suite, "feishu-picker")
const startChannel = (o: FeishuChannel.FeishuOptions) => startChannelOf(FeishuChannel.make(o))
const allAnswered = allAnsweredOn("feishu", "20 seconds")
const wait = <T>(what: string, f: () => T | undefined | false) => Effect.promise(() => fs.waitFor(f, what))

const ANN = "ou_ann0000000000000000000000000001"
const BOB = "ou_bob0000000000000000000000000002"
const GROUP = "oc_group00000000000000000000000001"

/** The model the fake LLM was asked for, said back. */
const echoModel = () =>
  suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `model ${String((req.body as { model?: string }).model)}` }] }))

const setUp = Effect.suspend(() => configureAgent(suite.fake, "default", { allowedModels: ["fake-small", "fake-xl"] }))

/** The card in `chat` that has buttons. */
const pickerIn = (chat: string) =>
  wait("the picker card", () => fs.messages(chat).find((m) => fs.buttons(m.messageId).length > 0))

const confirmations = (chat: string) => fs.messages(chat).filter((m) => m.text === "This conversation now uses fake-xl.")

describe("Feishu pickers", () => {
  it.live("/model shows a button per option with the current marked; a press picks that model for the chat and the buttons go away", () =>
    Effect.gen(function*() {
      yield* setUp
      echoModel()
      const { stop } = yield* startChannel(options())
      const chat = fs.dmChat(ANN)
      fs.sendUserMessage({ from: ANN, text: "/model" })
      const picker = yield* pickerIn(chat)
      assert.include(picker.text, "1. fake-large (current)\n2. fake-small\n3. fake-xl")
      assert.deepStrictEqual(fs.buttons(picker.messageId), [
        { label: "✓ fake-large", value: { anna_pick: "/model 1", anna_chat: "p2p" } },
        { label: "fake-small", value: { anna_pick: "/model 2", anna_chat: "p2p" } },
        { label: "fake-xl", value: { anna_pick: "/model 3", anna_chat: "p2p" } }
      ])
      const press = fs.pressButton({ from: ANN, messageId: picker.messageId, value: { anna_pick: "/model 3", anna_chat: "p2p" } })
      const answer = yield* wait("the press answered", () => fs.actionAnswers.find((a) => a.eventId === press.eventId))
      assert.strictEqual(answer.code, 200)
      assert.deepStrictEqual(answer.body, { toast: { type: "info", content: "/model 3" } })
      yield* wait("the pick confirmed", () => confirmations(chat)[0])
      yield* wait("the buttons removed", () => fs.buttons(picker.messageId).length === 0)
      // The card keeps its list.
      assert.include(fs.messages(chat).find((m) => m.messageId === picker.messageId)?.text ?? "", "3. fake-xl")
      fs.sendUserMessage({ from: ANN, text: "which model?" })
      yield* wait("a turn on the picked model", () => fs.messages(chat).find((m) => m.text === "model fake-xl"))
      yield* allAnswered
      yield* stop
      assert.strictEqual(chatRequests().length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a redelivered press runs once; a second press of the same card does nothing", () =>
    Effect.gen(function*() {
      yield* setUp
      echoModel()
      const { stop } = yield* startChannel(options())
      const chat = fs.dmChat(ANN)
      fs.sendUserMessage({ from: ANN, text: "/model" })
      const picker = yield* pickerIn(chat)
      const press = fs.pressButton({ from: ANN, messageId: picker.messageId, value: { anna_pick: "/model 3", anna_chat: "p2p" } })
      yield* wait("the pick confirmed", () => confirmations(chat)[0])
      fs.redeliverAction(press.eventId)
      yield* wait("the redelivery answered", () => (fs.actionAnswers.filter((a) => a.eventId === press.eventId).length === 2 ? true : undefined))
      const second = fs.pressButton({ from: ANN, messageId: picker.messageId, value: { anna_pick: "/model 2", anna_chat: "p2p" } })
      yield* wait("the second press answered", () => fs.actionAnswers.find((a) => a.eventId === second.eventId))
      yield* allAnswered
      fs.sendUserMessage({ from: ANN, text: "which model?" })
      yield* wait("a turn on the first pick", () => fs.messages(chat).find((m) => m.text === "model fake-xl"))
      yield* allAnswered
      yield* stop
      assert.strictEqual(confirmations(chat).length, 1)
      assert.isUndefined(fs.messages(chat).find((m) => m.text.includes("now uses fake-small")))
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a press with data no picker of ours sends does nothing", () =>
    Effect.gen(function*() {
      yield* setUp
      echoModel()
      const { stop } = yield* startChannel(options())
      const chat = fs.dmChat(ANN)
      fs.sendUserMessage({ from: ANN, text: "/model" })
      const picker = yield* pickerIn(chat)
      const before = fs.messages(chat).length
      const stray = [
        { anna_pick: "/new", anna_chat: "p2p" },
        { anna_pick: "/model 3; /new", anna_chat: "p2p" },
        { anna_pick: "/model 12345", anna_chat: "p2p" },
        { other: "/model 3" },
        "/model 3",
        null
      ].map((value) => fs.pressButton({ from: ANN, messageId: picker.messageId, value }))
      for (const s of stray) {
        const answer = yield* wait("the stray press answered", () => fs.actionAnswers.find((a) => a.eventId === s.eventId))
        assert.strictEqual(answer.code, 200)
        assert.deepStrictEqual(answer.body, {})
      }
      yield* allAnswered
      yield* stop
      assert.strictEqual(fs.messages(chat).length, before)
      assert.strictEqual(fs.buttons(picker.messageId).length, 3)
      assert.strictEqual(chatRequests().length, 0)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("in a group allowed_users applies to the presser; an allowed press picks for the group and replies to the card", () =>
    Effect.gen(function*() {
      yield* setUp
      echoModel()
      const { stop } = yield* startChannel(options({ allowedUsers: new Set([ANN]) }))
      fs.sendUserMessage({ from: ANN, groupId: GROUP, text: "/model", mentionBot: true })
      const picker = yield* pickerIn(GROUP)
      assert.deepStrictEqual(fs.buttons(picker.messageId).map((b) => b.value), [
        { anna_pick: "/model 1", anna_chat: "group" },
        { anna_pick: "/model 2", anna_chat: "group" },
        { anna_pick: "/model 3", anna_chat: "group" }
      ])
      const stranger = fs.pressButton({ from: BOB, messageId: picker.messageId, value: { anna_pick: "/model 3", anna_chat: "group" } })
      const refused = yield* wait("the stranger's press answered", () => fs.actionAnswers.find((a) => a.eventId === stranger.eventId))
      assert.deepStrictEqual(refused.body, {})
      yield* allAnswered
      assert.strictEqual(fs.buttons(picker.messageId).length, 3)
      assert.strictEqual(confirmations(GROUP).length, 0)
      fs.pressButton({ from: ANN, messageId: picker.messageId, value: { anna_pick: "/model 3", anna_chat: "group" } })
      const confirmed = yield* wait("the pick confirmed", () => confirmations(GROUP)[0])
      assert.strictEqual(confirmed.parentId, picker.messageId)
      yield* wait("the buttons removed", () => fs.buttons(picker.messageId).length === 0)
      fs.sendUserMessage({ from: ANN, groupId: GROUP, text: "which model?", mentionBot: true })
      yield* wait("a group turn on the picked model", () => fs.messages(GROUP).find((m) => m.text === "model fake-xl"))
      yield* allAnswered
      yield* stop
      assert.strictEqual(confirmations(GROUP).length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("webhook mode: a press POSTed (encrypted, signed) is answered with a toast, runs once, and a wrong token is refused", () =>
    Effect.gen(function*() {
      yield* setUp
      echoModel()
      const { channel, stop } = yield* startChannel(options({ mode: "webhook", encryptKey: ENCRYPT_KEY, verificationToken: VERIFICATION_TOKEN }))
      const url = /on (http:\/\/\S+?)\)/.exec(channel.description)?.[1] ?? ""
      const chat = fs.dmChat(ANN)
      const asked = fs.eventFor({ from: ANN, text: "/model" })
      assert.strictEqual((yield* Effect.promise(() => fs.callback(url, asked.envelope, { encrypt: true }))).status, 200)
      const picker = yield* pickerIn(chat)
      const press = fs.cardActionFor({ from: ANN, messageId: picker.messageId, value: { anna_pick: "/model 3", anna_chat: "p2p" } })
      const header = press.envelope.header as Record<string, unknown>
      const forged = yield* Effect.promise(() => fs.callback(url, { ...press.envelope, header: { ...header, token: "nope" } }, { encrypt: true }))
      assert.strictEqual(forged.status, 401)
      const answered = yield* Effect.promise(() => fs.callback(url, press.envelope, { encrypt: true }))
      assert.deepStrictEqual(answered, { status: 200, body: { toast: { type: "info", content: "/model 3" } } })
      const again = yield* Effect.promise(() => fs.callback(url, press.envelope, { encrypt: true }))
      assert.strictEqual(again.status, 200)
      yield* wait("the pick confirmed", () => confirmations(chat)[0])
      yield* wait("the buttons removed", () => fs.buttons(picker.messageId).length === 0)
      yield* allAnswered
      yield* stop
      assert.strictEqual(confirmations(chat).length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))
})
