/**
 * A Telegram reaction is feedback (issue 15, item 5): which reactions mean what (a pure module), and
 * the real Telegram channel over the fake Bot API (test/support/fakeTelegram) and a real runtime
 * (SQLite, the OpenAI SDK against the fake LLM server), with a recording Learning (a fake of our own
 * contract, src/services/Learning.ts) to see `feedback` reached with the chat's session and outcome:
 * 👍 on the bot's answer is /feedback good and answered with nothing, 👎 is /feedback bad; removals,
 * other emoji, anonymous reactions, strangers and other people's messages in a group are nothing;
 * the bot asks for `message_reaction` updates, without which Telegram (and the fake) send none.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Context, Effect, Layer, Option, Queue, Schema } from "effect"
import type { MessageReactionUpdated, ReactionType } from "grammy/types"
import { createServer } from "node:net"
import { afterEach, beforeEach } from "vitest"
import type { Outcome } from "../../../src/domain/learning/confidence.ts"
import * as SqliteChannelLedger from "../../../src/layers/channels/SqliteChannelLedger.ts"
import * as TelegramChannel from "../../../src/layers/channels/TelegramChannel.ts"
import {
  BAD_REACTIONS,
  GOOD_REACTIONS,
  makeSentMessages,
  outcomeOfEmoji,
  reactionFeedback,
  type ReactionPolicy,
  reactionOutcome
} from "../../../src/layers/channels/telegram/reactions.ts"
import { Learning } from "../../../src/services/Learning.ts"
import { allAnswered as allAnsweredOn, channelHarness, startChannel as startChannelOf } from "../../support/channelHarness.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeTelegram, startFakeTelegram } from "../../support/fakeTelegram/server.ts"
import { configureAgent, runtimeStack } from "../../support/runtimeStack.ts"

const emoji = (e: string): ReactionType => ({ type: "emoji", emoji: e }) as ReactionType
const custom: ReactionType = { type: "custom_emoji", custom_emoji_id: "5368324170671202286" }
const paid: ReactionType = { type: "paid" }

describe("which reactions are feedback", () => {
  it("👍 ❤ 🔥 🎉 👏 😍 🥰 💯 ⚡ 🏆 are good, 👎 💩 🤮 😡 🤬 😢 🥱 bad, with or without a variation selector; others nothing", () => {
    assert.deepStrictEqual([...GOOD_REACTIONS], ["👍", "❤", "🔥", "🎉", "👏", "😍", "🥰", "💯", "⚡", "🏆"])
    assert.deepStrictEqual([...BAD_REACTIONS], ["👎", "💩", "🤮", "😡", "🤬", "😢", "🥱"])
    for (const e of GOOD_REACTIONS) assert.strictEqual(outcomeOfEmoji(e), "success", e)
    for (const e of BAD_REACTIONS) assert.strictEqual(outcomeOfEmoji(e), "failure", e)
    assert.strictEqual(outcomeOfEmoji("❤️"), "success")
    assert.strictEqual(outcomeOfEmoji("⚡️"), "success")
    for (const e of ["🤔", "😁", "🙏", "👌", "🤡", "❤‍🔥", "💔", ""]) assert.isUndefined(outcomeOfEmoji(e), e)
  })

  it("only reactions newly added count: a removal, a kept one, custom and paid reactions, good and bad at once are nothing", () => {
    assert.strictEqual(reactionOutcome([], [emoji("👍")]), "success")
    assert.strictEqual(reactionOutcome([], [emoji("❤️")]), "success")
    assert.strictEqual(reactionOutcome([emoji("👍")], [emoji("👎")]), "failure")
    assert.strictEqual(reactionOutcome([emoji("🤔")], [emoji("🤔"), emoji("🔥")]), "success")
    assert.strictEqual(reactionOutcome([emoji("👍")], [emoji("👍"), emoji("🔥")]), "success")
    assert.isUndefined(reactionOutcome([emoji("👍")], []))
    assert.isUndefined(reactionOutcome([emoji("👎")], [emoji("👎"), emoji("🤔")]))
    assert.isUndefined(reactionOutcome([emoji("❤")], [emoji("❤️")]), "the same heart, only spelled with a selector")
    assert.isUndefined(reactionOutcome([], [custom]))
    assert.isUndefined(reactionOutcome([], [paid]))
    assert.isUndefined(reactionOutcome([], [emoji("👍"), emoji("👎")]))
    assert.strictEqual(reactionOutcome([], [emoji("👍"), custom, paid]), "success")
  })

  const pool = ["👍", "👎", "❤", "❤️", "🔥", "💩", "🤔", "😁", "🥱"]
  const reactions = Arbitrary.array(
    Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: pool.length + 1 }))),
    { maxLength: 3 }
  ).pipe(Arbitrary.map((is) => is.map((i): ReactionType => (i === pool.length ? custom : i > pool.length ? paid : emoji(pool[i] ?? "🤔")))))

  it.prop("the outcome depends on the added reactions only, and never comes of a reaction kept", { old: reactions, next: reactions }, ({ old, next }) => {
    const added = next.filter((r) => r.type !== "emoji" || !old.some((o) => o.type === "emoji" && o.emoji.replace("\uFE0F", "") === r.emoji.replace("\uFE0F", "")))
    assert.strictEqual(reactionOutcome(old, next), reactionOutcome([], added))
    assert.isUndefined(reactionOutcome(next, next))
    return true
  })

  const update = (over: Partial<MessageReactionUpdated>): MessageReactionUpdated => ({
    chat: { id: -100, type: "supergroup", title: "G" },
    message_id: 5,
    user: { id: 9, is_bot: false, first_name: "Bob", username: "bob" },
    date: 0,
    old_reaction: [],
    new_reaction: [emoji("👍")],
    ...over
  })
  const policy = (over: Partial<ReactionPolicy> = {}): ReactionPolicy => ({
    groupMode: "mention",
    allowedUsers: undefined,
    sentByBot: (chatId, messageId) => chatId === -100 && messageId === 5,
    ...over
  })

  it("a reaction is that user's /feedback in that chat; not an anonymous one, a bot's, a stranger's, or one on someone else's group message", () => {
    assert.deepStrictEqual(reactionFeedback("telegram", update({}), policy()), {
      target: { platform: "telegram", externalUserId: "9", userName: "bob", chatId: "-100", isGroup: true },
      command: "/feedback good"
    })
    const dm = update({ chat: { id: 9, type: "private", first_name: "Bob" }, message_id: 77, new_reaction: [emoji("💩")] })
    assert.deepStrictEqual(reactionFeedback("telegram", dm, policy())?.target.chatId, "dm")
    assert.strictEqual(reactionFeedback("telegram", dm, policy())?.command, "/feedback bad", "any message of a private chat")
    const { user: _user, ...anonymous } = update({ actor_chat: { id: -100, type: "supergroup", title: "G" } })
    assert.isUndefined(reactionFeedback("telegram", anonymous, policy()))
    assert.isUndefined(reactionFeedback("telegram", update({ user: { id: 8, is_bot: true, first_name: "Bot" } }), policy()))
    assert.isUndefined(reactionFeedback("telegram", update({}), policy({ allowedUsers: new Set(["42"]) })))
    assert.isDefined(reactionFeedback("telegram", update({}), policy({ allowedUsers: new Set(["9"]) })))
    assert.isUndefined(reactionFeedback("telegram", update({ message_id: 6 }), policy()))
    assert.isUndefined(reactionFeedback("telegram", update({}), policy({ groupMode: "off" })))
  })

  it("the bot's sent messages are remembered up to a limit, the oldest forgotten first", () => {
    const sent = makeSentMessages(3)
    sent.add(-1, ["1", "2"])
    sent.add(-1, [3])
    sent.add(-1, ["1"])
    sent.add(-2, [4])
    assert.deepStrictEqual([sent.has(-1, 1), sent.has(-1, 2), sent.has(-1, 3), sent.has(-2, 4), sent.has(-2, 1)], [true, false, true, true, false])
  })
})

// ------------------------------------------------------------------------------- over the channel

const suite = fakeLlmSuite()
const TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"

let tg: FakeTelegram
beforeEach(async () => {
  tg = await startFakeTelegram({ token: TOKEN, botUsername: "anna_test_bot" })
})
afterEach(async () => {
  await tg.close()
})

interface Feedback {
  readonly sessionKey: string
  readonly outcome: Outcome
}

/** What the runtime asked of the recording Learning: the feedback given, and each turn's session. */
class Recorded extends Context.Service<Recorded, {
  readonly feedback: Queue.Queue<Feedback>
  readonly turns: Array<{ readonly sessionKey: string; readonly message: string }>
}>()("test/telegramReaction/Recorded") {}

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

