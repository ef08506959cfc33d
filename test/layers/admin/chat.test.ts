/**
 * The web chat (`POST /api/chat`, Server-Sent Events; `GET /api/chat/agents`) through the typed
 * client against a real server, the real runtime and memory on SQLite, the model being the fake LLM
 * server through the official OpenAI SDK: deltas stream in order and the conversation is then in
 * memory (the sessions endpoint and the `anna memory` CLI read it); slash commands are the
 * runtime's; an agent's access policy refuses a user here too (403); a failing model is an `error`
 * event; abort stops a turn that hangs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import type { ChatEvent } from "../../../src/domain/admin/groups/chat.ts"
import { Forbidden, NotFound, Unauthorized } from "../../../src/domain/admin/security.ts"
import { sessionKeyOf } from "../../../src/domain/runtime/types.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { annaJson } from "../../support/cli.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { configureAgent } from "../../support/runtimeStack.ts"
import { account, clientFor, withAdmin } from "./sessionsSetup.ts"

const llm = fakeLlmSuite()


/** Agent a1 open to everyone, a2 to bob only; accounts alice and bob (users). */
const seeded = Effect.gen(function*() {
  mark = llm.fake.requests.length
  yield* configureAgent(llm.fake, "a1", { tools: [] })
  yield* configureAgent(llm.fake, "a2", { tools: [], access: { kind: "users", users: ["bob"] } })
  return { alice: yield* account("alice", "user"), bob: yield* account("bob", "user") }
})

/** Where this test's requests start in the fake server's record (it keeps every test file's). */
let mark = 0
/** The model calls of this test (listings of models are GETs). */
const modelCalls = () => llm.fake.requests.slice(mark).filter((r) => r.method === "POST")

const texts = (events: ReadonlyArray<ChatEvent>) => events.flatMap((e) => (e.type === "text" ? [e.text] : []))

