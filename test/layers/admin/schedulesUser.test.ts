/**
 * "My schedules" (issue 24): a `user` on `/api/schedules` through a real socket — their own jobs only
 * (another user's job is a 404 for every call, as one that does not exist), added as the chat's
 * `scheduler` tool adds them: on an agent their access policy opens, delivered to themselves only,
 * at most 20 per agent (also when 30 adds race), `every` at least a minute, prompts up to 4,000
 * characters. An admin still sees and manages every job.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { MAX_PROMPT_CHARS, MAX_TOOL_JOBS } from "../../../src/domain/scheduler/types.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { ADMIN, Harness, harnessLayer, USER } from "../../support/adminHarness.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"

const suite = fakeLlmSuite()

interface JobBody {
  readonly id: string
  readonly userId: string
  readonly agentId: string
  readonly deliverUser: string | null
  readonly deliverChannel: string | null
  readonly createdBy: string
  readonly runRequested: boolean
}

layer(harnessLayer(), { excludeTestServices: true, timeout: "60 seconds" })("admin API: a user's own schedules", (it) => {
  it.effect("a user adds, lists, runs, reads and removes only their own jobs, within the tool's limits and the agents open to them", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      yield* Effect.gen(function*() {
        yield* (yield* ProviderStore).add({
          id: "su", type: "openai", baseUrl: suite.fake.openAiUrl, apiKey: "sk", models: [], defaultModel: "fake-large", headers: {}, enabled: true
        })
        const agents = yield* AgentStore
        yield* agents.create("open", { providerId: "su" })
        yield* agents.create("other-open", { providerId: "su" })
        yield* agents.create("closed", { providerId: "su", access: { kind: "users", users: [ADMIN.user] } })
        yield* agents.create("off", { providerId: "su", enabled: false })
        if (Option.isNone(yield* (yield* ConfigStore).getUser("bob"))) yield* (yield* ConfigStore).createUser("bob", "Bob")
      }).pipe(Effect.provide(h.services), Effect.orDie)
      const as = (token: string) => (method: string, path: string, body?: unknown) =>
        Effect.promise(async () => {
          const r = await h.fetch(path, {
            method,
            headers: { ...h.headersOf({ bearer: token }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
          const text = await r.text()
          return { status: r.status, body: (text === "" ? null : JSON.parse(text)) as unknown }
        })
      const alice = as(h.userToken)
      const admin = as(h.adminToken)
      const message = (b: unknown) => (b as { error?: { message?: string } } | null)?.error?.message ?? JSON.stringify(b)

      // Bob's job, made by the admin: alice must not learn it exists.
      const bobs = yield* admin("POST", "/api/schedules", { agent: "open", every: "1h", prompt: "bob's secret errand", deliver: "bob@telegram" })
      assert.strictEqual(bobs.status, 200, message(bobs.body))
      const bobJob = (bobs.body as JobBody).id

      // Her own: delivered to her (on the channel she names), or stored only.
      const mine = yield* alice("POST", "/api/schedules", { agent: "open", cron: "0 8 * * *", tz: "Europe/Berlin", prompt: "morning brief", deliver: `${USER.user}@telegram` })
      assert.strictEqual(mine.status, 200, message(mine.body))
      const job = mine.body as JobBody
      assert.deepStrictEqual([job.userId, job.agentId, job.deliverUser, job.deliverChannel, job.createdBy], [USER.user, "open", USER.user, "telegram", "agent"])
      const stored = yield* alice("POST", "/api/schedules", { agent: "open", every: "2h", prompt: "stored only" })
      assert.strictEqual(stored.status, 200, message(stored.body))
      assert.deepStrictEqual([(stored.body as JobBody).userId, (stored.body as JobBody).deliverUser], [USER.user, null])

      // Refused: someone else as owner or recipient, closed, disabled or unknown agents, the tool's limits.
      const refused = [
        [{ agent: "open", every: "1h", prompt: "x", deliver: "bob" }, 403, "delivers to you only"],
        [{ agent: "open", every: "1h", prompt: "x", user: "bob" }, 403, "only for yourself"],
        [{ agent: "open", every: "1h", prompt: "x", deliver: `${USER.user}@carrier-pigeon` }, 400, "cannot deliver"],
        [{ agent: "closed", every: "1h", prompt: "x" }, 403, "not open to you"],
        [{ agent: "off", every: "1h", prompt: "x" }, 404, "disabled"],
        [{ agent: "nope", every: "1h", prompt: "x" }, 404, "nope"],
        [{ agent: "open", every: "30s", prompt: "spam" }, 400, "at least 1m"],
        [{ agent: "open", every: "1h", prompt: "x".repeat(MAX_PROMPT_CHARS + 1) }, 400, `longer than ${MAX_PROMPT_CHARS}`],
        [{ agent: "open", cron: "0 25 * * *", prompt: "x" }, 400, "bad cron"]
      ] as const
      for (const [body, status, text] of refused) {
        const r = yield* alice("POST", "/api/schedules", body)
        assert.strictEqual(r.status, status, `${JSON.stringify(body).slice(0, 80)}: ${message(r.body)}`)
        assert.include(message(r.body), text)
      }
      // The admin, as the operator, is bound by none of the user's limits.
      assert.strictEqual((yield* admin("POST", "/api/schedules", { agent: "closed", every: "30s", prompt: "ops", user: "bob" })).status, 200)

      // Her list is hers alone; the admin's is everyone's.
      const listed = (yield* alice("GET", "/api/schedules")).body as ReadonlyArray<JobBody>
      assert.sameMembers(listed.map((j) => j.id), [job.id, (stored.body as JobBody).id])
      const everyone = (yield* admin("GET", "/api/schedules")).body as ReadonlyArray<JobBody>
      assert.includeMembers(everyone.map((j) => j.id), [bobJob, job.id])

      // Bob's job is "not found" to her, whatever she does; nothing about it leaks.
      for (const [method, path] of [["POST", `/api/schedules/${bobJob}/run`], ["GET", `/api/schedules/${bobJob}/history`], ["DELETE", `/api/schedules/${bobJob}`]] as const) {
        const r = yield* alice(method, path)
        assert.strictEqual(r.status, 404, `${method} ${path}`)
        assert.notInclude(JSON.stringify(r.body), "secret errand")
      }
      assert.strictEqual((yield* admin("GET", `/api/schedules/${bobJob}/history`)).status, 200, "bob's job is still there")

      // Her own: run now, history, remove.
      const run = yield* alice("POST", `/api/schedules/${job.id}/run`)
      assert.strictEqual((run.body as JobBody).runRequested, true)
      assert.deepStrictEqual(yield* alice("GET", `/api/schedules/${job.id}/history`), { status: 200, body: [] })
      assert.strictEqual((yield* alice("DELETE", `/api/schedules/${job.id}`)).status, 204)
      assert.strictEqual((yield* alice("GET", `/api/schedules/${job.id}/history`)).status, 404)
    }))

  it.effect("30 adds at once stop at the 20-job limit per agent: the count and the insert are one step", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const add = (i: number) =>
        Effect.promise(() =>
          h.fetch("/api/schedules", {
            method: "POST",
            headers: { ...h.headersOf({ bearer: h.userToken }), "content-type": "application/json" },
            body: JSON.stringify({ agent: "other-open", every: "1d", prompt: `race ${i}` })
          }).then(async (r) => ({ status: r.status, text: await r.text() }))
        )
      const results = yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), add, { concurrency: "unbounded" })
      assert.strictEqual(results.filter((r) => r.status === 200).length, MAX_TOOL_JOBS)
      const over = results.filter((r) => r.status !== 200)
      assert.isTrue(over.every((r) => r.status === 400 && r.text.includes(`already have ${MAX_TOOL_JOBS} jobs`)), over.map((r) => r.text).join("\n"))
      const listed = (yield* Effect.promise(() => h.fetch("/api/schedules", { headers: h.headersOf({ bearer: h.userToken }) }).then((r) => r.json()))) as ReadonlyArray<JobBody>
      assert.strictEqual(listed.filter((j) => j.agentId === "other-open").length, MAX_TOOL_JOBS)
    }))
})
