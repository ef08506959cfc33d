/**
 * Who may call what, as a table (issue 13): every endpoint of the admin API (bar login) × anonymous,
 * a `user` and an `admin` (bearer tokens, so the rows need no CSRF handling), with the status each
 * must get: 401 for anonymous everywhere, 403 for a user on admin-only endpoints, 2xx for the rest.
 * A row's `prepare` makes what the call needs (the thing to delete, say) for the caller at hand, so
 * every 2xx is a real success. Then CSRF for cookie sessions, the cookie's attributes, the login's
 * guards and rate limit, and the OpenAPI document.
 *
 * Other groups add their rows to ROWS (one line per endpoint).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { Accounts } from "../../../src/services/Accounts.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Diary } from "../../../src/services/Diary.ts"
import { Playbook } from "../../../src/services/Playbook.ts"
import { type AdminHarness, ADMIN, Harness, harnessLayer, USER } from "../../support/adminHarness.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeWechat, startFakeWechat } from "../../support/fakeWechat/server.ts"
import { afterAll, beforeAll } from "vitest"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"

const suite = fakeLlmSuite()
let wx: FakeWechat
beforeAll(async () => {
  wx = await startFakeWechat()
})
afterAll(async () => {
  await wx.close()
})

type Caller = "anonymous" | "user" | "admin"

/** What a row's functions get: the harness, the caller, and the caller's user id. */
interface Ctx {
  readonly h: AdminHarness
  readonly caller: Caller
  readonly self: string
  /** Values `prepare` left for `path`/`body` (an id it made). */
  readonly vars: Record<string, string>
}

interface Row {
  /** The endpoint as the OpenAPI document names it, e.g. `GET /api/users/{id}`. */
  readonly op: string
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  readonly path: string | ((c: Ctx) => string)
  readonly body?: unknown | ((c: Ctx) => unknown)
  /** `user`: a user may call it (their own data); `admin`: admins only. */
  readonly access: "admin" | "user"
  /** Runs with the stack's services before the call (user and admin callers). */
  readonly prepare?: (c: Ctx) => Effect.Effect<void, unknown, AgentStore | ConfigStore | ProviderStore | Accounts | MemoryStore | Compactor | Playbook | Diary>
  /** The success status (default 200). */
  readonly ok?: number
}

const PASSWORDS: Record<string, string> = { [ADMIN.user]: ADMIN.password, [USER.user]: USER.password }

const ensureAgent = (id: string) =>
  Effect.gen(function*() {
    const agents = yield* AgentStore
    if (Option.isNone(yield* Effect.option(agents.get(id)))) yield* agents.create(id, { providerId: "mx", model: "fake-large" })
  })
const ensureProvider = (id: string) =>
  Effect.gen(function*() {
    const providers = yield* ProviderStore
    if (Option.isNone(yield* Effect.option(providers.get(id)))) {
      yield* providers.add({ id, type: "openai", baseUrl: suite.fake.openAiUrl, apiKey: "sk-mx", models: ["fake-large"], defaultModel: "fake-large", headers: {}, enabled: true })
    }
  })
const ensureUser = (id: string) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    if (Option.isNone(yield* config.getUser(id))) yield* config.createUser(id, id)
  })
const noUser = (id: string) =>
  Effect.gen(function*() {
    const config = yield* ConfigStore
    if (Option.isSome(yield* config.getUser(id))) yield* config.removeUser(id)
  })

/**
 * A session of the caller's own with summaries (compacted by the deterministic summarizer): its
 * key and one summary's id in `vars`.
 */
/** The caller's own session of the matrix (the same key whether `prepare` ran or not). */
const sessionPath = (c: Ctx) => `/api/sessions/${encodeURIComponent(`mx:web:${c.self}:matrix`)}`

const ensureSession = (c: Ctx) =>
  Effect.gen(function*() {
    const key = `mx:web:${c.self}:matrix`
    const store = yield* MemoryStore
    const conv = yield* store.ensureConversation({ key, agentId: "mx", userId: c.self })
    if ((yield* store.stats(conv.id)).summaries === 0) {
      yield* store.appendMessages(conv.id, Array.from({ length: 40 }, (_, i) => ({
        role: i % 2 === 0 ? "user" as const : "assistant" as const,
        content: `matrix message ${i}: ${"words to summarize. ".repeat(12)}`
      })))
      yield* (yield* Compactor).compact(key, { full: true, budget: 1500 })
    }
    c.vars.summary = `sum_${(yield* store.summaryNodes(conv.id))[0]?.id ?? 0}`
  })

