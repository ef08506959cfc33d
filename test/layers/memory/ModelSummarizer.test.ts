/**
 * The model-backed summarizer driving real compaction: OpenAI Chat Completions SDK → fake server on
 * 127.0.0.1, real SQLite. Summary tier, usage accounting, escalation, failures, the spend guard, and
 * the summary provider's circuit breaker (TestClock: the transports here have no backoff to wait for).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger, Schema } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll } from "vitest"
import { SummarizerError } from "../../../src/domain/memory/errors.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { NewMessage } from "../../../src/domain/message.ts"
import type { ProviderConfig, TransportOptions } from "../../../src/domain/model/types.ts"
import { HANDOFF_SECTIONS } from "../../../src/domain/memory/handoff.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ModelSummarizer from "../../../src/layers/memory/ModelSummarizer.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as SimpleMemory from "../../../src/layers/memory/SimpleMemory.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { Explorer } from "../../../src/services/Explorer.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Summarizer } from "../../../src/services/Summarizer.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { modelStores, sqliteTemp } from "../../support/db.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { fastTransport } from "../providers/contract.ts"
import { recordingTracer } from "../../support/spans.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(() => fake.close())

const base = () => Layer.mergeAll(modelStores, SqliteMemoryStore.layer).pipe(Layer.provideMerge(sqliteTemp))
const modelSummarizer = (transport: TransportOptions = fastTransport) =>
  ModelSummarizer.layer().pipe(Layer.provide(ProviderClients.layer(transport)))
const stack = (transport: TransportOptions = fastTransport) =>
  LcmMemory.layerSqlite.pipe(Layer.provide(modelSummarizer(transport)), Layer.provideMerge(base()))
const simpleStack = () => SimpleMemory.layerSqlite.pipe(Layer.provide(modelSummarizer()), Layer.provideMerge(base()))
const summarizerStack = () => modelSummarizer().pipe(Layer.provideMerge(base()))

/** Runs `self` with its warnings (or, with `levels`, the lines of those levels) collected into `into`. */
const collectingWarnings = (into: Array<string>, levels: ReadonlyArray<string> = ["Warn"]) =>
  Effect.provide(Logger.layer([Logger.make((o) => {
    const text = Array.isArray(o.message) ? o.message.join(" ") : String(o.message)
    if (levels.includes(o.logLevel)) into.push(levels.length === 1 ? text : `${o.logLevel}: ${text}`)
  })]))

const KEY = "a1:cli:u1:main"
const local = (): ProviderConfig => ({
  id: "local",
  type: "openai",
  baseUrl: fake.openAiUrl,
  apiKey: "sk-local-abcdef",
  models: [],
  defaultModel: "fake-large",
  headers: {},
  enabled: true
})

const conversation = (n: number): Array<NewMessage> =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: `Turn ${i}: we decided to keep the backups in /srv/backups/${i} and to rotate them weekly, because space is short.`,
    createdAt: 1_700_000_000_000 + i * 60_000
  }))

const summaryText = (req: RecordedRequest) =>
  `Summary of ${JSON.stringify(req.body).length} bytes: backups live under /srv/backups and rotate weekly. Expand for details about: backup paths, rotation`

const setup = (agent: Parameters<AgentStore["Service"]["create"]>[1] = { providerId: "local", summaryProviderId: "local", summaryModel: "fake-small" }) =>
  Effect.gen(function*() {
    yield* (yield* ProviderStore).add(local())
    yield* (yield* AgentStore).create("a1", agent)
    yield* (yield* MemoryProvider).append(sessionRefFromKey(KEY), conversation(80))
  })

/** The modes of the session's live summaries. */
const storedModes = Effect.gen(function*() {
  const store = yield* MemoryStore
  const c = yield* store.getConversation(KEY)
  const input = yield* store.verifyInput(c.id, KEY)
  const stored = yield* store.summariesByIds(input.summaries.map((s) => s.id))
  return [...new Set(stored.map((s) => s.mode))].sort()
})

