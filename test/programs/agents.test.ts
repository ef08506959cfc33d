/**
 * The agent verbs an operator reaches for, through the real CLI (spawned processes, real SQLite,
 * the fake LLM server as the provider): an agent created without a model is disabled until it has
 * one and is never the fallback meanwhile; enable (refused without a model) and disable; remove
 * (with --yes; its sessions and folder stay); the system prompt as TEXT or @FILE; the group-chat
 * bindings. And, in process, the SessionPool closing an agent's live sandboxes when it is disabled
 * or removed (what a running gateway does from the next configuration check, without a restart).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Agent } from "../../src/domain/config/agent.ts"
import type { ChatTarget } from "../../src/domain/runtime/types.ts"
import * as SqliteConfigStore from "../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../src/programs/compose.ts"
import { AgentStore } from "../../src/services/AgentStore.ts"
import { ProviderStore } from "../../src/services/ProviderStore.ts"
import { Runtime } from "../../src/services/Runtime.ts"
import { SessionPool } from "../../src/services/SessionPool.ts"
import { fastTransport } from "../layers/providers/contract.ts"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"
import { sqliteTemp } from "../support/db.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import * as LocalSandbox from "../support/localSandbox.ts"
import { localProvider } from "../support/runtimeStack.ts"
import { eventually } from "../support/eventually.ts"

const suite = fakeLlmSuite()

/** A fresh home with the fake server as provider `local` (default model fake-large). */
const setup = async () => {
  const h = newHome()
  suite.keep(h)
  const added = await anna(h, "provider", "add", "local", "--type", "openai", "--base-url", suite.fake.openAiUrl, "--api-key", "sk-x", "--default-model", "fake-large")
  assert.strictEqual(added.code, 0, added.stderr)
  return h
}

const ok = (r: Run) => {
  assert.strictEqual(r.code, 0, r.stdout + r.stderr)
  return r
}

/** Refused: exit 1 and one line on stderr, saying `says`. */
const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  const lines = r.stderr.trim().split("\n")
  assert.strictEqual(lines.length, 1, r.stderr)
  assert.match(lines[0] ?? "", /^anna: /)
  assert.include(r.stderr, says)
}

/** A usage error: exit 2, the problem on the first line, then the command's usage. */
const misused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 2, r.stdout + r.stderr)
  assert.match(r.stderr.split("\n")[0] ?? "", /^anna: /)
  assert.include(r.stderr.split("\n")[0], says)
  assert.match(r.stderr.split("\n")[1] ?? "", /^usage: anna /)
}

const agentState = async (h: string, id: string) => {
  const a = await annaJson<Agent>(h, "agent", "show", id)
  return { enabled: a.enabled, awaitingModel: a.awaitingModel }
}

interface ChatJson {
  readonly reply: string
  readonly sessionKey: string
}

