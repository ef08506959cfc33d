/**
 * Issue 13, "a user who is not allowed to use an agent cannot reach it through any channel (tested
 * per channel)": for Telegram, Feishu/Lark, QQ and WeChat (each against its fake platform, over the
 * real runtime) the agent is restricted to one user (AgentStore, as `anna agent set --access
 * users:…` writes it), and a stranger writes in private and in a group bound to that agent:
 *
 * - the model is never called for the stranger (the fake LLM's requests), and the stranger gets the
 *   polite refusal on that platform (the text the fake platform received), once: the message is
 *   claimed once (a redelivery is not refused again, nothing stays open in the ledger);
 * - the allowed user is answered on the same channel, in private and in the group;
 * - once an open agent exists too, the stranger is answered by it in private, but the group bound to
 *   the closed agent still refuses them (a binding is not passed over for an open agent).
 *
 * The terminal chat (`anna chat`, as a process: the OS user is its user) and the OpenAI-compatible
 * HTTP channel (a bearer token's user; 403 `access_denied`, streaming or not) are checked the same way.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { afterEach, beforeEach } from "vitest"
import * as FeishuChannel from "../../../src/layers/channels/FeishuChannel.ts"
import * as QqChannel from "../../../src/layers/channels/QqChannel.ts"
import * as TelegramChannel from "../../../src/layers/channels/TelegramChannel.ts"
import * as WechatChannel from "../../../src/layers/channels/WechatChannel.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { allAnswered, channelHarness, lastUserText, stackOn, startChannel } from "../../support/channelHarness.ts"
import { annaEnv, annaJson, newHome as newCliHome } from "../../support/cli.ts"
import { type FakeFeishu, startFakeFeishu } from "../../support/fakeFeishu/server.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeQq, startFakeQq } from "../../support/fakeQq/server.ts"
import { type FakeTelegram, startFakeTelegram } from "../../support/fakeTelegram/server.ts"
import { type FakeWechat, startFakeWechat } from "../../support/fakeWechat/server.ts"
import { configureAgent, runtimeStack } from "../../support/runtimeStack.ts"
import * as HttpChannel from "../../../src/layers/channels/HttpChannel.ts"

const suite = fakeLlmSuite()
const { newHome, chatRequests } = channelHarness(suite, "access")

const REFUSED_DM = "Sorry, no agent here is open to you; ask the operator for access."
const REFUSED_GROUP = "Sorry, this group's agent default is not open to you; ask the operator for access."

/** What the model was asked since this test began (the newest user message of each request). */
const asked = () => chatRequests().map(lastUserText)

/** How one platform is driven by its fake. */
interface Driver<R> {
  readonly platform: string
  /** Starts the channel; its `stop`. */
  readonly start: Effect.Effect<{ readonly stop: Effect.Effect<void> }, unknown, R>
  /** Platform ids of the stranger and the allowed user (in private). */
  readonly stranger: string
  readonly allowed: string
  /** A private message; a function that delivers it again (a duplicate push). */
  readonly dm: (from: string, text: string) => () => void
  /** What the bot wrote in `from`'s private chat, in order. */
  readonly dmTexts: (from: string) => ReadonlyArray<string>
  readonly group?: {
    /** The group's chat id as the Runtime sees it (what a binding names). */
    readonly chatId: string
    /** The platform ids of the two users in the group (QQ gives members other openids there). */
    readonly stranger: string
    readonly allowed: string
    readonly send: (from: string, text: string) => void
    readonly texts: () => ReadonlyArray<string>
  }
  readonly waitFor: (what: string, f: () => boolean) => Promise<unknown>
}

const reply = (text: string) => ({ kind: "reply" as const, parts: [{ type: "text" as const, text }] })