const options = (overrides: Partial<TelegramChannel.TelegramOptions> = {}): TelegramChannel.TelegramOptions => ({
  token: TOKEN,
  baseUrl: tg.apiRoot,
  groupMode: "mention",
  allowedUsers: undefined,
  ...overrides
})

const { newHome } = channelHarness(suite, "telegram-reaction")
const startChannel = (o: TelegramChannel.TelegramOptions) => startChannelOf(TelegramChannel.make(o))
const allAnswered = allAnsweredOn("telegram", "10 seconds")
const wait = <T>(what: string, f: () => T | undefined) => Effect.promise(() => tg.waitFor(f, what))

/** The next feedback Learning got (fails the test after 10 s without one). */
const nextFeedback = Recorded.use((r) => Queue.take(r.feedback)).pipe(
  Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.die(new Error("no feedback reached Learning")) })
)
/** Feedback Learning got that no test took. */
const moreFeedback = Recorded.use((r) => Queue.clear(r.feedback))
/** The session of the turn that answered `message`. */
const sessionOf = (message: string) => Recorded.use((r) => Effect.succeed(r.turns.find((t) => t.message === message)?.sessionKey))

/** Every call that writes to a chat. */
const writes = () => tg.calls.filter((c) => ["sendMessage", "editMessageText", "sendChatAction", "sendPhoto"].includes(c.method)).length

