/**
 * The Feishu/Lark channel's pure rules: card Markdown, message bodies (mentions, posts, images),
 * event callbacks (decryption, signatures), picker buttons and their presses, what an API failure
 * means, and the split into cards.
 */
import { createCipheriv, createHash, randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { classify, FeishuHttpError } from "../../../src/layers/channels/feishu/api.ts"
import { bodyOf, cardPressOf, type FeishuInbound, inboundOf, readCallback, signatureOk } from "../../../src/layers/channels/feishu/events.ts"
import { CARD_LIMIT, card, feishuParts, MAX_BUTTONS, toFeishuMarkdown, withButtons } from "../../../src/layers/channels/feishu/reply.ts"

const BOT = "ou_bot"

const inbound = (over: Partial<FeishuInbound>): FeishuInbound => ({
  messageId: "om_1",
  chatId: "oc_1",
  isGroup: true,
  senderOpenId: "ou_user",
  senderIsUser: true,
  messageType: "text",
  content: "{}",
  mentions: [],
  ...over
})

const encrypt = (plain: string, key: string): string => {
  const iv = randomBytes(16)
  const cipher = createCipheriv("aes-256-cbc", createHash("sha256").update(key).digest(), iv)
  return Buffer.concat([iv, cipher.update(plain, "utf8"), cipher.final()]).toString("base64")
}

describe("card Markdown", () => {
  it("escapes tags outside code, keeps code as written, turns headings bold", () => {
    expect(toFeishuMarkdown("hi <at id=all></at> and `a<b`")).toBe("hi &lt;at id=all>&lt;/at> and `a<b`")
    expect(toFeishuMarkdown("```html\n<b>x</b>\n```\n<i>")).toBe("```html\n<b>x</b>\n```\n&lt;i>")
    expect(toFeishuMarkdown("## Plan\ntext")).toBe("**Plan**\ntext")
  })

  it("splits a long answer into cards within the limit, a code block whole in one", () => {
    const code = Array.from({ length: 50 }, (_, i) => `x${i} = ${i}`).join("\n")
    const md = `${"A paragraph of words. ".repeat(200)}\n\n${"Another one here. ".repeat(200)}\n\n\`\`\`py\n${code}\n\`\`\`\n\n${"Tail. ".repeat(500)}`
    const parts = feishuParts(md)
    expect(parts.length).toBeGreaterThan(1)
    for (const p of parts) expect((p.rich ?? "").length).toBeLessThanOrEqual(CARD_LIMIT)
    expect(parts.filter((p) => (p.rich ?? "").includes("x49 = 49") && (p.rich ?? "").includes("x0 = 0")).length).toBe(1)
  })
})

describe("message bodies", () => {
  it("reads a text message, dropping the bot's mention and naming others", () => {
    const m = inbound({
      content: JSON.stringify({ text: "@_user_1 ask @_user_2 please" }),
      mentions: [{ key: "@_user_1", openId: BOT, name: "bot" }, { key: "@_user_2", openId: "ou_c", name: "Carol" }]
    })
    expect(bodyOf(m, BOT)).toEqual({ text: "ask @Carol please", imageKeys: [] })
  })

  it("reads a post (with or without a locale) with its images, and an image message", () => {
    const post = { title: "T", content: [[{ tag: "at", user_id: "@_user_1" }, { tag: "text", text: " see " }, { tag: "a", text: "this", href: "https://x.y" }], [{ tag: "img", image_key: "img_1" }]] }
    const mentions = [{ key: "@_user_1", openId: BOT }]
    expect(bodyOf(inbound({ messageType: "post", content: JSON.stringify(post), mentions }), BOT)).toEqual({ text: "T\nsee [this](https://x.y)", imageKeys: ["img_1"] })
    expect(bodyOf(inbound({ messageType: "post", content: JSON.stringify({ zh_cn: post }), mentions }), BOT).imageKeys).toEqual(["img_1"])
    expect(bodyOf(inbound({ messageType: "image", content: JSON.stringify({ image_key: "img_2" }) }), BOT)).toEqual({ text: "", imageKeys: ["img_2"] })
    expect(bodyOf(inbound({ messageType: "text", content: "not json" }), BOT)).toEqual({ text: "", imageKeys: [] })
  })

  it("decodes an event only when every needed field is there", () => {
    const event = {
      event_id: "e1",
      sender: { sender_id: { open_id: "ou_u" }, sender_type: "user" },
      message: { message_id: "om_1", chat_id: "oc_1", chat_type: "p2p", message_type: "text", content: "{\"text\":\"hi\"}" }
    }
    expect(inboundOf(event)).toMatchObject({ messageId: "om_1", isGroup: false, senderOpenId: "ou_u" })
    expect(inboundOf({ ...event, message: { ...event.message, chat_id: 5 } })).toBeUndefined()
    expect(inboundOf({ ...event, sender: { sender_id: {} } })).toBeUndefined()
    expect(inboundOf("junk")).toBeUndefined()
  })
})

describe("event callbacks", () => {
  it("reads a press of a picker button only when every field is there and the command is ours", () => {
    const press = (value: unknown, over: Record<string, unknown> = {}) => ({
      event_id: "ev1",
      event_type: "card.action.trigger",
      token: "c-card",
      operator: { open_id: "ou_ann" },
      action: { value, tag: "button" },
      context: { open_message_id: "om_card", open_chat_id: "oc_chat" },
      ...over
    })
    expect(cardPressOf(press({ anna_pick: "/agent 2", anna_chat: "p2p" }))).toEqual({
      key: "action:ev1",
      operatorOpenId: "ou_ann",
      messageId: "om_card",
      chatId: "oc_chat",
      isGroup: false,
      command: "/agent 2"
    })
    expect(cardPressOf(press({ anna_pick: "/model 1" }))?.isGroup).toBe(true)
    for (
      const bad of [
        press({ anna_pick: "/new" }),
        press({ anna_pick: "/model 1 " }),
        press({ anna_pick: 3 }),
        press("/model 1"),
        press({ anna_pick: "/model 1" }, { context: { open_message_id: "om_card" } }),
        press({ anna_pick: "/model 1" }, { operator: {} }),
        press({ anna_pick: "/model 1" }, { event_id: undefined }),
        null,
        "x"
      ]
    ) expect(cardPressOf(bad)).toBeUndefined()
  })

  it("puts a picker's buttons under a card's content, the current marked, at most MAX_BUTTONS", () => {
    const options = Array.from({ length: MAX_BUTTONS + 5 }, (_, i) => ({ value: `m${i}`, label: `m${i}`, current: i === 1 }))
    const v = JSON.parse(withButtons(card("1. m0", true), { command: "model", options }, true)) as { config: unknown; elements: Array<Record<string, unknown>> }
    expect(v.config).toEqual({ wide_screen_mode: true, update_multi: true })
    expect(v.elements[0]).toEqual({ tag: "markdown", content: "1. m0" })
    expect(v.elements.length).toBe(1 + MAX_BUTTONS)
    expect(v.elements[2]).toEqual({
      tag: "action",
      actions: [{ tag: "button", text: { tag: "plain_text", content: "✓ m1" }, type: "primary", value: { anna_pick: "/model 2", anna_chat: "group" } }]
    })
  })

  it("decrypts an encrypted challenge and event, refuses what does not decrypt", () => {
    const challenge = readCallback({ encrypt: encrypt(JSON.stringify({ type: "url_verification", challenge: "c1", token: "t" }), "k") }, "k")
    expect(challenge).toEqual({ kind: "challenge", challenge: "c1", token: "t" })
    const event = readCallback({ encrypt: encrypt(JSON.stringify({ schema: "2.0", header: { event_type: "im.message.receive_v1", token: "t" }, event: { a: 1 } }), "k") }, "k")
    expect(event).toMatchObject({ kind: "event", eventType: "im.message.receive_v1", token: "t" })
    expect(readCallback({ encrypt: encrypt("{}", "k") }, "other").kind).toBe("invalid")
    expect(readCallback({ encrypt: "short" }, undefined).kind).toBe("invalid")
  })

  it("checks signatures: SHA-256 of timestamp, nonce, key and body", () => {
    const sig = createHash("sha256").update("1" + "n" + "k" + "{}").digest("hex")
    expect(signatureOk("1", "n", "k", "{}", sig)).toBe(true)
    expect(signatureOk("1", "n", "k", "{ }", sig)).toBe(false)
    expect(signatureOk("1", "n", "k", "{}", "abc")).toBe(false)
  })
})

describe("API failures", () => {
  const c = classify("s3cret")
  it("retries rate limits (after the reset hint), 5xx and expired tokens; formats refused cards; refuses the rest", () => {
    expect(c("m", new FeishuHttpError(429, 99991400, "limit", 2000))).toMatchObject({ kind: "retry", status: 99991400, retryAfterMs: 2000 })
    expect(c("m", new FeishuHttpError(400, 230020, "chat limit", undefined)).kind).toBe("retry")
    expect(c("m", new FeishuHttpError(503, undefined, "busy", undefined)).kind).toBe("retry")
    expect(c("m", new FeishuHttpError(400, 99991663, "token", undefined)).kind).toBe("retry")
    expect(c("m", new FeishuHttpError(400, 230099, "card", undefined)).kind).toBe("format")
    expect(c("m", new FeishuHttpError(400, 10014, "app secret invalid s3cret", undefined))).toMatchObject({ kind: "refused", description: "app secret invalid <secret>" })
    expect(c("m", new TypeError("fetch failed")).kind).toBe("retry")
  })
})
