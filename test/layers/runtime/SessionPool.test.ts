/**
 * The SessionPool as its other users (a scheduler, the admin API) reach it: live sessions listed
 * with their state, a running turn aborted by session key, a runner released on demand and reaped
 * when idle, a live sandbox closed as soon as its agent's settings change; and per turn no file read:
 * the agent's SYSTEM.md is read once and again only after it changed. A local sandbox (no Docker)
 * stands for the Docker one: what is tested here is the pool, not the container.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ChatTarget } from "../../../src/domain/runtime/types.ts"
import { DockerUnavailable } from "../../../src/domain/sandbox/errors.ts"
import * as SqliteConfigStore from "../../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as AgentFiles from "../../../src/layers/runtime/agentFiles.ts"
import { PollFiles } from "../../../src/domain/config/filePolling.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { SessionPool } from "../../../src/services/SessionPool.ts"
import { sqliteTemp } from "../../support/db.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import * as LocalSandbox from "../../support/localSandbox.ts"
import { eventually } from "../../support/eventually.ts"
import { fastTransport } from "../providers/contract.ts"

const suite = fakeLlmSuite()

const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  suite.keep(dir)
  return dir
}

const stack = (home: string, started: { count: number; unavailable?: DockerUnavailable | undefined }) =>
  Compose.agentRuntime({ runnerIdle: "1 minute", configPoll: "1 second" }).pipe(
    Layer.provide(LocalSandbox.sandboxLayer({}, started)),
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteConfigStore.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )

const provider = () => localProvider(suite.fake)

const user = (name: string): ChatTarget => ({ platform: "cli", externalUserId: name, userName: name })

const turn = (target: ChatTarget, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve(target)
    const events = yield* Stream.runCollect(runtime.send(chat, text))
    return { chat, events }
  })

describe("SessionPool", () => {
  it.effect("lists live sessions, aborts a running turn by key, releases a runner and reaps idle ones", () => {
    const started = { count: 0 }
    const home = tempDir("anna-pool-")
    return Effect.gen(function*() {
      yield* (yield* ProviderStore).add(provider())
      yield* (yield* AgentStore).create("a1", { providerId: "local", tools: ["bash", "memory"] })
      const pool = yield* SessionPool
      assert.deepStrictEqual(yield* pool.live, [])

      suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "hi" }] })
      const first = yield* turn(user("ann"), "hello")
      const live = yield* pool.live
      assert.deepStrictEqual(live.map((s) => [s.sessionKey, s.agentId, s.running, s.sandbox]), [[first.chat.sessionKey, "a1", false, true]])
      assert.strictEqual(started.count, 1, "the workspace tools started the session's sandbox")

      // A consumer of the pool (a scheduler, say) sends a turn itself; it hangs in the model call, the
      // pool lists it as running, and abort by session key stops it.
      suite.fake.script({ kind: "hang" })
      const running = yield* Effect.forkChild(Stream.runCollect(pool.send(first.chat, "take your time")))
      yield* Effect.promise(() => suite.fake.request(1))
      assert.isTrue((yield* pool.live)[0]?.running)
      assert.isTrue(yield* pool.abort(first.chat.sessionKey))
      const aborted = yield* Fiber.join(running)
      assert.deepStrictEqual(aborted.at(-1)?.type === "done" ? aborted.at(-1) : undefined, {
        type: "done",
        stopReason: "aborted",
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
        modelCalls: 0,
        toolCalls: 0
      })
      assert.isFalse(yield* pool.abort(first.chat.sessionKey), "nothing runs any more")

      // Release ends the runner now; the next turn builds a new one (and a new sandbox).
      assert.isTrue(yield* pool.release(first.chat.sessionKey, "operator asked"))
      assert.deepStrictEqual(yield* pool.live, [])
      assert.isFalse(yield* pool.release(first.chat.sessionKey, "again"))
      suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "back" }] })
      yield* turn(user("ann"), "again")
      assert.strictEqual(started.count, 2)

      // Idle runners are reaped after runnerIdle.
      yield* TestClock.adjust("61 seconds")
      assert.deepStrictEqual(yield* pool.live, [])
    }).pipe(Effect.provide(stack(home, started)))
  })

  it.effect("a change to the agent's sandbox closes its live runners at once, and the next turn gets a new sandbox", () => {
    const started = { count: 0 }
    const home = tempDir("anna-pool-")
    return Effect.gen(function*() {
      yield* (yield* ProviderStore).add(provider())
      const agents = yield* AgentStore
      yield* agents.create("a1", { providerId: "local", tools: ["bash", "memory"] })
      const pool = yield* SessionPool
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }] }))
      yield* turn(user("ann"), "one")
      yield* turn(user("bob"), "one")
      assert.strictEqual((yield* pool.live).length, 2)

      yield* agents.update("a1", { sandboxMemoryMb: 256 })
      // The watcher sees the new configuration version at its next poll and closes both runners.
      yield* TestClock.adjust("1 second")
      yield* eventually(Effect.map(pool.live, (live) => assert.deepStrictEqual(live, [])))
      yield* turn(user("ann"), "two")
      assert.strictEqual(started.count, 3)
      // A change that does not touch the sandbox or tools leaves runners alone.
      yield* agents.update("a1", { maxTurns: 7 })
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* pool.live).length, 1)
    }).pipe(Effect.provide(stack(home, started)))
  })

  it.effect("without a sandbox the agent still talks: workspace tools left out, said once, the sandbox tried again a minute later", () => {
    const started: { count: number; unavailable?: DockerUnavailable | undefined } = {
      count: 0,
      unavailable: new DockerUnavailable({ detail: "connect ENOENT /var/run/docker.sock" })
    }
    const home = tempDir("anna-pool-")
    return Effect.gen(function*() {
      yield* (yield* ProviderStore).add(provider())
      yield* (yield* AgentStore).create("a1", { providerId: "local" })
      const base = suite.fake.requests.length
      const tools = (i: number) => ((suite.fake.requests[base + i]?.body as { tools?: Array<{ function: { name: string } }> } | undefined)?.tools ?? []).map((t) => t.function.name)
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hello" }] }))
      const first = yield* turn(user("ann"), "just say hello")
      // The tools that need no sandbox stay (webfetch and the scheduler run outside it).
      assert.deepStrictEqual(tools(0), ["memory", "scheduler", "webfetch", "agent"])
      const notices = first.events.flatMap((e) => (e.type === "notice" ? [e.text] : []))
      assert.strictEqual(notices.length, 1)
      assert.strictEqual(notices[0], "Tools are unavailable right now; the operator has been told.")
      assert.strictEqual(started.count, 0, "nothing was started")
      const second = yield* turn(user("ann"), "again")
      assert.deepStrictEqual(second.events.filter((e) => e.type === "notice"), [], "said once")

      // Docker comes back: within the minute nothing changes, after it the next turn has the tools.
      started.unavailable = undefined
      yield* turn(user("ann"), "still none")
      assert.deepStrictEqual(tools(2), ["memory", "scheduler", "webfetch", "agent"])
      yield* TestClock.adjust("61 seconds")
      yield* turn(user("ann"), "now?")
      assert.deepStrictEqual(tools(3), ["bash", "read", "write", "edit", "memory", "skills", "search_skills", "create_skill", "scheduler", "webfetch", "agent"])
      assert.strictEqual(started.count, 1)
    }).pipe(Effect.provide(stack(home, started)))
  })

  it.effect("on a shared volume (PollFiles: a cluster) the agent's files are kept for the interval, then read again", () => {
    const home = tempDir("anna-pool-")
    return Effect.gen(function*() {
      const folder = join(home, "workspaces", "a1")
      mkdirSync(folder, { recursive: true })
      writeFileSync(join(folder, "SYSTEM.md"), "version one")
      const cache = yield* AgentFiles.make.pipe(Effect.provideService(PollFiles, 2_000))
      assert.strictEqual((yield* cache.files(folder)).systemMd, "version one")
      writeFileSync(join(folder, "SYSTEM.md"), "version two")
      yield* TestClock.adjust(1_999)
      assert.strictEqual((yield* cache.files(folder)).systemMd, "version one")
      assert.strictEqual(yield* cache.reads, 1)
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* cache.files(folder)).systemMd, "version two")
      assert.strictEqual(yield* cache.reads, 2)
    }).pipe(Effect.scoped)
  })

  it.effect("the agent's own files are read once, not on every turn, and again after they change", () => {
    const home = tempDir("anna-pool-")
    return Effect.gen(function*() {
      const folder = join(home, "workspaces", "a1")
      mkdirSync(join(folder, "agents"), { recursive: true })
      writeFileSync(join(folder, "SYSTEM.md"), "version one")
      const cache = yield* AgentFiles.make
      assert.strictEqual((yield* cache.files(folder)).systemMd, "version one")
      assert.strictEqual((yield* cache.files(folder)).systemMd, "version one")
      assert.strictEqual(yield* cache.reads, 1)

      writeFileSync(join(folder, "SYSTEM.md"), "version two")
      writeFileSync(join(folder, "agents", "scout.md"), "---\ndescription: Finds facts\n---\nYou find facts.")
      // The watcher's event, not a timer, makes the next read go to disk.
      let seen = yield* cache.files(folder)
      while (seen.systemMd !== "version two" || seen.presets.length === 0) {
        yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
        seen = yield* cache.files(folder)
      }
      assert.deepStrictEqual(seen.presets.map((p) => p.name), ["scout"])
      const reads = yield* cache.reads
      yield* cache.files(folder)
      yield* cache.files(folder)
      assert.strictEqual(yield* cache.reads, reads, "unchanged files are not read again")

      // A folder that does not exist yet is noticed when it appears.
      const later = join(home, "workspaces", "a2")
      assert.strictEqual((yield* cache.files(later)).systemMd, undefined)
      mkdirSync(later, { recursive: true })
      writeFileSync(join(later, "SOUL.md"), "a soul")
      let soul = yield* cache.files(later)
      while (soul.soulMd !== "a soul") {
        yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
        soul = yield* cache.files(later)
      }
    }).pipe(Effect.scoped)
  })
})
