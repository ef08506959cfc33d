/**
 * The `mcp` tool against real stdio MCP servers from npm (server-everything, server-filesystem)
 * running INSIDE a real Docker sandbox, with the image's Node: tools listed, described and called;
 * the filesystem server reads the workspace and cannot read outside it; the server's process is in
 * the container (its process list), not on the host; a server killed mid-call fails that call
 * clearly and the next call restarts it; a call past its deadline fails and the server stays usable.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Deferred, Duration, Effect, Fiber } from "effect"
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { McpServer } from "../../../src/domain/mcp/server.ts"
import { DEFAULT_LIMITS as SANDBOX_LIMITS } from "../../../src/domain/sandbox/types.ts"
import { DEFAULT_LIMITS, type McpLimits, makeSessionClients } from "../../../src/layers/mcp/sessionClients.ts"
import * as DockerSandbox from "../../../src/layers/sandbox/DockerSandbox.ts"
import { mcpTool } from "../../../src/layers/tools/mcp.ts"
import type { SandboxSession } from "../../../src/services/Sandbox.ts"
import { TEST_IMAGE } from "../../support/docker.ts"
import { installInto, nodeImageReady } from "../../support/mcpServers.ts"
import { runs, waitForProcess } from "../../support/sandboxProcesses.ts"
import { removeTemp } from "../../support/cleanup.ts"

const dirs: Array<string> = []
afterAll(async () => {
  for (const d of dirs) await removeTemp(d)
})
const ctx = { sessionKey: "s", userId: "u", agentId: "t" }
const server = (name: string, command: ReadonlyArray<string>): McpServer => ({
  agentId: "t", name, transport: "stdio", command, url: undefined, headers: {}, createdAt: 0, updatedAt: 0
})

/** A sandbox session on a fresh workspace holding both bundled servers, and the mcp tool over them. */
const setup = (limits: McpLimits = DEFAULT_LIMITS) =>
  Effect.gen(function*() {
    const workspace = mkdtempSync(join(tmpdir(), "anna-mcp-ws-"))
    dirs.push(workspace)
    const everything = yield* Effect.promise(() => installInto(workspace, "everything"))
    const filesystem = yield* Effect.promise(() => installInto(workspace, "filesystem"))
    writeFileSync(join(workspace, "hello.txt"), "hello from the workspace\n")
    const sandbox = yield* DockerSandbox.make(new Docker())
    const session: SandboxSession = yield* sandbox.start({
      agentId: "t", userId: "", workspace, image: TEST_IMAGE, network: "disabled", limits: SANDBOX_LIMITS
    })
    const servers = [server("everything", ["node", everything, "stdio"]), server("files", ["node", filesystem, "/workspace"])]
    const clients = yield* makeSessionClients(servers, Effect.succeed(session), limits)
    const tool = mcpTool(clients, limits)
    const call = (input: Record<string, unknown>) => tool.execute(input, ctx)
    return { session, clients, tool, call }
  })

/** Host processes whose command line contains `text`, and whether each is in this process's PID namespace. */
const hostProcesses = (text: string) => {
  const ours = readlinkSync("/proc/self/ns/pid")
  const found: Array<{ pid: string; sameNamespace: boolean }> = []
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text)) continue
      found.push({ pid, sameNamespace: readlinkSync(`/proc/${pid}/ns/pid`) === ours })
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found
}

const errorOf = <A, E>(self: Effect.Effect<A, E>) => Effect.flip(self)

