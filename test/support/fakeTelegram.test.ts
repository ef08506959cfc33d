/**
 * The fake Telegram Bot API (test/support/fakeTelegram) driven by the real grammy client: every
 * method a Telegram channel uses, multipart uploads and file downloads, long polling with
 * `bot.start()`, and the failure modes (429 retry hints, 5xx, 502 HTML, duplicate delivery,
 * dropped connections). Waits are on the fake's events (`waitFor`), never on the clock.
 */
import { Bot, GrammyError, HttpError, InputFile } from "grammy"
import type { Update } from "grammy/types"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { type FakeTelegram, startFakeTelegram, UploadedFile } from "./fakeTelegram/server.ts"

let fake: FakeTelegram
let bot: Bot

beforeEach(async () => {
  fake = await startFakeTelegram()
  bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } })
})

afterEach(async () => {
  if (bot.isRunning()) await bot.stop()
  await fake.close()
})

const ann = { id: 501, username: "ann", first_name: "Ann" }
const dm = (text: string) => fake.sendUserMessage({ chatId: ann.id, chatType: "private", from: ann, text })

/** The GrammyError a call fails with (the test fails if it succeeds or fails otherwise). */
const refusal = async (call: Promise<unknown>): Promise<GrammyError> => {
  const error = await call.then(() => undefined, (e: unknown) => e)
  expect(error).toBeInstanceOf(GrammyError)
  return error as GrammyError
}