describe("Telegram reactions as feedback", () => {
  it.live("👍 on the bot's answer is /feedback good for that chat's session, answered with nothing; 👎 is bad; a redelivery counts once", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Deployed." }] }))
      const { stop } = yield* startChannel(options())
      const poll = yield* wait("the first poll read", () => tg.callsTo("getUpdates").find((c) => "timeout" in c.params))
      assert.include(poll.params["allowed_updates"], "message_reaction")
      tg.sendUserMessage({ chatId: 501, chatType: "private", from: { id: 501, username: "ann" }, text: "deploy it" })
      const answer = yield* wait("the answer", () => tg.messages(501).find((m) => m.text === "Deployed."))
      yield* allAnswered
      const session = yield* sessionOf("deploy it")
      assert.isDefined(session)
      const before = writes()

      const up = tg.react({ chatId: 501, from: { id: 501, username: "ann" }, messageId: answer.messageId, reaction: ["👍"] })
      assert.deepStrictEqual(up?.message_reaction?.new_reaction, [{ type: "emoji", emoji: "👍" }])
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: session ?? "", outcome: "success" })
      if (up !== undefined) tg.redeliver(up.update_id)
      tg.react({ chatId: 501, from: { id: 501, username: "ann" }, messageId: answer.messageId, reaction: ["👎"] })
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: session ?? "", outcome: "failure" })
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [], "the redelivered 👍 counted once")
      assert.strictEqual(writes(), before, "no message and no typing for a reaction")
      assert.deepStrictEqual(tg.messages(501).map((m) => m.text), ["Deployed."])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("taking a reaction back, another emoji or a custom one is nothing", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Here." }] }))
      const { stop } = yield* startChannel(options())
      const ann = { chatId: 502, from: { id: 502 } }
      tg.sendUserMessage({ ...ann, chatType: "private", text: "hello" })
      const answer = yield* wait("the answer", () => tg.messages(502).find((m) => m.text === "Here."))
      const on = { ...ann, messageId: answer.messageId }
      tg.react({ ...on, reaction: ["🤔"] })
      tg.react({ ...on, reaction: [] })
      tg.react({ ...on, reaction: [custom] })
      tg.react({ ...on, reaction: ["🔥"] })
      assert.strictEqual((yield* nextFeedback).outcome, "success", "the first feedback is the 🔥")
      tg.react({ ...on, reaction: [] })
      tg.react({ ...on, reaction: ["😢"] })
      assert.strictEqual((yield* nextFeedback).outcome, "failure", "the removal in between gave none")
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [])
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("in a group: only the bot's own answers, only by people, only to an admin bot; the session is the group's", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Four." }] }))
      const { stop } = yield* startChannel(options())
      const group = { chatId: -100, chatType: "supergroup" as const }
      const bob = { id: 9, username: "bob" }
      const human = tg.sendUserMessage({ ...group, from: { id: 10 }, text: "lunch anyone?" })
      tg.sendUserMessage({ ...group, from: bob, text: "@anna_test_bot what is 2+2?", mentionBot: true })
      const answer = yield* wait("the answer", () => tg.messages(-100).find((m) => m.text === "Four."))
      yield* allAnswered
      const session = yield* sessionOf("what is 2+2?")
      assert.include(session ?? "", ":-100")
      const before = writes()
      // Not an administrator: Telegram sends no reactions from the group.
      assert.isUndefined(tg.react({ ...group, from: bob, messageId: answer.messageId, reaction: ["👍"] }))
      tg.setBotAdmin(-100)
      tg.react({ ...group, from: bob, messageId: human.message?.message_id ?? 0, reaction: ["👎"] })
      tg.react({ ...group, messageId: answer.messageId, reaction: ["👎"] })
      tg.react({ ...group, from: bob, messageId: answer.messageId, reaction: ["🎉"] })
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: session ?? "", outcome: "success" })
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [], "not the reaction to a person's message, nor the anonymous one")
      assert.strictEqual(writes(), before)
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("a reaction of someone allowed_users leaves out is nothing", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Sure." }] }))
      const { stop } = yield* startChannel(options({ allowedUsers: new Set(["42"]) }))
      const group = { chatId: -200, chatType: "group" as const }
      tg.sendUserMessage({ ...group, from: { id: 42 }, text: "@anna_test_bot summarise", mentionBot: true })
      tg.setBotAdmin(-200)
      const answer = yield* wait("the answer", () => tg.messages(-200).find((m) => m.text === "Sure."))
      tg.react({ ...group, from: { id: 43 }, messageId: answer.messageId, reaction: ["👍"] })
      tg.react({ ...group, from: { id: 42 }, messageId: answer.messageId, reaction: ["💩"] })
      const feedback = yield* nextFeedback
      assert.deepStrictEqual(feedback, { sessionKey: (yield* sessionOf("summarise")) ?? "", outcome: "failure" })
      yield* allAnswered
      yield* stop
      assert.deepStrictEqual(yield* moreFeedback, [], "the stranger's 👍 reached nothing")
    }).pipe(Effect.provide(stackOn(newHome()))))

  it.live("webhook mode asks for reactions too, and one delivered there is feedback", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Hooked." }] }))
      const port = yield* Effect.promise(freePort)
      const url = `http://127.0.0.1:${port}/tg/hook`
      const { stop } = yield* startChannel(options({ webhook: { url, secret: "s3cret", host: "127.0.0.1", port, path: "/tg/hook" } }))
      assert.include(tg.callsTo("setWebhook")[0]?.params["allowed_updates"], "message_reaction")
      tg.sendUserMessage({ chatId: 71, chatType: "private", from: { id: 71 }, text: "over the hook" })
      const answer = yield* wait("the answer", () => tg.messages(71).find((m) => m.text === "Hooked."))
      const before = writes()
      tg.react({ chatId: 71, from: { id: 71 }, messageId: answer.messageId, reaction: ["❤"] })
      assert.deepStrictEqual(yield* nextFeedback, { sessionKey: (yield* sessionOf("over the hook")) ?? "", outcome: "success" })
      yield* allAnswered
      yield* stop
      assert.strictEqual(writes(), before)
    }).pipe(Effect.provide(stackOn(newHome()))))
})