/** The scenario of the file's header, on one platform. */
const refusesStrangers = <R>(d: Driver<R>) =>
  Effect.gen(function*() {
    const wait = (what: string, f: () => boolean) => Effect.promise(() => d.waitFor(what, f))
    const count = (texts: ReadonlyArray<string>, s: string) => texts.filter((t) => t.includes(s)).length
    yield* configureAgent(suite.fake, "default")
    suite.fake.respondWith((req) => reply(`re: ${lastUserText(req)}`))
    // The allowed user is known before anyone writes (as an operator would add them); the agent is hers only.
    const config = yield* ConfigStore
    const allowed = [yield* config.upsertUser(d.platform, d.allowed, "allowed")]
    if (d.group !== undefined && d.group.allowed !== d.allowed) allowed.push(yield* config.upsertUser(d.platform, d.group.allowed, "allowed"))
    yield* (yield* AgentStore).update("default", { access: { kind: "users", users: allowed.map((u) => u.id) } })
    if (d.group !== undefined) yield* config.bindChat(d.platform, d.group.chatId, "default")
    const { stop } = yield* d.start

    // In private: the stranger is refused once (a duplicate push is not refused again); the allowed user is answered.
    const again = d.dm(d.stranger, "stranger asks in private")
    yield* wait("the refusal in private", () => count(d.dmTexts(d.stranger), REFUSED_DM) === 1)
    d.dm(d.allowed, "allowed asks in private")
    yield* wait("the allowed user answered in private", () => d.dmTexts(d.allowed).includes("re: allowed asks in private"))
    // Pushed again once the platform saw it confirmed (Telegram redelivers only a confirmed update).
    again()

    // In a group bound to the closed agent: the same.
    const group = d.group
    if (group !== undefined) {
      group.send(group.stranger, "stranger asks the group")
      yield* wait("the refusal in the group", () => count(group.texts(), REFUSED_GROUP) === 1)
      group.send(group.allowed, "allowed asks the group")
      yield* wait("the allowed user answered in the group", () => group.texts().includes("re: allowed asks the group"))
    }

    // With an open agent as well: the stranger is answered in private, still refused in the bound group.
    yield* configureAgent(suite.fake, "open")
    d.dm(d.stranger, "stranger asks again")
    yield* wait("the stranger answered by the open agent", () => d.dmTexts(d.stranger).includes("re: stranger asks again"))
    if (group !== undefined) {
      group.send(group.stranger, "stranger asks the group again")
      yield* wait("the second refusal in the group", () => count(group.texts(), REFUSED_GROUP) === 2)
    }
    yield* allAnswered(d.platform, "15 seconds")
    yield* stop

    assert.deepStrictEqual(d.dmTexts(d.stranger).map((t) => t.includes(REFUSED_DM) ? "refused" : t), ["refused", "re: stranger asks again"])
    assert.deepStrictEqual(d.dmTexts(d.allowed), ["re: allowed asks in private"])
    if (group !== undefined) {
      assert.deepStrictEqual(
        group.texts().map((t) => t.includes(REFUSED_GROUP) ? "refused" : t),
        ["refused", "re: allowed asks the group", "refused"]
      )
    }
    // The model never saw what the stranger asked of the closed agent.
    const seen = asked()
    for (const t of ["stranger asks in private", "stranger asks the group", "stranger asks the group again"]) assert.notInclude(seen, t)
    assert.includeMembers(seen, ["allowed asks in private", "stranger asks again", ...(group === undefined ? [] : ["allowed asks the group"])])
    // The stranger never had a conversation with the closed agent: their only one is with the open agent.
    const users = yield* config.listUsers
    const idOf = (external: string) => users.find((u) => u.identities.some((i) => i.platform === d.platform && i.externalId === external))?.id
    const strangers = [idOf(d.stranger), ...(group === undefined ? [] : [idOf(group.stranger)])]
    assert.notInclude(strangers, undefined)
    const sql = yield* SqlClient.SqlClient
    const sessions = yield* sql<{ key: string }>`SELECT session_key AS key FROM ctx_conversations ORDER BY session_key`
    assert.deepStrictEqual(
      sessions.map((x) => x.key).filter((k) => strangers.includes(k.split(":")[2])),
      [`open:${d.platform}:${idOf(d.stranger) ?? ""}:dm`]
    )
  })

describe("access per channel: Telegram", () => {
  const TOKEN = "123456:AccessTestTokenAccessTestToken0123"
  let tg: FakeTelegram
  beforeEach(async () => {
    tg = await startFakeTelegram({ token: TOKEN, botUsername: "access_bot" })
  })
  afterEach(async () => {
    await tg.close()
  })
  const GROUP = -100777
  it.live("a stranger is refused in private and in a bound group, once; the allowed user is answered", () =>
    refusesStrangers({
      platform: "telegram",
      start: startChannel(TelegramChannel.make({ token: TOKEN, baseUrl: tg.apiRoot, groupMode: "always", allowedUsers: undefined })),
      stranger: "601",
      allowed: "602",
      dm: (from, text) => {
        const u = tg.sendUserMessage({ chatId: Number(from), chatType: "private", from: { id: Number(from) }, text })
        return () => tg.redeliver(u.update_id)
      },
      dmTexts: (from) => tg.messages(Number(from)).map((m) => m.text),
      group: {
        chatId: String(GROUP),
        stranger: "601",
        allowed: "602",
        send: (from, text) => void tg.sendUserMessage({ chatId: GROUP, chatType: "supergroup", from: { id: Number(from) }, text }),
        texts: () => tg.messages(GROUP).map((m) => m.text)
      },
      waitFor: (what, f) => tg.waitFor(() => (f() ? true : undefined), what)
    }).pipe(Effect.provide(stackOn(newHome()))))
})

