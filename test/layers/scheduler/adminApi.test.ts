/**
 * `/api/schedules` as the web console uses it: add with the CLI's checks (a bad cron is a 400 with
 * the parse reason), list, ask for a run, history, remove; an unknown job is a 404.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Harness, harnessLayer } from "../../support/adminHarness.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"

const suite = fakeLlmSuite()

layer(harnessLayer(), { excludeTestServices: true, timeout: "60 seconds" })("admin API: schedules", (it) => {
  it.effect("adds, lists, runs, shows history and removes jobs; refuses bad ones", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      yield* Effect.gen(function*() {
        yield* (yield* ProviderStore).add({
          id: "sx", type: "openai", baseUrl: suite.fake.openAiUrl, apiKey: "sk", models: [], defaultModel: "fake-large", headers: {}, enabled: true
        })
        yield* (yield* AgentStore).create("sx", { providerId: "sx" })
        if (Option.isNone(yield* (yield* ConfigStore).getUser("sx-u"))) yield* (yield* ConfigStore).createUser("sx-u", "S")
      }).pipe(Effect.provide(h.services), Effect.orDie)
      const call = (method: string, path: string, body?: unknown) =>
        Effect.promise(async () => {
          const r = await h.fetch(path, {
            method,
            headers: { ...h.headersOf({ bearer: h.adminToken }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
          const text = await r.text()
          return { status: r.status, body: (text === "" ? null : JSON.parse(text)) as Record<string, unknown> | null }
        })

      const added = yield* call("POST", "/api/schedules", { agent: "sx", cron: "0 8 * * 1-5", tz: "Europe/Berlin", prompt: "weekday brief", deliver: "sx-u@telegram" })
      assert.strictEqual(added.status, 200, JSON.stringify(added.body))
      assert.deepStrictEqual([added.body?.kind, added.body?.tz, added.body?.deliverUser, added.body?.deliverChannel], ["cron", "Europe/Berlin", "sx-u", "telegram"])
      const id = String(added.body?.id)

      const bad = yield* call("POST", "/api/schedules", { agent: "sx", cron: "0 25 * * *", prompt: "x", user: "sx-u" })
      assert.strictEqual(bad.status, 400)
      assert.include(JSON.stringify(bad.body), "bad cron")
      const noAgent = yield* call("POST", "/api/schedules", { agent: "nope", every: "1h", prompt: "x", user: "sx-u" })
      assert.strictEqual(noAgent.status, 404)

      const list = yield* call("GET", "/api/schedules")
      assert.include(JSON.stringify(list.body), id)
      const run = yield* call("POST", `/api/schedules/${id}/run`)
      assert.strictEqual(run.body?.runRequested, true)
      const history = yield* call("GET", `/api/schedules/${id}/history`)
      assert.deepStrictEqual([history.status, history.body], [200, []])
      assert.strictEqual((yield* call("DELETE", `/api/schedules/${id}`)).status, 204)
      assert.strictEqual((yield* call("DELETE", `/api/schedules/${id}`)).status, 404)
      assert.strictEqual((yield* call("GET", `/api/schedules/${id}/history`)).status, 404)
    }))
})