describe("the fake Bot API's reactions", () => {
  const api = (method: string, params: Record<string, unknown>) =>
    fetch(`${tg.apiRoot}/bot${TOKEN}/${method}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) })
      .then((r) => r.json() as Promise<{ ok: boolean; result: ReadonlyArray<{ update_id: number; message_reaction?: MessageReactionUpdated }> }>)
  const poll = async (allowed?: ReadonlyArray<string>) => {
    const r = await api("getUpdates", { timeout: 0, ...(allowed === undefined ? {} : { allowed_updates: allowed }) })
    const last = r.result.at(-1)
    if (last !== undefined) await api("getUpdates", { timeout: 0, offset: last.update_id + 1 })
    return r.result
  }

  it("sends message_reaction only when allowed_updates names it, with the user's previous reactions as old_reaction", async () => {
    const u = tg.sendUserMessage({ chatId: 31, chatType: "private", from: { id: 31 }, text: "hi" })
    const messageId = u.message?.message_id ?? 0
    assert.strictEqual((await poll()).length, 1, "the message")
    tg.react({ chatId: 31, from: { id: 31 }, messageId, reaction: ["👍"] })
    assert.deepStrictEqual(await poll(), [], "not by default")
    tg.react({ chatId: 31, from: { id: 31 }, messageId, reaction: ["🔥"] })
    assert.deepStrictEqual(await poll(["message", "callback_query"]), [], "not unless named")
    assert.isUndefined(tg.react({ chatId: 31, from: { id: 31 }, messageId, reaction: ["🔥"] }), "nothing changed, nothing sent")
    await poll(["message", "message_reaction"])
    tg.react({ chatId: 31, from: { id: 31 }, messageId, reaction: ["👎"] })
    const [update] = await poll()
    assert.deepStrictEqual(
      [update?.message_reaction?.user?.id, update?.message_reaction?.old_reaction, update?.message_reaction?.new_reaction],
      [31, [{ type: "emoji", emoji: "🔥" }], [{ type: "emoji", emoji: "👎" }]]
    )
    assert.throws(() => tg.react({ chatId: 31, from: { id: 31 }, messageId, reaction: ["👍", "🔥", "🎉", "👏"] }), /REACTIONS_TOO_MANY/)
    assert.throws(() => tg.react({ chatId: 31, from: { id: 31 }, messageId: 99, reaction: ["👍"] }), /no message 99/)
  })
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