/** A scheduled job of the caller's own, made through the API as the admin; its id in `vars.job`. */
const ensureJob = (c: Ctx) =>
  Effect.gen(function*() {
    yield* Effect.all([ensureProvider("mx"), ensureAgent("mx")])
    const made = yield* Effect.promise(() => adminCall(c, "POST", "/api/schedules", { agent: "mx", every: "1h", prompt: "matrix", user: c.self }).then((r) => r.json()))
    c.vars.job = (made as { id: string }).id
  })

/** A raw call as the admin (a row's `prepare` making what the call needs). */
const adminCall = (c: Ctx, method: string, path: string, body?: unknown) =>
  c.h.fetch(path, {
    method,
    headers: { ...c.h.headersOf({ bearer: c.h.adminToken }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A skill folder on the gateway's host (this test's process) to install from. */
const skillSource = join(mkdtempSync(join(tmpdir(), "anna-matrix-skill-")), "mx-skill")
const ensureSkillSource = Effect.sync(() => {
  mkdirSync(skillSource, { recursive: true })
  writeFileSync(join(skillSource, "SKILL.md"), "---\nname: mx-skill\ndescription: The matrix's skill.\n---\nDo the matrix.\n")
})
afterAll(() => rmSync(dirname(skillSource), { recursive: true, force: true }))

/** An MCP server of the default agent, added through the API as the admin (already there is fine). */
const ensureMcpServer = (c: Ctx, name: string) =>
  Effect.promise(() => adminCall(c, "POST", "/api/mcp-servers/default", { name, command: ["node", "/workspace/mx.mjs"] }).then((r) => r.text()))

/**
 * A rule in agent mx's playbook (`user`: scoped to them), its id in `vars.rule`; `failing`: with
 * three failures from the operator, so it has an inversion proposal.
 */
const ensureRule = (c: Ctx, user: string | undefined, failing = false) =>
  Effect.gen(function*() {
    yield* Effect.all([ensureProvider("mx"), ensureAgent("mx")])
    const playbook = yield* Playbook
    const { rule } = yield* playbook.propose({ agentId: "mx", user, text: `matrix rule of ${c.self} (${user ?? "all"}, ${failing})`, tags: ["mx"], sourceEntries: [], antiPattern: false })
    if (failing) for (let i = 0; i < 3; i++) yield* playbook.feedback("mx", [rule.id], "failure", "operator")
    c.vars.rule = rule.id
  })

/** A diary entry of the caller's own, its id in `vars.entry`. */
const ensureEntry = (c: Ctx) =>
  Effect.gen(function*() {
    c.vars.entry = `diary_mx_${c.self}`
    yield* Effect.ignore((yield* Diary).add({
      id: c.vars.entry, sessionKey: `mx:web:${c.self}:matrix`, agentId: "mx", userId: c.self, fromSeq: 1, toSeq: 2,
      accomplishments: ["matrix"], decisions: [], challenges: [], keyLearnings: [], tags: ["mx"], status: "success",
      qualityScore: 0.5, createdAt: 1, source: "heuristic", trigger: "demand"
    }))
  })

const ROWS: ReadonlyArray<Row> = [
  // auth (login is public: see below)
  { op: "POST /api/auth/logout", method: "POST", path: "/api/auth/logout", access: "user", ok: 204 },
  { op: "GET /api/auth/me", method: "GET", path: "/api/auth/me", access: "user" },
  { op: "GET /api/auth/sessions", method: "GET", path: "/api/auth/sessions", access: "user" },
  {
    op: "DELETE /api/auth/sessions/{id}",
    method: "DELETE",
    path: (c) => `/api/auth/sessions/${c.vars.session}`,
    access: "user",
    ok: 204,
    prepare: (c) =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const login = yield* accounts.login(c.self, PASSWORDS[c.self] ?? "", { address: "matrix", userAgent: "matrix" })
        c.vars.session = login.principal.sessionId ?? ""
      })
  },
  { op: "PUT /api/auth/password", method: "PUT", path: "/api/auth/password", access: "user", body: (c: Ctx) => ({ currentPassword: PASSWORDS[c.self], newPassword: PASSWORDS[c.self] }) },
  // providers
  { op: "GET /api/providers", method: "GET", path: "/api/providers", access: "admin" },
  { op: "GET /api/providers/{id}", method: "GET", path: "/api/providers/mx", access: "admin", prepare: () => ensureProvider("mx") },
  {
    op: "POST /api/providers",
    method: "POST",
    path: "/api/providers",
    access: "admin",
    body: { id: "mx-new", type: "openai", apiKey: "sk-mx", defaultModel: "m" },
    prepare: () => Effect.gen(function*() {
      yield* Effect.ignore((yield* ProviderStore).remove("mx-new"))
    })
  },
  { op: "PATCH /api/providers/{id}", method: "PATCH", path: "/api/providers/mx", access: "admin", body: { firstByteTimeoutSeconds: 20 }, prepare: () => ensureProvider("mx") },
  { op: "DELETE /api/providers/{id}", method: "DELETE", path: "/api/providers/mx-del", access: "admin", ok: 204, prepare: () => ensureProvider("mx-del") },
  { op: "GET /api/providers/{id}/models", method: "GET", path: "/api/providers/mx/models", access: "admin", prepare: () => ensureProvider("mx") },
  { op: "GET /api/providers/{id}/prices", method: "GET", path: "/api/providers/mx/prices", access: "admin", prepare: () => ensureProvider("mx") },
  { op: "PUT /api/providers/{id}/prices/{model}", method: "PUT", path: "/api/providers/mx/prices/fake-large", access: "admin", body: { input: 1, output: 2 }, prepare: () => ensureProvider("mx") },
  {
    op: "DELETE /api/providers/{id}/prices/{model}",
    method: "DELETE",
    path: "/api/providers/mx/prices/fake-small",
    access: "admin",
    ok: 204,
    prepare: () => Effect.gen(function*() {
      yield* ensureProvider("mx")
      yield* (yield* ProviderStore).setPrice("mx", "fake-small", { input: 1, output: 1 })
    })
  },
  // agents
  { op: "GET /api/agents", method: "GET", path: "/api/agents", access: "admin" },
  { op: "GET /api/agents/{id}", method: "GET", path: "/api/agents/mx", access: "admin", prepare: () => Effect.andThen(ensureProvider("mx"), ensureAgent("mx")) },
  { op: "PUT /api/agents/{id}", method: "PUT", path: "/api/agents/mx", access: "admin", body: { systemPrompt: "hi" }, prepare: () => ensureProvider("mx") },
  { op: "POST /api/agents/{id}/enable", method: "POST", path: "/api/agents/mx/enable", access: "admin", prepare: () => Effect.andThen(ensureProvider("mx"), ensureAgent("mx")) },
  { op: "POST /api/agents/{id}/disable", method: "POST", path: "/api/agents/mx/disable", access: "admin", prepare: () => Effect.andThen(ensureProvider("mx"), ensureAgent("mx")) },
  { op: "DELETE /api/agents/{id}", method: "DELETE", path: "/api/agents/mx-del", access: "admin", prepare: () => Effect.andThen(ensureProvider("mx"), ensureAgent("mx-del")) },
  // channels
  { op: "GET /api/channels", method: "GET", path: "/api/channels", access: "admin" },
  { op: "PUT /api/channels/{id}/settings", method: "PUT", path: "/api/channels/http/settings", access: "admin", body: { config: { request_timeout_seconds: "30" } } },
  { op: "POST /api/channels/{id}/enable", method: "POST", path: "/api/channels/qq/enable", access: "admin" },
  { op: "POST /api/channels/{id}/disable", method: "POST", path: "/api/channels/qq/disable", access: "admin" },
  {
    op: "POST /api/channels/wechat/login",
    method: "POST",
    path: "/api/channels/wechat/login",
    access: "admin",
    prepare: () => Effect.gen(function*() {
      yield* (yield* ConfigStore).setChannel("wechat", { config: { base_url: wx.baseUrl } })
    })
  },
  {
    op: "GET /api/channels/wechat/login/{id}",
    method: "GET",
    path: (c) => `/api/channels/wechat/login/${c.vars.login}`,
    access: "admin",
    prepare: (c) =>
      Effect.gen(function*() {
        yield* (yield* ConfigStore).setChannel("wechat", { config: { base_url: wx.baseUrl } })
        const started = yield* Effect.promise(() =>
          c.h.fetch("/api/channels/wechat/login", { method: "POST", headers: c.h.headersOf({ bearer: c.h.adminToken }) }).then((r) => r.json())
        )
        c.vars.login = (started as { id: string }).id
      })
  },
  // users
  { op: "GET /api/users", method: "GET", path: "/api/users", access: "admin" },
  { op: "GET /api/users/{id}", method: "GET", path: (c) => `/api/users/${c.self}`, access: "user" },
  { op: "POST /api/users", method: "POST", path: "/api/users", access: "admin", body: { id: "mx-new" }, prepare: () => noUser("mx-new") },
  { op: "PATCH /api/users/{id}", method: "PATCH", path: "/api/users/mx-u", access: "admin", body: { name: "M" }, prepare: () => ensureUser("mx-u") },
  { op: "DELETE /api/users/{id}", method: "DELETE", path: "/api/users/mx-del", access: "admin", prepare: () => ensureUser("mx-del") },
  { op: "PUT /api/users/{id}/password", method: "PUT", path: "/api/users/mx-u/password", access: "admin", ok: 204, body: { password: "mx-password-1" }, prepare: () => ensureUser("mx-u") },
  {
    op: "POST /api/users/{id}/identities",
    method: "POST",
    path: "/api/users/mx-u/identities",
    access: "admin",
    body: { platform: "telegram", externalId: "mx-tg-1" },
    prepare: () => ensureUser("mx-u")
  },
  {
    op: "DELETE /api/users/{id}/identities/{platform}/{externalId}",
    method: "DELETE",
    path: "/api/users/mx-u/identities/telegram/mx-tg-2",
    access: "admin",
    prepare: () =>
      Effect.gen(function*() {
        yield* ensureUser("mx-u")
        yield* (yield* ConfigStore).linkIdentity("mx-u", "telegram", "mx-tg-2")
      })
  },
  { op: "PUT /api/users/{id}/role", method: "PUT", path: "/api/users/mx-u/role", access: "admin", body: { role: "user" }, prepare: () => ensureUser("mx-u") },
  // tokens
  { op: "GET /api/tokens", method: "GET", path: "/api/tokens", access: "user" },
  { op: "POST /api/tokens", method: "POST", path: "/api/tokens", access: "user", body: { label: "mx" } },
  {
    op: "DELETE /api/tokens/{id}",
    method: "DELETE",
    path: (c) => `/api/tokens/${c.vars.token}`,
    access: "user",
    prepare: (c) =>
      Effect.gen(function*() {
        yield* (yield* Accounts).issueToken(c.self, "mx-revoke", "user")
        const mine = yield* (yield* ConfigStore).listTokens(c.self)
        c.vars.token = mine.find((t) => t.label === "mx-revoke")?.id ?? ""
      })
  },
  // bindings
  { op: "GET /api/bindings", method: "GET", path: "/api/bindings", access: "admin" },
  { op: "PUT /api/bindings/{platform}/{chatId}", method: "PUT", path: "/api/bindings/telegram/-1", access: "admin", body: { agentId: "mx" }, prepare: () => Effect.andThen(ensureProvider("mx"), ensureAgent("mx")) },
  {
    op: "DELETE /api/bindings/{platform}/{chatId}",
    method: "DELETE",
    path: "/api/bindings/telegram/-2",
    access: "admin",
    ok: 204,
    prepare: () => Effect.gen(function*() {
      yield* ensureProvider("mx")
      yield* ensureAgent("mx")
      yield* (yield* ConfigStore).bindChat("telegram", "-2", "mx")
    })
  },
  // plugins
  { op: "GET /api/plugins", method: "GET", path: "/api/plugins", access: "admin" },
  { op: "POST /api/plugins/enable", method: "POST", path: "/api/plugins/enable", access: "admin", body: { id: "memory/lcm" } },
  { op: "POST /api/plugins/disable", method: "POST", path: "/api/plugins/disable", access: "admin", body: { id: "memory/simple" } },
  // settings
  { op: "GET /api/settings", method: "GET", path: "/api/settings", access: "admin" },
  { op: "PUT /api/settings/{key}", method: "PUT", path: "/api/settings/sandbox.max_total", access: "admin", body: { value: "20" } },
  { op: "DELETE /api/settings/{key}", method: "DELETE", path: "/api/settings/sandbox.max_total", access: "admin" },
  // sessions (a user's calls reach their own sessions; another's are 404, see sessions.test.ts)
  { op: "GET /api/sessions", method: "GET", path: "/api/sessions?limit=5", access: "user" },
  { op: "GET /api/sessions/search", method: "GET", path: "/api/sessions/search?q=matrix", access: "user", prepare: (c) => ensureSession(c) },
  { op: "GET /api/sessions/{key}", method: "GET", path: sessionPath, access: "user", prepare: (c) => ensureSession(c) },
  { op: "GET /api/sessions/{key}/messages", method: "GET", path: (c) => `${sessionPath(c)}/messages?limit=2`, access: "user", prepare: (c) => ensureSession(c) },
  { op: "GET /api/sessions/{key}/summaries", method: "GET", path: (c) => `${sessionPath(c)}/summaries`, access: "user", prepare: (c) => ensureSession(c) },
  { op: "GET /api/sessions/summaries/{id}", method: "GET", path: (c) => `/api/sessions/summaries/${c.vars.summary ?? "sum_1"}`, access: "user", prepare: (c) => ensureSession(c) },
  { op: "GET /api/sessions/summaries/{id}/expand", method: "GET", path: (c) => `/api/sessions/summaries/${c.vars.summary ?? "sum_1"}/expand`, access: "user", prepare: (c) => ensureSession(c) },
  { op: "POST /api/sessions/{key}/new", method: "POST", path: (c) => `${sessionPath(c)}/new`, access: "user", prepare: (c) => ensureSession(c) },
  { op: "POST /api/sessions/{key}/abort", method: "POST", path: (c) => `${sessionPath(c)}/abort`, access: "user", prepare: (c) => ensureSession(c) },
  // usage
  { op: "GET /api/usage", method: "GET", path: "/api/usage", access: "user" },
  { op: "GET /api/usage/dashboard", method: "GET", path: "/api/usage/dashboard?window=7d", access: "user" },
  // chat (a slash command: answered without the model)
  { op: "POST /api/chat", method: "POST", path: "/api/chat", access: "user", body: { agent: "mx-chat", message: "/whoami" }, prepare: () => Effect.andThen(ensureProvider("mx"), ensureAgent("mx-chat")) },
  { op: "GET /api/chat/agents", method: "GET", path: "/api/chat/agents", access: "user" },
  // schedules (a user's own jobs: another's are 404, see schedulesUser.test.ts)
  { op: "GET /api/schedules", method: "GET", path: "/api/schedules", access: "user" },
  {
    op: "POST /api/schedules",
    method: "POST",
    path: "/api/schedules",
    access: "user",
    body: (c: Ctx) => ({ agent: "mx", every: "1h", prompt: "matrix", user: c.self }),
    prepare: () => Effect.all([ensureProvider("mx"), ensureAgent("mx")])
  },
  { op: "DELETE /api/schedules/{id}", method: "DELETE", path: (c) => `/api/schedules/${c.vars.job}`, access: "user", ok: 204, prepare: (c) => ensureJob(c) },
  { op: "POST /api/schedules/{id}/run", method: "POST", path: (c) => `/api/schedules/${c.vars.job}/run`, access: "user", prepare: (c) => ensureJob(c) },
  { op: "GET /api/schedules/{id}/history", method: "GET", path: (c) => `/api/schedules/${c.vars.job}/history`, access: "user", prepare: (c) => ensureJob(c) },
  // skills (a user reads those of the agents open to them: see skillsApi.test.ts)
  { op: "GET /api/skills", method: "GET", path: "/api/skills", access: "user" },
  { op: "GET /api/skills/rank", method: "GET", path: "/api/skills/rank?agent=mx", access: "user", prepare: () => Effect.andThen(ensureProvider("mx"), ensureAgent("mx")) },
  { op: "POST /api/skills", method: "POST", path: "/api/skills", access: "admin", body: { source: skillSource, force: true }, prepare: () => ensureSkillSource },
  {
    op: "DELETE /api/skills/{name}",
    method: "DELETE",
    path: "/api/skills/mx-skill",
    access: "admin",
    prepare: (c) =>
      Effect.andThen(ensureSkillSource, Effect.promise(() => adminCall(c, "POST", "/api/skills", { source: skillSource, force: true }).then((r) => r.text())))
  },
  // MCP servers (admin only)
  { op: "GET /api/mcp-servers/{agent}", method: "GET", path: "/api/mcp-servers/default", access: "admin" },
  {
    op: "POST /api/mcp-servers/{agent}",
    method: "POST",
    path: "/api/mcp-servers/default",
    access: "admin",
    body: { name: "mx-new", command: ["node", "/workspace/mx.mjs"] },
    prepare: (c) => Effect.promise(() => adminCall(c, "DELETE", "/api/mcp-servers/default/mx-new").then((r) => r.text()))
  },
  { op: "DELETE /api/mcp-servers/{agent}/{name}", method: "DELETE", path: "/api/mcp-servers/default/mx-del", access: "admin", ok: 204, prepare: (c) => ensureMcpServer(c, "mx-del") },
  { op: "POST /api/mcp-servers/{agent}/{name}/test", method: "POST", path: "/api/mcp-servers/default/mx-test/test", access: "admin", prepare: (c) => ensureMcpServer(c, "mx-test") },
  // playbook (a user: their own rules and those given to them; the rest is the operator's; see playbookApi.test.ts)
  { op: "GET /api/playbook/rules", method: "GET", path: "/api/playbook/rules", access: "user" },
  { op: "GET /api/playbook/rules/{id}", method: "GET", path: (c) => `/api/playbook/rules/${c.vars.rule}?agent=mx`, access: "user", prepare: (c) => ensureRule(c, c.self) },
  { op: "DELETE /api/playbook/rules/{id}", method: "DELETE", path: (c) => `/api/playbook/rules/${c.vars.rule}?agent=mx`, access: "user", prepare: (c) => ensureRule(c, c.self) },
  { op: "POST /api/playbook/rules/{id}/feedback", method: "POST", path: (c) => `/api/playbook/rules/${c.vars.rule}/feedback`, access: "admin", body: { agent: "mx", outcome: "good" }, prepare: (c) => ensureRule(c, undefined) },
  { op: "POST /api/playbook/rules/{id}/promote", method: "POST", path: (c) => `/api/playbook/rules/${c.vars.rule}/promote`, access: "admin", body: { agent: "mx" }, prepare: (c) => ensureRule(c, "mx-u") },
  { op: "GET /api/playbook/review", method: "GET", path: "/api/playbook/review?agent=mx", access: "admin", prepare: () => Effect.all([ensureProvider("mx"), ensureAgent("mx")]) },
  { op: "POST /api/playbook/apply", method: "POST", path: "/api/playbook/apply", access: "admin", body: (c: Ctx) => ({ agent: "mx", ids: [c.vars.rule] }), prepare: (c) => ensureRule(c, undefined, true) },
  { op: "POST /api/playbook/sweep", method: "POST", path: "/api/playbook/sweep", access: "admin", body: {} },
  // diary (a user: their own entries)
  { op: "GET /api/diary", method: "GET", path: "/api/diary?limit=5", access: "user" },
  { op: "GET /api/diary/{id}", method: "GET", path: (c) => `/api/diary/${c.vars.entry}`, access: "user", prepare: (c) => ensureEntry(c) }
]

const expected = (row: Row, caller: Caller): number =>
  caller === "anonymous" ? 401 : caller === "user" && row.access === "admin" ? 403 : row.ok ?? 200

layer(harnessLayer(), { excludeTestServices: true, timeout: "60 seconds" })("admin API authorization", (it) => {
  it.effect("the matrix: anonymous 401 everywhere, a user 403 on admin-only endpoints, each allowed call succeeds", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const failures: Array<string> = []
      for (const caller of ["anonymous", "user", "admin"] as const) {
        const self = caller === "admin" ? ADMIN.user : USER.user
        for (const row of ROWS) {
          const c: Ctx = { h, caller, self, vars: {} }
          if (caller !== "anonymous" && row.prepare !== undefined) yield* row.prepare(c).pipe(Effect.provide(h.services), Effect.orDie)
          const path = typeof row.path === "string" ? row.path : row.path(c)
          const body = typeof row.body === "function" ? (row.body as (c: Ctx) => unknown)(c) : row.body
          const headers = {
            ...(caller === "anonymous" ? {} : h.headersOf({ bearer: caller === "admin" ? h.adminToken : h.userToken })),
            ...(body === undefined ? {} : { "content-type": "application/json" })
          }
          const response = yield* Effect.promise(() =>
            h.fetch(path, { method: row.method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
          )
          const text = yield* Effect.promise(() => response.text())
          const want = expected(row, caller)
          if (response.status !== want) failures.push(`${caller} ${row.method} ${path}: ${response.status}, expected ${want} (${text.slice(0, 160)})`)
          if (response.status >= 400) {
            const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }
            if (typeof parsed.error?.code !== "string" || typeof parsed.error.message !== "string") {
              failures.push(`${caller} ${row.method} ${path}: the error body is not {error: {code, message}}: ${text.slice(0, 160)}`)
            }
          }
        }
      }
      assert.deepStrictEqual(failures, [])
    }))

  it.effect("a user reaching another user's playbook rule or diary entry: 404 as for none, 403 naming them", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // The admin's own rule and entry, which the user is not given.
      const theirs: Ctx = { h, caller: "admin", self: ADMIN.user, vars: {} }
      yield* Effect.all([ensureRule(theirs, ADMIN.user), ensureEntry(theirs)]).pipe(Effect.provide(h.services), Effect.orDie)
      const status = (method: string, path: string) =>
        Effect.promise(() => h.fetch(path, { method, headers: h.headersOf({ bearer: h.userToken }) }).then((r) => r.status))
      const got = {
        showRule: yield* status("GET", `/api/playbook/rules/${theirs.vars.rule}?agent=mx`),
        removeRule: yield* status("DELETE", `/api/playbook/rules/${theirs.vars.rule}?agent=mx`),
        listRules: yield* status("GET", `/api/playbook/rules?user=${ADMIN.user}`),
        showEntry: yield* status("GET", `/api/diary/${theirs.vars.entry}`),
        listEntries: yield* status("GET", `/api/diary?user=${ADMIN.user}`)
      }
      assert.deepStrictEqual(got, { showRule: 404, removeRule: 404, listRules: 403, showEntry: 404, listEntries: 403 })
    }))

  it.effect("every endpoint of the declaration has a row (login is the public one)", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const doc = (yield* Effect.promise(() => h.fetch("/api/openapi.json").then((r) => r.json()))) as {
        paths: Record<string, Record<string, unknown>>
      }
      const declared = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      const covered = new Set(ROWS.map((r) => r.op))
      const missing = declared.filter((d) => !covered.has(d) && d !== "POST /api/auth/login")
      assert.deepStrictEqual(missing, [])
      assert.deepStrictEqual(ROWS.filter((r) => !declared.includes(r.op)).map((r) => r.op), [])
    }))
  it.effect("CSRF: a cookie session's POST/PUT/PATCH/DELETE needs its x-csrf-token (403 without or wrong); reads and bearer requests do not", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // A session of its own (the matrix changed the admin's password, which ended the harness's).
      const session = yield* Effect.promise(() => h.login(ADMIN.user, ADMIN.password))
      const cookie = session.cookie
      const put = (headers: Record<string, string>) =>
        Effect.promise(async () => {
          const r = await h.fetch("/api/settings/sandbox.max_per_user", {
            method: "PUT",
            headers: { "content-type": "application/json", ...headers },
            body: JSON.stringify({ value: "4" })
          })
          return { status: r.status, body: await r.text() }
        })
      const none = yield* put(h.headersOf({ cookie }))
      assert.strictEqual(none.status, 403)
      assert.strictEqual((JSON.parse(none.body) as { error: { code: string } }).error.code, "csrf")
      assert.strictEqual((yield* put(h.headersOf({ cookie, csrfToken: "wrong-token" }))).status, 403)
      assert.strictEqual((yield* put(h.headersOf({ cookie, csrfToken: h.adminSession.csrfToken }))).status, 403)
      assert.strictEqual((yield* put(h.headersOf({ cookie, csrfToken: session.csrfToken }))).status, 200)
      assert.strictEqual((yield* put(h.headersOf({ bearer: h.adminToken }))).status, 200)
      const read = yield* Effect.promise(() => h.fetch("/api/settings", { headers: h.headersOf({ cookie }) }))
      assert.strictEqual(read.status, 200)
      // A bad bearer header is judged alone: a valid cookie beside it does not rescue it.
      const both = yield* Effect.promise(() => h.fetch("/api/auth/me", { headers: { ...h.headersOf({ cookie }), authorization: "Bearer nope" } }))
      assert.strictEqual(both.status, 401)
    }))

  it.effect("the session cookie: HttpOnly, SameSite=Strict, Path=/, Max-Age to its expiry; Secure when the request came over https", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const login = (headers: Record<string, string>) =>
        Effect.promise(async () => {
          const r = await h.fetch("/api/auth/login", {
            method: "POST",
            headers: { "content-type": "application/json", ...headers },
            body: JSON.stringify({ username: ADMIN.user, password: ADMIN.password })
          })
          const body = (await r.json()) as { expiresAt: number }
          return { status: r.status, setCookie: r.headers.get("set-cookie") ?? "", expiresAt: body.expiresAt }
        })
      const plain = yield* login({})
      assert.strictEqual(plain.status, 200)
      const attributes = plain.setCookie.split(";").map((a) => a.trim())
      assert.match(attributes[0] ?? "", /^anna_session=[A-Za-z0-9_-]{20,}$/)
      assert.includeMembers(attributes, ["HttpOnly", "SameSite=Strict", "Path=/"])
      assert.notInclude(attributes, "Secure")
      const maxAge = Number(attributes.find((a) => a.startsWith("Max-Age="))?.slice("Max-Age=".length))
      const untilExpiry = (plain.expiresAt - Date.now()) / 1000
      assert.isAtLeast(maxAge, untilExpiry - 5)
      assert.isAtMost(maxAge, untilExpiry + 5)
      const proxied = yield* login({ "x-forwarded-proto": "https" })
      assert.include(proxied.setCookie.split(";").map((a) => a.trim()), "Secure")
    }))

  it.effect("login is JSON only, and from this server's own origin when an Origin is sent", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const login = (headers: Record<string, string>, body = JSON.stringify({ username: ADMIN.user, password: ADMIN.password })) =>
        Effect.promise(async () => {
          const r = await h.fetch("/api/auth/login", { method: "POST", headers, body })
          return { status: r.status, setCookie: r.headers.get("set-cookie"), code: ((await r.json()) as { error?: { code?: string } }).error?.code }
        })
      // A form or text body (what another site can post without a preflight) is refused before the
      // handler by the API's payload decoding (415), and by the handler should that ever change.
      const form = yield* Effect.promise(async () => {
        const r = await h.fetch("/api/auth/login", { method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify({ username: ADMIN.user, password: ADMIN.password }) })
        return { status: r.status, setCookie: r.headers.get("set-cookie") }
      })
      assert.deepStrictEqual(form, { status: 415, setCookie: null })
      const foreign = yield* login({ "content-type": "application/json", origin: "http://evil.example" })
      assert.deepStrictEqual([foreign.status, foreign.code, foreign.setCookie], [403, "origin", null])
      const own = yield* login({ "content-type": "application/json", origin: h.url })
      assert.strictEqual(own.status, 200)
    }))

  it.effect("a request the Schemas refuse is a 400 with the usual error body", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      for (const body of [JSON.stringify({ id: 5, type: "openai" }), JSON.stringify({ id: "x", type: "carrier-pigeon" }), "{"]) {
        const r = yield* Effect.promise(() =>
          h.fetch("/api/providers", { method: "POST", headers: { ...h.headersOf({ bearer: h.adminToken }), "content-type": "application/json" }, body })
        )
        assert.strictEqual(r.status, 400, body)
        const parsed = (yield* Effect.promise(() => r.json())) as { error: { code: string; message: string } }
        assert.strictEqual(parsed.error.code, "invalid")
        assert.isString(parsed.error.message)
      }
    }))

  it.effect("/api/openapi.json is the OpenAPI document: valid JSON listing the paths and both security schemes", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const response = yield* Effect.promise(() => h.fetch("/api/openapi.json"))
      assert.strictEqual(response.status, 200)
      assert.include(response.headers.get("content-type") ?? "", "application/json")
      const doc = JSON.parse(yield* Effect.promise(() => response.text())) as {
        openapi: string
        paths: Record<string, unknown>
        components: { securitySchemes: Record<string, { type: string; in?: string; name?: string; scheme?: string }> }
      }
      assert.match(doc.openapi, /^3\./)
      assert.includeMembers(Object.keys(doc.paths), ["/api/auth/login", "/api/providers", "/api/agents/{id}", "/api/channels", "/api/users", "/api/tokens", "/api/bindings", "/api/plugins", "/api/settings"])
      const schemes = Object.values(doc.components.securitySchemes)
      assert.isTrue(schemes.some((x) => x.type === "http" && x.scheme?.toLowerCase() === "bearer"))
      assert.isTrue(schemes.some((x) => x.type === "apiKey" && x.in === "cookie" && x.name === "anna_session"))
    }))

  // Last: it leaves a username throttled.
  it.effect("failed logins are throttled: 429 with Retry-After, even for the right password", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      yield* Effect.gen(function*() {
        yield* (yield* Accounts).create({ userId: "target", password: "target-password-1", role: "user" })
      }).pipe(Effect.provide(h.services))
      const login = (password: string) =>
        Effect.promise(async () => {
          const r = await h.fetch("/api/auth/login", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ username: "target", password })
          })
          return { status: r.status, retryAfter: r.headers.get("retry-after"), code: ((await r.json()) as { error?: { code?: string } }).error?.code }
        })
      const statuses: Array<number> = []
      for (let i = 0; i < 5; i++) statuses.push((yield* login(`wrong-${i}`)).status)
      assert.deepStrictEqual(statuses, [401, 401, 401, 401, 401])
      const throttled = yield* login("target-password-1")
      assert.strictEqual(throttled.status, 429)
      assert.strictEqual(throttled.code, "throttled")
      assert.isAbove(Number(throttled.retryAfter), 0)
    }))
})