/** A raw Bot API request, for what grammy's types would not let through. */
const post = async (method: string, body: Record<string, unknown>, token = fake.token) => {
  const response = await fetch(`${fake.apiRoot}/bot${token}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

/** A PNG header (signature and IHDR): all the fake reads of an image. */
const png = (width: number, height: number): Uint8Array => {
  const b = Buffer.alloc(33)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b, 0)
  b.writeUInt32BE(13, 8)
  b.write("IHDR", 12, "latin1")
  b.writeUInt32BE(width, 16)
  b.writeUInt32BE(height, 20)
  b[24] = 8
  b[25] = 2
  return new Uint8Array(b)
}

/** Starts long polling, collecting middleware errors; resolves once the first poll is held. */
const startPolling = async () => {
  const errors: Array<unknown> = []
  bot.catch((e) => void errors.push(e.error))
  const running = bot.start({ timeout: 30 })
  await fake.waitFor(() => fake.pendingPolls === 1, "the bot's first long poll")
  return { errors, running }
}

describe("the Bot API surface", () => {
  it("getMe answers the bot's identity (the token's id), also through grammy's init", async () => {
    const me = await bot.api.getMe()
    expect(me).toMatchObject({ id: 123456789, is_bot: true, first_name: "Anna", username: "anna_test_bot" })
    await bot.init()
    expect(bot.botInfo.username).toBe("anna_test_bot")
    expect(fake.callsTo("getMe").map((c) => c.status)).toEqual([200, 200])
  })

  it("speaks Telegram's envelopes: 401 for another token, 404 for an unknown method, HTTP status = error_code", async () => {
    const stranger = new Bot("999:not-this-bot", { client: { apiRoot: fake.apiRoot } })
    const unauthorized = await refusal(stranger.api.getMe())
    expect([unauthorized.error_code, unauthorized.description]).toEqual([401, "Unauthorized"])

    expect(await post("noSuchMethod", {})).toEqual({ status: 404, json: { ok: false, error_code: 404, description: "Not Found" } })
    expect(await post("getMe", {}, "999:not-this-bot")).toEqual({
      status: 401,
      json: { ok: false, error_code: 401, description: "Unauthorized" }
    })

    const get = await fetch(`${fake.apiRoot}/bot${fake.token}/GETME`)
    expect(get.status).toBe(200)
    expect(await get.json()).toMatchObject({ ok: true, result: { username: "anna_test_bot" } })
  })

  it("takes urlencoded bodies and query strings as well as JSON", async () => {
    dm("hi")
    const form = await fetch(`${fake.apiRoot}/bot${fake.token}/sendMessage`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ chat_id: "501", text: "from a form", reply_markup: JSON.stringify({ inline_keyboard: [[{ text: "A", callback_data: "a" }]] }) })
    })
    expect(await form.json()).toMatchObject({ ok: true, result: { text: "from a form", reply_markup: { inline_keyboard: [[{ text: "A" }]] } } })
    const query = await fetch(`${fake.apiRoot}/bot${fake.token}/sendMessage?chat_id=501&text=from%20a%20query`)
    expect(await query.json()).toMatchObject({ ok: true, result: { text: "from a query" } })
    expect(fake.messages(501).map((m) => m.text)).toEqual(["from a form", "from a query"])
  })
})

describe("sendMessage", () => {
  it("answers a Message with per-chat message ids, the bot as sender, replies and inline keyboards", async () => {
    const refused = await refusal(bot.api.sendMessage(501, "too early"))
    expect(refused.description).toBe("Bad Request: chat not found")

    const hi = dm("hi")
    const first = await bot.api.sendMessage(501, "hello Ann", {
      reply_parameters: { message_id: hi.message?.message_id ?? 0 },
      reply_markup: { inline_keyboard: [[{ text: "Yes", callback_data: "yes" }, { text: "Docs", url: "https://example.com" }]] }
    })
    expect(first).toMatchObject({
      message_id: 2,
      chat: { id: 501, type: "private", username: "ann" },
      from: { id: 123456789, is_bot: true, username: "anna_test_bot" },
      text: "hello Ann",
      reply_to_message: { message_id: 1, text: "hi" },
      reply_markup: { inline_keyboard: [[{ text: "Yes", callback_data: "yes" }, { text: "Docs", url: "https://example.com" }]] }
    })
    expect(first.date).toBeGreaterThan(1_700_000_000)
    expect((await bot.api.sendMessage(501, "again")).message_id).toBe(3)
    fake.sendUserMessage({ chatId: -100, chatType: "supergroup", from: ann, text: "in a group" })
    expect((await bot.api.sendMessage(-100, "there")).message_id).toBe(2)

    const [stored] = fake.messages(501)
    expect(stored).toMatchObject({ messageId: 2, text: "hello Ann", raw: "hello Ann", parseMode: undefined, replyToMessageId: 1 })
    expect(stored?.replyMarkup).toEqual({ inline_keyboard: [[{ text: "Yes", callback_data: "yes" }, { text: "Docs", url: "https://example.com" }]] })

    const missing = await refusal(bot.api.sendMessage(501, "re", { reply_parameters: { message_id: 99 } }))
    expect(missing.description).toBe("Bad Request: message to be replied not found")
    const anyway = await bot.api.sendMessage(501, "re", { reply_parameters: { message_id: 99, allow_sending_without_reply: true } })
    expect(anyway.reply_to_message).toBeUndefined()

    const badData = await refusal(bot.api.sendMessage(501, "x", { reply_markup: { inline_keyboard: [[{ text: "X", callback_data: "x".repeat(65) }]] } }))
    expect(badData.description).toBe("Bad Request: BUTTON_DATA_INVALID")
  })

  it("refuses empty and too long text, counting the visible text in UTF-16 code units", async () => {
    dm("hi")
    expect((await refusal(bot.api.sendMessage(501, ""))).description).toBe("Bad Request: message text is empty")
    expect((await refusal(bot.api.sendMessage(501, " \n "))).description).toBe("Bad Request: message text is empty")
    expect((await refusal(bot.api.sendMessage(501, "<b></b>", { parse_mode: "HTML" }))).description).toBe("Bad Request: message text is empty")
    expect((await refusal(bot.api.sendMessage(501, "x".repeat(4097)))).description).toBe("Bad Request: message is too long")
    expect((await refusal(bot.api.sendMessage(501, "😀".repeat(2049)))).description).toBe("Bad Request: message is too long")
    await bot.api.sendMessage(501, "x".repeat(4096))
    // 8192 characters of markup, 4096 visible: accepted.
    const escaped = await bot.api.sendMessage(501, "\\.".repeat(4096), { parse_mode: "MarkdownV2" })
    expect(escaped.text).toBe(".".repeat(4096))
    expect(fake.messages(501).map((m) => m.text.length)).toEqual([4096, 4096])
  })

  it("parses HTML into visible text and entities, keeping the raw text and parse mode", async () => {
    dm("hi")
    const raw = "<b>Ann</b> &amp; 😀 <a href=\"https://example.com/?a=1&amp;b=2\">link</a>\n<pre><code class=\"language-ts\">let x = 1</code></pre>"
    const sent = await bot.api.sendMessage(501, raw, { parse_mode: "HTML" })
    expect(sent.text).toBe("Ann & 😀 link\nlet x = 1")
    expect(sent.entities).toEqual([
      { type: "bold", offset: 0, length: 3 },
      { type: "text_link", offset: 9, length: 4, url: "https://example.com/?a=1&b=2" },
      { type: "pre", offset: 14, length: 9, language: "ts" }
    ])
    expect(fake.messages(501)[0]).toMatchObject({ text: "Ann & 😀 link\nlet x = 1", raw, parseMode: "HTML" })
  })

  it("refuses HTML Telegram cannot parse, with its descriptions", async () => {
    dm("hi")
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["line<br>break", "Unsupported start tag \"br\" at byte offset 4"],
      ["<b>bold</i>", "Unmatched end tag at byte offset 7, expected \"</b>\", found \"</i>\""],
      ["<b>bold", "Can't find end tag corresponding to start tag \"b\""],
      ["🏟 a < b", "Unsupported start tag \"\" at byte offset 7"],
      ["x</b>", "Unexpected end tag at byte offset 1"],
      ["<span>x</span>", "Tag \"span\" must have class \"tg-spoiler\" at byte offset 0"],
      ["Tom & Jerry", "Character '&' at byte offset 4 must be escaped as \"&amp;\" (the fake is stricter than Telegram here)"]
    ]
    for (const [text, why] of cases) {
      const refused = await refusal(bot.api.sendMessage(501, text, { parse_mode: "HTML" }))
      expect([text, refused.error_code, refused.description]).toEqual([text, 400, `Bad Request: can't parse entities: ${why}`])
    }
    expect(fake.messages(501)).toEqual([])
  })

  it("parses MarkdownV2 and refuses unescaped reserved characters; legacy Markdown too", async () => {
    dm("hi")
    const v2 = await bot.api.sendMessage(501, "*bold* _it_ __u__ ~s~ ||spoiler|| `a.b!` [site](https://example.com/a\\)b) 1\\.5\\!", {
      parse_mode: "MarkdownV2"
    })
    expect(v2.text).toBe("bold it u s spoiler a.b! site 1.5!")
    expect(v2.entities?.map((e) => e.type)).toEqual(["bold", "italic", "underline", "strikethrough", "spoiler", "code", "text_link"])
    expect(v2.entities?.at(-1)).toEqual({ type: "text_link", offset: 25, length: 4, url: "https://example.com/a)b" })

    const reserved = await refusal(bot.api.sendMessage(501, "Hello!", { parse_mode: "MarkdownV2" }))
    expect(reserved.description).toBe("Bad Request: can't parse entities: Character '!' is reserved and must be escaped with the preceding '\\'")
    const unclosed = await refusal(bot.api.sendMessage(501, "🏟 *bold", { parse_mode: "MarkdownV2" }))
    expect(unclosed.description).toBe("Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 5")

    const legacy = await bot.api.sendMessage(501, "*b* _i_ `c` 1.5!", { parse_mode: "Markdown" })
    expect([legacy.text, legacy.entities?.map((e) => e.type)]).toEqual(["b i c 1.5!", ["bold", "italic", "code"]])
    const legacyOpen = await refusal(bot.api.sendMessage(501, "a *b", { parse_mode: "Markdown" }))
    expect(legacyOpen.description).toBe("Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 2")

    expect(await post("sendMessage", { chat_id: 501, text: "x", parse_mode: "html5" })).toMatchObject({
      status: 400,
      json: { ok: false, error_code: 400, description: "Bad Request: unsupported parse_mode" }
    })
  })
})

