/**
 * The `mcp` tool through the whole runtime (real SQLite, the fake LLM, the real Docker sandbox):
 * offered only when the agent's `tools` allow it, the `mcp` plugin is on for the agent and the agent
 * has a server; the model's call starts the stdio server inside the session's container on first
 * use, and the result goes back to the model; the server goes with the session's runner.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { TurnEvent } from "../../../src/domain/runtime/types.ts"
import * as SqliteMcpServers from "../../../src/layers/mcp/SqliteMcpServers.ts"
import { McpServers } from "../../../src/services/McpServers.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import Docker from "dockerode"
import { realpathSync } from "node:fs"
import { join } from "node:path"
import { OWNER_LABEL } from "../../../src/layers/sandbox/docker/policy.ts"
import { owner } from "../../../src/layers/sandbox/DockerSandbox.ts"
import { TEST_IMAGE, whenContainers } from "../../support/docker.ts"
import { containerShell, runs } from "../../support/sandboxProcesses.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { installInto, nodeImageReady } from "../../support/mcpServers.ts"
import { configureAgent, runtimeStack, tempHome } from "../../support/runtimeStack.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

interface Body {
  readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }>
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
}
const body = (r: RecordedRequest | undefined) => (r?.body ?? {}) as Body
const toolNames = (r: RecordedRequest | undefined) => (body(r).tools ?? []).map((t) => t.function.name)
const stack = (home: string, sandbox: boolean) => Layer.provideMerge(SqliteMcpServers.layer, runtimeStack(home, { sandbox }))

const say = (user: string, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve({ platform: "cli", externalUserId: user })
    return { chat, events: yield* Stream.runCollect(runtime.send(chat, text)) }
  })

describe("mcp tool in the runtime", () => {
  it.live("is offered only with the tools setting, the plugin on for the agent, and a server", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }] }))
        yield* configureAgent(fake, "with", { tools: ["mcp", "memory"] })
        yield* configureAgent(fake, "without", { tools: ["memory"] })
        yield* configureAgent(fake, "none", { tools: ["mcp", "memory"] })
        yield* configureAgent(fake, "off", { tools: ["mcp", "memory"] })
        const servers = yield* McpServers
        for (const agent of ["with", "without", "off"]) {
          yield* servers.add(agent, "everything", { transport: "stdio", command: ["node", "/workspace/.mcp/everything.mjs", "stdio"] })
        }
        yield* (yield* PluginStore).setFor("mcp", "off", false)
        const offered: Record<string, ReadonlyArray<string>> = {}
        for (const agent of ["with", "without", "none", "off"]) {
          const before = fake.requests.length
          yield* say(`user-${agent}`, `/agent ${agent}`)
          yield* say(`user-${agent}`, "hello")
          offered[agent] = toolNames(fake.requests[fake.requests.length - 1])
          assert.isAbove(fake.requests.length, before)
        }
        assert.deepStrictEqual(offered, { with: ["memory", "mcp"], without: ["memory"], none: ["memory"], off: ["memory"] })
        assert.include(offered.with, "mcp")
        assert.notInclude(offered.without, "mcp")
        assert.notInclude(offered.none, "mcp")
        assert.notInclude(offered.off, "mcp")
      }).pipe(Effect.provide(stack(home, false)))
    })))
})

describe.skipIf(!nodeImageReady)("mcp tool in the runtime, with the real Docker sandbox", () => {
  it.live("the model's call starts the stdio server in the session's container and gets its answer", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["mcp"], sandboxImage: TEST_IMAGE })
        yield* (yield* McpServers).add("a1", "everything", { transport: "stdio", command: ["node", "/workspace/.mcp/everything.mjs", "stdio"] })
        fake.respondWith((req) => {
          const messages = body(req).messages ?? []
          const last = messages[messages.length - 1]
          return last?.role === "tool"
            ? { kind: "reply", parts: [{ type: "text", text: `The server said: ${JSON.stringify(last.content)}` }] }
            : {
              kind: "reply",
              parts: [{ type: "tool_call", id: "call_1", name: "mcp", input: { action: "call", server: "everything", tool: "echo", arguments: { message: "from the model" } } }]
            }
        })
        const runtime = yield* Runtime
        const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "erin" })
        yield* Effect.promise(() => installInto(join(home, "workspaces", "a1", "users", chat.userId), "everything"))
        const events = yield* Stream.runCollect(runtime.send(chat, "echo something"))
        const tool = events.find((e): e is Extract<TurnEvent, { type: "tool_end" }> => e.type === "tool_end")
        assert.isFalse(tool?.isError, tool?.output)
        assert.strictEqual(tool?.output, "Echo: from the model")
        const text = events.map((e) => (e.type === "text" ? e.text : "")).join("")
        assert.include(text, "Echo: from the model")
        // The server runs in the session's container (its workspace is this test's)…
        const workspaces = realpathSync(home)
        const ours = (c: Docker.ContainerInfo) => c.State === "running" && c.Mounts.some((m) => m.Source.startsWith(workspaces))
        const running = yield* Effect.promise(() => whenContainers([`${OWNER_LABEL}=${owner()}`], (cs) => cs.some(ours)))
        const id = running?.find(ours)?.Id
        assert.isDefined(id, "no sandbox container for the session")
        if (id === undefined) return
        assert.isTrue(yield* runs(containerShell(new Docker(), id), "/workspace/.mcp/everything.mjs"))
        // …and goes with the session's runner (idle after 2 s here): the container is removed.
        const gone = yield* Effect.promise(() => whenContainers([`${OWNER_LABEL}=${owner()}`], (cs) => cs.every((c) => c.Id !== id)))
        assert.isDefined(gone, "the session's container outlived its runner")
      }).pipe(Effect.provide(stack(home, true)))
    })))
})
