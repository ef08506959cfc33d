/**
 * The admin API's own groups end to end (issue 13): every endpoint of auth, providers, agents,
 * channels, users, tokens, bindings, plugins and settings through the typed client built from the
 * API's declaration, on the gateway's real HTTP server over real SQLite (test/support/adminHarness.ts),
 * the model being the fake LLM server and WeChat the fake iLink server. Also: an agent edited through
 * the API is what the next turn uses, and no response of the file carries a secret.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { afterAll, beforeAll } from "vitest"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeWechat, startFakeWechat } from "../../support/fakeWechat/server.ts"
import { ADMIN, Harness, harnessLayer, outcome, USER } from "../../support/adminHarness.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"

const suite = fakeLlmSuite()
let wx: FakeWechat
beforeAll(async () => {
  wx = await startFakeWechat({ qrHoldMs: 500 })
})
afterAll(async () => {
  await wx.close()
})

const PROVIDER_KEY = "sk-provider-secret-key-0000abcd"
const ROTATED_KEY = "sk-provider-rotated-key-00wxyz"
const HEADER_SECRET = "header-secret-value-1234567890"
const TELEGRAM_TOKEN = "123456:telegram-secret-token-abcdefghij"
const CAROL_PASSWORD = "carol-password-one"
const CAROL_NEW_PASSWORD = "carol-password-two"
/** Tokens the API issued: each may appear in its issue response, and nowhere else. */
const issued: Array<string> = []

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