describe.skipIf(!nodeImageReady)("mcp tool: stdio servers inside the Docker sandbox (real servers from npm)", () => {
  it.live("server-everything: list, describe, call; its process runs in the container, not on the host", () =>
    Effect.gen(function*() {
      const { session, call } = yield* setup()
      const servers = yield* call({ action: "list_servers" })
      assert.include(servers, "- everything (stdio): not started")
      const tools = yield* call({ action: "list_tools", server: "everything" })
      assert.include(tools, "- echo: Echoes back the input string")
      assert.include(tools, "- get-sum:")
      const described = JSON.parse(yield* call({ action: "describe", server: "everything", tool: "echo" })) as {
        name: string
        inputSchema: { properties: Record<string, unknown>; required: Array<string> }
      }
      assert.strictEqual(described.name, "echo")
      assert.deepStrictEqual(described.inputSchema.required, ["message"])
      assert.strictEqual(yield* call({ action: "call", server: "everything", tool: "echo", arguments: { message: "hi there" } }), "Echo: hi there")
      assert.include(yield* call({ action: "call", server: "everything", tool: "get-sum", arguments: { a: 2, b: 3 } }), "5")
      assert.include(yield* call({ action: "list_servers" }), "- everything (stdio): connected")

      // The server runs in the sandbox: the container's own process list shows it…
      assert.isTrue(yield* runs(session, "/workspace/.mcp/everything.mjs"))
      // …and no process of this host's PID namespace runs it (container processes may show up in
      // the host's /proc, but in the container's namespace).
      assert.deepStrictEqual(hostProcesses("/workspace/.mcp/everything.mjs").filter((p) => p.sameNamespace), [])

      // Wrong input: clear errors, nothing breaks.
      assert.include((yield* errorOf(call({ action: "call", server: "nope", tool: "echo" }))).reason, "no such server; servers: everything, files")
      assert.include((yield* errorOf(call({ action: "describe", server: "everything", tool: "nope" }))).reason, `everything has no tool "nope"`)
      assert.include((yield* errorOf(call({ action: "call", server: "everything" }))).reason, `call needs "tool"`)
      const bad = yield* errorOf(call({ action: "call", server: "everything", tool: "get-sum", arguments: { a: "x" } }))
      assert.include(bad.reason, "get-sum")
      assert.strictEqual(yield* call({ action: "call", server: "everything", tool: "echo", arguments: { message: "still" } }), "Echo: still")
    }))

  it.live("server-filesystem on /workspace reads the workspace and cannot read outside it", () =>
    Effect.gen(function*() {
      const { call } = yield* setup()
      assert.strictEqual(
        (yield* call({ action: "call", server: "files", tool: "read_text_file", arguments: { path: "/workspace/hello.txt" } })).trim(),
        "hello from the workspace"
      )
      const outside = yield* errorOf(call({ action: "call", server: "files", tool: "read_text_file", arguments: { path: "/etc/passwd" } }))
      assert.include(outside.reason, "files/read_text_file failed")
      assert.match(outside.reason, /outside allowed directories|Access denied/)
      assert.notInclude(outside.reason, "root:x:0:0")
      const dotdot = yield* errorOf(call({ action: "call", server: "files", tool: "read_text_file", arguments: { path: "/workspace/../etc/passwd" } }))
      assert.notInclude(dotdot.reason, "root:x:0:0")
    }))

  it.live("a server killed mid-call fails that call with its exit, and the next call restarts it", () =>
    Effect.gen(function*() {
      const { session, clients, call } = yield* setup()
      assert.strictEqual(yield* call({ action: "call", server: "everything", tool: "echo", arguments: { message: "a" } }), "Echo: a")
      const progressed = yield* Deferred.make<void>()
      // A 60 s operation that reports progress every second: the first report shows the call is in the server.
      const long = yield* Effect.forkChild(clients.run("everything", "the call of trigger-long-running-operation", (c, signal) =>
        c.callTool({ name: "trigger-long-running-operation", arguments: { duration: 60, steps: 60 } }, undefined, {
          signal,
          onprogress: () => Deferred.doneUnsafe(progressed, Effect.void)
        })), { startImmediately: true })
      yield* Deferred.await(progressed)
      // (busybox has no pkill; the pattern's brackets keep this shell from matching itself)
      const kill = yield* session.exec(
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q 'everything[.]mjs' && kill -9 $(basename $p); done; true"
      )
      assert.strictEqual(kill.exitCode, 0)
      const failure = yield* Effect.flip(Fiber.join(long))
      assert.strictEqual(failure.server, "everything")
      assert.match(failure.reason, /^exited \(code \d+\).* during the call of trigger-long-running-operation; the next call restarts it$/)
      assert.isFalse(yield* runs(session, "/workspace/.mcp/everything.mjs"))
      // The next call starts the server again.
      assert.strictEqual(yield* call({ action: "call", server: "everything", tool: "echo", arguments: { message: "back" } }), "Echo: back")
      yield* waitForProcess(session, "/workspace/.mcp/everything.mjs")
    }))

  it.live("a call past its deadline fails; the server stays connected and answers the next call", () =>
    Effect.gen(function*() {
      const { call } = yield* setup({ ...DEFAULT_LIMITS, callTimeout: Duration.seconds(2) })
      const late = yield* errorOf(call({ action: "call", server: "everything", tool: "trigger-long-running-operation", arguments: { duration: 30, steps: 1 } }))
      assert.include(late.reason, "got no answer within 2 s (cancelled)")
      assert.include(yield* call({ action: "list_servers" }), "- everything (stdio): connected")
      assert.strictEqual(yield* call({ action: "call", server: "everything", tool: "echo", arguments: { message: "ok" } }), "Echo: ok")
    }))

  it.live("a command that is not an MCP server fails with what it said and its exit", () =>
    Effect.gen(function*() {
      const { session } = yield* setup({ ...DEFAULT_LIMITS, connectTimeout: Duration.seconds(10) })
      const clients = yield* makeSessionClients([server("broken", ["sh", "-c", "echo oops >&2; exit 3"])], Effect.succeed(session), DEFAULT_LIMITS)
      const failure = yield* Effect.flip(clients.run("broken", "tools/list", (c, signal) => c.listTools(undefined, { signal })))
      assert.include(failure.reason, "exited (code 3): oops")
      assert.deepStrictEqual(yield* clients.state("broken"), { failed: failure.reason })
    }))
})

