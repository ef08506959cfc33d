/**
 * Removing a user through the admin API (`DELETE /api/users/:id`, what the console's Remove button
 * calls) does what `anna user remove` does (issue 23): the user's jobs, tokens, browser sessions,
 * rules and workspace go, and a user made later with the same id — through the API too — reaches no
 * session, memory hit, job or file of the old one. Their kept sessions stay readable by an admin
 * under the removed id the answer names.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { outcome, startAdminHarness, USER } from "../../support/adminHarness.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"

fakeLlmSuite()

const NEW_PASSWORD = "another-alice-9876"

describe("admin API: removing a user", () => {
  it.effect("leaves nothing to a new user of the same id; the kept sessions are an admin's to read under the removed id", () =>
    Effect.gen(function*() {
      const h = yield* startAdminHarness()
      const run = <A, E>(self: Effect.Effect<A, E, AgentStore | MemoryProvider>) => Effect.provide(self, h.services)
      yield* run(Effect.flatMap(AgentStore, (a) => a.create("a1", {})))
      const job = yield* h.admin.schedules.add({ payload: { agent: "a1", every: "1m", prompt: "water the plants", user: USER.user } })
      const session = { key: `a1:http:${USER.user}:main`, agentId: "a1", userId: USER.user }
      yield* run(Effect.flatMap(MemoryProvider, (m) =>
        m.append(session, [
          { role: "user", content: "the marmalade lighthouse recipe is in the attic" },
          { role: "assistant", content: "Noted." }
        ])))
      const workspace = join(h.home, "workspaces", "a1", "users", USER.user)
      mkdirSync(workspace, { recursive: true })
      writeFileSync(join(workspace, "notes.txt"), "the attic")
      const oldToken = yield* h.client({ bearer: h.userToken })
      assert.strictEqual((yield* oldToken.auth.me()).user, USER.user)

      const removed = yield* h.admin.users.remove({ params: { id: USER.user }, query: { sessions: "keep" } })
      assert.match(removed.removedAs, /^alice~removed-[0-9a-f]{16}$/)
      assert.deepStrictEqual([removed.sessions, removed.jobs, removed.keptSessions, removed.workspaces],
        ["kept", [job.id], [`a1:http:${removed.removedAs}:main`], ["a1"]])
      assert.strictEqual(yield* outcome(oldToken.auth.me()), 401, "her token is refused")
      assert.strictEqual(yield* outcome(h.user.auth.me()), 401, "her browser session ended")

      yield* h.admin.users.create({ payload: { id: USER.user, password: NEW_PASSWORD, role: "user" } })
      const session2 = yield* Effect.promise(() => h.login(USER.user, NEW_PASSWORD))
      const newAlice = yield* h.client({ cookie: session2.cookie, csrfToken: session2.csrfToken })
      assert.deepStrictEqual((yield* newAlice.sessions.list({ query: {} })).sessions, [], "no session of the old alice")
      assert.deepStrictEqual((yield* newAlice.sessions.search({ query: { q: "marmalade" } })).hits, [], "memory finds nothing of hers")
      assert.deepStrictEqual((yield* h.admin.sessions.list({ query: { user: USER.user } })).total, 0)
      assert.deepStrictEqual((yield* h.admin.schedules.list()).filter((j) => j.userId === USER.user), [], "no job")
      assert.strictEqual(yield* outcome(oldToken.auth.me()), 401, "the old token does not work for the new alice either")
      assert.isFalse(existsSync(workspace), "no workspace file")

      const kept = yield* h.admin.sessions.list({ query: { user: removed.removedAs } })
      assert.deepStrictEqual(kept.sessions.map((s) => s.sessionKey), [`a1:http:${removed.removedAs}:main`])
      assert.strictEqual(yield* outcome(h.admin.users.create({ payload: { id: removed.removedAs } })), 400, "nobody can take the removed id")
    }), { timeout: 60_000 })
})
