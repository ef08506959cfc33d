/**
 * End to end with the real Docker sandbox (skipped with a warning without Docker, unless
 * ANNA_REQUIRE_DOCKER=1): a tool call the model makes runs in the container and its files land in
 * the agent's workspace; /abort during a long tool call stops it, kills it in the container and
 * leaves history consistent.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Effect, Fiber, Stream } from "effect"
import { readFileSync, realpathSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { TurnEvent } from "../../src/domain/runtime/types.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { Runtime } from "../../src/services/Runtime.ts"
import { OWNER_LABEL } from "../../src/layers/sandbox/docker/policy.ts"
import { owner } from "../../src/layers/sandbox/DockerSandbox.ts"
import { dockerReady, TEST_IMAGE, whenContainers } from "../support/docker.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { containerShell, waitForProcess } from "../support/sandboxProcesses.ts"
import { configureAgent, runtimeStack, tempHome } from "../support/runtimeStack.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

const lastRole = (r: RecordedRequest) => {
  const messages = (r.body as { messages?: Array<{ role: string; content?: unknown }> }).messages ?? []
  return messages[messages.length - 1]
}

describe.skipIf(!dockerReady)("e2e: tools in the Docker sandbox", () => {
  it.live("runs the model's bash call in the container; the file lands in the agent's workspace", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash", "read"], sandboxImage: TEST_IMAGE })
        fake.respondWith((req) => {
          const last = lastRole(req)
          return last?.role === "tool"
            ? { kind: "reply", parts: [{ type: "text", text: `The container says: ${JSON.stringify(last.content)}` }] }
            : { kind: "reply", parts: [{ type: "tool_call", id: "call_1", name: "bash", input: { command: "hostname | tee /workspace/where.txt; id -u" } }] }
        })
        const runtime = yield* Runtime
        const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "erin" })
        const events = yield* Stream.runCollect(runtime.send(chat, "where are you running?"))
        const tool = events.find((e): e is Extract<TurnEvent, { type: "tool_end" }> => e.type === "tool_end")
        assert.isFalse(tool?.isError)
        const name = /--- stdout ---\n([0-9a-f]{12})\n/.exec(tool?.output ?? "")?.[1]
        assert.isDefined(name, tool?.output)
        assert.notStrictEqual(name, hostname())
        // The user's own workspace under the agent's folder.
        assert.strictEqual(readFileSync(join(home, "workspaces", "a1", "users", chat.userId, "where.txt"), "utf8").trim(), name)
        assert.notInclude(tool?.output ?? "", "\n0\n", "never root in the container")
        const done = events[events.length - 1]
        assert.strictEqual(done?.type === "done" ? done.toolCalls : -1, 1)
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })))

  it.live("/abort during a long tool call stops it, kills it in the container, and history stays paired", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash"], sandboxImage: TEST_IMAGE })
        fake.respondWith(() => ({ kind: "reply", parts: [{ type: "tool_call", id: "call_long", name: "bash", input: { command: "sleep 300; echo finished" } }] }))
        const runtime = yield* Runtime
        const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "finn" })
        const turn = yield* Effect.forkChild(Stream.runCollect(runtime.send(chat, "please wait a long time")))
        // The engine reports the container of this test's workspace running; the sleep runs inside it.
        const workspaces = realpathSync(home)
        const ours = (c: Docker.ContainerInfo) => c.State === "running" && c.Mounts.some((m) => m.Source.startsWith(workspaces))
        const containers = yield* Effect.promise(() => whenContainers([`${OWNER_LABEL}=${owner()}`], (cs) => cs.some(ours)))
        const id = containers?.find(ours)?.Id
        assert.isDefined(id, "no sandbox container started for the tool call")
        if (id === undefined) return
        const docker = new Docker()
        yield* waitForProcess(containerShell(docker, id), "sleep 300")
        assert.isUndefined(turn.pollUnsafe(), "the turn is still running")
        const reply = yield* Stream.runCollect(runtime.send(chat, "/abort"))
        assert.include(reply.map((e) => (e.type === "text" ? e.text : "")).join(""), "Stopped the running turn")
        const events = yield* Fiber.join(turn)
        const done = events[events.length - 1]
        assert.strictEqual(done?.type === "done" ? done.stopReason : "", "aborted")
        const history = yield* (yield* MemoryProvider).assemble(chat.sessionKey, { budget: 100_000 })
        const roles = history.messages.map((m) => m.role)
        assert.deepStrictEqual(roles, ["user", "assistant", "tool_result"])
        assert.include(JSON.stringify(history.messages[2]), "aborted")
        // The sleep is gone from the container, which may still be idle-cached by the runner (or
        // already removed: then nothing of it runs either).
        const ps = yield* Effect.promise(() => docker.getContainer(id).top().catch(() => ({ Processes: [] as Array<Array<string>> })))
        assert.isFalse(JSON.stringify(ps.Processes ?? []).includes("sleep 300"), "the tool's process was killed")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })))
})

describe("e2e: Docker unavailable", () => {
  it.live("the agent still answers, without its workspace tools; it says once, neutrally, that tools are unavailable, and nothing runs", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash", "memory"] })
        const offered = (req: RecordedRequest) => ((req.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((t) => t.function.name)
        fake.respondWith((req) =>
          offered(req).includes("bash")
            ? { kind: "reply", parts: [{ type: "tool_call", id: "call_ls", name: "bash", input: { command: "ls" } }] }
            : { kind: "reply", parts: [{ type: "text", text: "I cannot run commands right now." }] }
        )
        const runtime = yield* Runtime
        const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "hank" })
        const before = fake.requests.length
        const events = yield* Stream.runCollect(runtime.send(chat, "list my files"))
        assert.deepStrictEqual(offered(fake.requests[before] as RecordedRequest), ["memory"], "no workspace tools without a sandbox")
        assert.isUndefined(events.find((e) => e.type === "tool_start"), "no command was tried")
        const notices = events.flatMap((e) => (e.type === "notice" ? [e.text] : []))
        assert.strictEqual(notices.length, 1)
        // The user gets a neutral line; why and the fix are the operator's (the log, anna doctor).
        assert.strictEqual(notices[0], "Tools are unavailable right now; the operator has been told.")
        const done = events[events.length - 1]
        assert.strictEqual(done?.type === "done" ? done.stopReason : "", "end_turn")
        assert.include(events.map((e) => (e.type === "text" ? e.text : "")).join(""), "I cannot run commands right now.")
        // Said once: the next turn of the conversation has no notice.
        const again = yield* Stream.runCollect(runtime.send(chat, "and now?"))
        assert.deepStrictEqual(again.filter((e) => e.type === "notice"), [])
        const history = yield* (yield* MemoryProvider).assemble(chat.sessionKey, { budget: 10_000 })
        assert.deepStrictEqual(history.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"])
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true, docker: new Docker({ socketPath: "/nonexistent/docker.sock", timeout: 2_000 }) })))
    })))
})