describe("editMessageText and friends", () => {
  it("edits a message, keeps its history, and refuses no-op edits and unknown messages like Telegram", async () => {
    dm("hi")
    const keyboard = { inline_keyboard: [[{ text: "Stop", callback_data: "stop" }]] }
    const draft = await bot.api.sendMessage(501, "draft 1")
    await bot.api.editMessageText(501, draft.message_id, "draft 2", { reply_markup: keyboard })
    const unchanged = await refusal(bot.api.editMessageText(501, draft.message_id, "draft 2", { reply_markup: keyboard }))
    expect(unchanged.description).toBe(
      "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
    )
    // The same text without the keyboard is a change: the keyboard goes.
    await bot.api.editMessageText(501, draft.message_id, "draft 2")
    const final = await bot.api.editMessageText(501, draft.message_id, "<b>final</b>", { parse_mode: "HTML" })
    expect(final).toMatchObject({ message_id: draft.message_id, text: "final", entities: [{ type: "bold", offset: 0, length: 5 }] })
    expect(typeof final === "object" ? final.edit_date : undefined).toBeGreaterThan(0)

    const [message] = fake.messages(501)
    expect(message?.history.map((v) => [v.text, v.replyMarkup === undefined ? "-" : "keyboard"])).toEqual([
      ["draft 1", "-"],
      ["draft 2", "keyboard"],
      ["draft 2", "-"],
      ["final", "-"]
    ])
    expect(message).toMatchObject({ text: "final", raw: "<b>final</b>", parseMode: "HTML", replyMarkup: undefined })

    expect((await refusal(bot.api.editMessageText(501, 999, "x"))).description).toBe("Bad Request: message to edit not found")
    expect((await refusal(bot.api.editMessageText(501, 1, "x"))).description).toBe("Bad Request: message can't be edited")
    expect((await refusal(bot.api.editMessageText(501, draft.message_id, "**", { parse_mode: "MarkdownV2" }))).description).toBe(
      "Bad Request: message text is empty"
    )
  })

  it("edits reply markup alone and deletes messages", async () => {
    dm("hi")
    const sent = await bot.api.sendMessage(501, "pick", { reply_markup: { inline_keyboard: [[{ text: "A", callback_data: "a" }]] } })
    await bot.api.editMessageReplyMarkup(501, sent.message_id)
    expect(fake.messages(501)[0]?.replyMarkup).toBeUndefined()
    expect((await refusal(bot.api.editMessageReplyMarkup(501, sent.message_id))).description).toContain("message is not modified")
    await bot.api.deleteMessage(501, sent.message_id)
    expect(fake.messages(501)[0]?.deleted).toBe(true)
    expect((await refusal(bot.api.deleteMessage(501, sent.message_id))).description).toBe("Bad Request: message to delete not found")
  })

  it("records chat actions and refuses unknown ones", async () => {
    dm("hi")
    expect(await bot.api.sendChatAction(501, "typing")).toBe(true)
    await bot.api.sendChatAction(501, "upload_photo")
    expect(fake.chatActions(501)).toEqual(["typing", "upload_photo"])
    expect(await post("sendChatAction", { chat_id: 501, action: "dancing" })).toMatchObject({
      status: 400,
      json: { description: "Bad Request: wrong parameter action in request" }
    })
  })

  it("stores commands per scope and language", async () => {
    const commands = [{ command: "new", description: "Start over" }, { command: "abort", description: "Stop the answer" }]
    expect(await bot.api.setMyCommands(commands)).toBe(true)
    await bot.api.setMyCommands([{ command: "help", description: "Help" }], { scope: { type: "all_group_chats" }, language_code: "de" })
    expect(fake.commands()).toEqual(commands)
    expect(fake.commands({ type: "all_group_chats" }, "de")).toEqual([{ command: "help", description: "Help" }])
    expect(fake.commands({ type: "all_group_chats" })).toEqual([])
    expect(await bot.api.getMyCommands()).toEqual(commands)
    const invalid = await refusal(bot.api.setMyCommands([{ command: "New", description: "x" }]))
    expect(invalid.description).toBe("Bad Request: BOT_COMMAND_INVALID")
    expect(fake.commands()).toEqual(commands)
  })
})

