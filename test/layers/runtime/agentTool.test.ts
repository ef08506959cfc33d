/**
 * The `agent` tool: child agent loops with isolated context, through the OpenAI Chat Completions
 * SDK against the fake LLM server — fresh history, parallelism and its limit, tool whitelists, no
 * recursion, truncation, timeouts, presets from markdown files — and once through the real Runtime.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Logger, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { type Tool, ToolError } from "../../../src/domain/tool.ts"
import { messageText } from "../../../src/domain/message.ts"
import * as OpenAiChat from "../../../src/layers/providers/OpenAiChat.ts"
import { folderSource, loadPresets, parsePreset, type Preset } from "../../../src/layers/runtime/presets.ts"
import * as AgentTool from "../../../src/layers/runtime/agentTool.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import type { ChatModelClient } from "../../../src/services/ChatModel.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime as RuntimeService } from "../../../src/services/Runtime.ts"
import { type UsageEntry, UsageLog } from "../../../src/services/UsageLog.ts"
import { sqliteTemp } from "../../support/db.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"

let fake: FakeLlm
/** Requests before this index belong to earlier tests (the fake keeps them all). */
let mark = 0
const dirs: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => {
  fake.reset()
  mark = fake.requests.length
})
afterAll(async () => {
  await fake.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const provider = () => localProvider(fake)

const ctx = { sessionKey: "a1:cli:u1:dm", userId: "u1", agentId: "a1" }

const simpleTool = (name: string, run: (input: unknown) => string): Tool => ({
  definition: { name, description: `the ${name} tool`, inputSchema: { type: "object", properties: {} } },
  execute: (input) => Effect.succeed(run(input))
})
const parentTools: ReadonlyArray<Tool> = [
  simpleTool("echo", (input) => `echo: ${JSON.stringify(input)}`),
  simpleTool("clock", () => "12:00"),
  simpleTool("agent", () => "must never run in a child")
]

const usageLog = () => {
  const entries: Array<UsageEntry> = []
  const service = UsageLog.of({
    record: (e) => Effect.sync(() => void entries.push(e)),
    summaryCallsSince: () => Effect.succeed(0),
    embeddingCallsSince: () => Effect.succeed(0),
    totals: () => Effect.succeed([]),
    breakdown: () => Effect.succeed([]),
    retireUser: () => Effect.succeed(0)
  })
  return { entries, service }
}

const makeTool = (over: Partial<AgentTool.AgentToolDeps> = {}) => {
  const usage = usageLog()
  const tool = AgentTool.make({
    client: OpenAiChat.make(provider(), fastTransport),
    defaultModel: "fake-large",
    baseSystem: "You are the parent's assistant.",
    tools: parentTools,
    presets: [],
    usage: usage.service,
    ...over
  })
  return { tool, usage: usage.entries }
}

interface ChatBody {
  readonly model?: string
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown; readonly tool_call_id?: string }>
  readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }>
}
const body = (r: RecordedRequest | undefined): ChatBody => (r?.body ?? {}) as ChatBody
const toolNames = (r: RecordedRequest | undefined) => (body(r).tools ?? []).map((t) => t.function.name)
const userText = (r: RecordedRequest) => String(body(r).messages?.find((m) => m.role === "user")?.content ?? "")
const posts = () => fake.requests.slice(mark).filter((r) => r.method === "POST")

/** Waits until `cond` holds, re-checked at each request and response close of the fake server. */
const serverSaw = (what: string, cond: () => boolean) => Effect.promise(() => fake.when(cond, { what }))

/**
 * Runs `effect` in a fiber woken by the TestClock. `TestClock.adjust` returns only once the woken
 * fiber, and every fiber it started, has run until it waits for something outside (a Deferred, a
 * free slot, I/O) or ended — so afterwards whatever `effect` would start on its own has started,
 * and a test can assert that something did *not* happen without sleeping.
 */
const forkSettled = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(Effect.andThen(Effect.sleep(1), effect))
    yield* TestClock.adjust(1)
    return fiber
  })

/**
 * `real`, with `consumed` resolved once a child has taken in `text` of its answer to `task`: a
 * stream is pulled again only after everything it gave before went through the consumer (the
 * child's own bookkeeping of what it has said), so that next pull is the observed event.
 */
const observeConsumed = (real: ChatModelClient, task: string, text: string, consumed: Deferred.Deferred<void>): ChatModelClient => ({
  ...real,
  stream: (request) => {
    if (!request.messages.some((m) => m.role === "user" && messageText(m) === task)) return real.stream(request)
    let seen = ""
    return Stream.transformPull(real.stream(request), (pull) =>
      Effect.succeed(Effect.suspend(() =>
        (seen === text ? Deferred.succeed(consumed, undefined) : Effect.void).pipe(
          Effect.andThen(pull),
          Effect.tap((events) => Effect.sync(() => {
            for (const e of events) if (e.type === "text_delta") seen += e.text
          }))
        )
      )))
  }
})

