/**
 * `/api/playbook` through a real server (the typed client and raw requests), on the real playbook
 * files and rule votes: the operator's view of every playbook (filters, show with users' votes, the
 * file), their feedback, review and apply of inversion proposals, sweep, promote and remove; a
 * `user`'s "my rules" — their own and the shared rules of the agents they may use with learning on,
 * in their own view (their vote moves only what they see), never another user's rule nor a closed
 * agent's (404/403) — and their removing their own rules only. A broken file names its line to the
 * operator and nothing of the server's paths to a user.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { Forbidden, NotFound, ServerError } from "../../../src/domain/admin/security.ts"
import { LEARNING_PLUGIN } from "../../../src/domain/learning/rule.ts"
import { Playbook } from "../../../src/services/Playbook.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { account, clientFor, withAdmin } from "./sessionsSetup.ts"

const llm = fakeLlmSuite()

/**
 * Agents pa (everyone), pclosed (root only), poff (learning off); accounts root (admin), alice and
 * bob (users); rules in pa's playbook and the global one, for everyone and for one user each.
 */
const seeded = Effect.gen(function*() {
  yield* configureAgent(llm.fake, "pa", { tools: [] })
  yield* configureAgent(llm.fake, "pclosed", { tools: [], access: { kind: "users", users: ["root"] } })
  yield* configureAgent(llm.fake, "poff", { tools: [] })
  yield* (yield* PluginStore).setFor(LEARNING_PLUGIN, "poff", false)
  const tokens = { root: yield* account("root", "admin"), alice: yield* account("alice", "user"), bob: yield* account("bob", "user") }
  const playbook = yield* Playbook
  const add = (agentId: string | undefined, text: string, user?: string, tags: ReadonlyArray<string> = ["deploy"]) =>
    Effect.map(playbook.propose({ agentId, user, text, tags, sourceEntries: [], antiPattern: false }), (r) => r.rule.id)
  const ids = {
    global: yield* add(undefined, "Global: <img src=x onerror=alert(1)> check the release notes first"),
    globalBob: yield* add(undefined, "Bob's global habit: answer in French", "bob", ["language"]),
    shared: yield* add("pa", "Run the tests before every deploy", undefined, ["deploy", "ci"]),
    alice: yield* add("pa", "Alice likes short answers with examples", "alice", ["style"]),
    bob: yield* add("pa", "Bob wants the long explanation every time", "bob", ["style"]),
    closed: yield* add("pclosed", "Closed agent's rule about backups"),
    off: yield* add("poff", "Learning-off agent's rule about logs")
  }
  return { tokens, ids, playbook }
})

const idsOf = (rules: ReadonlyArray<{ readonly id: string }>) => rules.map((r) => r.id).sort()