describe("photos and files", () => {
  it("takes a multipart upload from sendPhoto, serves it through getFile and /file/bot<token>/<path>", async () => {
    dm("hi")
    const bytes = png(640, 480)
    const sent = await bot.api.sendPhoto(501, new InputFile(bytes, "chart.png"), { caption: "<b>Chart</b> of the week", parse_mode: "HTML" })
    expect(sent.photo.map((p) => [p.width, p.height])).toEqual([[90, 68], [320, 240], [640, 480]])
    expect([sent.caption, sent.caption_entities]).toEqual(["Chart of the week", [{ type: "bold", offset: 0, length: 5 }]])

    // grammy sent multipart/form-data: form fields are strings, the photo an attach:// part.
    const [call] = fake.callsTo("sendPhoto")
    const upload = call?.params["photo"]
    expect(upload).toBeInstanceOf(UploadedFile)
    expect(upload instanceof UploadedFile ? [upload.filename, Buffer.from(upload.bytes).equals(Buffer.from(bytes))] : []).toEqual(["chart.png", true])
    expect(call?.params["chat_id"]).toBe("501")

    const largest = sent.photo.at(-1)
    const file = await bot.api.getFile(largest?.file_id ?? "")
    expect(file).toMatchObject({ file_id: largest?.file_id, file_size: bytes.length })
    expect(file.file_path).toMatch(/^photos\/file_\d+\.png$/)
    const download = await fetch(`${fake.apiRoot}/file/bot${fake.token}/${file.file_path}`)
    expect([download.status, download.headers.get("content-type")]).toEqual([200, "image/png"])
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true)
    expect(fake.downloads).toEqual([file.file_path])
    expect((await fetch(`${fake.apiRoot}/file/bot${fake.token}/photos/nope.png`)).status).toBe(404)
    expect((await fetch(`${fake.apiRoot}/file/bot1:other/${file.file_path}`)).status).toBe(401)

    // A file_id is reusable; a URL is fetched (here: the fake's own download URL).
    const again = await bot.api.sendPhoto(501, largest?.file_id ?? "")
    expect(again.photo).toEqual(sent.photo)
    const byUrl = await bot.api.sendPhoto(501, `${fake.apiRoot}/file/bot${fake.token}/${file.file_path}`)
    expect(byUrl.photo.at(-1)?.width).toBe(640)
    expect(fake.messages(501).map((m) => [m.kind, m.text])).toEqual([["photo", "Chart of the week"], ["photo", ""], ["photo", ""]])

    expect((await refusal(bot.api.sendPhoto(501, "no-such-file-id"))).description).toBe("Bad Request: wrong file identifier/HTTP URL specified")
    expect((await refusal(bot.api.sendPhoto(501, new InputFile(new Uint8Array([1, 2, 3]))))).description).toBe(
      "Bad Request: IMAGE_PROCESS_FAILED"
    )
    // Without a filename grammy names the part after the parameter: photo.jpg.
    const unnamed = fake.callsTo("sendPhoto").at(-1)?.params["photo"]
    expect(unnamed instanceof UploadedFile ? unnamed.filename : undefined).toBe("photo.jpg")
    expect((await refusal(bot.api.getFile("nope"))).description).toBe("Bad Request: invalid file_id")
  })

  it("stores a user's photo as a downloadable file with PhotoSize variants", async () => {
    const bytes = png(2000, 1000)
    const update = fake.sendUserMessage({ chatId: 501, chatType: "private", from: ann, text: "look", photo: { bytes } })
    const photo = update.message?.photo ?? []
    expect(photo.map((p) => p.width)).toEqual([90, 320, 800, 1280, 2000])
    expect(update.message?.caption).toBe("look")
    const file = await bot.api.getFile(photo.at(-1)?.file_id ?? "")
    const download = await fetch(`${fake.apiRoot}/file/bot${fake.token}/${file.file_path}`)
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true)
  })
})