const snapshot = Effect.gen(function*() {
  const store = yield* MemoryStore
  const c = yield* store.getConversation(KEY)
  const input = yield* store.verifyInput(c.id, KEY)
  return { items: input.items, summaries: input.summaries.length }
})

describe("ModelSummarizer", () => {
  it.effect("compacts with the agent's summary-tier model, stores its text and records usage", () =>
    Effect.gen(function*() {
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }], usage: { input: 900, output: 40 } }))
      yield* setup()
      const before = fake.requests.length
      const report = yield* (yield* Compactor).compact(KEY, { full: true, freshTail: 10 })
      const calls = fake.requests.slice(before)
      assert.isTrue(report.compacted)
      assert.strictEqual(calls.length, report.leafSummaries + report.condensedSummaries)
      for (const c of calls) {
        assert.strictEqual((c.body as { model?: string }).model, "fake-small")
        assert.include(JSON.stringify(c.body), "/srv/backups/")
        assert.include(JSON.stringify(c.body), "Expand for details about")
      }
      const a = yield* (yield* MemoryProvider).assemble(KEY, { budget: 100_000, freshTail: 10 })
      const first = a.messages[0]
      const id = typeof first?.content === "string" ? /id="(sum_\d+)"/.exec(first.content)?.[1] : undefined
      const d = yield* (yield* Explorer).describe(id ?? "none")
      assert.match(d.content, /^Summary of \d+ bytes: backups live under \/srv\/backups/)
      assert.strictEqual(d.mode, "normal")
      const totals = yield* (yield* UsageLog).totals({ sessionKey: KEY })
      assert.deepStrictEqual(totals.map((t) => [t.providerId, t.model, t.purpose, t.calls, t.failed, t.inputTokens, t.outputTokens]), [
        ["local", "fake-small", "summary", calls.length, 0, 900 * calls.length, 40 * calls.length]
      ])
    }).pipe(Effect.provide(stack())))

  it.effect("each summary call is a GenAI span (model, tokens, finish reason, purpose) holding no text", () => {
    const { tracer, spans } = recordingTracer()
    return Effect.gen(function*() {
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }], usage: { input: 900, output: 40 } }))
      yield* setup()
      const report = yield* (yield* Compactor).compact(KEY, { full: true, freshTail: 10 })
      const calls = spans.filter((s) => s.name === "chat fake-small")
      assert.strictEqual(calls.length, report.leafSummaries + report.condensedSummaries)
      for (const c of calls) {
        assert.deepStrictEqual(Object.fromEntries([...c.attributes].filter(([k]) => k.startsWith("gen_ai.") || k === "anna.purpose")), {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "openai",
          "gen_ai.request.model": "fake-small",
          "gen_ai.request.max_tokens": c.attributes.get("gen_ai.request.max_tokens"),
          "gen_ai.usage.input_tokens": 900,
          "gen_ai.usage.output_tokens": 40,
          "gen_ai.response.finish_reasons": ["end_turn"],
          "anna.purpose": "summary"
        })
        assert.strictEqual(c.kind, "client")
        assert.strictEqual(c.parent._tag === "Some" && c.parent.value._tag === "Span" ? c.parent.value.name : "", "Summarizer.call")
      }
      const said = JSON.stringify(spans.map((s) => [s.name, [...s.attributes]]))
      for (const text of ["/srv/backups", "rotate weekly", "Expand for details"]) assert.notInclude(said, text)
    }).pipe(Effect.provide(stack()), Effect.withTracer(tracer))
  })

  it.effect("uses the main model when no summary tier is set, and the first provider when no agent exists", () =>
    Effect.gen(function*() {
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }] }))
      yield* (yield* ProviderStore).add(local())
      yield* (yield* MemoryProvider).append(sessionRefFromKey("x:cli:u9:main"), conversation(40))
      const before = fake.requests.length
      yield* (yield* Compactor).compact("x:cli:u9:main", { freshTail: 10 })
      assert.strictEqual((fake.requests[before]?.body as { model?: string } | undefined)?.model, "fake-large")
      yield* (yield* AgentStore).create("x", { providerId: "local", model: "fake-small" })
      yield* (yield* MemoryProvider).append(sessionRefFromKey("x:cli:u9:main"), conversation(40))
      const next = fake.requests.length
      yield* (yield* Compactor).compact("x:cli:u9:main", { freshTail: 10 })
      assert.strictEqual((fake.requests[next]?.body as { model?: string } | undefined)?.model, "fake-small")
    }).pipe(Effect.provide(stack())))

  it.effect("escalates to aggressive when the model's normal summary is far too long", () =>
    Effect.gen(function*() {
      fake.respondWith((req) => {
        const aggressive = JSON.stringify(req.body).includes("Be aggressive")
        return { kind: "reply", parts: [{ type: "text", text: aggressive ? "Backups: /srv/backups, weekly." : "word ".repeat(20_000) }] }
      })
      yield* setup()
      const report = yield* (yield* Compactor).compact(KEY, { freshTail: 10 })
      assert.isTrue(report.leafSummaries > 0)
      const store = yield* MemoryStore
      const c = yield* store.getConversation(KEY)
      const input = yield* store.verifyInput(c.id, KEY)
      const stored = yield* store.summariesByIds(input.summaries.map((s) => s.id))
      assert.deepStrictEqual([...new Set(stored.map((s) => s.mode))], ["aggressive"])
    }).pipe(Effect.provide(stack())))

  it.effect("retries a rate-limited provider to success", () =>
    Effect.gen(function*() {
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }] }))
      yield* setup()
      fake.script(
        { kind: "error", status: 429, retryAfter: 0, message: "slow down" },
        { kind: "error", status: 429, retryAfter: 0, message: "slow down" }
      )
      const before = fake.requests.length
      const report = yield* (yield* Compactor).compact(KEY, { freshTail: 10 })
      assert.isTrue(report.compacted)
      assert.strictEqual(fake.requests.length - before, report.leafSummaries + report.condensedSummaries + 2)
    }).pipe(Effect.provide(stack())))

  it.effect("stops with spend_guard once the session's summarizer calls reach the agent's limit", () =>
    Effect.gen(function*() {
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }] }))
      yield* setup({ providerId: "local", summaryMaxCalls: 2, summaryWindowSeconds: 3600 })
      yield* (yield* MemoryProvider).append(sessionRefFromKey(KEY), conversation(2000))
      const before = fake.requests.length
      const report = yield* (yield* Compactor).compact(KEY, { full: true, freshTail: 10 })
      assert.strictEqual(report.stopReason, "spend_guard")
      assert.strictEqual(fake.requests.length - before, 2)
      assert.strictEqual(report.leafSummaries + report.condensedSummaries, 2)
      const again = yield* (yield* Compactor).compact(KEY, { full: true, freshTail: 10 })
      assert.deepStrictEqual([again.stopReason, again.compacted], ["spend_guard", false])
      assert.strictEqual(fake.requests.length - before, 2)
    }).pipe(Effect.provide(stack())))

  it.effect("writes Simple's handoff summary with the handoff prompt, the earlier summary folded into the next", () =>
    Effect.gen(function*() {
      const handoff = (n: number) =>
        HANDOFF_SECTIONS.map((h) => `## ${h}\n${h === "Goal" ? "Keep the backups under /srv/backups." : `Point ${n}.`}`).join("\n\n")
      let call = 0
      fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: handoff(++call) }] }))
      yield* setup()
      const compactor = yield* Compactor
      const before = fake.requests.length
      const first = yield* compactor.compact(KEY)
      yield* (yield* MemoryProvider).append(sessionRefFromKey(KEY), conversation(40))
      const second = yield* compactor.compact(KEY)
      const [r1, r2] = fake.requests.slice(before).map((r) => JSON.stringify(r.body))
      assert.strictEqual(fake.requests.length - before, 2)
      for (const body of [r1 ?? "", r2 ?? ""]) {
        assert.include(body, "fake-small")
        assert.include(body, "handoff summary")
        assert.include(body, "self-contained")
        for (const h of HANDOFF_SECTIONS) assert.include(body, `## ${h}`)
        assert.notInclude(body, "Expand for details about")
      }
      assert.notInclude(r1, "<earlier-summary>")
      assert.include(r2, `<earlier-summary>\\n${handoff(1).replaceAll("\n", "\\n")}`)
      assert.deepStrictEqual([first.summary?.content, second.summary?.content], [handoff(1), handoff(2)])
      assert.deepStrictEqual([first.leafSummaries, second.leafSummaries], [1, 1])
    }).pipe(Effect.provide(simpleStack())))

  it.effect("Simple stops with spend_guard too, committing nothing", () =>
    Effect.gen(function*() {
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }] }))
      yield* setup({ providerId: "local", summaryMaxCalls: 0, summaryWindowSeconds: 3600 })
      const before = fake.requests.length
      const report = yield* (yield* Compactor).compact(KEY)
      assert.deepInclude(report, { compacted: false, passes: 1, stopReason: "spend_guard" })
      assert.strictEqual(fake.requests.length, before)
      assert.strictEqual((yield* snapshot).summaries, 0)
    }).pipe(Effect.provide(simpleStack())))

  describe("a failure no second model call can fix", () => {
    const REFUSED = "summarizer: provider local refused the credentials (ProviderAuthError); using deterministic truncation"

    it.effect("the SummarizerError carries the provider's typed error as Schema data, its detail scrubbed of the key", () =>
      Effect.gen(function*() {
        yield* (yield* ProviderStore).add(local())
        yield* (yield* AgentStore).create("a1", { providerId: "local", summaryProviderId: "local", summaryModel: "fake-small" })
        const request = {
          sessionKey: KEY,
          mode: "normal" as const,
          targetTokens: 50,
          input: { kind: "leaf" as const, messages: [{ role: "user" as const, text: "Keep the backups.", createdAt: 0 }] }
        }
        const summarizer = yield* Summarizer
        fake.respondWith(() => ({ kind: "error", status: 401, message: "Incorrect API key provided: sk-local-abcdef." }))
        const e = yield* Effect.flip(summarizer.summarize(request))
        assert.strictEqual(e._tag, "SummarizerError")
        if (e._tag !== "SummarizerError") return
        assert.strictEqual(e.cause?._tag, "ProviderAuthError")
        assert.deepInclude(e.cause, { provider: "local", status: 401 })
        assert.notInclude(JSON.stringify(e), "sk-local-abcdef")
        assert.notInclude(e.message, "sk-local-abcdef")
        assert.strictEqual(e.cause?._tag === "ProviderAuthError" ? e.cause.detail : "", "Incorrect API key provided: ***.")
        // It survives as data: encoded to JSON and decoded, the cause is the same typed error.
        const decoded = Schema.decodeUnknownSync(SummarizerError)(JSON.parse(JSON.stringify(Schema.encodeSync(SummarizerError)(e))))
        assert.strictEqual(decoded.cause?._tag, "ProviderAuthError")
        assert.strictEqual(decoded.cause?.message, e.cause?.message)

        fake.respondWith(() => ({ kind: "error", status: 429, retryAfter: 0, message: "slow down" }))
        const limited = yield* Effect.flip(summarizer.summarize(request))
        assert.deepInclude(limited._tag === "SummarizerError" ? limited.cause : undefined, { _tag: "ProviderRateLimited", retryAfterMs: 0 })
      }).pipe(Effect.provide(summarizerStack())))

    it.effect("bad credentials: one model call per step, then deterministic truncation, with a warning naming the cause", () =>
      Effect.gen(function*() {
        fake.respondWith(() => ({ kind: "error", status: 401, message: "Incorrect API key provided: sk-local-abcdef." }))
        yield* setup()
        yield* (yield* MemoryProvider).append(sessionRefFromKey(KEY), conversation(600))
        const before = yield* snapshot
        const calls = fake.requests.length
        const warnings: Array<string> = []
        const report = yield* (yield* Compactor).compact(KEY, { full: true, freshTail: 10 }).pipe(collectingWarnings(warnings))
        const steps = report.leafSummaries + report.condensedSummaries
        assert.isTrue(report.compacted)
        assert.isAbove(steps, 1)
        assert.strictEqual(fake.requests.length - calls, steps, "no aggressive retry after a refused key")
        assert.deepStrictEqual(yield* storedModes, ["truncated"])
        assert.isBelow((yield* snapshot).items.length, before.items.length)
        assert.deepStrictEqual(warnings, Array.from({ length: steps }, () => REFUSED))
        const totals = yield* (yield* UsageLog).totals({ sessionKey: KEY })
        assert.strictEqual(totals[0]?.failed, steps)
      }).pipe(Effect.provide(stack())))

    it.effect("Simple's handoff summary falls back the same way, keeping its seven sections", () =>
      Effect.gen(function*() {
        fake.respondWith(() => ({ kind: "error", status: 403, message: "forbidden" }))
        yield* setup()
        const calls = fake.requests.length
        const warnings: Array<string> = []
        const report = yield* (yield* Compactor).compact(KEY).pipe(collectingWarnings(warnings))
        assert.strictEqual(fake.requests.length - calls, 1)
        assert.deepStrictEqual(warnings, [REFUSED])
        assert.isTrue(report.compacted)
        for (const h of HANDOFF_SECTIONS) assert.include(report.summary?.content ?? "", `## ${h}`)
      }).pipe(Effect.provide(simpleStack())))

    it.effect("a disabled summary provider: no model call at all, deterministic truncation", () =>
      Effect.gen(function*() {
        fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }] }))
        yield* setup()
        yield* (yield* ProviderStore).add({ ...local(), id: "off", enabled: false })
        yield* (yield* AgentStore).create("a2", { providerId: "local", summaryProviderId: "off", summaryModel: "fake-small" })
        const key = "a2:cli:u1:main"
        yield* (yield* MemoryProvider).append(sessionRefFromKey(key), conversation(40))
        const calls = fake.requests.length
        const warnings: Array<string> = []
        const report = yield* (yield* Compactor).compact(key, { freshTail: 10 }).pipe(collectingWarnings(warnings))
        assert.isTrue(report.compacted)
        assert.strictEqual(fake.requests.length, calls)
        assert.include(warnings[0] ?? "", "provider off is disabled (ProviderDisabled); using deterministic truncation")
      }).pipe(Effect.provide(stack())))
  })

  describe("a summary provider that is down: its circuit breaker", () => {
    // No backoff between the transport's retries: under the TestClock they need no clock.
    const noBackoff: TransportOptions = { ...fastTransport, baseBackoffMs: 0 }
    const more = (n: number) => MemoryProvider.use((m) => m.append(sessionRefFromKey(KEY), conversation(n)))
    /** A full compaction and the requests it made. */
    const compacting = Effect.gen(function*() {
      const before = fake.requests.length
      const report = yield* (yield* Compactor).compact(KEY, { full: true, freshTail: 10 })
      return { report, requests: fake.requests.length - before }
    })
    const DOWN = "provider local failed (HTTP 500): the summarizer is down"

    it.effect("the first failure's calls, deterministic summaries without calls, one probe per cooldown, one warning; the model again once it answers", () => {
      const logs: Array<string> = []
      return Effect.gen(function*() {
        fake.respondWith(() => ({ kind: "error", status: 500, message: "the summarizer is down" }))
        yield* setup()
        yield* more(600)
        const first = yield* compacting
        assert.isTrue(first.report.compacted, "an outage no longer stops compaction")
        assert.isAbove(first.report.leafSummaries + first.report.condensedSummaries, 1)
        assert.strictEqual(first.requests, ModelSummarizer.SUMMARY_LIMITS.maxRetries + 1, "one call (retried twice), then none")
        assert.deepStrictEqual(yield* storedModes, ["truncated"])
        assert.deepStrictEqual(logs, [
          `Warn: summarizer: ${DOWN}; no summary calls to provider local for 60 s (deterministic summaries, mode truncated), then one call to see whether it is back`
        ])
        // Within the cooldown, every compaction is deterministic and makes no request.
        for (let i = 0; i < 3; i++) {
          yield* TestClock.adjust("19 seconds")
          yield* more(200)
          const next = yield* compacting
          assert.isTrue(next.report.compacted)
          assert.strictEqual(next.requests, 0)
        }
        // 60 s after the failure: one probe, one request without retries. It fails: 120 s more.
        yield* TestClock.adjust("3 seconds")
        yield* more(200)
        const probe = yield* compacting
        assert.deepStrictEqual([probe.report.compacted, probe.requests], [true, 1])
        yield* TestClock.adjust("119 seconds")
        yield* more(200)
        assert.strictEqual((yield* compacting).requests, 0, "the cooldown doubled")
        assert.strictEqual(logs.length, 1, "one warning for the whole outage")
        // The provider is back: the next probe closes the breaker and the model writes every summary.
        fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: summaryText(req) }] }))
        yield* TestClock.adjust("1 second")
        yield* more(200)
        const back = yield* compacting
        const steps = back.report.leafSummaries + back.report.condensedSummaries
        assert.isAbove(steps, 1)
        assert.strictEqual(back.requests, steps)
        assert.include(yield* storedModes, "normal")
        assert.deepStrictEqual(logs.slice(1), ["Info: summarizer: provider local answers again; summaries come from its model again"])
        // Calls not made are not calls: the usage log has the failed call, the failed probe and the model's summaries.
        const totals = yield* (yield* UsageLog).totals({ sessionKey: KEY })
        assert.deepStrictEqual(totals.map((t) => [t.purpose, t.calls, t.failed]), [["summary", 2 + steps, 2]])
      }).pipe(collectingWarnings(logs, ["Warn", "Info"]), Effect.provide(stack(noBackoff)))
    })

    it.effect("a rate limit asking for longer than the cooldown keeps the breaker open that long", () => {
      const logs: Array<string> = []
      return Effect.gen(function*() {
        fake.respondWith(() => ({ kind: "error", status: 429, retryAfter: 300, message: "slow down" }))
        yield* setup()
        const first = yield* compacting
        // The transport does not wait 5 minutes: it gives up at once, and the breaker waits instead.
        assert.deepStrictEqual([first.report.compacted, first.requests], [true, 1])
        assert.strictEqual(logs.length, 1)
        assert.include(logs[0] ?? "", "provider local is rate limiting")
        assert.include(logs[0] ?? "", "no summary calls to provider local for 300 s")
        yield* TestClock.adjust("61 seconds")
        yield* more(200)
        assert.strictEqual((yield* compacting).requests, 0, "no probe after the usual 60 s")
        yield* TestClock.adjust("238 seconds")
        yield* more(200)
        assert.strictEqual((yield* compacting).requests, 0)
        yield* TestClock.adjust("1 second")
        yield* more(200)
        assert.strictEqual((yield* compacting).requests, 1, "the probe, once the retry-after has passed")
        assert.strictEqual(logs.length, 1)
      }).pipe(collectingWarnings(logs), Effect.provide(stack(noBackoff)))
    })

    it.effect("a provider that never answers holds compaction for the summary budget of 20 s, not the chat transport's 150 s", () => {
      const logs: Array<string> = []
      return Effect.gen(function*() {
        fake.respondWith(() => ({ kind: "hang" }))
        yield* setup()
        const before = fake.requests.length
        const fiber = yield* Effect.forkChild((yield* Compactor).compact(KEY, { full: true, freshTail: 10 }))
        const request = yield* Effect.promise(() => fake.request(before))
        yield* TestClock.adjust("20 seconds")
        yield* Effect.promise(() => fake.when(() => request.aborted, { what: "the summary request given up after 20 s", timeoutMs: 5_000 }))
        const report = yield* Fiber.join(fiber)
        assert.isTrue(report.compacted)
        assert.strictEqual(fake.requests.length - before, 1, "no retry once the 20 s are spent")
        assert.strictEqual(logs.length, 1)
        assert.include(logs[0] ?? "", "timed out talking to provider local")
        // A chat call on this transport waits up to 60 s per attempt, 150 s in all (the default budget).
      }).pipe(collectingWarnings(logs), Effect.provide(stack({ ...noBackoff, firstByteTimeoutMs: 60_000 })))
    })
  })
})
