/**
 * A hostile chat user, end to end through the runtime with the real Docker sandbox and a scripted
 * model that makes the tool calls the user asks for ("RUN: <command>" → a bash call; "READ: <path>"
 * → a read call). Each case is one of the escapes of the issue "Close the sandbox escapes…":
 * prompt files and presets planted in the sandbox (symlinks to host files, FIFOs), one user's files
 * seen by another, a tightening that does not reach a running gateway, unlimited containers, a turn
 * without a deadline, a workspace without a quota.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { AgentStore } from "../../src/services/AgentStore.ts"
import { ConfigStore } from "../../src/services/ConfigStore.ts"
import { owner } from "../../src/layers/sandbox/DockerSandbox.ts"
import { AGENT_LABEL, OWNER_LABEL } from "../../src/layers/sandbox/docker/policy.ts"
import { dockerReady, TEST_IMAGE, whenContainers } from "../support/docker.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { configureAgent, runtimeStack, tempHome } from "../support/runtimeStack.ts"
import { removeTemp } from "../support/cleanup.ts"
import { compliant, say } from "../support/hostileUser.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

const scratch = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-hostile-"))),
  (dir) => Effect.promise(() => removeTemp(dir))
)

/**
 * Whether every container of the agent that this process started is gone: waits for the engine's
 * events about them (false if they are still there after 20 s).
 */
const agentContainersGone = (agentId: string) =>
  Effect.promise(() => whenContainers([`${AGENT_LABEL}=${agentId}`, `${OWNER_LABEL}=${owner()}`], (cs) => cs.length === 0, 20_000)).pipe(
    Effect.map((cs) => cs !== undefined)
  )

const agentContainers = (agentId: string) =>
  Effect.promise(async () => {
    const Docker = (await import("dockerode")).default
    return (await new Docker().listContainers({ all: true, filters: { label: [`dev.anna.agent=${agentId}`] } })).length
  })