layer(harnessLayer(), { excludeTestServices: true, timeout: "60 seconds" })("admin API", (it) => {
  describe("auth", () => {
    it.effect("me: the user and role; the CSRF token for a cookie session, none for a bearer token", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const cookie = yield* h.admin.auth.me()
        assert.deepStrictEqual(cookie, { user: ADMIN.user, role: "admin", login: ADMIN.user, csrfToken: h.adminSession.csrfToken })
        const bearer = yield* h.userBearer.auth.me()
        assert.deepStrictEqual(bearer, { user: USER.user, role: "user", login: USER.user })
        assert.strictEqual(yield* outcome(h.anonymous.auth.me()), 401)
      }))

    it.effect("login: a wrong password is 401 and sets no cookie; a right one sets the session cookie and answers the CSRF token", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        assert.strictEqual(yield* outcome(h.anonymous.auth.login({ payload: { username: USER.user, password: "wrong-password" } })), 401)
        const ok = yield* h.anonymous.auth.login({ payload: { username: USER.user, password: USER.password } })
        assert.strictEqual(ok.user, USER.user)
        assert.strictEqual(ok.role, "user")
        assert.isAbove(ok.csrfToken.length, 16)
        assert.isAbove(ok.expiresAt, Date.now())
        const s = yield* promise(() => h.login(USER.user, USER.password))
        assert.match(s.setCookie, /^anna_session=[^;]+;/)
      }))

    it.effect("sessions: my own, the current one marked; revoking another of mine ends it; someone else's is 404", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const second = yield* promise(() => h.login(USER.user, USER.password))
        const mine = yield* h.user.auth.sessions()
        assert.isTrue(mine.every((s) => s.userId === USER.user))
        assert.strictEqual(mine.filter((s) => s.current).length, 1)
        const secondClient = yield* h.client({ cookie: second.cookie, csrfToken: second.csrfToken })
        const secondId = (yield* secondClient.auth.sessions()).find((s) => s.current)?.id ?? ""
        assert.notStrictEqual(secondId, "")
        assert.isTrue(mine.some((s) => s.id === secondId && !s.current))
        const adminsOwn = (yield* h.admin.auth.sessions()).find((s) => s.current)?.id ?? ""
        assert.strictEqual(yield* outcome(h.user.auth.revokeSession({ params: { id: adminsOwn } })), 404)
        yield* h.user.auth.revokeSession({ params: { id: secondId } })
        assert.strictEqual(yield* outcome(secondClient.auth.me()), 401)
        assert.strictEqual((yield* h.admin.auth.me()).user, ADMIN.user)
        assert.strictEqual((yield* h.user.auth.me()).user, USER.user)
      }))

    it.effect("logout ends the session and clears the cookie", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const s = yield* promise(() => h.login(USER.user, USER.password))
        const response = yield* promise(() => h.fetch("/api/auth/logout", { method: "POST", headers: h.headersOf({ cookie: s.cookie, csrfToken: s.csrfToken }) }))
        assert.strictEqual(response.status, 204)
        assert.match(response.headers.get("set-cookie") ?? "", /^anna_session=;.*Max-Age=0/)
        const after = yield* h.client({ cookie: s.cookie, csrfToken: s.csrfToken })
        assert.strictEqual(yield* outcome(after.auth.me()), 401)
      }))

    it.effect("password: the current one is checked; the new one logs in, the old one no longer does, and this browser keeps a session", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        yield* h.admin.users.create({ payload: { id: "carol", password: CAROL_PASSWORD, role: "user" } })
        const s = yield* promise(() => h.login("carol", CAROL_PASSWORD))
        const carol = yield* h.client({ cookie: s.cookie, csrfToken: s.csrfToken })
        assert.strictEqual(yield* outcome(carol.auth.changePassword({ payload: { currentPassword: "not-the-password", newPassword: CAROL_NEW_PASSWORD } })), 403)
        assert.strictEqual(yield* outcome(carol.auth.changePassword({ payload: { currentPassword: CAROL_PASSWORD, newPassword: "short" } })), 400)
        const changed = yield* carol.auth.changePassword({ payload: { currentPassword: CAROL_PASSWORD, newPassword: CAROL_NEW_PASSWORD } })
        assert.strictEqual(changed.user, "carol")
        // The old session ended with the change.
        assert.strictEqual(yield* outcome(carol.auth.me()), 401)
        assert.strictEqual(yield* outcome(h.anonymous.auth.login({ payload: { username: "carol", password: CAROL_PASSWORD } })), 401)
        const fresh = yield* h.anonymous.auth.login({ payload: { username: "carol", password: CAROL_NEW_PASSWORD } })
        assert.strictEqual(fresh.user, "carol")
      }))
  })

  describe("providers", () => {
    it.effect("create, get, list, update, models and remove, with the key write-only (masked as the CLI shows it)", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const created = yield* h.admin.providers.create({
          payload: { id: "local", type: "openai", baseUrl: suite.fake.openAiUrl, apiKey: PROVIDER_KEY, headers: { "x-secret": HEADER_SECRET }, models: ["fake-large"] }
        })
        assert.strictEqual(created.apiKey, "sk-…abcd")
        assert.strictEqual(created.headers["x-secret"], "hea…7890")
        assert.strictEqual(created.defaultModel, "fake-large")
        assert.deepStrictEqual(yield* h.admin.providers.get({ params: { id: "local" } }), created)
        assert.isTrue((yield* h.admin.providers.list()).some((p) => p.id === "local" && p.apiKey === "sk-…abcd"))
        const timed = yield* h.admin.providers.update({ params: { id: "local" }, payload: { firstByteTimeoutSeconds: 30 } })
        assert.strictEqual(timed.firstByteTimeoutSeconds, 30)
        const reset = yield* h.admin.providers.update({ params: { id: "local" }, payload: { firstByteTimeoutSeconds: null } })
        assert.isUndefined(reset.firstByteTimeoutSeconds)
        assert.strictEqual(yield* outcome(h.admin.providers.update({ params: { id: "local" }, payload: { firstByteTimeoutSeconds: 0 } })), 400)
        // The key rotated in place (a provider in use cannot be removed), shown masked; the other settings change too.
        const rotated = yield* h.admin.providers.update({
          params: { id: "local" },
          payload: { apiKey: ROTATED_KEY, models: ["fake-large", "fake-small"], defaultModel: "fake-small", enabled: false }
        })
        assert.deepStrictEqual([rotated.apiKey, rotated.defaultModel, rotated.enabled], ["sk-…wxyz", "fake-small", false])
        assert.deepStrictEqual(yield* h.admin.providers.get({ params: { id: "local" } }), rotated)
        // A bad base URL is refused whole: nothing changed, the key not quoted.
        assert.strictEqual(yield* outcome(h.admin.providers.update({ params: { id: "local" }, payload: { baseUrl: "ftp://x", apiKey: "sk-never-stored-000" } })), 400)
        assert.strictEqual((yield* h.admin.providers.get({ params: { id: "local" } })).apiKey, "sk-…wxyz")
        yield* h.admin.providers.update({ params: { id: "local" }, payload: { apiKey: PROVIDER_KEY, defaultModel: "fake-large", enabled: true } })
        const models = yield* h.admin.providers.models({ params: { id: "local" } })
        assert.deepStrictEqual(models.map((m) => m.id), ["fake-large", "fake-small"])
        assert.strictEqual(yield* outcome(h.admin.providers.create({ payload: { id: "local", type: "openai", apiKey: "x" } })), 409)
        assert.strictEqual(yield* outcome(h.admin.providers.get({ params: { id: "nope" } })), 404)
        // No model named: the server's first, as `anna provider add` does.
        const listed = yield* h.admin.providers.create({ payload: { id: "spare", type: "openai", baseUrl: suite.fake.openAiUrl, apiKey: PROVIDER_KEY } })
        assert.strictEqual(listed.defaultModel, "fake-large")
        yield* h.admin.providers.remove({ params: { id: "spare" } })
        assert.strictEqual(yield* outcome(h.admin.providers.get({ params: { id: "spare" } })), 404)
      }))
  })

  describe("agents", () => {
    it.effect("set creates and changes (model, summary model, prompt, budget, tools, turns, sandbox, access); enable, disable, list, get, remove", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const a = yield* h.admin.agents.set({
          params: { id: "helper" },
          payload: {
            model: "local/fake-large",
            summaryModel: "local/fake-small",
            systemPrompt: "You help.",
            contextTokens: 64_000,
            tools: ["read", "write"],
            maxTurns: 7,
            sandboxWorkspace: "shared",
            sandboxNetwork: "allow_all",
            access: "users:alice,root"
          }
        })
        assert.strictEqual(a.model, "local/fake-large")
        assert.strictEqual(a.summaryModel, "local/fake-small")
        assert.strictEqual(a.systemPrompt, "You help.")
        assert.strictEqual(a.contextTokens, 64_000)
        assert.deepStrictEqual(a.tools, ["read", "write"])
        assert.strictEqual(a.maxTurns, 7)
        assert.strictEqual(a.sandboxWorkspace, "shared")
        assert.strictEqual(a.sandboxNetwork, "allow_all")
        assert.strictEqual(a.access, "users:alice,root")
        assert.isTrue(a.enabled)
        const b = yield* h.admin.agents.set({ params: { id: "helper" }, payload: { summaryModel: null, tools: null, access: "everyone" } })
        assert.isNull(b.summaryModel)
        assert.isNull(b.tools)
        assert.strictEqual(b.access, "everyone")
        assert.strictEqual(b.systemPrompt, "You help.")
        // the embedding model, as --embedding-model: set, shown, refused without a model, cleared
        assert.isNull(b.embeddingModel)
        const e = yield* h.admin.agents.set({ params: { id: "helper" }, payload: { embeddingModel: "local/fake-embed" } })
        assert.strictEqual(e.embeddingModel, "local/fake-embed")
        assert.strictEqual((yield* h.admin.agents.get({ params: { id: "helper" } })).embeddingModel, "local/fake-embed")
        assert.strictEqual(yield* outcome(h.admin.agents.set({ params: { id: "helper" }, payload: { embeddingModel: "local" } })), 400)
        assert.strictEqual((yield* h.admin.agents.get({ params: { id: "helper" } })).embeddingModel, "local/fake-embed")
        assert.isNull((yield* h.admin.agents.set({ params: { id: "helper" }, payload: { embeddingModel: "none" } })).embeddingModel)
        yield* h.admin.agents.set({ params: { id: "helper" }, payload: { embeddingModel: "local/fake-embed" } })
        assert.isNull((yield* h.admin.agents.set({ params: { id: "helper" }, payload: { embeddingModel: null } })).embeddingModel)
        assert.strictEqual(yield* outcome(h.admin.agents.set({ params: { id: "helper" }, payload: { access: "some people" } })), 400)
        assert.strictEqual(yield* outcome(h.admin.agents.set({ params: { id: "helper" }, payload: { tools: ["teleport"] } })), 400)
        assert.strictEqual(yield* outcome(h.admin.agents.set({ params: { id: "helper" }, payload: { model: "nope/x" } })), 404)
        assert.isFalse((yield* h.admin.agents.disable({ params: { id: "helper" } })).enabled)
        assert.isTrue((yield* h.admin.agents.enable({ params: { id: "helper" } })).enabled)
        // Without a model: created disabled until it has one, and enabling is refused.
        const waiting = yield* h.admin.agents.set({ params: { id: "later" }, payload: { name: "Later" } })
        assert.isFalse(waiting.enabled)
        assert.isTrue(waiting.awaitingModel)
        assert.strictEqual(yield* outcome(h.admin.agents.enable({ params: { id: "later" } })), 400)
        assert.isTrue((yield* h.admin.agents.set({ params: { id: "later" }, payload: { model: "local" } })).enabled)
        assert.deepStrictEqual((yield* h.admin.agents.list()).map((x) => x.id).sort(), ["helper", "later"])
        assert.strictEqual((yield* h.admin.agents.get({ params: { id: "later" } })).name, "Later")
        const removed = yield* h.admin.agents.remove({ params: { id: "later" } })
        assert.strictEqual(removed.agentId, "later")
        assert.strictEqual(yield* outcome(h.admin.agents.get({ params: { id: "later" } })), 404)
        // A provider an agent uses cannot go.
        assert.strictEqual(yield* outcome(h.admin.providers.remove({ params: { id: "local" } })), 409)
      }))

    it.effect("an agent edited through the API is what the next turn uses (prompt), and a disabled one answers no more", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        yield* h.admin.agents.set({ params: { id: "live" }, payload: { model: "local/fake-large", systemPrompt: "PROMPT-ONE", tools: [] } })
        const ask = (text: string) =>
          promise(() =>
            h.fetch("/v1/chat/completions", {
              method: "POST",
              headers: { authorization: `Bearer ${h.userToken}`, "content-type": "application/json" },
              body: JSON.stringify({ model: "live", messages: [{ role: "user", content: text }] })
            })
          )
        const lastSystem = () => JSON.stringify(suite.fake.requests.at(-1)?.body ?? {})
        assert.strictEqual((yield* ask("first")).status, 200)
        assert.include(lastSystem(), "PROMPT-ONE")
        yield* h.admin.agents.set({ params: { id: "live" }, payload: { systemPrompt: "PROMPT-TWO" } })
        assert.strictEqual((yield* ask("second")).status, 200)
        assert.include(lastSystem(), "PROMPT-TWO")
        assert.notInclude(lastSystem(), "PROMPT-ONE")
        const calls = suite.fake.requests.length
        yield* h.admin.agents.disable({ params: { id: "live" } })
        assert.strictEqual((yield* ask("third")).status, 404)
        assert.strictEqual(suite.fake.requests.length, calls)
      }))
  })

  describe("channels", () => {
    it.effect("list (every channel, secrets masked), settings checked by the channel's Schema, enable and disable", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const all = yield* h.admin.channels.list()
        assert.deepStrictEqual(all.map((c) => c.id).sort(), ["feishu", "http", "qq", "telegram", "wechat"])
        const set = yield* h.admin.channels.setSettings({ params: { id: "telegram" }, payload: { config: { token: TELEGRAM_TOKEN, group_mode: "always" } } })
        assert.strictEqual(set.config["token"], "123…ghij")
        assert.strictEqual(set.config["group_mode"], "always")
        assert.strictEqual(yield* outcome(h.admin.channels.setSettings({ params: { id: "telegram" }, payload: { config: { colour: "blue" } } })), 400)
        assert.strictEqual(yield* outcome(h.admin.channels.setSettings({ params: { id: "irc" }, payload: { config: {} } })), 404)
        // An empty value removes the key.
        const unset = yield* h.admin.channels.setSettings({ params: { id: "telegram" }, payload: { config: { group_mode: "" } } })
        assert.isUndefined(unset.config["group_mode"])
        assert.isTrue((yield* h.admin.channels.enable({ params: { id: "telegram" } })).enabled)
        assert.isFalse((yield* h.admin.channels.disable({ params: { id: "telegram" } })).enabled)
        assert.isTrue((yield* h.admin.channels.list()).some((c) => c.id === "telegram" && c.config["token"] === "123…ghij"))
      }))

    it.effect("WeChat QR login: the code's URL at once, scanned, then confirmed with the bot token saved (masked when shown)", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        yield* h.admin.channels.setSettings({ params: { id: "wechat" }, payload: { config: { base_url: wx.baseUrl, cdn_base_url: wx.cdnBaseUrl } } })
        const started = yield* h.admin.channels.wechatLoginStart()
        assert.strictEqual(started.status, "waiting")
        assert.strictEqual(started.qrcodeUrl, wx.qrs.at(-1)?.url)
        const until = (status: string) =>
          h.admin.channels.wechatLoginStatus({ params: { id: started.id } }).pipe(
            Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (s) => s.status === status || s.status === "failed" }),
            Effect.timeout("15 seconds")
          )
        wx.setQr("scaned")
        assert.strictEqual((yield* until("scanned")).status, "scanned")
        wx.setQr("confirmed")
        const done = yield* until("confirmed")
        assert.strictEqual(done.status, "confirmed")
        assert.isString(done.botId)
        const wechat = (yield* h.admin.channels.list()).find((c) => c.id === "wechat")
        assert.isString(wechat?.config["token"])
        assert.strictEqual(yield* outcome(h.admin.channels.wechatLoginStatus({ params: { id: "no-such-login" } })), 404)
      }))
  })

  describe("users", () => {
    it.effect("create (with or without an account), get, list, update name, default agent and attributes, role, password, remove", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const bob = yield* h.admin.users.create({ payload: { id: "bob", name: "Bob", defaultAgentId: "helper" } })
        assert.deepStrictEqual([bob.id, bob.name, bob.defaultAgentId, bob.role], ["bob", "Bob", "helper", null])
        assert.strictEqual(yield* outcome(h.admin.users.create({ payload: { id: "bob" } })), 409)
        assert.strictEqual(yield* outcome(h.admin.users.create({ payload: { id: "dave", password: "short" } })), 400)
        assert.strictEqual(yield* outcome(h.admin.users.create({ payload: { id: "dave", role: "admin" } })), 400)
        assert.strictEqual(yield* outcome(h.admin.users.create({ payload: { id: "dave", defaultAgentId: "ghost" } })), 404)
        const updated = yield* h.admin.users.update({
          params: { id: "bob" },
          payload: { name: "Robert", defaultAgentId: null, attributes: { group: "family", team: "x" } }
        })
        assert.deepStrictEqual([updated.name, updated.defaultAgentId, updated.attributes], ["Robert", null, { group: "family", team: "x" }])
        const less = yield* h.admin.users.update({ params: { id: "bob" }, payload: { attributes: { team: null } } })
        assert.deepStrictEqual(less.attributes, { group: "family" })
        // A password gives bob an account (role user); a role change follows.
        yield* h.admin.users.setPassword({ params: { id: "bob" }, payload: { password: "bob-password-123" } })
        assert.strictEqual((yield* h.admin.users.get({ params: { id: "bob" } })).role, "user")
        assert.strictEqual((yield* h.admin.users.setRole({ params: { id: "bob" }, payload: { role: "admin" } })).role, "admin")
        assert.strictEqual((yield* h.anonymous.auth.login({ payload: { username: "bob", password: "bob-password-123" } })).role, "admin")
        assert.strictEqual(yield* outcome(h.admin.users.setRole({ params: { id: ADMIN.user }, payload: { role: "user" } })), 409)
        // Identities: bob's Telegram account is linked to him; another user's is refused; unlinked again.
        const linked = yield* h.admin.users.linkIdentity({ params: { id: "bob" }, payload: { platform: "telegram", externalId: "4242" } })
        assert.deepStrictEqual(linked.identities.map((i) => `${i.platform}:${i.externalId}`), ["telegram:4242"])
        assert.strictEqual(yield* outcome(h.admin.users.linkIdentity({ params: { id: USER.user }, payload: { platform: "telegram", externalId: "4242" } })), 409)
        assert.strictEqual(yield* outcome(h.admin.users.linkIdentity({ params: { id: "bob" }, payload: { platform: "Tele gram", externalId: "1" } })), 400)
        const upserted = yield* Effect.provide(Effect.flatMap(ConfigStore, (c) => c.upsertUser("telegram", "4242", "someone")), h.services)
        assert.strictEqual(upserted.id, "bob")
        assert.deepStrictEqual((yield* h.admin.users.unlinkIdentity({ params: { id: "bob", platform: "telegram", externalId: "4242" } })).identities, [])
        assert.strictEqual(yield* outcome(h.admin.users.unlinkIdentity({ params: { id: "bob", platform: "telegram", externalId: "4242" } })), 404)
        const list = yield* h.admin.users.list()
        assert.includeMembers(list.map((u) => u.id), [ADMIN.user, USER.user, "bob"])
        assert.strictEqual(list.find((u) => u.id === ADMIN.user)?.role, "admin")
        assert.strictEqual((yield* h.user.users.get({ params: { id: USER.user } })).id, USER.user)
        const removed = yield* h.admin.users.remove({ params: { id: "bob" }, query: {} })
        assert.strictEqual(removed.userId, "bob")
        assert.strictEqual(yield* outcome(h.admin.users.get({ params: { id: "bob" } })), 404)
        assert.strictEqual(yield* outcome(h.anonymous.auth.login({ payload: { username: "bob", password: "bob-password-123" } })), 401)
        assert.strictEqual(yield* outcome(h.admin.users.remove({ params: { id: ADMIN.user }, query: {} })), 409)
      }))
  })

  describe("tokens", () => {
    it.effect("a user issues, lists and revokes only their own, role user only; an admin any", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const mine = yield* h.user.tokens.issue({ payload: { label: "laptop" } })
        issued.push(mine.token)
        assert.deepStrictEqual([mine.userId, mine.label, mine.role], [USER.user, "laptop", "user"])
        const viaToken = yield* h.client({ bearer: mine.token })
        assert.strictEqual((yield* viaToken.auth.me()).user, USER.user)
        assert.strictEqual(yield* outcome(h.user.tokens.issue({ payload: { userId: ADMIN.user } })), 403)
        assert.strictEqual(yield* outcome(h.user.tokens.issue({ payload: { role: "admin" } })), 403)
        const listed = yield* h.user.tokens.list({ query: {} })
        assert.isTrue(listed.length >= 2)
        assert.isTrue(listed.every((t) => t.userId === USER.user))
        assert.strictEqual(yield* outcome(h.user.tokens.list({ query: { user: ADMIN.user } })), 403)
        const adminsTokens = yield* h.admin.tokens.list({ query: { user: ADMIN.user } })
        assert.isTrue(adminsTokens.length >= 1 && adminsTokens.every((t) => t.userId === ADMIN.user))
        assert.strictEqual(yield* outcome(h.user.tokens.revoke({ params: { id: adminsTokens[0]?.id ?? "" }, query: {} })), 404)
        const laptop = listed.find((t) => t.label === "laptop")
        yield* h.user.tokens.revoke({ params: { id: laptop?.id ?? "" }, query: {} })
        assert.strictEqual(yield* outcome(viaToken.auth.me()), 401)
        // A token's role never exceeds its account's: no admin token for alice.
        assert.strictEqual(yield* outcome(h.admin.tokens.issue({ payload: { userId: USER.user, label: "ops", role: "admin" } })), 400)
        const forAlice = yield* h.admin.tokens.issue({ payload: { userId: USER.user, label: "ops" } })
        issued.push(forAlice.token)
        const capped = yield* h.client({ bearer: forAlice.token })
        assert.strictEqual((yield* capped.auth.me()).role, "user")
        const opsId = (yield* h.admin.tokens.list({ query: { user: USER.user } })).find((t) => t.label === "ops")?.id ?? ""
        yield* h.admin.tokens.revoke({ params: { id: opsId }, query: {} })
        assert.strictEqual(yield* outcome(capped.auth.me()), 401)
        assert.strictEqual(yield* outcome(h.admin.tokens.issue({ payload: { userId: "ghost" } })), 404)
      }))
  })

  describe("bindings, plugins, settings", () => {
    it.effect("bind a group chat to an agent, list, unbind", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const bound = yield* h.admin.bindings.bind({ params: { platform: "telegram", chatId: "-100200" }, payload: { agentId: "helper" } })
        assert.deepStrictEqual(bound, { platform: "telegram", chatId: "-100200", agentId: "helper", agentEnabled: true })
        assert.deepStrictEqual(yield* h.admin.bindings.list(), [bound])
        assert.strictEqual(yield* outcome(h.admin.bindings.bind({ params: { platform: "telegram", chatId: "-1" }, payload: { agentId: "ghost" } })), 404)
        assert.strictEqual(yield* outcome(h.admin.bindings.bind({ params: { platform: "tele gram", chatId: "-1" }, payload: { agentId: "helper" } })), 400)
        yield* h.admin.bindings.unbind({ params: { platform: "telegram", chatId: "-100200" } })
        assert.deepStrictEqual(yield* h.admin.bindings.list(), [])
        assert.strictEqual(yield* outcome(h.admin.bindings.unbind({ params: { platform: "telegram", chatId: "-100200" } })), 404)
      }))

    it.effect("plugins: list, enable the other memory plugin (the first is disabled), unknown is 404", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const before = yield* h.admin.plugins.list()
        assert.includeMembers(before.map((p) => p.id), ["memory/lcm", "memory/simple"])
        const change = yield* h.admin.plugins.enable({ payload: { id: "memory/simple" } })
        assert.deepStrictEqual(change, { enabled: ["memory/simple"], disabled: ["memory/lcm"] })
        const back = yield* h.admin.plugins.disable({ payload: { id: "memory/simple" } })
        assert.deepStrictEqual(back, { enabled: ["memory/lcm"], disabled: ["memory/simple"] })
        assert.strictEqual(yield* outcome(h.admin.plugins.enable({ payload: { id: "memory/none" } })), 404)
      }))

    it.effect("settings: list with defaults, set (checked), unset", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const all = yield* h.admin.settings.list()
        const max = all.find((s) => s.key === "sandbox.max_per_user")
        assert.deepStrictEqual([max?.value, max?.stored], ["3", false])
        const set = yield* h.admin.settings.set({ params: { key: "sandbox.max_per_user" }, payload: { value: "5" } })
        assert.deepStrictEqual([set.value, set.stored, set.defaultValue], ["5", true, "3"])
        assert.strictEqual(yield* outcome(h.admin.settings.set({ params: { key: "sandbox.max_per_user" }, payload: { value: "0" } })), 400)
        assert.strictEqual(yield* outcome(h.admin.settings.set({ params: { key: "no.such" }, payload: { value: "1" } })), 404)
        const unset = yield* h.admin.settings.unset({ params: { key: "sandbox.max_per_user" } })
        assert.deepStrictEqual([unset.value, unset.stored], ["3", false])
      }))
  })

  it.effect("no response carries a secret: keys, header values, channel tokens, passwords, cookies, tokens (but the one-time issue)", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // Every test above ran first (in order): their responses are all in `bodies`.
      assert.isAbove(h.bodies.length, 100)
      const secrets = [
        PROVIDER_KEY,
        ROTATED_KEY,
        "sk-never-stored-000",
        HEADER_SECRET,
        TELEGRAM_TOKEN,
        ADMIN.password,
        USER.password,
        CAROL_PASSWORD,
        CAROL_NEW_PASSWORD,
        "bob-password-123",
        h.adminSession.cookie,
        h.userSession.cookie,
        h.adminToken,
        h.userToken
      ]
      const wechatToken = (yield* h.admin.channels.list()).find((c) => c.id === "wechat")?.config["token"]
      assert.notStrictEqual(wechatToken, wx.token)
      for (const body of h.bodies) {
        for (const secret of [...secrets, wx.token]) assert.notInclude(body, secret)
      }
      for (const token of issued) {
        assert.strictEqual(h.bodies.filter((b) => b.includes(token)).length, 1, "an issued token appears once: in its issue response")
      }
    }))
})