describe("an agent without a model", () => {
  it("is created disabled, is not the fallback for new users, and is enabled when it gets a model", async () => {
    const h = await setup()
    const created = ok(await anna(h, "agent", "set", "z3"))
    assert.include(created.stdout, "Created agent z3.")
    assert.include(created.stdout, "Agent z3 is disabled until it has a model: anna agent set z3 --model PROVIDER/MODEL")
    assert.deepStrictEqual(await agentState(h, "z3"), { enabled: false, awaitingModel: true })
    assert.match(ok(await anna(h, "agent", "list")).stdout, /z3\s+-\s+.*disabled \(no model\)/)

    // With no other agent, a new user is told none is enabled and how to fix it (not "z3 has no usable model").
    const none = await anna(h, "chat", "-p", "hi")
    assert.strictEqual(none.code, 1, none.stdout + none.stderr)
    assert.include(none.stderr, "no agent is enabled (z3): anna agent enable <id>, or give one a model")

    // z3 was created first, yet a new user's turn goes to the enabled agent created after it.
    ok(await anna(h, "agent", "set", "good", "--model", "local/fake-large"))
    assert.deepStrictEqual(await agentState(h, "good"), { enabled: true, awaitingModel: false })
    suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "good here" }] })
    const turn = await annaJson<ChatJson>(h, "chat", "-p", "hi")
    assert.strictEqual(turn.reply, "good here")
    assert.match(turn.sessionKey, /^good:cli:/)

    // Enabling it is refused until it has a model, saying how to give it one.
    refused(await anna(h, "agent", "enable", "z3"), "anna agent set z3 --model PROVIDER/MODEL")
    assert.deepStrictEqual(await agentState(h, "z3"), { enabled: false, awaitingModel: true })

    // Other settings leave it waiting; a model enables it.
    ok(await anna(h, "agent", "set", "z3", "--max-turns", "5"))
    assert.deepStrictEqual(await agentState(h, "z3"), { enabled: false, awaitingModel: true })
    const given = ok(await anna(h, "agent", "set", "z3", "--model", "local"))
    assert.include(given.stdout, "Agent z3 has a model now, so it is enabled.")
    assert.deepStrictEqual(await agentState(h, "z3"), { enabled: true, awaitingModel: false })
  })

  it("disable and enable: an agent disabled by the operator stays disabled when its model changes", async () => {
    const h = await setup()
    ok(await anna(h, "agent", "set", "a1", "--model", "local/fake-large"))
    ok(await anna(h, "agent", "set", "a2", "--model", "local/fake-small"))
    const off = ok(await anna(h, "agent", "disable", "a1"))
    assert.include(off.stdout, "Disabled agent a1")
    assert.deepStrictEqual(await agentState(h, "a1"), { enabled: false, awaitingModel: false })
    ok(await anna(h, "agent", "set", "a1", "--model", "local/fake-small"))
    assert.deepStrictEqual(await agentState(h, "a1"), { enabled: false, awaitingModel: false })
    assert.match(ok(await anna(h, "agent", "list")).stdout, /a1\s+local\/fake-small.*\sdisabled\n/)

    // A disabled agent answers nobody: the fallback is a2, and naming a1 is refused.
    suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "from a2" }] })
    assert.match((await annaJson<ChatJson>(h, "chat", "-p", "hi")).sessionKey, /^a2:cli:/)
    const named = await anna(h, "chat", "-p", "hi", "--agent", "a1")
    assert.strictEqual(named.code, 1, named.stdout + named.stderr)
    assert.include(named.stderr, `no enabled agent "a1"`)

    const on = await annaJson<Agent>(h, "agent", "enable", "a1")
    assert.strictEqual(on.enabled, true)
    suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "from a1" }] })
    assert.match((await annaJson<ChatJson>(h, "chat", "-p", "hi")).sessionKey, /^a1:cli:/)

    refused(await anna(h, "agent", "disable", "ghost"), `no agent "ghost"`)
    refused(await anna(h, "agent", "enable", "ghost"), `no agent "ghost"`)
    assert.strictEqual((await anna(h, "agent", "enable")).code, 2, "the id is required")
  })
})