describe("getUpdates", () => {
  it("confirms with offset, limits batches, holds a long poll until an update or the timeout", async () => {
    expect(await bot.api.getUpdates({ timeout: 0 })).toEqual([])
    const [u1, u2, u3] = [dm("one"), dm("two"), dm("three")]
    expect((await bot.api.getUpdates({ limit: 2 })).map((u) => u.message?.text)).toEqual(["one", "two"])
    // Without a higher offset nothing is confirmed.
    expect((await bot.api.getUpdates()).map((u) => u.update_id)).toEqual([u1.update_id, u2.update_id, u3.update_id])
    expect((await bot.api.getUpdates({ offset: u2.update_id + 1 })).map((u) => u.message?.text)).toEqual(["three"])
    expect(fake.pendingUpdates.map((u) => u.update_id)).toEqual([u3.update_id])

    const held = bot.api.getUpdates({ offset: u3.update_id + 1, timeout: 30 })
    await fake.waitFor(() => fake.pendingPolls === 1, "the held poll")
    const u4 = dm("four")
    expect(await held).toEqual([u4])

    const u5 = dm("five")
    expect((await bot.api.getUpdates({ offset: -1 })).map((u) => u.message?.text)).toEqual(["five"])
    expect(fake.pendingUpdates).toEqual([u5])

    // An empty answer once the timeout (Telegram's protocol time, 1 s here) elapses.
    const before = Date.now()
    expect(await bot.api.getUpdates({ offset: u5.update_id + 1, timeout: 1 })).toEqual([])
    expect(Date.now() - before).toBeGreaterThanOrEqual(900)
    expect(fake.pendingUpdates).toEqual([])
  })

  it("drops updates of types outside allowed_updates, and ends a pending poll with 409 when another starts", async () => {
    dm("hi")
    const sent = await bot.api.sendMessage(501, "pick", { reply_markup: { inline_keyboard: [[{ text: "A", callback_data: "a" }]] } })
    const [hi] = await bot.api.getUpdates({ allowed_updates: ["message"] })
    fake.pressButton({ chatId: 501, from: ann, messageId: sent.message_id, data: "a" })
    expect(await bot.api.getUpdates({ offset: (hi?.update_id ?? 0) + 1 })).toEqual([])
    await bot.api.getUpdates({ allowed_updates: [] })
    const press = fake.pressButton({ chatId: 501, from: ann, messageId: sent.message_id, data: "a" })
    expect(await bot.api.getUpdates()).toEqual([press])

    const first = refusal(bot.api.getUpdates({ offset: press.update_id + 1, timeout: 30 }))
    await fake.waitFor(() => fake.pendingPolls === 1, "the first poll held")
    expect(await bot.api.getUpdates({ offset: press.update_id + 1 })).toEqual([])
    const conflict = await first
    expect([conflict.error_code, conflict.description]).toEqual([
      409,
      "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
    ])
  })
})

