/**
 * A Feishu/Lark reaction is feedback (issue 15, item 5): which `emoji_type`s mean what (a pure
 * module), and the real Feishu channel over the fake open platform (test/support/fakeFeishu: the
 * real SDK's long connection and the webhook callbacks) and a real runtime (SQLite, the OpenAI SDK
 * against the fake LLM server), with a recording Learning (a fake of our own contract,
 * src/services/Learning.ts) to see `feedback` reached with the chat's session and outcome:
 * THUMBSUP on the bot's answer is /feedback good and answered with nothing, ThumbsDown is bad, a
 * redelivered event counts once; other emoji, an app's reaction, a reaction taken back, one on a
 * message the bot did not send and a stranger's are nothing; an app that did not subscribe to the
 * event gets none.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Context, Effect, Layer, Option, Queue, Schema } from "effect"
import { afterEach, beforeEach } from "vitest"
import type { Outcome } from "../../../src/domain/learning/confidence.ts"
import * as FeishuChannel from "../../../src/layers/channels/FeishuChannel.ts"
import * as SqliteChannelLedger from "../../../src/layers/channels/SqliteChannelLedger.ts"
import {
  BAD_REACTIONS,
  GOOD_REACTIONS,
  makeSentCards,
  outcomeOfEmoji,
  type Reaction,
  reactionFeedback,
  reactionOf,
  type ReactionPolicy
} from "../../../src/layers/channels/feishu/reactions.ts"
import { Learning } from "../../../src/services/Learning.ts"
import { allAnswered as allAnsweredOn, channelHarness, startChannel as startChannelOf } from "../../support/channelHarness.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeFeishu, startFakeFeishu } from "../../support/fakeFeishu/server.ts"
import { configureAgent, runtimeStack } from "../../support/runtimeStack.ts"

const ANN = "ou_ann0000000000000000000000000001"
const BOB = "ou_bob0000000000000000000000000002"
const GROUP = "oc_group00000000000000000000000001"

describe("which Feishu reactions are feedback", () => {
  it("the good and bad emoji_types as the open platform spells them (case matters); every other one nothing", () => {
    assert.deepStrictEqual([...GOOD_REACTIONS], [
      "THUMBSUP", "JIAYI", "OK", "DONE", "CheckMark", "LGTM", "HEART", "FINGERHEART", "Fire", "Hundred", "CLAP", "APPLAUSE", "PARTY", "MUSCLE", "Trophy", "THANKS"
    ])
    assert.deepStrictEqual([...BAD_REACTIONS], [
      "ThumbsDown", "MinusOne", "CrossMark", "No", "POOP", "PUKE", "ANGRY", "CRY", "SOB", "Sigh", "FACEPALM", "HEARTBROKEN", "ERROR"
    ])
    for (const e of GOOD_REACTIONS) assert.strictEqual(outcomeOfEmoji(e), "success", e)
    for (const e of BAD_REACTIONS) assert.strictEqual(outcomeOfEmoji(e), "failure", e)
    for (const e of ["SMILE", "THINKING", "OnIt", "Typing", "thumbsup", "THUMBSDOWN", "FIRE", "👍", ""]) assert.isUndefined(outcomeOfEmoji(e), e)
  })

  it("an event reads as the SDK hands it over (header and event side by side); an app's reaction has no user", () => {
    const flat = {
      event_id: "ev1",
      event_type: "im.message.reaction.created_v1",
      token: "t",
      app_id: "cli_a1b2c3d4e5f60718",
      message_id: "om_1",
      reaction_type: { emoji_type: "THUMBSUP" },
      operator_type: "user",
      user_id: { open_id: ANN, union_id: "on_ann", user_id: "" },
      action_time: "1700000000000"
    }
    assert.deepStrictEqual(reactionOf(flat), { key: "reaction:ev1", messageId: "om_1", emojiType: "THUMBSUP", userOpenId: ANN })
    const { user_id: _user, ...byApp } = { ...flat, operator_type: "app" }
    assert.strictEqual(reactionOf(byApp)?.userOpenId, undefined)
    assert.strictEqual(reactionOf({ ...flat, operator_type: "app" })?.userOpenId, undefined, "app, whatever user_id says")
    assert.isUndefined(reactionOf({ ...flat, reaction_type: {} }))
    assert.isUndefined(reactionOf({ ...flat, event_id: "" }))
    assert.isUndefined(reactionOf({ sender: {}, message: {} }), "a message event")
  })

  const answer = { chatId: GROUP, isGroup: true }
  const policy = (over: Partial<ReactionPolicy> = {}): ReactionPolicy => ({
    groupMode: "mention",
    allowedUsers: undefined,
    sentIn: (id) => (id === "om_answer" ? answer : undefined),
    ...over
  })
  const reaction = (over: Partial<Reaction> = {}): Reaction => ({ key: "reaction:ev", messageId: "om_answer", emojiType: "THUMBSUP", userOpenId: BOB, ...over })

  it("a reaction is that user's /feedback in the answer's chat; not an app's, a stranger's, on another message, or in a group while groups are off", () => {
    assert.deepStrictEqual(reactionFeedback(reaction(), policy()), {
      messageId: "om_answer",
      chatId: GROUP,
      isGroup: true,
      senderOpenId: BOB,
      senderIsUser: true,
      messageType: "reaction",
      content: JSON.stringify({ emoji_type: "THUMBSUP" }),
      mentions: [],
      feedback: "good",
      replyKey: "reaction:ev"
    })
    assert.strictEqual(reactionFeedback(reaction({ emojiType: "POOP" }), policy())?.feedback, "bad")
    assert.isUndefined(reactionFeedback(reaction({ emojiType: "SMILE" }), policy()))
    assert.isUndefined(reactionFeedback(reaction({ userOpenId: undefined }), policy()))
    assert.isUndefined(reactionFeedback(reaction({ messageId: "om_other" }), policy()))
    assert.isUndefined(reactionFeedback(reaction(), policy({ allowedUsers: new Set([ANN]) })))
    assert.isDefined(reactionFeedback(reaction(), policy({ allowedUsers: new Set([BOB]) })))
    assert.isUndefined(reactionFeedback(reaction(), policy({ groupMode: "off" })))
    const dm = policy({ groupMode: "off", sentIn: () => ({ chatId: "oc_dm", isGroup: false }) })
    assert.strictEqual(reactionFeedback(reaction(), dm)?.chatId, "oc_dm", "groups off still hears a p2p chat")
  })

  const emojis = [...GOOD_REACTIONS, ...BAD_REACTIONS, "SMILE", "OnIt", "thumbsup", "THUMBSDOWN", "Fire ", "heart"] as const
  const reactionArb = Arbitrary.all({
    emojiType: Arbitrary.schema(Schema.Literals(emojis)),
    byUser: Arbitrary.schema(Schema.Boolean),
    known: Arbitrary.schema(Schema.Boolean),
    allowed: Arbitrary.schema(Schema.Boolean),
    isGroup: Arbitrary.schema(Schema.Boolean),
    groupMode: Arbitrary.schema(Schema.Literals(["mention", "always", "off"]))
  })

  it.prop("feedback comes of exactly a user's listed emoji on a known answer the channel hears, and says what the list says", { r: reactionArb }, ({ r }) => {
    const got = reactionFeedback(reaction({ emojiType: r.emojiType, userOpenId: r.byUser ? BOB : undefined }), {
      groupMode: r.groupMode,
      allowedUsers: r.allowed ? undefined : new Set([ANN]),
      sentIn: () => (r.known ? { chatId: "oc_x", isGroup: r.isGroup } : undefined)
    })
    const good = GOOD_REACTIONS.has(r.emojiType)
    const bad = BAD_REACTIONS.has(r.emojiType)
    assert.isFalse(good && bad, "no emoji is both")
    const heard = r.byUser && r.known && r.allowed && !(r.isGroup && r.groupMode === "off")
    assert.strictEqual(got?.feedback, heard && good ? "good" : heard && bad ? "bad" : undefined)
    return true
  })

  it("the bot's answers are remembered up to a limit, the oldest forgotten first", () => {
    const sent = makeSentCards(3)
    const a = { chatId: "oc_a", isGroup: false }
    const b = { chatId: "oc_b", isGroup: true }
    sent.add(a, ["1", "2"])
    sent.add(a, ["3"])
    sent.add(a, ["1"])
    sent.add(b, ["4"])
    assert.deepStrictEqual(["1", "2", "3", "4"].map((id) => sent.get(id)?.chatId), ["oc_a", undefined, "oc_a", "oc_b"])
  })
})

// ------------------------------------------------------------------------------- over the channel

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

interface Feedback {
  readonly sessionKey: string
  readonly outcome: Outcome
}

/** What the runtime asked of the recording Learning: the feedback given, and each turn's session. */
class Recorded extends Context.Service<Recorded, {
  readonly feedback: Queue.Queue<Feedback>
  readonly turns: Array<{ readonly sessionKey: string; readonly message: string }>
}>()("test/feishuReaction/Recorded") {}