describe("anna agent remove", () => {
  it("needs --yes, refuses an unknown id, and keeps the sessions and the folder", async () => {
    const h = await setup()
    ok(await anna(h, "agent", "set", "a1", "--model", "local/fake-large"))
    ok(await anna(h, "user", "add", "alice", "--default-agent", "a1"))
    ok(await anna(h, "channel", "bind", "telegram", "-100", "a1"))
    suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "remember me" }] })
    const turn = await annaJson<ChatJson>(h, "chat", "-p", "hi")
    const folder = join(h, "workspaces", "a1")
    mkdirSync(folder, { recursive: true })
    writeFileSync(join(folder, "SOUL.md"), "a soul")

    refused(await anna(h, "agent", "remove", "a1"), "removing agent a1 cannot be undone (its sessions and folder stay); pass --yes to do it")
    refused(await anna(h, "agent", "remove", "ghost", "--yes"), `no agent "ghost" (see: anna agent list)`)
    assert.deepStrictEqual((await annaJson<Array<Agent>>(h, "agent", "list")).map((a) => a.id), ["a1"], "nothing removed without --yes")

    const text = ok(await anna(h, "agent", "remove", "a1", "--yes"))
    assert.include(text.stdout, "Removed agent a1. Unbound 1 group chat from it. 1 user had it as default agent")
    assert.include(text.stdout, "Its 1 session stays in memory (anna memory sessions --agent a1)")
    assert.include(text.stdout, `Its folder ${folder} is left in place`)

    assert.deepStrictEqual(await annaJson<Array<Agent>>(h, "agent", "list"), [])
    assert.strictEqual((await annaJson<{ defaultAgentId: string | null }>(h, "user", "show", "alice")).defaultAgentId, null)
    assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "channel", "bindings"), [])
    const sessions = await annaJson<Array<{ sessionKey: string }>>(h, "memory", "sessions", "--agent", "a1")
    assert.deepStrictEqual(sessions.map((s) => s.sessionKey), [turn.sessionKey])
    assert.isTrue(existsSync(join(folder, "SOUL.md")))

    // The JSON report, on an agent re-created with the same id: it inherits none of the old chat states.
    ok(await anna(h, "agent", "set", "a1", "--model", "local/fake-large"))
    suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "again" }] })
    await annaJson<ChatJson>(h, "chat", "-p", "hi")
    const report = await annaJson<Record<string, unknown>>(h, "agent", "remove", "a1", "--yes")
    assert.deepStrictEqual(report, { removed: "a1", usersDefaulted: 0, bindings: 0, chatStates: 1, keptSessions: 1, folder })
  })
})

describe("anna agent set --system-prompt", () => {
  it("takes TEXT or @FILE, shows it shortened (whole in --json), sends it to the model, and clears it with \"\"", async () => {
    const h = await setup()
    const long = "You are Ziggy, a terse assistant for the plumbing team. Answer in at most two sentences and never invent part numbers."
    const set = await annaJson<Agent>(h, "agent", "set", "a1", "--model", "local/fake-large", "--system-prompt", long)
    assert.strictEqual(set.systemPrompt, long)
    const shown = ok(await anna(h, "agent", "show", "a1")).stdout
    assert.match(shown, new RegExp(String.raw`^system prompt\s+You are Ziggy, a terse assistant for the plumbing team\. \S*… \(${long.length} characters\)$`, "m"))
    assert.strictEqual((await annaJson<Agent>(h, "agent", "show", "a1")).systemPrompt, long)

    const file = join(h, "prompt.md")
    writeFileSync(file, "Ты — Зигги.\nSecond line from a file.\n")
    assert.strictEqual((await annaJson<Agent>(h, "agent", "set", "a1", "--system-prompt", `@${file}`)).systemPrompt, "Ты — Зигги.\nSecond line from a file.\n")
    suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
    await annaJson<ChatJson>(h, "chat", "-p", "hi")
    assert.include(JSON.stringify(suite.fake.requests.at(-1)?.body), "Second line from a file.")

    refused(await anna(h, "agent", "set", "a1", "--system-prompt", `@${join(h, "missing.md")}`), `cannot read the system prompt file ${join(h, "missing.md")}: no such file`)
    refused(await anna(h, "agent", "set", "a1", "--system-prompt", `@${h}`), "is not a regular file")
    const big = join(h, "big.md")
    writeFileSync(big, "x".repeat(64 * 1024 + 1))
    refused(await anna(h, "agent", "set", "a1", "--system-prompt", `@${big}`), "is 65537 bytes; at most 65536 (64 KiB) are allowed")
    // A prompt given inline is a value the command cannot use (exit 2); a file's content is refused (exit 1).
    misused(await anna(h, "agent", "set", "a1", "--system-prompt", "y".repeat(64 * 1024 + 1)), "at most 65536 (64 KiB)")
    const binary = join(h, "binary.md")
    writeFileSync(binary, Buffer.from([0xff, 0xfe, 0x00, 0x41]))
    refused(await anna(h, "agent", "set", "a1", "--system-prompt", `@${binary}`), "is not UTF-8 text")
    assert.include((await annaJson<Agent>(h, "agent", "show", "a1")).systemPrompt, "Зигги", "refused changes keep the prompt")

    assert.strictEqual((await annaJson<Agent>(h, "agent", "set", "a1", "--system-prompt", "")).systemPrompt, "")
    assert.match(ok(await anna(h, "agent", "show", "a1")).stdout, /system prompt\s+\(none\)/)
  })
})

