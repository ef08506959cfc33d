/**
 * The QQ channel against the fake QQ Bot API (test/support/fakeQq), over a real runtime (SQLite,
 * LCM memory, the OpenAI SDK against the fake LLM server): C2C and group @-messages, commands,
 * long replies as passive replies with increasing msg_seq, images in, 429s, duplicate pushes, a
 * dropped gateway connection (resume), an invalid session (identify), a restart in the middle of a
 * reply, an expired token, refused credentials (start and doctor) and notify, with pictures out
 * (rich media upload + msg_type 7, retried, refused with QQ's reason, checked before sending).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { afterEach, beforeEach } from "vitest"
import * as QqChannel from "../../../src/layers/channels/QqChannel.ts"
import { loadPlatform } from "../../../src/layers/channels/platforms.ts"
import { encodeMessage, type QqMessage } from "../../../src/layers/channels/qq/message.ts"
import { qqParts } from "../../../src/layers/channels/qq/reply.ts"
import * as Notifier from "../../../src/layers/channels/Notifier.ts"
import { notifySource } from "../../../src/layers/tools/notify.ts"
import { Channels } from "../../../src/services/Channels.ts"
import { ToolCatalog } from "../../../src/services/ToolCatalog.ts"
import { ChannelLedger } from "../../../src/services/ChannelLedger.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeQq, startFakeQq } from "../../support/fakeQq/server.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { allAnswered as allAnsweredOn, channelHarness, lastUser, lastUserText, stackOn, startChannel as startChannelOf } from "../../support/channelHarness.ts"

const suite = fakeLlmSuite()

let qq: FakeQq
beforeEach(async () => {
  qq = await startFakeQq()
})
afterEach(async () => {
  await qq.close()
})

const options = (overrides: Partial<QqChannel.QqOptions> = {}): QqChannel.QqOptions => ({
  appId: qq.appId,
  secret: qq.secret,
  baseUrl: qq.baseUrl,
  tokenUrl: qq.tokenUrl,
  groupMode: "mention",
  allowedUsers: undefined,
  reconnectDelayMs: () => 50,
  ...overrides
})

const { newHome, chatRequests } = channelHarness(suite, "qq")
const startChannel = (o: QqChannel.QqOptions) => startChannelOf(QqChannel.make(o))
const allAnswered = allAnsweredOn("qq", "15 seconds")
const wait = <T>(what: string, f: () => T | undefined | false) => Effect.promise(() => qq.waitFor(f, what))

const connected = wait("the gateway session", () => qq.connected)

describe("QQ channel", () => {
  it.live("answers a C2C message as a passive reply (msg_id, msg_seq 1, plain text), as the user it creates", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Hello **Ann**, nice to meet you." }] }))
      const { stop } = yield* startChannel(options())
      const m = qq.sendUserMessage({ user: "ANN_OPENID", content: "hi there" })
      const reply = yield* wait("the reply", () => qq.messages("ANN_OPENID")[0])
      assert.strictEqual(reply.content, "Hello Ann, nice to meet you.")
      assert.strictEqual(reply.msgType, 0)
      assert.strictEqual(reply.msgId, m.id)
      assert.strictEqual(reply.msgSeq, 1)
      assert.strictEqual(lastUserText(chatRequests().at(-1)), "hi there")
      const users = yield* (yield* ConfigStore).listUsers
      assert.isDefined(users.find((u) => u.identities.some((i) => i.platform === "qq" && i.externalId === "ANN_OPENID")))
      const identify = qq.sessions[0]
      assert.strictEqual(identify?.op, 2)
      const d = identify?.d as { token: string; intents: number; shard: ReadonlyArray<number> }
      assert.match(d.token, /^QQBot fakeqq-/)
      assert.strictEqual(d.intents, 1 << 25)
      assert.deepStrictEqual(d.shard, [0, 1])
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("answers a group @-message in the group, threaded by its msg_id, without QQ's mention markup", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const { stop } = yield* startChannel(options())
      const m = qq.sendUserMessage({ user: "BOB_MEMBER", group: "GROUP_1", content: "<@!bot-102000001> what is 2+2?" })
      const reply = yield* wait("the group reply", () => qq.messages("GROUP_1")[0])
      assert.strictEqual(reply.kind, "groups")
      assert.strictEqual(reply.content, "re: what is 2+2?")
      assert.strictEqual(reply.msgId, m.id)
      qq.sendUserMessage({ user: "BOB_MEMBER", group: "GROUP_1", content: " /whoami" })
      const whoami = yield* wait("/whoami", () => qq.messages("GROUP_1").find((x) => x.content.includes("chat: GROUP_1 (group)")))
      assert.include(whoami.content, "platform: qq")
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("group_mode off ignores groups; allowed_users ignores strangers", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }] }))
      const { stop } = yield* startChannel(options({ groupMode: "off", allowedUsers: new Set(["FRIEND"]) }))
      qq.sendUserMessage({ user: "FRIEND", group: "GROUP_2", content: "hi all" })
      qq.sendUserMessage({ user: "STRANGER", content: "hi from a stranger" })
      qq.sendUserMessage({ user: "FRIEND", content: "hi from a friend" })
      yield* wait("the friend answered", () => qq.messages("FRIEND")[0])
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["hi from a friend"])
      assert.deepStrictEqual(qq.messages("GROUP_2"), [])
      assert.deepStrictEqual(qq.messages("STRANGER"), [])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("/model answers with a numbered text list and a number picks; /new starts a new conversation", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default", { allowedModels: ["fake-small", "fake-xl"] })
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `model ${String((req.body as { model?: string }).model)}` }] }))
      const { stop } = yield* startChannel(options())
      qq.sendUserMessage({ user: "CMD", content: "/model" })
      const model = yield* wait("/model", () => qq.messages("CMD").find((x) => x.content.startsWith("Model:")))
      assert.include(model.content, "1. fake-large (current)\n2. fake-small\n3. fake-xl")
      qq.sendUserMessage({ user: "CMD", content: "/model 3" })
      yield* wait("the pick", () => qq.messages("CMD").find((x) => x.content === "This conversation now uses fake-xl."))
      qq.sendUserMessage({ user: "CMD", content: "which model?" })
      yield* wait("a turn on the picked model", () => qq.messages("CMD").find((x) => x.content === "model fake-xl"))
      qq.sendUserMessage({ user: "CMD", content: "/new" })
      const fresh = yield* wait("/new", () => qq.messages("CMD").find((x) => x.content.startsWith("Started a new conversation")))
      assert.include(fresh.content, ":qq:")
      assert.strictEqual(chatRequests().length, 1)
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a long answer arrives in parts of at most 2,000 with msg_seq 1, 2, 3…, the code block whole", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const code = Array.from({ length: 40 }, (_, i) => `console.log("line ${i}")`).join("\n")
      const prose = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: ${"words and more words ".repeat(5)}`).join("\n\n")
      const answer = `${prose}\n\n\`\`\`js\n${code}\n\`\`\`\n\nThe end.`
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: answer }], chunk: 400 }))
      const { stop } = yield* startChannel(options())
      const m = qq.sendUserMessage({ user: "LONG", content: "write a lot" })
      yield* wait("the end", () => qq.messages("LONG").find((x) => x.content.includes("The end.")))
      yield* stop
      const parts = qq.messages("LONG")
      assert.isAbove(parts.length, 1)
      assert.isAtMost(parts.length, 5)
      assert.deepStrictEqual(parts.map((p) => p.msgSeq), parts.map((_, i) => i + 1))
      for (const p of parts) {
        assert.isAtMost(p.content.length, 2000)
        assert.strictEqual(p.msgId, m.id)
      }
      const withCode = parts.filter((p) => p.content.includes("console.log"))
      assert.strictEqual(withCode.length, 1)
      for (let i = 0; i < 40; i++) assert.include(withCode[0]?.content ?? "", `console.log("line ${i}")`)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("an image is downloaded and given to the model as an image block", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "a red dot" }] }))
      const { stop } = yield* startChannel(options())
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4])
      qq.sendUserMessage({ user: "PIC", content: "what is this?", attachments: [{ bytes: png, contentType: "image/png" }] })
      yield* wait("the answer", () => qq.messages("PIC")[0])
      yield* stop
      const sent = JSON.stringify(lastUser(chatRequests().at(-1)))
      assert.include(sent, "what is this?")
      assert.include(sent, Buffer.from(png).toString("base64"))
      assert.include(sent, "image/png")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a 429 delays the reply, never loses it", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "patience pays" }] }))
      const { stop } = yield* startChannel(options())
      qq.failNext("messages", { status: 429, retryAfter: 1, times: 2 })
      qq.sendUserMessage({ user: "WAIT", content: "hello?" })
      yield* wait("the reply after the 429s", () => qq.messages("WAIT")[0])
      yield* stop
      assert.strictEqual(qq.calls.filter((c) => c.path.startsWith("/v2/") && c.status === 429).length, 2)
      assert.deepStrictEqual(qq.messages("WAIT").map((x) => x.content), ["patience pays"])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a duplicate push is answered once; a dropped connection resumes with the last seq, answering what came meanwhile once", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      let n = 0
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: `answer ${++n}` }] }))
      const { stop } = yield* startChannel(options())
      const one = qq.sendUserMessage({ user: "DUP", content: "one" })
      yield* wait("answer 1", () => qq.messages("DUP").find((x) => x.content === "answer 1"))
      qq.redeliver(one.id)
      qq.sendUserMessage({ user: "DUP", content: "two" })
      yield* wait("answer 2", () => qq.messages("DUP").find((x) => x.content === "answer 2"))
      yield* allAnswered
      qq.dropConnection()
      qq.sendUserMessage({ user: "DUP", content: "three" })
      yield* wait("a resume", () => qq.sessions.find((s) => s.op === 6))
      yield* wait("answer 3", () => qq.messages("DUP").find((x) => x.content === "answer 3"))
      yield* allAnswered
      const resume = qq.sessions.find((s) => s.op === 6)?.d as { seq: number; session_id: string }
      // READY was s 1; "one", its duplicate and "two" were 2, 3 and 4.
      assert.strictEqual(resume.seq, 4)
      assert.strictEqual(qq.sessions.filter((s) => s.op === 2).length, 1)
      yield* stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["one", "two", "three"])
      assert.deepStrictEqual(qq.messages("DUP").map((x) => x.content), ["answer 1", "answer 2", "answer 3"])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("op 9 Invalid Session: identifies anew and keeps answering; op 7 Reconnect: resumes", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const { stop } = yield* startChannel(options())
      yield* connected
      qq.invalidateSession()
      yield* wait("a second identify", () => qq.sessions.filter((s) => s.op === 2).length === 2)
      qq.sendUserMessage({ user: "INV", content: "after op 9" })
      yield* wait("the answer", () => qq.messages("INV").find((x) => x.content === "re: after op 9"))
      qq.requestReconnect()
      yield* wait("a resume", () => qq.sessions.find((s) => s.op === 6))
      qq.sendUserMessage({ user: "INV", content: "after op 7" })
      yield* wait("the answer", () => qq.messages("INV").find((x) => x.content === "re: after op 7"))
      yield* stop
      assert.deepStrictEqual(qq.sessions.map((s) => s.op), [2, 2, 6])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("heartbeats carry the last seq; a connection whose heartbeats go unanswered is replaced and resumed", () =>
    Effect.gen(function*() {
      yield* Effect.promise(() => qq.close())
      qq = yield* Effect.promise(() => startFakeQq({ heartbeatIntervalMs: 100 }))
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "beat" }] }))
      const { stop } = yield* startChannel(options())
      qq.sendUserMessage({ user: "HB", content: "hello" })
      yield* wait("the answer", () => qq.messages("HB")[0])
      // READY was s 1, the message s 2.
      yield* wait("a heartbeat with seq 2", () => qq.heartbeats.includes(2))
      qq.stopAcks()
      const resume = yield* wait("a resume after the silent connection", () => qq.sessions.find((x) => x.op === 6))
      yield* stop
      assert.strictEqual((resume.d as { seq: number }).seq, 2)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("malformed and unknown events are skipped without harm; the next message is answered", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const { stop } = yield* startChannel(options())
      yield* connected
      qq.dispatch("C2C_MESSAGE_CREATE", { id: "X1", content: "no author" })
      qq.dispatch("GROUP_AT_MESSAGE_CREATE", { id: 42, author: { member_openid: "" } })
      qq.dispatch("C2C_MESSAGE_CREATE", "not even an object")
      qq.dispatch("FRIEND_ADD", { openid: "NEW_FRIEND", timestamp: 1 })
      qq.sendUserMessage({ user: "OK_USER", content: "still there?" })
      yield* wait("the answer", () => qq.messages("OK_USER").find((x) => x.content === "re: still there?"))
      yield* stop
      assert.deepStrictEqual(chatRequests().map(lastUserText), ["still there?"])
      assert.deepStrictEqual(qq.sessions.map((x) => x.op), [2])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("after a restart, a reply cut short continues its msg_seq numbering and sends no part twice", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const answer = Array.from({ length: 3 }, (_, i) => `Section ${i}: ${"lorem ipsum dolor sit amet ".repeat(60)}`).join("\n\n")
      const expected = qqParts(answer.trim()).map((p) => p.plain)
      assert.strictEqual(expected.length, 3)
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: answer }] }))
      // Before the "crash": the message was claimed, part 1 sent and recorded, part 2 sent but not recorded.
      const delivered = qq.sendUserMessage({ user: "CRASH", content: "tell me a lot" })
      const token = (yield* Effect.promise(() =>
        fetch(qq.tokenUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ appId: qq.appId, clientSecret: qq.secret }) })
          .then((r) => r.json() as Promise<{ access_token: string }>)
      )).access_token
      const post = (content: string, seq: number) =>
        Effect.promise(() =>
          fetch(`${qq.baseUrl}/v2/users/CRASH/messages`, {
            method: "POST",
            headers: { authorization: `QQBot ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ content, msg_type: 0, msg_id: delivered.id, msg_seq: seq })
          }).then((r) => r.json() as Promise<{ id: string }>)
        )
      const first = yield* post(expected[0] ?? "", 1)
      yield* post(expected[1] ?? "", 2)
      const m: QqMessage = { kind: "c2c", id: delivered.id, sender: "CRASH", content: "tell me a lot", images: [] }
      const ledger = yield* ChannelLedger
      yield* ledger.claim("qq", delivered.id, encodeMessage(m))
      yield* ledger.recordReply("qq", delivered.id, [first.id])
      const { stop } = yield* startChannel(options())
      yield* allAnswered
      yield* stop
      const sent = qq.messages("CRASH")
      assert.deepStrictEqual(sent.map((x) => x.msgSeq), [1, 2, 3])
      assert.deepStrictEqual(sent.map((x) => x.content), expected)
      // The redelivery on identify was dropped: the model was asked once, by the resumed reply.
      assert.strictEqual(chatRequests().length, 1)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a gateway stopped while 20 chats wait for answers answers each message exactly once after the restart", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "hang" }))
      const first = yield* startChannel(options())
      const users = Array.from({ length: 20 }, (_, i) => `RACE_${i}`)
      for (const u of users) qq.sendUserMessage({ user: u, content: `question from ${u}` })
      // At most 16 turns run at once; the rest wait their turn.
      yield* Effect.sync(() => chatRequests().length).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (n) => n >= 16 }),
        Effect.timeout("15 seconds")
      )
      yield* first.stop
      assert.strictEqual(qq.allMessages.length, 0)
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const second = yield* startChannel(options())
      yield* Effect.promise(() =>
        qq.waitFor(() => users.every((u) => qq.messages(u).length > 0), "every chat answered", 30_000)
      )
      yield* allAnswered
      yield* second.stop
      // The second start resumed the session the first one saved.
      assert.deepStrictEqual(qq.sessions.map((x) => x.op), [2, 6])
      for (const u of users) {
        assert.deepStrictEqual(qq.messages(u).map((x) => [x.content, x.msgSeq]), [[`re: question from ${u}`, 1]])
      }
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("an expired token is fetched again and the reply still goes out", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `re: ${lastUserText(req)}` }] }))
      const { stop } = yield* startChannel(options())
      qq.sendUserMessage({ user: "TOK", content: "first" })
      yield* wait("the first answer", () => qq.messages("TOK")[0])
      const before = qq.tokensIssued
      qq.expireTokens()
      qq.sendUserMessage({ user: "TOK", content: "second" })
      yield* wait("the second answer", () => qq.messages("TOK").find((x) => x.content === "re: second"))
      yield* stop
      assert.isAbove(qq.tokensIssued, before)
      assert.isAbove(qq.calls.filter((c) => c.status === 401).length, 0)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a wrong AppSecret fails the start and `anna doctor`'s check saying what to do; a right one passes the check", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(startChannel(options({ secret: "wrong-secret-123" })))
      assert.strictEqual(e._tag, "ChannelStartFailed")
      assert.include(e.message, "QQ refused app_id")
      assert.include(e.message, "anna channel set qq --config app_id=")
      assert.notInclude(e.message, "wrong-secret-123")
      const platform = yield* loadPlatform("qq")
      assert.isDefined(platform)
      const config = { app_id: qq.appId, app_secret: "wrong-secret-123", base_url: qq.baseUrl, token_url: qq.tokenUrl }
      const problem = yield* Effect.flip(platform?.check(config) ?? Effect.fail("no platform"))
      assert.include(problem, "invalid appid or secret")
      const ok = yield* platform?.check({ ...config, app_secret: qq.secret }) ?? Effect.fail("no platform")
      assert.include(ok, `app ${qq.appId}, gateway ws://127.0.0.1`)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("notify sends an active message to a user who wrote before; refuses one who never did", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hi" }] }))
      const { channel, stop } = yield* startChannel(options())
      qq.sendUserMessage({ user: "CAROL", content: "hello" })
      yield* wait("hi", () => qq.messages("CAROL")[0])
      const users = yield* (yield* ConfigStore).listUsers
      const carol = users.find((u) => u.identities.some((i) => i.platform === "qq" && i.externalId === "CAROL"))
      assert.isDefined(carol)
      yield* channel.notify({ userId: carol?.id ?? "" }, { text: "Your **backup** finished." })
      const note = yield* wait("the notification", () => qq.messages("CAROL").find((x) => x.content === "Your backup finished."))
      assert.isUndefined(note.msgId)
      yield* (yield* ConfigStore).createUser("dave", "Dave")
      const refused = yield* Effect.flip(channel.notify({ userId: "dave" }, { text: "x" }))
      assert.include(refused.reason, "never written to the bot on QQ")
      yield* stop
      // The sending side alone (`anna notify`), through the registry.
      const platform = yield* loadPlatform("qq")
      const alone = yield* platform?.sender({ app_id: qq.appId, app_secret: qq.secret, base_url: qq.baseUrl, token_url: qq.tokenUrl }) ??
        Effect.fail("no platform")
      yield* alone.notify({ userId: carol?.id ?? "" }, { text: "second note" })
      yield* wait("the second note", () => qq.messages("CAROL").find((x) => x.content === "second note"))
      // QQ refusing active messages is reported with its reason, not swallowed.
      qq.refuseActiveMessages(40034102, "active message not allowed")
      const failed = yield* Effect.flip(alone.notify({ userId: carol?.id ?? "" }, { text: "third note" }))
      assert.include(failed.reason, "active message not allowed")
      assert.include(failed.reason, "active messages")
      assert.isUndefined(qq.messages("CAROL").find((x) => x.content === "third note"))
    }).pipe(Effect.provide(stackOn(newHome()))))

  /** A user who wrote to the bot (so notify can reach them); their anna user id. */
  const userWhoWrote = (openid: string) =>
    Effect.gen(function*() {
      qq.sendUserMessage({ user: openid, content: "hello" })
      yield* wait("the answer", () => qq.messages(openid)[0])
      const users = yield* (yield* ConfigStore).listUsers
      const user = users.find((u) => u.identities.some((i) => i.platform === "qq" && i.externalId === openid))
      assert.isDefined(user)
      return user?.id ?? ""
    })

  const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 9, 8, 7])
  const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 2, 3])

  it.live("notify with pictures uploads each (base64, not sent by QQ itself) and sends it as msg_type 7, a short text as the last one's content", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hi" }] }))
      const { channel, stop } = yield* startChannel(options())
      const erin = yield* userWhoWrote("ERIN")
      yield* channel.notify({ userId: erin }, {
        text: "Your **chart** and the photo.",
        images: [{ mediaType: "image/png", bytes: PNG, name: "chart.png" }, { mediaType: "image/jpeg", bytes: JPEG, name: "photo.jpg" }]
      })
      const sent = qq.messages("ERIN").slice(1)
      assert.deepStrictEqual(sent.map((m) => [m.msgType, m.content, m.msgId]), [[7, " ", undefined], [7, "Your chart and the photo.", undefined]])
      assert.deepStrictEqual(sent.map((m) => m.image?.bytes), [PNG, JPEG])
      assert.deepStrictEqual(qq.uploads.map((u) => [u.kind, u.chat, u.fileType, u.srvSendMsg]), [["users", "ERIN", 1, false], ["users", "ERIN", 1, false]])
      const uploadCall = qq.calls.find((c) => c.path === "/v2/users/ERIN/files")
      assert.deepStrictEqual(uploadCall?.body, { file_type: 1, file_data: Buffer.from(PNG).toString("base64"), srv_send_msg: false })
      // To a group: uploaded for the group; a long text follows the picture as messages of its own.
      const long = Array.from({ length: 3 }, (_, i) => `Section ${i}: ${"lorem ipsum dolor sit amet ".repeat(60)}`).join("\n\n")
      yield* channel.notify({ userId: erin, chatId: "GROUP_9" }, { text: long, images: [{ mediaType: "image/png", bytes: PNG, name: "chart.png" }] })
      const group = qq.messages("GROUP_9")
      assert.deepStrictEqual(group.map((m) => m.msgType), [7, 0, 0, 0])
      assert.deepStrictEqual(group[0]?.image?.bytes, PNG)
      assert.strictEqual(group[0]?.image?.kind, "groups")
      assert.strictEqual(group[0]?.content, " ")
      assert.deepStrictEqual(group.slice(1).map((m) => m.content), qqParts(long).map((p) => p.plain))
      yield* stop
      // The sending side alone (`anna notify`) sends pictures the same way.
      const platform = yield* loadPlatform("qq")
      const alone = yield* platform?.sender({ app_id: qq.appId, app_secret: qq.secret, base_url: qq.baseUrl, token_url: qq.tokenUrl }) ??
        Effect.fail("no platform")
      yield* alone.notify({ userId: erin }, { text: "from outside", images: [{ mediaType: "image/jpeg", bytes: JPEG, name: "p.jpg" }] })
      const last = qq.messages("ERIN").at(-1)
      assert.deepStrictEqual([last?.msgType, last?.content, last?.image?.bytes], [7, "from outside", JPEG])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a 5xx on the upload and QQ's 304082 on the picture message are retried; QQ refusing the picture is a ChannelError with its reason, nothing sent", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hi" }] }))
      const { channel, stop } = yield* startChannel(options())
      const fay = yield* userWhoWrote("FAY")
      qq.failNext("files", { status: 500 })
      qq.failNext("files", { status: 502 })
      yield* channel.notify({ userId: fay }, { text: "after two failures", images: [{ mediaType: "image/png", bytes: PNG, name: "a.png" }] })
      assert.strictEqual(qq.calls.filter((c) => c.path === "/v2/users/FAY/files" && c.status >= 500).length, 2)
      const note = qq.messages("FAY").at(-1)
      assert.deepStrictEqual([note?.content, note?.image?.bytes], ["after two failures", PNG])
      // QQ's "upload media info fail" on sending the picture message is documented as "please retry".
      qq.failNext("messages", { status: 400, code: 304082, message: "upload media info fail" })
      yield* channel.notify({ userId: fay }, { text: "after 304082", images: [{ mediaType: "image/jpeg", bytes: JPEG, name: "b.jpg" }] })
      assert.strictEqual(qq.calls.filter((c) => c.path === "/v2/users/FAY/messages" && c.status === 400).length, 1)
      assert.deepStrictEqual(qq.messages("FAY").at(-1)?.image?.bytes, JPEG)
      const before = qq.messages("FAY").length
      qq.refuseUploads(40034199, "picture failed the content check")
      const refused = yield* Effect.flip(channel.notify({ userId: fay }, { text: "x", images: [{ mediaType: "image/png", bytes: PNG, name: "a.png" }] }))
      assert.strictEqual(refused._tag, "ChannelError")
      assert.include(refused.reason, "picture failed the content check")
      assert.include(refused.reason, "QQ did not take the picture")
      assert.strictEqual(qq.messages("FAY").length, before)
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a GIF or a picture over 10 MiB is refused before anything is uploaded or sent", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hi" }] }))
      const { channel, stop } = yield* startChannel(options())
      const gus = yield* userWhoWrote("GUS")
      const gif = new TextEncoder().encode("GIF89a\u0001\u0000\u0001\u0000")
      const big = new Uint8Array(10 * 1024 * 1024 + 1)
      big.set(PNG)
      const notGif = yield* Effect.flip(channel.notify({ userId: gus }, {
        text: "two pictures",
        images: [{ mediaType: "image/png", bytes: PNG, name: "ok.png" }, { mediaType: "image/gif", bytes: gif, name: "anim.gif" }]
      }))
      assert.include(notGif.reason, "PNG and JPEG pictures only")
      assert.include(notGif.reason, "anim.gif")
      const tooBig = yield* Effect.flip(channel.notify({ userId: gus }, { text: "big", images: [{ mediaType: "image/png", bytes: big, name: "big.png" }] }))
      assert.include(tooBig.reason, "big.png is larger than the 10 MiB")
      assert.deepStrictEqual(qq.uploads, [])
      assert.strictEqual(qq.messages("GUS").length, 1)
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("the notify tool writes to the session's user on QQ when the agent calls it", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      const { channel, stop } = yield* startChannel(options())
      yield* connected
      const channels = Channels.of({
        status: Effect.succeed([{ id: "qq", state: "running" as const, description: channel.description }]),
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
      qq.sendUserMessage({ user: "TOOL_USER", content: "remind me to stretch" })
      yield* wait("the reply", () => qq.messages("TOOL_USER").find((m) => m.content === "I will remind you."))
      const reminder = qq.messages("TOOL_USER").find((m) => m.content === "Reminder: stretch")
      assert.isDefined(reminder)
      assert.isUndefined(reminder?.msgId)
      assert.include(JSON.stringify(chatRequests().at(-1)?.body ?? {}), "Delivered on qq.")
      yield* stop
    }).pipe(Effect.provide(stackOn(newHome()))))
})