describe.skipIf(!dockerReady)("e2e: a hostile chat user", () => {
  it.live("prompt files and presets planted in the sandbox never reach the model; a FIFO blocks nothing", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      const host = yield* scratch
      writeFileSync(join(host, "secret.txt"), "HOST-SECRET-7781\n", { mode: 0o600 })
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash", "agent"], sandboxImage: TEST_IMAGE })
        mkdirSync(join(home, "workspaces", "a1", "agents"), { recursive: true })
        writeFileSync(join(home, "workspaces", "a1", "SOUL.md"), "OPERATOR-SOUL-1234")
        // Even an operator's FIFO (a mistake) must not block a turn: prompt files are read without blocking.
        execFileSync("mkfifo", [join(home, "workspaces", "a1", "SYSTEM.md")])
        writeFileSync(join(home, "workspaces", "a1", "agents", "helper.md"), "---\ndescription: OPERATOR-PRESET\n---\nHelp.")
        fake.respondWith(compliant)
        const planted = yield* say(
          "mallory",
          `RUN: ln -s ${host}/secret.txt /workspace/SYSTEM.md; ln -s /proc/self/environ /workspace/SOUL.md; mkdir -p /workspace/agents; ` +
            `ln -s ${host}/secret.txt /workspace/agents/evil.md; ln -s /proc/self/environ /workspace/agents/env.md; ` +
            `mkfifo /workspace/agents/fifo.md; mkfifo /workspace/SYSTEM.md.fifo; printf -- '---\\ndescription: MINE\\n---\\nMy own.' > /workspace/agents/mine.md; echo planted`
        )
        assert.include(planted.tool?.output ?? "", "planted")
        // The next turns: the model sees the operator's files (and the user's own plain preset), nothing of the host.
        yield* say("mallory", "hello again")
        yield* say("mallory", "and again")
        const seen = JSON.stringify(fake.requests.slice(-2).map((r) => r.body))
        assert.include(seen, "OPERATOR-SOUL-1234")
        assert.include(seen, "OPERATOR-PRESET")
        assert.include(seen, "MINE", "a plain preset the agent wrote in its own workspace still works")
        assert.notInclude(seen, "HOST-SECRET-7781")
        assert.notInclude(seen, "PATH=", "the gateway's environment")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 60_000 })

  it.live("users of one agent have their own workspaces; a shared one only when the operator asks", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash", "read"], sandboxImage: TEST_IMAGE })
        fake.respondWith(compliant)
        yield* say("alice", "RUN: echo alice-diary > /workspace/private.txt")
        const bobCat = yield* say("bob", "RUN: cat /workspace/private.txt; ls /workspace")
        assert.notInclude(bobCat.tool?.output ?? "", "alice-diary")
        const bobRead = yield* say("bob", "READ: /workspace/private.txt")
        assert.isTrue(bobRead.tool?.isError)
        const aliceRead = yield* say("alice", "READ: private.txt")
        assert.include(aliceRead.tool?.output ?? "", "alice-diary")

        yield* (yield* AgentStore).update("a1", { sandboxWorkspace: "shared" })
        yield* say("alice", "RUN: echo team-note > /workspace/team.txt")
        const bobTeam = yield* say("bob", "READ: team.txt")
        assert.include(bobTeam.tool?.output ?? "", "team-note")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 60_000 })

  it.live("a tightening reaches the running gateway: network off and tools off apply at once, live containers are closed", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash"], sandboxImage: TEST_IMAGE, sandboxNetwork: "allow_all" })
        fake.respondWith(compliant)
        const open = yield* say("alice", "RUN: cat /proc/net/dev")
        assert.include(open.tool?.output ?? "", "eth0")
        assert.strictEqual(yield* agentContainers("a1"), 1)
        yield* (yield* AgentStore).update("a1", { sandboxNetwork: "disabled" })
        // The idle session's container is closed without waiting for its next message.
        assert.isTrue(yield* agentContainersGone("a1"), "the allow_all container is still running")
        const closed = yield* say("alice", "RUN: cat /proc/net/dev")
        assert.notInclude(closed.tool?.output ?? "", "eth0")
        yield* (yield* AgentStore).update("a1", { tools: [] })
        assert.isTrue(yield* agentContainersGone("a1"))
        const before = fake.requests.length
        const none = yield* say("alice", "RUN: echo should-not-run")
        // The model may still try; the call is refused and nothing runs.
        assert.notStrictEqual(none.tool?.isError, false)
        assert.notInclude(none.tool?.output ?? "", "should-not-run\n")
        const offered = fake.requests.slice(before).flatMap((r) => (r.body as { tools?: Array<{ function?: { name?: string } }> }).tools ?? [])
        assert.deepStrictEqual(offered.map((t) => t.function?.name), [], "tools are still offered to the model")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 60_000 })

  it.live("containers are created only for commands and capped per user, with a clear reply", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash", "read", "write"], sandboxImage: TEST_IMAGE })
        yield* (yield* ConfigStore).setSetting("sandbox.max_per_user", "1")
        fake.respondWith(compliant)
        yield* say("carol", "just chatting", "c1")
        yield* say("carol", "WRITE: notes.txt 10", "c1")
        assert.strictEqual(yield* agentContainers("a1"), 0, "no container for a chat or a file tool")
        const first = yield* say("carol", "RUN: echo one", "c1")
        assert.include(first.tool?.output ?? "", "one")
        const second = yield* say("carol", "RUN: echo two", "c2")
        assert.isTrue(second.tool?.isError)
        assert.include(second.tool?.output ?? "", "live sandbox")
        assert.strictEqual(yield* agentContainers("a1"), 1)
        // Another user is not affected by carol's cap.
        const dave = yield* say("dave", "RUN: echo three", "c1")
        assert.include(dave.tool?.output ?? "", "three")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 60_000 })

  it.live("the soft quota (sandbox.disk_bound quota): write is refused past it, commands cannot grow files once over it", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash", "write"], sandboxImage: TEST_IMAGE, sandboxDiskMb: 1 })
        // The hard bound (a filesystem per workspace) is tested in hostileRound3.test.ts.
        yield* (yield* ConfigStore).setSetting("sandbox.disk_bound", "quota")
        fake.respondWith(compliant)
        const fits = yield* say("erin", "WRITE: half.txt 600000")
        assert.isFalse(fits.tool?.isError, fits.reply.slice(0, 500))
        const tooBig = yield* say("erin", "WRITE: more.txt 600000")
        assert.isTrue(tooBig.tool?.isError, tooBig.reply.slice(0, 500))
        assert.include(tooBig.tool?.output ?? "", "quota")
        // One file cannot pass the quota (RLIMIT_FSIZE in the container) ...
        const dd = yield* say("erin", "RUN: dd if=/dev/zero of=/workspace/one bs=1024 count=1500 2>&1; ls -l /workspace/one")
        assert.match(dd.tool?.output ?? "", /File size limit|exceeded|error/i)
        // ... but with the file already there the workspace is over it: the command is told, and the next ones cannot grow anything.
        assert.include(dd.tool?.output ?? "", "over its disk quota")
        const grow = yield* say("erin", "RUN: echo more > /workspace/more.txt && echo grew")
        assert.notInclude(grow.tool?.output ?? "", "grew")
        const clean = yield* say("erin", "RUN: rm /workspace/one /workspace/half.txt && echo cleaned")
        assert.include(clean.tool?.output ?? "", "cleaned")
        const again = yield* say("erin", "RUN: echo more > /workspace/more.txt && echo grew")
        assert.include(again.tool?.output ?? "", "grew")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 60_000 })
})

describe("e2e: turn deadline", () => {
  it.live("a provider that never answers holds the session only until the agent's turn deadline", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: [], turnTimeoutSeconds: 1 })
        fake.respondWith(() => ({ kind: "hang" }))
        const stuck = yield* say("gina", "hello?")
        assert.include(stuck.reply, "ran longer than its 1 s limit")
        const done = stuck.events[stuck.events.length - 1]
        assert.strictEqual(done?.type === "done" ? done.stopReason : "", "unavailable")
        // The session is free again.
        fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "back" }] }))
        const next = yield* say("gina", "hello?")
        assert.include(next.reply, "back")
      }).pipe(Effect.provide(runtimeStack(home)))
    })), { timeout: 60_000 })
})