describe("anna channel bindings", () => {
  it("lists group chats and their agents (text and --json), noting a disabled agent", async () => {
    const h = await setup()
    const empty = ok(await anna(h, "channel", "bindings"))
    assert.include(empty.stdout, "No group chat is bound to an agent")
    assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "channel", "bindings"), [])

    ok(await anna(h, "agent", "set", "a1", "--model", "local/fake-large"))
    ok(await anna(h, "agent", "set", "a2", "--model", "local/fake-small"))
    ok(await anna(h, "channel", "bind", "telegram", "-100123", "a1"))
    ok(await anna(h, "channel", "bind", "qq", "g-7", "a2"))
    ok(await anna(h, "agent", "disable", "a2"))
    const text = ok(await anna(h, "channel", "bindings")).stdout.trim().split("\n")
    assert.match(text[0] ?? "", /^PLATFORM\s+CHAT\s+AGENT$/)
    assert.match(text[1] ?? "", /^qq\s+g-7\s+a2 \(disabled: the chat follows the routing rules\)$/)
    assert.match(text[2] ?? "", /^telegram\s+-100123\s+a1$/)
    assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "channel", "bindings"), [
      { platform: "qq", chatId: "g-7", agentId: "a2", agentEnabled: false },
      { platform: "telegram", chatId: "-100123", agentId: "a1", agentEnabled: true }
    ])
  })
})

describe("a running runtime and the agent verbs", () => {
  const stack = (home: string, started: { count: number }) =>
    Compose.agentRuntime({ runnerIdle: "1 minute", configPoll: "1 second" }).pipe(
      Layer.provide(LocalSandbox.sandboxLayer({}, started)),
      Layer.provide(ProviderClients.layer(fastTransport)),
      Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
      Layer.provideMerge(SqliteConfigStore.layerWithStores(home)),
      Layer.provideMerge(sqliteTemp)
    )
  const user = (name: string): ChatTarget => ({ platform: "cli", externalUserId: name, userName: name })
  const turn = (target: ChatTarget, text: string) =>
    Effect.gen(function*() {
      const runtime = yield* Runtime
      const chat = yield* runtime.resolve(target)
      return yield* Stream.runCollect(runtime.send(chat, text))
    })

  it.effect("disabling or removing an agent closes its live sandboxes at the next configuration check", () => {
    const started = { count: 0 }
    const home = newHome()
    suite.keep(home)
    return Effect.gen(function*() {
      yield* (yield* ProviderStore).add(localProvider(suite.fake))
      const agents = yield* AgentStore
      yield* agents.create("a1", { providerId: "local", tools: ["bash", "memory"] })
      const pool = yield* SessionPool
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }] }))
      yield* turn(user("ann"), "one")
      assert.deepStrictEqual((yield* pool.live).map((s) => [s.agentId, s.sandbox]), [["a1", true]])

      yield* agents.update("a1", { enabled: false, awaitingModel: false })
      yield* TestClock.adjust("1 second")
      yield* eventually(Effect.map(pool.live, (live) => assert.deepStrictEqual(live, [], "disabled: its runner and sandbox are closed")))

      yield* agents.update("a1", { enabled: true, awaitingModel: false })
      yield* turn(user("ann"), "two")
      assert.strictEqual((yield* pool.live).length, 1)
      assert.strictEqual(started.count, 2)

      const removed = yield* agents.remove("a1")
      assert.deepStrictEqual(removed, { agentId: "a1", usersDefaulted: 0, bindings: 0, chatStates: 1 })
      yield* TestClock.adjust("1 second")
      yield* eventually(Effect.map(pool.live, (live) => assert.deepStrictEqual(live, [], "removed: its runner and sandbox are closed")))
    }).pipe(Effect.provide(stack(home, started)))
  })
})