describe("admin API: web chat", () => {
  it.live("streams the answer's deltas in order; the conversation is then in memory (API and CLI)", () =>
    withAdmin((home) =>
      Effect.gen(function*() {
        const tokens = yield* seeded
        const answer = "The blue folder is on the second shelf, behind the atlas."
        llm.fake.script({ kind: "reply", parts: [{ type: "text", text: answer }], chunk: 6 })
        const alice = yield* clientFor(tokens.alice)
        const events = yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "a1", message: "Where is the blue folder?" } }))
        const key = sessionKeyOf("a1", "web", "alice", "default")
        assert.deepStrictEqual(events[0], { type: "start", sessionKey: key, agentId: "a1", chat: "default" })
        const deltas = texts(events)
        assert.isAbove(deltas.length, 3)
        assert.strictEqual(deltas.join(""), answer)
        const last = events.at(-1)
        assert.strictEqual(last?.type, "done")
        if (last?.type === "done") assert.strictEqual(last.stopReason, "end_turn")
        // The model got the message as the user's, through the OpenAI SDK.
        assert.strictEqual(modelCalls().length, 1)

        const page = yield* alice.sessions.messages({ params: { key }, query: {} })
        assert.deepStrictEqual(page.messages.map((m) => [m.role, m.message.content]), [
          ["user", "Where is the blue folder?"],
          ["assistant", [{ type: "text", text: answer }]]
        ])

        const cli = yield* Effect.promise(() => annaJson<ReadonlyArray<{ sessionKey: string; userId: string; messages: number }>>(home, "memory", "sessions"))
        assert.deepInclude(cli.find((s) => s.sessionKey === key), { sessionKey: key, userId: "alice", messages: 2 })
        const found = yield* Effect.promise(() => annaJson<ReadonlyArray<{ sessionKey: string; snippet: string }>>(home, "memory", "search", "second shelf atlas"))
        assert.strictEqual(found[0]?.sessionKey, key)
      })))

  it.live("slash commands are the runtime's, on platform web with the user's own identity", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const tokens = yield* seeded
        const alice = yield* clientFor(tokens.alice)
        const events = yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "a1", session: "work", message: "/whoami" } }))
        const text = texts(events).join("")
        assert.include(text, "user: alice")
        assert.include(text, "platform: web, chat: work")
        assert.include(text, `session: ${sessionKeyOf("a1", "web", "alice", "work")}`)
        assert.deepInclude(events.at(-1), { type: "done", stopReason: "command", modelCalls: 0 })
        assert.strictEqual(modelCalls().length, 0)

        // On the wire: an event stream of JSON data lines, as a browser's reader takes it.
        const { url } = yield* HttpAddress
        const raw = yield* Effect.promise(async () => {
          const res = await fetch(`${url}/api/chat`, {
            method: "POST",
            headers: { authorization: `Bearer ${tokens.alice}`, "content-type": "application/json" },
            body: JSON.stringify({ agent: "a1", message: "/help" })
          })
          return { type: res.headers.get("content-type"), body: await res.text() }
        })
        assert.match(raw.type ?? "", /^text\/event-stream/)
        const data = raw.body.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)) as ChatEvent)
        assert.deepStrictEqual(data.map((e) => e.type), ["start", "text", "done"])

        const renewed = yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "a1", session: "work", message: "/new" } }))
        assert.include(texts(renewed).join(""), "Started a new conversation")
        const after = yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "a1", session: "work", message: "hello" } }))
        assert.deepInclude(after[0], { type: "start", sessionKey: sessionKeyOf("a1", "web", "alice", "work#2") })
      })))

  it.live("an agent's access policy holds here too: 403 for a user it is closed to, and it is not listed for them", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const tokens = yield* seeded
        const alice = yield* clientFor(tokens.alice)
        const bob = yield* clientFor(tokens.bob)
        const refused = yield* Effect.flip(alice.chat.send({ payload: { agent: "a2", message: "let me in" } }))
        assert.instanceOf(refused, Forbidden)
        if (refused instanceof Forbidden) {
          assert.strictEqual(refused.error.code, "access_denied")
          assert.include(refused.error.message, "not open to you")
        }
        assert.strictEqual(modelCalls().length, 0)
        assert.instanceOf(yield* Effect.flip(alice.chat.send({ payload: { agent: "nope", message: "hi" } })), NotFound)

        assert.deepStrictEqual(yield* alice.chat.agents(), [{ id: "a1", name: "a1", isDefault: true }])
        assert.sameMembers((yield* bob.chat.agents()).map((a) => a.id), ["a1", "a2"])
        const ok = yield* Stream.runCollect(yield* bob.chat.send({ payload: { agent: "a2", message: "hi" } }))
        assert.strictEqual(texts(ok).join(""), "ok")

        const anonymous = yield* clientFor()
        assert.instanceOf(yield* Effect.flip(anonymous.chat.send({ payload: { agent: "a1", message: "hi" } })), Unauthorized)
        assert.instanceOf(yield* Effect.flip(anonymous.chat.agents()), Unauthorized)
      })))

  it.live("a turn the model cannot answer ends with an error event, then done (unavailable)", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const tokens = yield* seeded
        llm.fake.respondWith(() => ({ kind: "error", status: 401, message: "bad key" }))
        const alice = yield* clientFor(tokens.alice)
        const events = yield* Stream.runCollect(yield* alice.chat.send({ payload: { agent: "a1", message: "hi" } }))
        const error = events.find((e) => e.type === "error")
        assert.isDefined(error)
        if (error?.type === "error") assert.strictEqual(error.kind, "auth")
        assert.deepInclude(events.at(-1), { type: "done", stopReason: "unavailable" })
        assert.isTrue(events.findIndex((e) => e.type === "error") === events.length - 2)
      })))

  it.live("abort stops a running turn: the list shows it running, the abort endpoint ends it, the stream says aborted", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const tokens = yield* seeded
        llm.fake.script({ kind: "hang" })
        const alice = yield* clientFor(tokens.alice)
        const key = sessionKeyOf("a1", "web", "alice", "default")
        const stream = yield* alice.chat.send({ payload: { agent: "a1", message: "think forever" } })
        const reading = yield* Effect.forkChild(Stream.runCollect(stream))
        // The model has the request (and will never answer): the turn is running.
        yield* Effect.promise(() => llm.fake.when(() => modelCalls().length === 1, { what: "the model call" }))
        const running = yield* alice.sessions.list({ query: { state: "live" } })
        assert.deepInclude(running.sessions.find((s) => s.sessionKey === key), { running: true })

        assert.isTrue((yield* alice.sessions.abort({ params: { key } })).aborted)
        const events = yield* Fiber.join(reading)
        assert.deepInclude(events.at(-1), { type: "done", stopReason: "aborted" })
        yield* Effect.promise(() => llm.fake.when(() => modelCalls()[0]?.aborted === true, { what: "the model request cancelled" }))
        const idle = yield* alice.sessions.get({ params: { key } })
        assert.isFalse(idle.session.running)
        assert.isFalse((yield* alice.sessions.abort({ params: { key } })).aborted)
      })))

  it.live("as the browser calls it: the session cookie, and the CSRF token required on the POST", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        yield* seeded
        const { url } = yield* HttpAddress
        const chat = (headers: Record<string, string>) =>
          Effect.promise(async () => {
            const res = await fetch(`${url}/api/chat`, {
              method: "POST",
              headers: { "content-type": "application/json", ...headers },
              body: JSON.stringify({ agent: "a1", message: "/whoami" })
            })
            return { status: res.status, body: await res.text() }
          })
        const login = yield* Effect.promise(async () => {
          const res = await fetch(`${url}/api/auth/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ username: "alice", password: "correct horse battery" })
          })
          const cookie = /anna_session=([^;]*)/.exec(res.headers.get("set-cookie") ?? "")?.[1] ?? ""
          return { cookie, csrfToken: ((await res.json()) as { csrfToken: string }).csrfToken }
        })
        const cookie = `anna_session=${login.cookie}`
        const refused = yield* chat({ cookie })
        assert.strictEqual(refused.status, 403)
        assert.include(refused.body, "csrf")
        const ok = yield* chat({ cookie, "x-csrf-token": login.csrfToken })
        assert.strictEqual(ok.status, 200)
        assert.include(ok.body, "user: alice")
      })))
})