const recorded = Layer.effect(Recorded, Effect.map(Queue.unbounded<Feedback>(), (feedback) => Recorded.of({ feedback, turns: [] })))

const recordingLearning = Layer.effect(
  Learning,
  Effect.gen(function*() {
    const log = yield* Recorded
    return Learning.of({
      beforeTurn: (chat, message) => Effect.sync(() => void log.turns.push({ sessionKey: chat.sessionKey, message })).pipe(Effect.as("")),
      skillUsed: () => Effect.void,
      endBurst: () => Effect.void,
      reflect: () => Effect.succeed(Option.none()),
      feedback: (chat, outcome) => Queue.offer(log.feedback, { sessionKey: chat.sessionKey, outcome }).pipe(Effect.as({ rules: ["r1"], forYou: [], skills: [] })),
      idle: Effect.void
    })
  })
)

/** The runtime on `home` with the recording Learning under it, and the channel ledger. */
const stackOn = (home: string) =>
  SqliteChannelLedger.layer.pipe(Layer.provideMerge(runtimeStack(home).pipe(Layer.provideMerge(recordingLearning.pipe(Layer.provideMerge(recorded))))))

const options = (overrides: Partial<FeishuChannel.FeishuOptions> = {}, fake: FakeFeishu = fs): FeishuChannel.FeishuOptions => ({
  appId: fake.appId,
  appSecret: fake.appSecret,
  domain: fake.baseUrl,
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

const { newHome } = channelHarness(suite, "feishu-reaction")
const startChannel = (o: FeishuChannel.FeishuOptions) => startChannelOf(FeishuChannel.make(o))
const allAnswered = allAnsweredOn("feishu", "20 seconds")
const wait = <T>(what: string, f: () => T | undefined | false, fake: FakeFeishu = fs) => Effect.promise(() => fake.waitFor(f, what))
const reply = (t: string) => ({ kind: "reply" as const, parts: [{ type: "text" as const, text: t }] })

/** The next feedback Learning got (fails the test after 10 s without one). */
const nextFeedback = Recorded.use((r) => Queue.take(r.feedback)).pipe(
  Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.die(new Error("no feedback reached Learning")) })
)
/** Feedback Learning got that no test took. */
const moreFeedback = Recorded.use((r) => Queue.clear(r.feedback))
/** The session of the turn that answered `message`. */
const sessionOf = (message: string) => Recorded.use((r) => Effect.succeed(r.turns.find((t) => t.message === message)?.sessionKey))