describe("long polling with bot.start()", () => {
  it("delivers messages, commands, mentions and button presses to middleware; stop() confirms the last update", async () => {
    const seen: Array<Update> = []
    bot.use(async (ctx, next) => {
      seen.push(ctx.update)
      await next()
    })
    bot.command("start", (ctx) => ctx.reply("welcome"))
    bot.on("message:text", (ctx) => ctx.reply(`echo: ${ctx.message.text}`, { reply_parameters: { message_id: ctx.message.message_id } }))
    bot.on("callback_query:data", async (ctx) => {
      await ctx.answerCallbackQuery({ text: "noted" })
      await ctx.editMessageText(`chose ${ctx.callbackQuery.data}`)
    })
    const { errors, running } = await startPolling()

    dm("/start")
    await fake.waitFor(() => fake.messages(501).find((m) => m.text === "welcome"), "the /start reply")
    const hello = dm("hello")
    const echo = await fake.waitFor(() => fake.messages(501).find((m) => m.text === "echo: hello"), "the echo")
    expect(echo.replyToMessageId).toBe(hello.message?.message_id)

    const pick = await bot.api.sendMessage(501, "pick one", { reply_markup: { inline_keyboard: [[{ text: "A", callback_data: "a" }]] } })
    fake.pressButton({ chatId: 501, from: ann, messageId: pick.message_id, data: "a" })
    await fake.waitFor(() => fake.messages(501).find((m) => m.text === "chose a"), "the edit after the press")
    expect(fake.answeredCallbacks.map((a) => [a.text, a.showAlert])).toEqual([["noted", false]])
    expect((await refusal(bot.api.answerCallbackQuery(fake.answeredCallbacks[0]?.callbackQueryId ?? ""))).description).toBe(
      "Bad Request: query is too old and response timeout expired or query ID is invalid"
    )

    const mention = fake.sendUserMessage({ chatId: -100, chatType: "supergroup", chatTitle: "Team", from: ann, text: "what's up?", mentionBot: true })
    await fake.waitFor(() => fake.messages(-100).length === 1, "the group answer")
    expect(mention.message).toMatchObject({ text: "@anna_test_bot what's up?", chat: { id: -100, type: "supergroup", title: "Team" } })
    expect(mention.message?.entities).toEqual([{ type: "mention", offset: 0, length: 14 }])
    expect(seen.find((u) => u.message?.text === "/start")?.message?.entities).toEqual([{ type: "bot_command", offset: 0, length: 6 }])

    await bot.stop()
    await running
    const last = fake.callsTo("getUpdates").at(-1)
    expect(last?.params).toEqual({ offset: mention.update_id + 1, limit: 1 })
    expect(fake.pendingUpdates).toEqual([])
    expect(seen.map((u) => u.message?.text ?? u.callback_query?.data)).toEqual(["/start", "hello", "a", "@anna_test_bot what's up?"])
    expect(errors).toEqual([])
  })

  it("delivers an update again after redeliver(): middleware sees the duplicate", async () => {
    const handled: Array<number> = []
    bot.on("message", (ctx) => void handled.push(ctx.update.update_id))
    const { running } = await startPolling()
    const one = dm("one")
    await fake.waitFor(() => handled.length === 1, "the first delivery")
    await fake.waitFor(() => fake.pendingUpdates.length === 0, "its confirmation by the next poll")
    fake.redeliver(one.update_id)
    await fake.waitFor(() => handled.length === 2, "the duplicate")
    const two = dm("two")
    await fake.waitFor(() => handled.length === 3, "the next message")
    expect(handled).toEqual([one.update_id, one.update_id, two.update_id])
    expect(() => fake.redeliver(123)).toThrow("no update 123")
    await bot.stop()
    await running
  })

  it("survives scripted failures: 500 on getMe (grammy retries at once), 429 on getUpdates (after retry_after)", async () => {
    fake.failNext("getMe", { status: 500 })
    fake.failNext("getUpdates", { status: 429, retryAfter: 0 })
    const handled: Array<string> = []
    bot.on("message:text", (ctx) => void handled.push(ctx.message.text))
    const { running } = await startPolling()
    dm("made it")
    await fake.waitFor(() => handled.length === 1, "the message after the failures")
    expect(fake.callsTo("getMe").map((c) => c.status)).toEqual([500, 200])
    expect(fake.callsTo("getUpdates")[0]?.status).toBe(429)
    await bot.stop()
    await running
  })

  it("resumes after a dropped long poll (grammy waits 3 s before polling again)", async () => {
    const handled: Array<string> = []
    bot.on("message:text", (ctx) => void handled.push(ctx.message.text))
    const { running } = await startPolling()
    expect(fake.dropPolls()).toBe(1)
    expect(fake.callsTo("getUpdates").at(-1)?.aborted).toBe(true)
    await fake.waitFor(() => fake.callsTo("getUpdates").length === 2 && fake.pendingPolls === 1, "a new poll after the drop")
    dm("after the drop")
    await fake.waitFor(() => handled.length === 1, "the message after the drop")
    expect(handled).toEqual(["after the drop"])
    await bot.stop()
    await running
  })
})