describe("access per channel: Feishu/Lark", () => {
  let fs: FakeFeishu
  beforeEach(async () => {
    fs = await startFakeFeishu()
  })
  afterEach(async () => {
    await fs.close()
  })
  const GROUP = "oc_accessgroup000000000000000001"
  const STRANGER = "ou_stranger00000000000000000001"
  const ALLOWED = "ou_allowed000000000000000000002"
  it.live("a stranger is refused in private and in a bound group, once; the allowed user is answered", () =>
    refusesStrangers({
      platform: "feishu",
      start: startChannel(FeishuChannel.make({
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
        allowedUsers: undefined
      })),
      stranger: STRANGER,
      allowed: ALLOWED,
      dm: (from, text) => {
        const sent = fs.sendUserMessage({ from, text })
        return () => fs.redeliver(sent.messageId)
      },
      dmTexts: (from) => fs.messages(fs.dmChat(from)).map((m) => m.text),
      group: {
        chatId: GROUP,
        stranger: STRANGER,
        allowed: ALLOWED,
        send: (from, text) => void fs.sendUserMessage({ from, groupId: GROUP, text, mentionBot: true }),
        texts: () => fs.messages(GROUP).map((m) => m.text)
      },
      waitFor: (what, f) => fs.waitFor(f, what, 20_000)
    }).pipe(Effect.provide(stackOn(newHome()))))
})

describe("access per channel: QQ", () => {
  let qq: FakeQq
  beforeEach(async () => {
    qq = await startFakeQq()
  })
  afterEach(async () => {
    await qq.close()
  })
  const GROUP = "ACCESSGROUP1"
  it.live("a stranger is refused in C2C and in a bound group, once; the allowed user is answered", () =>
    refusesStrangers({
      platform: "qq",
      start: startChannel(QqChannel.make({
        appId: qq.appId,
        secret: qq.secret,
        baseUrl: qq.baseUrl,
        tokenUrl: qq.tokenUrl,
        groupMode: "mention",
        allowedUsers: undefined,
        reconnectDelayMs: () => 50
      })),
      stranger: "STRANGER_OPENID",
      allowed: "ALLOWED_OPENID",
      dm: (from, text) => {
        const m = qq.sendUserMessage({ user: from, content: text })
        return () => qq.redeliver(m.id)
      },
      dmTexts: (from) => qq.messages(from).map((m) => m.content),
      group: {
        chatId: GROUP,
        // QQ gives a member another openid in each group.
        stranger: "STRANGER_MEMBER",
        allowed: "ALLOWED_MEMBER",
        send: (from, text) => void qq.sendUserMessage({ user: from, group: GROUP, content: text }),
        texts: () => qq.messages(GROUP).map((m) => m.content)
      },
      waitFor: (what, f) => qq.waitFor(f, what)
    }).pipe(Effect.provide(stackOn(newHome()))))
})

describe("access per channel: WeChat", () => {
  let wx: FakeWechat
  beforeEach(async () => {
    wx = await startFakeWechat({ pollHoldMs: 5_000 })
  })
  afterEach(async () => {
    await wx.close()
  })
  // iLink bots have no groups (the channel ignores group messages): private chats only.
  it.live("a stranger is refused, once; the allowed user is answered", () =>
    refusesStrangers({
      platform: "wechat",
      start: startChannel(WechatChannel.make({
        endpoint: { baseUrl: wx.baseUrl, token: wx.token },
        cdnBaseUrl: wx.cdnBaseUrl,
        botId: wx.botId,
        ownerId: "owner01@im.wechat",
        allowedUsers: undefined
      })),
      stranger: "o9stranger@im.wechat",
      allowed: "o9allowed@im.wechat",
      dm: (from, text) => {
        const m = wx.sendUserMessage({ from, text })
        return () => wx.redeliver(String(m["message_id"]))
      },
      dmTexts: (from) => wx.messages(from).map((m) => m.text),
      waitFor: (what, f) => wx.waitFor(f, what)
    }).pipe(Effect.provide(stackOn(newHome()))))
})

