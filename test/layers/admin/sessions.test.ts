/**
 * The admin API's sessions group through the typed client against a real server (127.0.0.1, port
 * 0), the real runtime on SQLite and LCM memory, the model being the fake LLM server through the
 * official OpenAI SDK: lists with filters and paging, a conversation in pages with its tool blocks,
 * the summary DAG with describe/expand, search, /new and abort's 404s — an admin sees all, a user
 * only their own, and another's session is 404 like a missing one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { type ChatTarget, sessionKeyOf } from "../../../src/domain/runtime/types.ts"
import { NotFound, Unauthorized } from "../../../src/domain/admin/security.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { account, clientFor, withAdmin } from "./sessionsSetup.ts"

const llm = fakeLlmSuite()

/** One message from `userId` on `platform`'s chat `chatId` to agent a1, answered to the end. */
const turn = (userId: string, platform: string, chatId: string, text: string, agentId = "a1") =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const target: ChatTarget = { platform, externalUserId: userId, userId, chatId, agentId }
    const chat = yield* runtime.resolve(target)
    yield* Stream.runDrain(runtime.send(chat, text))
    return chat
  })

/** Where this test's requests start in the fake server's record (it keeps every test file's). */
let mark = 0
const modelCalls = () => llm.fake.requests.slice(mark).filter((r) => r.method === "POST")

/** A turn whose model call hangs, running once the model has the request; `stop` aborts it. */
const hangingTurn = (userId: string, platform: string, chatId: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const calls = modelCalls().length
    llm.fake.script({ kind: "hang" })
    const chat = yield* runtime.resolve({ platform, externalUserId: userId, userId, chatId, agentId: "a1" })
    const fiber = yield* Effect.forkChild(Stream.runCollect(runtime.send(chat, "think forever")))
    yield* Effect.promise(() => llm.fake.when(() => modelCalls().length > calls, { what: "the hanging model call" }))
    return { chat, stop: Effect.andThen(runtime.abort(chat), Fiber.join(fiber)) }
  })

/**
 * Agents a1 and a2 on the fake model; accounts root (admin), alice and bob (users) with tokens;
 * alice has a Telegram DM with a1 and a web chat with a2, bob a Telegram DM with a1.
 */
const seeded = Effect.gen(function*() {
  mark = llm.fake.requests.length
  yield* configureAgent(llm.fake, "a1", { tools: [] })
  yield* configureAgent(llm.fake, "a2", { tools: [] })
  const tokens = {
    root: yield* account("root", "admin"),
    alice: yield* account("alice", "user"),
    bob: yield* account("bob", "user")
  }
  llm.fake.script(
    { kind: "reply", parts: [{ type: "text", text: "The staging database listens on port 6543." }] }
  )
  const aliceDm = yield* turn("alice", "telegram", "dm", "Where does the staging database listen?")
  const aliceWeb = yield* turn("alice", "web", "notes", "remember the blue folder", "a2")
  const bobDm = yield* turn("bob", "telegram", "dm", "the staging server for bob is elsewhere")
  return { tokens, aliceDm, aliceWeb, bobDm }
})