describe("failures a client sees", () => {
  it("429 carries retry_after; grammy does not retry by itself", async () => {
    dm("hi")
    fake.failNext("sendMessage", { status: 429, retryAfter: 7 })
    const limited = await refusal(bot.api.sendMessage(501, "now?"))
    expect([limited.error_code, limited.description, limited.parameters]).toEqual([429, "Too Many Requests: retry after 7", { retry_after: 7 }])
    expect(fake.callsTo("sendMessage").map((c) => c.status)).toEqual([429])
    expect(fake.messages(501)).toEqual([])
    await bot.api.sendMessage(501, "now")
    expect(fake.messages(501).map((m) => m.text)).toEqual(["now"])
  })

  it("500 is a JSON error, 502 is nginx's HTML page (grammy: HttpError), `times` repeats a failure", async () => {
    dm("hi")
    fake.failNext("sendMessage", { status: 500, times: 2 })
    fake.failNext("sendMessage", { status: 502 })
    for (let i = 0; i < 2; i++) {
      const failed = await refusal(bot.api.sendMessage(501, "x"))
      expect([failed.error_code, failed.description]).toEqual([500, "Internal Server Error"])
    }
    const gateway = await bot.api.sendMessage(501, "x").then(() => undefined, (e: unknown) => e)
    expect(gateway).toBeInstanceOf(HttpError)
    await bot.api.sendMessage(501, "x")
    expect(fake.callsTo("sendMessage").map((c) => c.status)).toEqual([500, 500, 502, 200])
  })

  it("a dropped poll fails the pending getUpdates with a network error", async () => {
    const poll = bot.api.getUpdates({ timeout: 30 }).then(() => undefined, (e: unknown) => e)
    await fake.waitFor(() => fake.pendingPolls === 1, "the held poll")
    expect(fake.dropPolls()).toBe(1)
    expect(await poll).toBeInstanceOf(HttpError)
    expect(fake.pendingPolls).toBe(0)
  })
})