describe("access per channel: the OpenAI-compatible HTTP channel", () => {
  it.live("a token whose user may not use the agent gets 403 access_denied, streaming or not, and the model is not called", () =>
    Effect.gen(function*() {
      yield* configureAgent(suite.fake, "default")
      suite.fake.respondWith((req) => reply(`re: ${lastUserText(req)}`))
      const config = yield* ConfigStore
      const ann = yield* config.upsertUser("cli", "ann", "ann")
      const max = yield* config.upsertUser("cli", "max", "max")
      yield* (yield* AgentStore).update("default", { access: { kind: "users", users: [ann.id] } })
      const annToken = yield* config.issueToken(ann.id, "test")
      const maxToken = yield* config.issueToken(max.id, "test")
      const url = (yield* HttpAddress).url
      const ask = (token: string, text: string, stream: boolean) =>
        Effect.promise(async () => {
          const res = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "default", stream, messages: [{ role: "user", content: text }] })
          })
          return { status: res.status, body: await res.text() }
        })
      for (const stream of [false, true]) {
        const refused = yield* ask(maxToken, `max asks (stream ${stream})`, stream)
        assert.strictEqual(refused.status, 403)
        const error = (JSON.parse(refused.body) as { error?: { code?: string; message?: string } }).error
        assert.strictEqual(error?.code, "access_denied")
        assert.include(error?.message ?? "", "agent default is not open to you")
        // A slash command does not get past it either.
        assert.strictEqual((yield* ask(maxToken, "/new", stream)).status, 403)
      }
      // The models list shows only the agents the caller may use; asking for a closed one is 403.
      const models = (token: string, path = "") =>
        Effect.promise(async () => {
          const res = await fetch(`${url}/v1/models${path}`, { headers: { authorization: `Bearer ${token}` } })
          return { status: res.status, body: (await res.json()) as { data?: ReadonlyArray<{ id: string }> } }
        })
      assert.deepStrictEqual((yield* models(maxToken)).body.data?.map((m) => m.id), [])
      assert.deepStrictEqual((yield* models(annToken)).body.data?.map((m) => m.id), ["default"])
      assert.strictEqual((yield* models(maxToken, "/default")).status, 403)
      assert.strictEqual((yield* models(annToken, "/default")).status, 200)
      const answered = yield* ask(annToken, "ann asks", false)
      assert.strictEqual(answered.status, 200)
      assert.include(answered.body, "re: ann asks")
      assert.deepStrictEqual(asked(), ["ann asks"])
    }).pipe(Effect.provide(HttpChannel.layer({ port: 0 }).pipe(Layer.provideMerge(runtimeStack(newHome()))))))
})

describe("access per channel: the terminal chat", () => {
  it("anna chat refuses the OS user when the agent is not open to them, without calling the model; answers once it is", async () => {
    const fake = suite.fake
    const home = suite.keep(newCliHome())
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-cli" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    await cli("agent", "set", "default", "--tools", "notify")
    await cli("user", "add", "ida")
    await cli("agent", "set", "default", "--access", "users:ida")
    fake.respondWith((req) => reply(`re: ${lastUserText(req)}`))

    const routed = await annaEnv(home, env, "chat", "-p", "terminal asks")
    assert.notStrictEqual(routed.code, 0)
    assert.include(routed.stderr, REFUSED_DM)
    const named = await annaEnv(home, env, "chat", "--agent", "default", "-p", "terminal asks default")
    assert.notStrictEqual(named.code, 0)
    assert.include(named.stderr, "Sorry, agent default is not open to you; ask the operator for access.")
    assert.deepStrictEqual(asked(), [])

    // The terminal's user is the OS user, created on first contact: opening the agent to them lets them in.
    const users = await annaJson<Array<{ id: string; identities: Array<{ platform: string; externalId: string }> }>>(home, "user", "list")
    const me = users.find((u) => u.identities.some((i) => i.platform === "cli"))
    assert.isDefined(me)
    await cli("agent", "set", "default", "--access", `users:ida,${me?.id ?? ""}`)
    const ok = await annaEnv(home, env, "chat", "-p", "terminal asks again")
    assert.strictEqual(ok.code, 0, ok.stderr)
    assert.include(ok.stdout, "re: terminal asks again")
    assert.deepStrictEqual(asked(), ["terminal asks again"])
  }, 60_000)
})