describe("agent tool", () => {
  it.effect("a child sees only its task and context, the parent's prompt, and no agent tool; usage is recorded", () =>
    Effect.gen(function*() {
      const { tool, usage } = makeTool()
      fake.script({ kind: "reply", parts: [{ type: "text", text: "Paris is the capital." }], usage: { input: 30, output: 6 } })
      const out = yield* tool.execute({ tasks: [{ task: "What is the capital of France?", context: "Geography quiz." }] }, ctx)
      const req = posts()[0]
      assert.deepStrictEqual(body(req).messages, [
        { role: "system", content: "You are the parent's assistant." },
        { role: "user", content: "What is the capital of France?\n\nContext:\nGeography quiz." }
      ])
      assert.deepStrictEqual(toolNames(req), ["echo", "clock"])
      assert.strictEqual(body(req).model, "fake-large")
      assert.strictEqual(out, "## Task 1: done (1 model call, 0 tool calls)\nParis is the capital.")
      assert.deepStrictEqual(usage.map((u) => [u.purpose, u.sessionKey, u.agentId, u.userId, u.usage.inputTokens]), [["chat", "a1:cli:u1:dm", "a1", "u1", 30]])
      assert.notInclude(tool.definition.description, "Tools children can use: echo, clock, agent")
      assert.include(tool.definition.description, "Tools children can use: echo, clock.")
    }))

  it.effect("runs the child's tool loop; a tool outside the whitelist gets an unknown-tool error result", () =>
    Effect.gen(function*() {
      const { tool } = makeTool()
      fake.script(
        {
          kind: "reply",
          parts: [
            { type: "tool_call", id: "t1", name: "echo", input: { say: "hi" } },
            { type: "tool_call", id: "t2", name: "clock", input: {} }
          ]
        },
        { kind: "reply", parts: [{ type: "text", text: "Echoed; the clock was not available." }] }
      )
      const out = yield* tool.execute({ tasks: [{ task: "echo hi and tell the time", tools: ["echo"], system: "Be brief." }] }, ctx)
      const [first, second] = posts()
      assert.deepStrictEqual(toolNames(first), ["echo"])
      assert.strictEqual(body(first).messages?.[0]?.content, "You are the parent's assistant.\n\nBe brief.")
      const results = (body(second).messages ?? []).filter((m) => m.role === "tool")
      assert.deepStrictEqual(results.map((m) => m.tool_call_id), ["t1", "t2"])
      assert.include(String(results[0]?.content), "echo: {\"say\":\"hi\"}")
      assert.include(String(results[1]?.content), "unknown tool; available tools: echo")
      assert.strictEqual(out, "## Task 1: done (2 model calls, 2 tool calls)\nEchoed; the clock was not available.")
    }))

  it.effect("reports bad tasks per task: unknown tools, the agent tool, unknown presets; all failing is an error", () =>
    Effect.gen(function*() {
      const { tool } = makeTool()
      fake.script({ kind: "reply", parts: [{ type: "text", text: "fine" }] })
      const out = yield* tool.execute({ tasks: [{ task: "a", tools: ["echo", "webfetch"] }, { task: "b" }, { task: "c", tools: ["agent"] }] }, ctx)
      assert.include(out, "## Task 1: failed\nunknown tool(s) webfetch; tools available to child agents: echo, clock")
      assert.include(out, "## Task 2: done (1 model call, 0 tool calls)\nfine")
      assert.include(out, "## Task 3: failed\nchild agents cannot use the agent tool")
      assert.strictEqual(posts().length, 1)
      const err = yield* Effect.flip(tool.execute({ tasks: [{ task: "x", preset: "nope" }] }, ctx))
      assert.instanceOf(err, ToolError)
      assert.include(err.reason, "## Task 1 (preset nope): failed\nunknown preset \"nope\"; presets: none")
      const invalid = yield* Effect.flip(tool.execute({ tasks: [] }, ctx))
      assert.include(invalid.reason, "invalid input")
      const tooMany = yield* Effect.flip(tool.execute({ tasks: [{ task: "x" }], concurrency: 9 }, ctx))
      assert.include(tooMany.reason, "invalid input")
    }))

  it.effect("a child may run only on a model the operator allows (a task's or a preset's model is checked)", () =>
    Effect.gen(function*() {
      const expensive: Preset = { name: "pricey", description: "", model: "fake-huge", system: "" }
      const { tool } = makeTool({ modelAllowed: (m) => m === "fake-small", presets: [expensive] })
      fake.script({ kind: "reply", parts: [{ type: "text", text: "small ok" }] })
      const out = yield* tool.execute({ tasks: [{ task: "a", model: "fake-huge" }, { task: "b", preset: "pricey" }, { task: "c", model: "fake-small" }] }, ctx)
      assert.include(out, "## Task 1: failed\nmodel \"fake-huge\" is not allowed for this agent")
      assert.include(out, "failed\nmodel \"fake-huge\" is not allowed for this agent")
      assert.include(out, "small ok")
      assert.deepStrictEqual(posts().map((r) => body(r).model), ["fake-small"], "only the allowed model was called")
    }))

  it.effect("runs tasks in parallel, never more at once than the concurrency (default 3), reported in task order", () =>
    Effect.gen(function*() {
      const real = OpenAiChat.make(provider(), fastTransport)
      fake.respondWith((r) => ({ kind: "reply", parts: [{ type: "text", text: `answer to ${userText(r)}` }] }))
      for (const [concurrency, tasks] of [[2, 4], [undefined, 5]] as const) {
        const gate = yield* Deferred.make<void>()
        const stats = { open: 0, max: 0, started: 0 }
        // Each model call waits at the gate, so the calls in flight can be counted.
        const client: ChatModelClient = {
          ...real,
          stream: (request) =>
            Stream.unwrap(Effect.gen(function*() {
              stats.started++
              stats.max = Math.max(stats.max, ++stats.open)
              yield* Deferred.await(gate)
              return real.stream(request)
            })).pipe(Stream.ensuring(Effect.sync(() => void stats.open--)))
        }
        const { tool } = makeTool({ client })
        const input = { tasks: Array.from({ length: tasks }, (_, i) => ({ task: `task ${i + 1}` })), ...(concurrency === undefined ? {} : { concurrency }) }
        const limit = concurrency ?? AgentTool.DEFAULT_CONCURRENCY
        // Once settled, every task that could start has started and waits at the gate.
        const fiber = yield* forkSettled(tool.execute(input, ctx))
        assert.strictEqual(stats.open, limit, "as many tasks as the limit run at once")
        assert.strictEqual(stats.started, limit, "no task starts beyond the limit")
        yield* Deferred.succeed(gate, undefined)
        const out = yield* Fiber.join(fiber)
        assert.deepStrictEqual([stats.max, stats.started], [limit, tasks])
        const sections = out.split("\n\n")
        assert.deepStrictEqual(sections, Array.from({ length: tasks }, (_, i) => `## Task ${i + 1}: done (1 model call, 0 tool calls)\nanswer to task ${i + 1}`))
      }
    }))

  it.effect("truncates a long child answer to ~4,096 tokens on a character boundary", () =>
    Effect.gen(function*() {
      const { tool } = makeTool()
      const long = Array.from({ length: 3000 }, (_, i) => `line ${i} 日本語 🙂`).join("\n")
      fake.script({ kind: "reply", parts: [{ type: "text", text: long }], chunk: 4000 })
      const out = yield* tool.execute({ tasks: [{ task: "write a lot" }] }, ctx)
      assert.isAtMost(Buffer.byteLength(out, "utf8"), AgentTool.OUTPUT_TOKENS * 4 + 200)
      assert.isAtLeast(Buffer.byteLength(out, "utf8"), AgentTool.OUTPUT_TOKENS * 4 - 1000)
      assert.match(out, /\n\[… child output truncated: [\d,]+ more bytes \(~[\d,]+ tokens\) omitted …\]$/)
      assert.notInclude(out, "\uFFFD")
      assert.include(out, "line 0 日本語 🙂\nline 1")
    }))

  it("truncateToTokens keeps short text and never splits a character", () => {
    assert.strictEqual(AgentTool.truncateToTokens("short"), "short")
    for (let shift = 0; shift < 4; shift++) {
      const cut = AgentTool.truncateToTokens("x".repeat(shift) + "🙂".repeat(200), 30)
      assert.notInclude(cut, "\uFFFD")
      assert.match(cut, /^x*(🙂)+\n\[… child output truncated/)
    }
  })

  it.effect("a child that times out is reported with what it said, without failing its siblings", () =>
    Effect.gen(function*() {
      const stalledTextTaken = yield* Deferred.make<void>()
      const { tool } = makeTool({
        client: observeConsumed(OpenAiChat.make(provider(), fastTransport), "stall", "partial findings", stalledTextTaken)
      })
      fake.respondWith((r) => {
        const task = userText(r)
        if (task === "hang") return { kind: "hang" }
        if (task === "stall") return { kind: "disconnect", parts: [{ type: "text", text: "partial findings so far" }], afterEvents: 3, stall: true }
        return { kind: "reply", parts: [{ type: "text", text: "quick answer" }] }
      })
      const fiber = yield* Effect.forkChild(tool.execute({
        tasks: [{ task: "hang", timeout_seconds: 2 }, { task: "quick" }, { task: "stall", timeout_seconds: 2 }]
      }, ctx))
      // All three model requests are in flight, and the stalled child has taken in the first events
      // of its answer ("partial findings"); then the time limit passes.
      yield* serverSaw("the three children's model requests", () => posts().length === 3)
      yield* Deferred.await(stalledTextTaken)
      assert.isTrue(posts().every((r) => !r.aborted), "no request is cut before the time limit")
      yield* TestClock.adjust("3 seconds")
      const out = yield* Fiber.join(fiber)
      assert.strictEqual(
        out,
        [
          "## Task 1: timed out after 2 s (0 model calls, 0 tool calls); what it had produced follows\n(no text)",
          "## Task 2: done (1 model call, 0 tool calls)\nquick answer",
          "## Task 3: timed out after 2 s (0 model calls, 0 tool calls); what it had produced follows\npartial findings"
        ].join("\n\n")
      )
      yield* serverSaw("the aborts of the timed-out children's requests", () => posts().filter((r) => userText(r) !== "quick").every((r) => r.aborted))
    }))

  it.effect("loads presets from markdown files: frontmatter, body as system prompt, model and tools; bad files skipped", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "anna-presets-"))
      dirs.push(dir)
      writeFileSync(
        join(dir, "reviewer.md"),
        "---\ndescription: Reviews code for bugs\nmodel: fake-small\ntools: [echo]\nmax_turns: 3\ntimeout_seconds: 30\n---\nYou are a careful reviewer.\n"
      )
      writeFileSync(join(dir, "plain.md"), "Just a prompt, no frontmatter.\n")
      writeFileSync(join(dir, "renamed.md"), "\uFEFF---\r\nname: writer\r\n---\r\nYou write well.\r\n")
      writeFileSync(join(dir, "broken.md"), "---\ntools: [echo\n---\nbody\n")
      writeFileSync(join(dir, "badfield.md"), "---\nmax_turns: lots\n---\nbody\n")
      writeFileSync(join(dir, "twin.md"), "---\nname: reviewer\n---\nA second reviewer.\n")
      writeFileSync(join(dir, "notes.txt"), "not a preset")
      const warnings: Array<string> = []
      const capture = Logger.make((o) => {
        if (o.logLevel === "Warn") warnings.push(Array.isArray(o.message) ? o.message.join(" ") : String(o.message))
      })
      const presets = yield* loadPresets([folderSource(dir)]).pipe(Effect.provide(Logger.layer([capture])))
      // In file-name order: plain.md, renamed.md (named writer), reviewer.md.
      assert.deepStrictEqual(presets.map((p) => p.name), ["plain", "writer", "reviewer"])
      const reviewer = presets.find((p) => p.name === "reviewer")
      assert.deepStrictEqual(reviewer, {
        name: "reviewer",
        description: "Reviews code for bugs",
        model: "fake-small",
        tools: ["echo"],
        maxTurns: 3,
        timeoutSeconds: 30,
        system: "You are a careful reviewer."
      } satisfies Preset)
      assert.strictEqual(presets.find((p) => p.name === "writer")?.system, "You write well.")
      assert.strictEqual(warnings.length, 3)
      assert.isTrue(warnings.some((w) => w.includes("broken.md skipped: invalid YAML")))
      assert.isTrue(warnings.some((w) => w.includes("badfield.md skipped: invalid frontmatter")))
      assert.isTrue(warnings.some((w) => w.includes("twin.md skipped: another file already defines \"reviewer\"")))
      assert.deepStrictEqual(yield* loadPresets([folderSource(join(dir, "missing"))]), [])

      const { tool } = makeTool({ presets })
      assert.include(tool.definition.description, "- reviewer: Reviews code for bugs")
      fake.script(
        { kind: "reply", parts: [{ type: "text", text: "LGTM" }] },
        { kind: "reply", parts: [{ type: "text", text: "Prose." }] }
      )
      const out = yield* tool.execute({ tasks: [{ task: "review this", preset: "reviewer", system: "Focus on errors." }] }, ctx)
      assert.strictEqual(out, "## Task 1 (preset reviewer): done (1 model call, 0 tool calls)\nLGTM")
      const [first] = posts()
      assert.strictEqual(body(first).model, "fake-small")
      assert.deepStrictEqual(toolNames(first), ["echo"])
      assert.strictEqual(body(first).messages?.[0]?.content, "You are a careful reviewer.\n\nFocus on errors.")
      yield* tool.execute({ tasks: [{ task: "draft", preset: "reviewer", model: "fake-large", tools: ["clock"] }] }, ctx)
      const second = posts()[1]
      assert.deepStrictEqual([body(second).model, toolNames(second)], ["fake-large", ["clock"]])
      const unknown = yield* Effect.flip(tool.execute({ tasks: [{ task: "x", preset: "poet" }] }, ctx))
      assert.include(unknown.reason, "unknown preset \"poet\"; presets: plain, writer, reviewer")
    }))

  it("parsePreset: defaults, empty frontmatter, names", () => {
    const plain = parsePreset("helper", "---\n---\nHelp.")
    assert.deepStrictEqual(plain._tag === "Success" ? [plain.success.name, plain.success.system, plain.success.maxTurns] : [], ["helper", "Help.", undefined])
    const badName = parsePreset("my preset", "Body")
    assert.include(badName._tag === "Failure" ? badName.failure : "", "not a usable preset name")
    const list = parsePreset("x", "---\n- a\n- b\n---\nBody")
    assert.strictEqual(list._tag, "Failure")
  })
})