describe("admin API: playbook", () => {
  it.live("the operator lists every playbook with filters, shows a rule with its votes and file", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const { tokens, ids } = yield* seeded
        const root = yield* clientFor(tokens.root)
        const global = yield* root.playbook.list({ query: {} })
        assert.deepStrictEqual(idsOf(global), [ids.global, ids.globalBob].sort(), "without an agent: the global playbook alone")
        const pa = yield* root.playbook.list({ query: { agent: "pa" } })
        assert.deepStrictEqual(idsOf(pa), [ids.global, ids.globalBob, ids.shared, ids.alice, ids.bob].sort())
        assert.strictEqual(pa.find((r) => r.id === ids.shared)?.agent, "pa")
        assert.strictEqual(pa.find((r) => r.id === ids.global)?.agent, null)
        assert.deepStrictEqual(idsOf(yield* root.playbook.list({ query: { agent: "pa", user: "alice" } })), [ids.global, ids.shared, ids.alice].sort())
        assert.deepStrictEqual(idsOf(yield* root.playbook.list({ query: { agent: "pa", scope: "personal" } })), [ids.globalBob, ids.alice, ids.bob].sort())
        assert.deepStrictEqual(idsOf(yield* root.playbook.list({ query: { agent: "pa", tag: "CI" } })), [ids.shared])
        assert.deepStrictEqual(idsOf(yield* root.playbook.list({ query: { agent: "pa", q: "tests deploy" } })), [ids.shared])
        // A closed agent is the operator's too.
        assert.include(idsOf(yield* root.playbook.list({ query: { agent: "pclosed" } })), ids.closed)
        assert.instanceOf(yield* Effect.flip(root.playbook.list({ query: { agent: "nope" } })), NotFound)

        const shown = yield* root.playbook.show({ params: { id: ids.shared }, query: { agent: "pa" } })
        assert.strictEqual(shown.rule.text, "Run the tests before every deploy")
        assert.deepStrictEqual(shown.votes, { success: 0, failure: 0, counted: 0, needed: 3 })
        assert.match(shown.file ?? "", /workspaces[/\\]pa[/\\]playbook\.yaml$/)
        assert.isNull((yield* root.playbook.show({ params: { id: ids.alice }, query: { agent: "pa" } })).votes, "a user's own rule takes no votes")
        assert.instanceOf(yield* Effect.flip(root.playbook.show({ params: { id: "no-such-rule" }, query: { agent: "pa" } })), NotFound)
      })))

  it.live("a user's rules: their own and the shared ones of agents open to them with learning on, in their own view", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const { tokens, ids, playbook } = yield* seeded
        const alice = yield* clientFor(tokens.alice)
        const mine = yield* alice.playbook.list({ query: {} })
        assert.deepStrictEqual(idsOf(mine), [ids.global, ids.shared, ids.alice].sort(), "not bob's, not a closed agent's, not one with learning off")
        assert.deepStrictEqual(idsOf(yield* alice.playbook.list({ query: { agent: "pa", scope: "personal" } })), [ids.alice])
        // A closed agent, an unknown one, another user's rules: refused.
        const closed = yield* Effect.flip(alice.playbook.list({ query: { agent: "pclosed" } }))
        assert.instanceOf(closed, Forbidden)
        assert.strictEqual((closed as Forbidden).error.code, "access_denied")
        assert.instanceOf(yield* Effect.flip(alice.playbook.list({ query: { agent: "nope" } })), NotFound)
        assert.instanceOf(yield* Effect.flip(alice.playbook.list({ query: { user: "bob" } })), Forbidden)
        assert.deepStrictEqual(idsOf(yield* alice.playbook.list({ query: { agent: "poff" } })), [], "learning off: no rule is given")

        // Her feedback on a shared rule is her vote: her view moves, the rule does not.
        yield* playbook.feedback("pa", [ids.shared], "failure", { user: "alice" })
        const hers = (yield* alice.playbook.list({ query: { agent: "pa" } })).find((r) => r.id === ids.shared)
        assert.strictEqual(hers?.confidence, 0.3)
        const root = yield* clientFor(tokens.root)
        assert.strictEqual((yield* root.playbook.list({ query: { agent: "pa" } })).find((r) => r.id === ids.shared)?.confidence, 0.5)
        const shown = yield* alice.playbook.show({ params: { id: ids.shared }, query: { agent: "pa" } })
        assert.strictEqual(shown.rule.confidence, 0.3)
        assert.deepStrictEqual(shown.votes, { success: 0, failure: 1, counted: 0, needed: 3 })
        assert.isNull(shown.file, "no server path for a user")

        // Another user's rule, a closed agent's, one with learning off: 404 like one that does not exist.
        for (const [id, agent] of [[ids.bob, "pa"], [ids.globalBob, undefined], [ids.off, "poff"]] as const) {
          assert.instanceOf(yield* Effect.flip(alice.playbook.show({ params: { id }, query: agent === undefined ? {} : { agent } })), NotFound, id)
        }
        assert.instanceOf(yield* Effect.flip(alice.playbook.show({ params: { id: ids.closed }, query: { agent: "pclosed" } })), Forbidden)
        // The global rule, through the global playbook.
        assert.strictEqual((yield* alice.playbook.show({ params: { id: ids.global }, query: {} })).rule.agent, null)
      })))

  it.live("a user removes their own rules only; the operator removes any", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const { tokens, ids, playbook } = yield* seeded
        const alice = yield* clientFor(tokens.alice)
        const shared = yield* Effect.flip(alice.playbook.remove({ params: { id: ids.shared }, query: { agent: "pa" } }))
        assert.instanceOf(shared, Forbidden)
        assert.instanceOf(yield* Effect.flip(alice.playbook.remove({ params: { id: ids.bob }, query: { agent: "pa" } })), NotFound, "bob's rule is not hers to see")
        assert.instanceOf(yield* Effect.flip(alice.playbook.remove({ params: { id: ids.global }, query: {} })), Forbidden)
        assert.strictEqual((yield* alice.playbook.remove({ params: { id: ids.alice }, query: { agent: "pa" } })).id, ids.alice)
        assert.notInclude(idsOf(yield* playbook.list("pa").pipe(Effect.map((l) => l.map((s) => s.rule)))), ids.alice)
        assert.includeMembers(idsOf(yield* playbook.list("pa").pipe(Effect.map((l) => l.map((s) => s.rule)))), [ids.shared, ids.bob])
        // Bob removes his, through a raw request.
        const { url } = yield* HttpAddress
        const del = yield* Effect.promise(() =>
          fetch(`${url}/api/playbook/rules/${ids.globalBob}`, { method: "DELETE", headers: { authorization: `Bearer ${tokens.bob}` } })
        )
        assert.strictEqual(del.status, 200)
        const root = yield* clientFor(tokens.root)
        assert.strictEqual((yield* root.playbook.remove({ params: { id: ids.shared }, query: { agent: "pa" } })).id, ids.shared)
        // The file it lives in: the global rule is not in pa's own file.
        assert.instanceOf(yield* Effect.flip(root.playbook.remove({ params: { id: ids.global }, query: { agent: "pa" } })), NotFound)
      })))

  it.live("the operator's feedback applies at once; review, apply, sweep and promote; a user may do none of them", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const { tokens, ids } = yield* seeded
        const root = yield* clientFor(tokens.root)
        const alice = yield* clientFor(tokens.alice)
        assert.strictEqual((yield* root.playbook.feedback({ params: { id: ids.shared }, payload: { agent: "pa", outcome: "good" } })).confidence, 0.55)
        for (let i = 0; i < 3; i++) yield* root.playbook.feedback({ params: { id: ids.shared }, payload: { agent: "pa", outcome: "bad" } })
        const review = yield* root.playbook.review({ query: { agent: "pa" } })
        assert.deepStrictEqual(review.map((p) => [p.id, p.failures, p.successes]), [[ids.shared, 3, 1]])
        assert.strictEqual(review[0]?.inverted.text, "AVOID: Run the tests before every deploy -- this pattern has caused repeated issues (3 failures vs 1 successes).")
        // An id without a proposal: nothing applied.
        assert.instanceOf(yield* Effect.flip(root.playbook.apply({ payload: { agent: "pa", ids: [ids.shared, ids.bob] } })), NotFound)
        assert.strictEqual((yield* root.playbook.review({ query: { agent: "pa" } })).length, 1)
        const applied = yield* root.playbook.apply({ payload: { agent: "pa", ids: [ids.shared] } })
        assert.deepStrictEqual(applied.map((p) => p.inverted.id), [`${ids.shared}-avoid`])
        const after = yield* root.playbook.list({ query: { agent: "pa" } })
        assert.strictEqual(after.find((r) => r.id === ids.shared)?.confidence, 0)
        assert.isTrue(after.find((r) => r.id === `${ids.shared}-avoid`)?.antiPattern)
        assert.deepStrictEqual(yield* root.playbook.review({ query: { agent: "pa" } }), [])
        const swept = yield* root.playbook.sweep({ payload: { agent: "pa" } })
        assert.include(swept.demotionCandidates, ids.shared)

        const promoted = yield* root.playbook.promote({ params: { id: ids.alice }, payload: { agent: "pa" } })
        assert.deepStrictEqual([promoted.user, promoted.agent], [null, "pa"])
        assert.instanceOf(yield* Effect.flip(alice.playbook.remove({ params: { id: ids.alice }, query: { agent: "pa" } })), Forbidden, "everyone's now")
        const global = yield* root.playbook.promote({ params: { id: ids.bob }, payload: { agent: "pa", global: true } })
        assert.deepStrictEqual([global.user, global.agent], [null, null])

        // The operator's own: a user gets 403 on each, whatever the rule.
        const calls: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          alice.playbook.feedback({ params: { id: ids.global }, payload: { outcome: "bad" } }),
          alice.playbook.promote({ params: { id: ids.global }, payload: { agent: "pa" } }),
          alice.playbook.review({ query: { agent: "pa" } }),
          alice.playbook.apply({ payload: { ids: [ids.global] } }),
          alice.playbook.sweep({ payload: {} })
        ]
        for (const call of calls) assert.instanceOf(yield* Effect.flip(call), Forbidden)
      })))

  it.live("a playbook file with a mistake: its line to the operator, no path to a user", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const { tokens, playbook } = yield* seeded
        const file = playbook.paths("pa").agent ?? ""
        writeFileSync(file, "rules:\n  - id: broken\n    text: x\n    created_at: 2026-01-01\n    confidense: 2\n")
        const root = yield* clientFor(tokens.root)
        const alice = yield* clientFor(tokens.alice)
        const operator = yield* Effect.flip(root.playbook.list({ query: { agent: "pa" } }))
        assert.instanceOf(operator, ServerError)
        assert.strictEqual((operator as ServerError).error.code, "playbook_file")
        assert.include(operator.message, `${file}:5`)
        assert.include(operator.message, "confidense")
        const user = yield* Effect.flip(alice.playbook.list({ query: {} }))
        assert.instanceOf(user, ServerError)
        assert.strictEqual((user as ServerError).error.code, "playbook_file")
        assert.notInclude(user.message, file)
        assert.notInclude(user.message, "confidense")
      })))
})
