/**
 * The QQ channel's pure parts and small pieces: its settings, the reply parts (plain text, at most
 * 5, cut at 2,000), QQ's events decoded (malformed ones refused), stored messages, image sniffing,
 * the access-token cache on the TestClock, the download cap, and secrets kept out of errors.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { decodeChannelSettings } from "../../../src/domain/config/channel.ts"
import { fetchToken, makeQqApi, type Token, tokenCache, TOKEN_REFRESH_BEFORE_MS } from "../../../src/layers/channels/qq/api.ts"
import { decodeEvent, decodeMessage, encodeMessage, sniffImage, textOf } from "../../../src/layers/channels/qq/message.ts"
import { MAX_REPLIES, QQ_LIMIT, qqParts, sendPart } from "../../../src/layers/channels/qq/reply.ts"
import { qqOptions } from "../../../src/layers/channels/QqChannel.ts"
import { startFakeQq } from "../../support/fakeQq/server.ts"

describe("QQ settings", () => {
  it("takes app_id and app_secret, with defaults for the rest", () => {
    const s = decodeChannelSettings<Parameters<typeof qqOptions>[0]>("qq", { app_id: "102000001", app_secret: "abcdefgh12345678" })
    assert.strictEqual(s._tag, "Success")
    if (s._tag !== "Success") return
    const o = qqOptions(s.success)
    assert.strictEqual(o.baseUrl, "https://api.sgroup.qq.com")
    assert.strictEqual(o.tokenUrl, "https://bots.qq.com/app/getAppAccessToken")
    assert.strictEqual(o.groupMode, "mention")
    assert.isUndefined(o.allowedUsers)
  })

  it("names the key that is wrong", () => {
    const bad = (config: Record<string, unknown>) => {
      const r = decodeChannelSettings("qq", config)
      return r._tag === "Failure" ? r.failure : "accepted"
    }
    assert.include(bad({ app_id: "102000001" }), "app_secret")
    assert.include(bad({ app_id: "not digits", app_secret: "abcdefgh12345678" }), "AppID")
    assert.include(bad({ app_id: "102000001", app_secret: "abcdefgh12345678", group_mode: "sometimes" }), "group_mode")
    assert.include(bad({ app_id: "102000001", app_secret: "abcdefgh12345678", allowed_users: "ok,not ok!" }), "openids")
    assert.include(bad({ app_id: "102000001", app_secret: "abcdefgh12345678", base_url: "ftp://x" }), "base_url")
    assert.include(bad({ app_id: "102000001", app_secret: "abcdefgh12345678", token: "x" }), "not \"token\"")
    const ok = decodeChannelSettings<Parameters<typeof qqOptions>[0]>("qq", {
      app_id: "102000001",
      app_secret: "abcdefgh12345678",
      allowed_users: "E4F4AEA33253A2797FB897C50B81D7ED, 0A1B",
      group_mode: "off"
    })
    assert.strictEqual(ok._tag, "Success")
    if (ok._tag === "Success") assert.deepStrictEqual([...(qqOptions(ok.success).allowedUsers ?? [])], ["E4F4AEA33253A2797FB897C50B81D7ED", "0A1B"])
  })
})

describe("QQ replies", () => {
  it("render Markdown as plain text in one part when it fits", () => {
    assert.deepStrictEqual(qqParts("Hello **world**, see `code`."), [{ rich: undefined, plain: "Hello world, see code." }])
  })

  it("cut an answer longer than 5 parts in the 5th, saying so, every part within the limit", () => {
    const md = Array.from({ length: 40 }, (_, i) => `Paragraph ${i}: ${"many words here ".repeat(40)}`).join("\n\n")
    const parts = qqParts(md)
    assert.strictEqual(parts.length, MAX_REPLIES)
    for (const p of parts) assert.isAtMost(p.plain.length, QQ_LIMIT)
    assert.include(parts.at(-1)?.plain ?? "", "QQ allows 5 messages per reply")
    assert.isTrue(parts[0]?.plain.startsWith("Paragraph 0:"))
  })

  it.effect("do not send a part past the 5th (QQ would refuse it)", () =>
    Effect.gen(function*() {
      const api = makeQqApi({ appId: "1", secret: "s", baseUrl: "http://127.0.0.1:9", tokenUrl: "http://127.0.0.1:9/t" })
      const id = yield* sendPart({ api, to: { kind: "users", openid: "U" }, msgId: "M", existing: [], onMessages: () => Effect.void }, "x", MAX_REPLIES)
      assert.strictEqual(id, `unsent:${MAX_REPLIES + 1}`)
    }))
})

describe("QQ events", () => {
  it("decode C2C and group @-messages, keeping image attachments only", () => {
    const c2c = decodeEvent("C2C_MESSAGE_CREATE", {
      id: "M1",
      author: { user_openid: "U1" },
      content: "hi",
      timestamp: "2023-11-06T13:37:18+08:00",
      attachments: [
        { content_type: "image/jpeg", url: "https://multimedia.nt.qq.com/x.jpg", size: 10 },
        { content_type: "file", url: "https://multimedia.nt.qq.com/x.zip" }
      ]
    })
    assert.deepStrictEqual(c2c, { kind: "c2c", id: "M1", sender: "U1", content: "hi", images: [{ url: "https://multimedia.nt.qq.com/x.jpg", contentType: "image/jpeg" }] })
    const group = decodeEvent("GROUP_AT_MESSAGE_CREATE", { id: "M2", author: { member_openid: "B" }, group_openid: "G", content: " <@!123> hello" })
    assert.strictEqual(group?.group, "G")
    assert.strictEqual(group === undefined ? "" : textOf(group), "hello")
  })

  it("refuse malformed events and other event types", () => {
    assert.isUndefined(decodeEvent("C2C_MESSAGE_CREATE", { id: "M1", content: "no author" }))
    assert.isUndefined(decodeEvent("C2C_MESSAGE_CREATE", "text"))
    assert.isUndefined(decodeEvent("GROUP_AT_MESSAGE_CREATE", { id: "M2", author: { member_openid: "B" }, content: "no group" }))
    assert.isUndefined(decodeEvent("GROUP_AT_MESSAGE_CREATE", { id: 7, author: { member_openid: "B" }, group_openid: "G" }))
    assert.isUndefined(decodeEvent("FRIEND_ADD", { openid: "U" }))
  })

  it("store and read back a message; refuse a stored payload that is not one", () => {
    const m = decodeEvent("C2C_MESSAGE_CREATE", { id: "M1", author: { user_openid: "U1" }, content: "hi" })
    assert.isDefined(m)
    if (m === undefined) return
    assert.deepStrictEqual(decodeMessage(encodeMessage(m)), m)
    assert.isUndefined(decodeMessage("{\"kind\":\"c2c\"}"))
    assert.isUndefined(decodeMessage("not json"))
  })

  it("sniff images by their first bytes", () => {
    assert.strictEqual(sniffImage(new Uint8Array([0x89, 0x50, 0x4e, 0x47])), "image/png")
    assert.strictEqual(sniffImage(new Uint8Array([0xff, 0xd8, 0xff, 0xe0])), "image/jpeg")
    assert.strictEqual(sniffImage(new Uint8Array([0x47, 0x49, 0x46, 0x38])), "image/gif")
    assert.isUndefined(sniffImage(new TextEncoder().encode("<html>")))
  })
})

describe("QQ access token", () => {
  it.effect("is fetched once, again shortly before it expires (TestClock), and again when dropped", () =>
    Effect.gen(function*() {
      let fetched = 0
      const cache = tokenCache(Effect.sync((): Token => ({ token: `t${++fetched}`, expiresInSeconds: 7200 })))
      assert.strictEqual(yield* cache.get, "t1")
      assert.strictEqual(yield* cache.get, "t1")
      yield* TestClock.adjust(7200 * 1000 - TOKEN_REFRESH_BEFORE_MS - 1)
      assert.strictEqual(yield* cache.get, "t1")
      yield* TestClock.adjust(2)
      assert.strictEqual(yield* cache.get, "t2")
      yield* cache.invalidate("t1")
      assert.strictEqual(yield* cache.get, "t2")
      yield* cache.invalidate("t2")
      assert.strictEqual(yield* cache.get, "t3")
    }))

  it.live("a refusal names QQ's code and never carries the secret; downloads stop at their cap", () =>
    Effect.gen(function*() {
      const fake = yield* Effect.acquireRelease(Effect.promise(() => startFakeQq()), (f) => Effect.promise(() => f.close()))
      const options = { appId: fake.appId, secret: "a-wrong-secret-value", baseUrl: fake.baseUrl, tokenUrl: fake.tokenUrl }
      const e = yield* Effect.flip(fetchToken(options))
      assert.strictEqual(e.kind, "refused")
      assert.strictEqual(e.status, 100016)
      assert.notInclude(e.message, "a-wrong-secret-value")
      const t = yield* fetchToken({ ...options, secret: fake.secret })
      assert.strictEqual(t.expiresInSeconds, 7200)
      const m = fake.sendUserMessage({ user: "U", content: "", attachments: [{ bytes: new Uint8Array(64) }] })
      const url = ((m.d["attachments"] as Array<{ url: string }> | undefined) ?? [])[0]?.url ?? ""
      const api = makeQqApi({ ...options, secret: fake.secret })
      const tooBig = yield* Effect.flip(api.download(url, 16))
      assert.include(tooBig.description, "larger than 16 bytes")
      const got = yield* api.download(url, 64)
      assert.strictEqual(got.bytes.byteLength, 64)
      const notHttp = yield* Effect.flip(api.download("file:///etc/passwd", 64))
      assert.include(notHttp.description, "not an http(s) address")
    }))
})
