/** The Telegram channel's settings and its rules for group messages and addressed text. */
import { assert, describe, it } from "@effect/vitest"
import type { Message } from "grammy/types"
import { decodeChannelSettings, mergeChannelConfig, shownConfig } from "../../../src/domain/config/channel.ts"
import { addressedText, forTheBot, telegramOptions } from "../../../src/layers/channels/TelegramChannel.ts"

const TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"

const message = (over: Partial<Message> & { text?: string }): Message =>
  ({
    message_id: 1,
    date: 0,
    chat: { id: -100, type: "supergroup", title: "g" },
    from: { id: 9, is_bot: false, first_name: "Bob" },
    ...over
  }) as Message

describe("Telegram settings", () => {
  it("need a token shaped like @BotFather's; check group_mode, allowed_users and base_url; mask the token", () => {
    assert.strictEqual(decodeChannelSettings("telegram", {})._tag, "Failure")
    const bad = mergeChannelConfig("telegram", {}, { token: "not-a-token" })
    assert.isTrue("problem" in bad && bad.problem.includes("token"))
    const unknown = mergeChannelConfig("telegram", { token: TOKEN }, { port: "1" })
    assert.isTrue("problem" in unknown && unknown.problem.includes("not \"port\""))
    const mode = mergeChannelConfig("telegram", { token: TOKEN }, { group_mode: "sometimes" })
    assert.isTrue("problem" in mode && mode.problem.includes("group_mode"))
    const ids = mergeChannelConfig("telegram", { token: TOKEN }, { allowed_users: "12,abc" })
    assert.isTrue("problem" in ids && ids.problem.includes("allowed_users"))
    const url = mergeChannelConfig("telegram", { token: TOKEN }, { base_url: "ftp://x" })
    assert.isTrue("problem" in url && url.problem.includes("base_url"))
    const ok = mergeChannelConfig("telegram", {}, { token: TOKEN, group_mode: "always", allowed_users: "12, 34", base_url: "http://127.0.0.1:8081/" })
    assert.isTrue("config" in ok)
    if (!("config" in ok)) return
    const o = telegramOptions(ok.config as never)
    assert.deepStrictEqual([o.token, o.baseUrl, o.groupMode, [...(o.allowedUsers ?? [])]], [TOKEN, "http://127.0.0.1:8081", "always", ["12", "34"]])
    assert.notInclude(JSON.stringify(shownConfig(ok.config)), "ABCdefGHIjklMNOpqrSTUvwxYZ")
    assert.isUndefined(o.webhook)
  })

  it("webhook_url switches to webhook mode; the secret is derived from the token unless set, and never shown", () => {
    const hook = mergeChannelConfig("telegram", { token: TOKEN }, { webhook_url: "https://bot.example.org/tg/in", webhook_port: "9443" })
    assert.isTrue("config" in hook)
    if (!("config" in hook)) return
    const o = telegramOptions(hook.config as never)
    assert.deepStrictEqual(
      o.webhook === undefined ? undefined : [o.webhook.url, o.webhook.host, o.webhook.port, o.webhook.path],
      ["https://bot.example.org/tg/in", "127.0.0.1", 9443, "/tg/in"]
    )
    assert.match(o.webhook?.secret ?? "", /^[0-9a-f]{48}$/)
    // Another token, another secret; the same token, the same one (stable across restarts).
    const other = telegramOptions({ ...(hook.config as object), token: "654321:ZYXdefGHIjklMNOpqrSTUvwxYZ0123456789" } as never)
    assert.notStrictEqual(other.webhook?.secret, o.webhook?.secret)
    assert.strictEqual(telegramOptions(hook.config as never).webhook?.secret, o.webhook?.secret)
    const set = mergeChannelConfig("telegram", hook.config, { webhook_secret: "mine_1" })
    assert.isTrue("config" in set && telegramOptions(set.config as never).webhook?.secret === "mine_1")
    assert.isTrue("config" in set && JSON.stringify(shownConfig(set.config)).includes("webhook_secret") && !JSON.stringify(shownConfig(set.config)).includes("mine_1"))
    const bad = mergeChannelConfig("telegram", hook.config, { webhook_secret: "no spaces allowed" })
    assert.isTrue("problem" in bad && bad.problem.includes("webhook_secret"))
  })
})

describe("Telegram group rules", () => {
  const BOT = 1000
  it("mention mode: an @mention, a reply to the bot, a command (to this bot or any); not other talk", () => {
    const mention = message({ text: "@anna_bot hi", entities: [{ type: "mention", offset: 0, length: 9 }] })
    assert.isTrue(forTheBot(mention, BOT, "anna_bot", "mention"))
    const other = message({ text: "@someone_else hi", entities: [{ type: "mention", offset: 0, length: 13 }] })
    assert.isFalse(forTheBot(other, BOT, "anna_bot", "mention"))
    assert.isFalse(forTheBot(message({ text: "just talk" }), BOT, "anna_bot", "mention"))
    const reply = message({ text: "and?", reply_to_message: message({ from: { id: BOT, is_bot: true, first_name: "anna" } }) as never })
    assert.isTrue(forTheBot(reply, BOT, "anna_bot", "mention"))
    assert.isTrue(forTheBot(message({ text: "/whoami" }), BOT, "anna_bot", "mention"))
    assert.isTrue(forTheBot(message({ text: "/whoami@Anna_Bot" }), BOT, "anna_bot", "mention"))
    assert.isFalse(forTheBot(message({ text: "/whoami@other_bot" }), BOT, "anna_bot", "mention"))
  })

  it("always and off; a private chat is always for the bot", () => {
    assert.isTrue(forTheBot(message({ text: "talk" }), BOT, "anna_bot", "always"))
    const mention = message({ text: "@anna_bot hi", entities: [{ type: "mention", offset: 0, length: 9 }] })
    assert.isFalse(forTheBot(mention, BOT, "anna_bot", "off"))
    assert.isTrue(forTheBot(message({ text: "hi", chat: { id: 5, type: "private", first_name: "B" } }), BOT, "anna_bot", "off"))
  })

  it("the text for the agent drops the bot's @mention and a /cmd@bot suffix", () => {
    assert.strictEqual(addressedText("@anna_bot what is 2+2?", "anna_bot"), "what is 2+2?")
    assert.strictEqual(addressedText("hey @Anna_Bot, look", "anna_bot"), "hey look")
    assert.strictEqual(addressedText("/model@anna_bot gpt-x", "anna_bot"), "/model gpt-x")
    assert.strictEqual(addressedText("mail me at a@anna_botx.com", "anna_bot"), "mail me at a@anna_botx.com")
  })
})