describe("the test controls", () => {
  it("waitFor resolves at once when already true, and rejects with the description on timeout", async () => {
    expect(await fake.waitFor(() => fake.me.username, "the username")).toBe("anna_test_bot")
    await expect(fake.waitFor(() => undefined, "a thing that never happens", 20)).rejects.toThrow("a thing that never happens")
  })

  it("close() ends pending polls and waits", async () => {
    const poll = bot.api.getUpdates({ timeout: 30 }).then(() => undefined, (e: unknown) => e)
    await fake.waitFor(() => fake.pendingPolls === 1, "the held poll")
    const waiting = fake.waitFor(() => false, "something after close", 60_000).then(() => undefined, (e: unknown) => e)
    await fake.close()
    expect(await poll).toBeInstanceOf(HttpError)
    expect(String(await waiting)).toContain("closed while waiting for: something after close")
  })

  it("checks what a test injects: Telegram's id rules, existing messages, known methods", () => {
    expect(() => fake.sendUserMessage({ chatId: 1, chatType: "private", from: ann, text: "x" })).toThrow("a private chat's id is its user's id")
    expect(() => fake.sendUserMessage({ chatId: 5, chatType: "group", from: ann, text: "x" })).toThrow("ids are negative")
    expect(() => fake.sendUserMessage({ chatId: 501, from: ann, text: "x", replyToBotMessageId: 9 })).toThrow("no bot message 9")
    expect(() => fake.pressButton({ chatId: 501, from: ann, messageId: 1, data: "x" })).toThrow("no bot message 1")
    expect(() => fake.failNext("sendMesage", { status: 500 })).toThrow("no method \"sendMesage\"")
  })
})