describe("admin API: sessions", () => {
  it.live("list: an admin sees every session with counts and live state; filters and paging narrow it", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens, aliceDm, aliceWeb, bobDm } = yield* seeded
      const root = yield* clientFor(tokens.root)
      const all = yield* root.sessions.list({ query: {} })
      assert.strictEqual(all.total, 3)
      assert.sameMembers(all.sessions.map((s) => s.sessionKey), [aliceDm.sessionKey, aliceWeb.sessionKey, bobDm.sessionKey])
      const dm = all.sessions.find((s) => s.sessionKey === aliceDm.sessionKey)
      assert.isDefined(dm)
      assert.deepInclude(dm, { agentId: "a1", userId: "alice", platform: "telegram", context: "dm", messages: 2, running: false })
      assert.isAbove(dm?.messageTokens ?? 0, 10)
      assert.isAbove(dm?.lastActivityAt ?? 0, Date.now() - 60_000)

      const keys = (r: { readonly sessions: ReadonlyArray<{ readonly sessionKey: string }> }) => r.sessions.map((s) => s.sessionKey)
      assert.deepStrictEqual(keys(yield* root.sessions.list({ query: { agent: "a2" } })), [aliceWeb.sessionKey])
      assert.sameMembers(keys(yield* root.sessions.list({ query: { platform: "telegram" } })), [aliceDm.sessionKey, bobDm.sessionKey])
      assert.deepStrictEqual(keys(yield* root.sessions.list({ query: { platform: "web" } })), [aliceWeb.sessionKey])
      assert.sameMembers(keys(yield* root.sessions.list({ query: { user: "alice" } })), [aliceDm.sessionKey, aliceWeb.sessionKey])
      assert.deepStrictEqual(keys(yield* root.sessions.list({ query: { q: "BOB:DM" } })), [bobDm.sessionKey])

      // Most recently active first; pages of one add up to the whole list.
      const pages = [0, 1, 2].map((offset) => root.sessions.list({ query: { limit: 1, offset } }))
      const paged = yield* Effect.all(pages)
      assert.deepStrictEqual(paged.map((p) => p.total), [3, 3, 3])
      assert.deepStrictEqual(paged.flatMap(keys), keys(all))
      assert.deepStrictEqual(keys(all), [bobDm.sessionKey, aliceWeb.sessionKey, aliceDm.sessionKey])

      // Live: a session whose turn is running (the model hangs) has its runner up, whatever the idle
      // reaper does with the others; a session stored but never run is idle.
      const store = yield* MemoryStore
      const idleKey = sessionKeyOf("a1", "telegram", "alice", "old")
      yield* store.ensureConversation({ key: idleKey, agentId: "a1", userId: "alice" })
      const hanging = yield* hangingTurn("bob", "telegram", "dm")
      const live = yield* root.sessions.list({ query: { state: "live" } })
      assert.deepInclude(live.sessions.find((s) => s.sessionKey === bobDm.sessionKey), { live: true, running: true })
      assert.notInclude(keys(live), idleKey)
      const idle = keys(yield* root.sessions.list({ query: { state: "idle" } }))
      assert.include(idle, idleKey)
      assert.notInclude(idle, bobDm.sessionKey)
      yield* hanging.stop
    })))

  it.live("a user lists and reads only their own sessions; another's is 404 like a missing one", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens, aliceDm, aliceWeb, bobDm } = yield* seeded
      const alice = yield* clientFor(tokens.alice)
      const bob = yield* clientFor(tokens.bob)
      const mine = yield* alice.sessions.list({ query: { user: "bob" } })
      assert.strictEqual(mine.total, 2)
      assert.sameMembers(mine.sessions.map((s) => s.sessionKey), [aliceDm.sessionKey, aliceWeb.sessionKey])

      const read = yield* alice.sessions.get({ params: { key: aliceDm.sessionKey } })
      assert.strictEqual(read.session.sessionKey, aliceDm.sessionKey)
      assert.strictEqual(read.summaries, 0)

      const attempts: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          bob.sessions.get({ params: { key: aliceDm.sessionKey } }),
          bob.sessions.messages({ params: { key: aliceDm.sessionKey }, query: {} }),
          bob.sessions.summaries({ params: { key: aliceDm.sessionKey } }),
          bob.sessions.newContext({ params: { key: aliceDm.sessionKey } }),
          bob.sessions.abort({ params: { key: aliceDm.sessionKey } }),
          bob.sessions.search({ query: { q: "staging", session: aliceDm.sessionKey } }),
          alice.sessions.get({ params: { key: "a1:telegram:nobody:dm" } })
        ]
      for (const attempt of attempts) {
        const e = yield* Effect.flip(attempt)
        assert.instanceOf(e, NotFound)
        if (e instanceof NotFound) assert.strictEqual(e.error.code, "not_found")
      }
      // Bob's own is there for him.
      assert.strictEqual((yield* bob.sessions.get({ params: { key: bobDm.sessionKey } })).session.userId, "bob")
    })))

  it.live("a conversation in pages, tool_use and tool_result blocks intact", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens } = yield* seeded
      llm.fake.script(
        { kind: "reply", parts: [{ type: "text", text: "Let me look." }, { type: "tool_call", id: "call_1", name: "lookup", input: { q: "folder" } }] },
        { kind: "reply", parts: [{ type: "text", text: "Found nothing." }] }
      )
      const chat = yield* turn("alice", "telegram", "tools", "find the folder")
      const alice = yield* clientFor(tokens.alice)
      const first = yield* alice.sessions.messages({ params: { key: chat.sessionKey }, query: { limit: 2 } })
      assert.strictEqual(first.total, 4)
      assert.deepStrictEqual(first.messages.map((m) => [m.seq, m.role]), [[1, "user"], [2, "assistant"]])
      assert.strictEqual(first.nextSeq, 3)
      const call = first.messages[1]?.message.content
      assert.isArray(call)
      assert.deepInclude(Array.isArray(call) ? call[1] : undefined, { type: "tool_use", id: "call_1", name: "lookup", input: { q: "folder" } })
      const rest = yield* alice.sessions.messages({ params: { key: chat.sessionKey }, query: { from: first.nextSeq ?? 0, limit: 2 } })
      assert.deepStrictEqual(rest.messages.map((m) => [m.seq, m.role]), [[3, "tool_result"], [4, "assistant"]])
      assert.strictEqual(rest.nextSeq, null)
      const result = rest.messages[0]?.message.content
      assert.deepInclude(Array.isArray(result) ? result[0] : undefined, { type: "tool_result", tool_use_id: "call_1" })
      assert.match(rest.messages[0]?.id ?? "", /^msg_\d+$/)
    })))

  it.live("the summary DAG: list with depth, coverage and parents; describe and expand as anna memory does, 404 for another user", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens } = yield* seeded
      const store = yield* MemoryStore
      const key = sessionKeyOf("a1", "telegram", "alice", "history")
      const conv = yield* store.ensureConversation({ key, agentId: "a1", userId: "alice" })
      yield* store.appendMessages(
        conv.id,
        Array.from({ length: 60 }, (_, i) => ({
          role: i % 2 === 0 ? "user" as const : "assistant" as const,
          content: `${i % 2 === 0 ? "Question" : "Answer"} ${i}: ${"the staging cluster needs a note here. ".repeat(8)}`
        }))
      )
      const report = yield* (yield* Compactor).compact(key, { full: true, freshTail: 4, budget: 1500 })
      assert.isTrue(report.compacted)
      assert.isAbove(report.condensedSummaries, 0)

      const alice = yield* clientFor(tokens.alice)
      const { summaries } = yield* alice.sessions.summaries({ params: { key } })
      assert.strictEqual(summaries.length, report.leafSummaries + report.condensedSummaries)
      const leaves = summaries.filter((s) => s.kind === "leaf")
      const condensed = summaries.filter((s) => s.kind === "condensed")
      assert.isTrue(leaves.every((s) => s.depth === 0 && s.covers.firstSeq <= s.covers.lastSeq))
      assert.isTrue(condensed.every((s) => s.depth > 0))
      // Every parent named is a condensed summary of this session that covers its child.
      for (const s of summaries) {
        for (const p of s.parents) {
          const parent = summaries.find((x) => x.id === p)
          assert.strictEqual(parent?.kind, "condensed")
          assert.isTrue((parent?.covers.firstSeq ?? 99) <= s.covers.firstSeq && (parent?.covers.lastSeq ?? 0) >= s.covers.lastSeq)
        }
      }
      assert.isTrue(summaries.some((s) => s.live))

      const top = condensed[0]
      assert.isDefined(top)
      const d = yield* alice.sessions.describeSummary({ params: { id: top?.id ?? "" } })
      assert.deepInclude(d, { id: top?.id, sessionKey: key, kind: "condensed", depth: top?.depth })
      assert.isAbove(d.childSummaries.length, 0)
      const page = yield* alice.sessions.expandSummary({ params: { id: top?.id ?? "" }, query: { maxTokens: 1 } })
      assert.strictEqual(page.items.length, 1)
      assert.strictEqual(page.items[0]?.kind, "summary")
      assert.strictEqual(page.nextCursor, 1)
      const leaf = yield* alice.sessions.expandSummary({ params: { id: leaves[0]?.id ?? "" }, query: {} })
      assert.isTrue(leaf.items.every((it) => it.kind === "message"))
      assert.strictEqual(leaf.items[0]?.kind === "message" ? leaf.items[0].seq : -1, leaves[0]?.covers.firstSeq)

      const bob = yield* clientFor(tokens.bob)
      assert.instanceOf(yield* Effect.flip(bob.sessions.describeSummary({ params: { id: top?.id ?? "" } })), NotFound)
      assert.instanceOf(yield* Effect.flip(bob.sessions.expandSummary({ params: { id: top?.id ?? "" }, query: {} })), NotFound)
      const root = yield* clientFor(tokens.root)
      assert.strictEqual((yield* root.sessions.describeSummary({ params: { id: top?.id ?? "" } })).id, top?.id)
      assert.instanceOf(yield* Effect.flip(root.sessions.describeSummary({ params: { id: "sum_999999" } })), NotFound)
    })))

  it.live("search: ranked hits with marked snippets, in the principal's scope only", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens, aliceDm, bobDm } = yield* seeded
      const alice = yield* clientFor(tokens.alice)
      const { hits } = yield* alice.sessions.search({ query: { q: "staging database port" } })
      assert.isAbove(hits.length, 0)
      assert.isTrue(hits.every((h) => h.sessionKey.includes(":alice:")))
      assert.strictEqual(hits[0]?.sessionKey, aliceDm.sessionKey)
      assert.match(hits[0]?.snippet ?? "", /«[^»]+»/)
      // Bob's own message says "staging" too, but alice asking for bob's scope still gets hers only.
      const asked = yield* alice.sessions.search({ query: { q: "staging", user: "bob" } })
      assert.isTrue(asked.hits.length > 0 && asked.hits.every((h) => h.sessionKey !== bobDm.sessionKey))

      const root = yield* clientFor(tokens.root)
      const everyone = yield* root.sessions.search({ query: { q: "staging" } })
      assert.includeMembers(everyone.hits.map((h) => h.sessionKey), [aliceDm.sessionKey, bobDm.sessionKey])
      const bobs = yield* root.sessions.search({ query: { q: "staging", user: "bob" } })
      assert.isTrue(bobs.hits.length > 0 && bobs.hits.every((h) => h.sessionKey === bobDm.sessionKey))
      const inSession = yield* root.sessions.search({ query: { q: "staging", session: aliceDm.sessionKey, context: 1 } })
      assert.isTrue(inSession.hits.every((h) => h.sessionKey === aliceDm.sessionKey))
      const withContext = inSession.hits.find((h) => h.kind === "message")
      assert.isAbove(withContext?.context?.length ?? 0, 0)
      // Strict: every word must match.
      assert.strictEqual((yield* root.sessions.search({ query: { q: "staging zebra", strict: true } })).hits.length, 0)
    })))

  it.live("new context: the chat moves on as /new does there, and the old session stays", () =>
    withAdmin(() => Effect.gen(function*() {
      const { tokens, aliceDm } = yield* seeded
      const alice = yield* clientFor(tokens.alice)
      const r = yield* alice.sessions.newContext({ params: { key: aliceDm.sessionKey } })
      assert.strictEqual(r.previous, aliceDm.sessionKey)
      assert.include(r.text, "Started a new conversation")
      const state = yield* (yield* ConfigStore).chatState("a1", "telegram", "alice", "dm")
      assert.strictEqual(state.context, "dm#2")
      // The next message on that chat goes to the fresh session; the old one is still listed.
      const next = yield* turn("alice", "telegram", "dm", "hello again")
      assert.strictEqual(next.sessionKey, sessionKeyOf("a1", "telegram", "alice", "dm#2"))
      // A key with the context mark ("#") goes in the path percent-encoded and comes back whole.
      assert.strictEqual((yield* alice.sessions.get({ params: { key: next.sessionKey } })).session.context, "dm#2")
      const listed = yield* alice.sessions.list({ query: { platform: "telegram" } })
      assert.includeMembers(listed.sessions.map((s) => s.sessionKey), [aliceDm.sessionKey, next.sessionKey])
      // Nothing is running there: abort says so.
      assert.isFalse((yield* alice.sessions.abort({ params: { key: next.sessionKey } })).aborted)
    })))

  it.live("anonymous requests get 401 from every sessions endpoint", () =>
    withAdmin(() => Effect.gen(function*() {
      const { aliceDm } = yield* seeded
      const anonymous = yield* clientFor()
      const bad = yield* clientFor("not-a-token")
      const key = { key: aliceDm.sessionKey }
      for (const client of [anonymous, bad]) {
        const attempts: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
            client.sessions.list({ query: {} }),
            client.sessions.get({ params: key }),
            client.sessions.messages({ params: key, query: {} }),
            client.sessions.summaries({ params: key }),
            client.sessions.describeSummary({ params: { id: "sum_1" } }),
            client.sessions.expandSummary({ params: { id: "sum_1" }, query: {} }),
            client.sessions.search({ query: { q: "staging" } }),
            client.sessions.newContext({ params: key }),
            client.sessions.abort({ params: key })
          ]
        for (const attempt of attempts) assert.instanceOf(yield* Effect.flip(attempt), Unauthorized)
      }
    })))
})