/** Every call that writes to a chat (a card sent, a reply, an update). */
const writes = (fake: FakeFeishu = fs) =>
  fake.calls.filter((c) => c.path.startsWith("/open-apis/im/v1/messages") && (c.method === "POST" || c.method === "PATCH")).length

/** Until the fake has every event it pushed acknowledged by the client (the channel took them all). */
const allAcked = (fake: FakeFeishu, pushed: number) => wait(`${pushed} events acknowledged`, () => fake.acks.filter((a) => a.code === 200).length >= pushed, fake)

describe("Feishu reactions as feedback", () => {
  it.live("THUMBSUP on the bot's answer is /feedback good for that chat's session, answered with nothing; ThumbsDown is bad; a redelivery counts once", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("Deployed."))
      const { stop } = yield* startChannel(options())
      fs.sendUserMessage({ from: ANN, text: "deploy it" })
      const chat = fs.dmChat(ANN)
      const answer = yield* wait("the answer", () => fs.messages(chat).find((m) => m.text === "Deployed."))
      yield* allAnswered
      const session = yield* sessionOf("deploy it")
      assert.isDefined(session)
      const before = writes()

      const up = fs.react({ from: ANN, messageId: answer.messageId, emojiType: "THUMBSUP" })
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: session ?? "", outcome: "success" })
      fs.redeliverReaction(up.eventId)
      fs.react({ from: ANN, messageId: answer.messageId, emojiType: "ThumbsDown" })
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: session ?? "", outcome: "failure" })
      yield* allAcked(fs, 4)
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [], "the redelivered THUMBSUP counted once")
      assert.strictEqual(writes(), before, "no card, no reply, no update for a reaction")
      assert.deepStrictEqual(fs.messages(chat).map((m) => m.text), ["Deployed."])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("another emoji, a lower-case spelling, an app's reaction, one taken back, one on the user's own message are nothing", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("Here."))
      const { stop } = yield* startChannel(options())
      const asked = fs.sendUserMessage({ from: ANN, text: "hello" })
      const answer = yield* wait("the answer", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "Here."))
      yield* allAnswered
      const on = { messageId: answer.messageId }
      fs.react({ ...on, from: ANN, emojiType: "SMILE" })
      fs.react({ ...on, from: ANN, emojiType: "thumbsup" })
      fs.react({ ...on, emojiType: "THUMBSUP" })
      fs.react({ messageId: asked.messageId, from: ANN, emojiType: "THUMBSUP" })
      fs.react({ ...on, from: ANN, emojiType: "POOP" })
      fs.unreact({ ...on, from: ANN, emojiType: "POOP" })
      fs.react({ ...on, from: ANN, emojiType: "Fire" })
      // Commands run at once, so the two may reach Learning in either order.
      const two = [(yield* nextFeedback).outcome, (yield* nextFeedback).outcome].sort()
      assert.deepStrictEqual(two, ["failure", "success"], "the POOP and the Fire")
      yield* allAcked(fs, 8)
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("in a group: the bot's answer only, by someone allowed_users hears; the session is the group's", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("Four."))
      const { stop } = yield* startChannel(options({ allowedUsers: new Set([BOB]) }))
      const human = fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "lunch anyone?" })
      fs.sendUserMessage({ from: BOB, groupId: GROUP, text: "what is 2+2?", mentionBot: true })
      const answer = yield* wait("the answer", () => fs.messages(GROUP).find((m) => m.text === "Four."))
      yield* allAnswered
      const session = yield* sessionOf("what is 2+2?")
      assert.include(session ?? "", GROUP)
      const before = writes()
      fs.react({ from: BOB, messageId: human.messageId, emojiType: "ThumbsDown" })
      fs.react({ from: ANN, messageId: answer.messageId, emojiType: "ThumbsDown" })
      fs.react({ from: BOB, messageId: answer.messageId, emojiType: "PARTY" })
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: session ?? "", outcome: "success" })
      yield* allAcked(fs, 5)
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [], "not the reaction to a person's message, nor the stranger's")
      assert.strictEqual(writes(), before)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("webhook mode: a reaction callback (encrypted) is feedback, answered 200; the same callback again counts once", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("Hooked."))
      const { channel, stop } = yield* startChannel(options({ mode: "webhook", encryptKey: ENCRYPT_KEY, verificationToken: VERIFICATION_TOKEN }))
      const url = /on (http:\/\/\S+?)\)/.exec(channel.description)?.[1] ?? ""
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/feishu\/events$/)
      const asked = fs.eventFor({ from: ANN, text: "over the hook" })
      assert.strictEqual((yield* Effect.promise(() => fs.callback(url, asked.envelope, { encrypt: true }))).status, 200)
      const answer = yield* wait("the answer", () => fs.messages(fs.dmChat(ANN)).find((m) => m.text === "Hooked."))
      yield* allAnswered
      const before = writes()
      const heart = fs.reactionFor({ from: ANN, messageId: answer.messageId, emojiType: "HEART" })
      assert.strictEqual((yield* Effect.promise(() => fs.callback(url, heart.envelope, { encrypt: true }))).status, 200)
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: (yield* sessionOf("over the hook")) ?? "", outcome: "success" })
      assert.strictEqual((yield* Effect.promise(() => fs.callback(url, heart.envelope, { encrypt: true }))).status, 200)
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [], "the callback sent again counted once")
      assert.strictEqual(writes(), before)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("an app that did not subscribe to im.message.reaction.created_v1 gets no reactions (the fake pushes none)", () =>
    Effect.gen(function*() {
      const bare = yield* Effect.acquireRelease(
        Effect.promise(() => startFakeFeishu({ events: ["im.message.receive_v1"] })),
        (f) => Effect.promise(() => f.close())
      )
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => reply("Sure."))
      const { stop } = yield* startChannel(options({}, bare))
      bare.sendUserMessage({ from: ANN, text: "summarise" })
      const answer = yield* wait("the answer", () => bare.messages(bare.dmChat(ANN)).find((m) => m.text === "Sure."), bare)
      yield* allAcked(bare, 1)
      const pushed = bare.acks.length
      bare.react({ from: ANN, messageId: answer.messageId, emojiType: "THUMBSUP" })
      // A message after it is delivered, so had the reaction been pushed it would be acknowledged first.
      bare.sendUserMessage({ from: ANN, text: "/whoami" })
      yield* allAcked(bare, 2)
      assert.strictEqual(bare.acks.length, pushed + 1, "only the message")
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [])
    }).pipe(Effect.scoped, Effect.provide(stackOn(newHome()))))
})