describe("agent tool in the Runtime", () => {
  const home = mkdtempSync(join(tmpdir(), "anna-agent-rt-"))
  dirs.push(home)
  const memory = LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))
  const stack = Compose.agentRuntime({ runnerIdle: "1 second" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(memory),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )

  it.effect("the parent calls agent, the child works from its task alone, the parent answers with its output", () =>
    Effect.gen(function*() {
      yield* (yield* ProviderStore).add(provider())
      yield* (yield* AgentStore).create("a1", { providerId: "local", tools: ["memory", "agent"] })
      mkdirSync(join(home, "workspaces", "a1", "agents"), { recursive: true })
      writeFileSync(join(home, "workspaces", "a1", "agents", "scout.md"), "---\ndescription: Finds facts\n---\nYou find facts.\n")
      fake.script(
        {
          kind: "reply",
          parts: [{ type: "tool_call", id: "c1", name: "agent", input: { tasks: [{ task: "Find the tallest mountain.", preset: "scout" }] } }]
        },
        { kind: "reply", parts: [{ type: "text", text: "Mount Everest, 8,849 m." }], usage: { input: 20, output: 8 } },
        { kind: "reply", parts: [{ type: "text", text: "My helper says: Mount Everest." }] }
      )
      const runtime = yield* RuntimeService
      const chat = yield* runtime.resolve({ platform: "cli", externalUserId: "alice", userName: "Alice" })
      const events = yield* Stream.runCollect(runtime.send(chat, "My secret word is pineapple. Which mountain is the tallest?"))
      const text = events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("")
      assert.strictEqual(text, "My helper says: Mount Everest.")
      const [parent, child, parentAgain] = posts()
      assert.deepStrictEqual(toolNames(parent), ["memory", "agent"])
      assert.include(JSON.stringify(body(parent).tools), "- scout: Finds facts")
      assert.deepStrictEqual(body(child).messages, [
        { role: "system", content: "You find facts." },
        { role: "user", content: "Find the tallest mountain." }
      ])
      assert.notInclude(JSON.stringify(body(child)), "pineapple")
      assert.deepStrictEqual(toolNames(child), ["memory"])
      const result = (body(parentAgain).messages ?? []).find((m) => m.role === "tool")
      assert.strictEqual(result?.content, "## Task 1 (preset scout): done (1 model call, 0 tool calls)\nMount Everest, 8,849 m.")
      const end = events[events.length - 1]
      assert.deepStrictEqual(end?.type === "done" ? [end.stopReason, end.modelCalls, end.toolCalls] : [], ["end_turn", 2, 1])
      // Only the parent's conversation is stored; the child's call is accounted to the same session.
      const history = yield* (yield* MemoryProvider).assemble(chat.sessionKey, { budget: 100_000 })
      assert.deepStrictEqual(history.messages.map((m) => m.role), ["user", "assistant", "tool_result", "assistant"])
      const totals = yield* (yield* UsageLog).totals({ sessionKey: chat.sessionKey })
      assert.deepStrictEqual(totals.map((t) => [t.purpose, t.calls]), [["chat", 3]])
    }).pipe(Effect.provide(stack)))
})
