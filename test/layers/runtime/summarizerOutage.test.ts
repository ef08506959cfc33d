/**
 * A summarizer outage seen from the runtime (issue 10): the agent's summary model answers 500 to
 * everything while its chat model works. Turns keep compacting before they run; the summary
 * provider's breaker must keep that from costing every turn its retries. Requests are counted at
 * the fake server (OpenAI Chat Completions SDK → 127.0.0.1), on real SQLite, under the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ChatTarget } from "../../../src/domain/runtime/types.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { localProvider, modelSummarizerRuntime } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"

const suite = fakeLlmSuite()

// No backoff, so that the transport's retries need no clock: the TestClock moves only when told.
const transport = { ...fastTransport, baseBackoffMs: 0 }

const stack = () => modelSummarizerRuntime(suite.keep(mkdtempSync(join(tmpdir(), "anna-outage-"))), transport)

const modelOf = (r: RecordedRequest) => (r.body as { model?: string } | null)?.model
const isSummary = (r: RecordedRequest) => modelOf(r) === "fake-small"

/** Runs `self` with the warnings and infos it logs collected into `into`. */
const collectingLogs = (into: Array<{ level: string; text: string }>) =>
  Effect.provide(Logger.layer([Logger.make((o) => {
    if (o.logLevel === "Warn" || o.logLevel === "Info") {
      into.push({ level: o.logLevel, text: Array.isArray(o.message) ? o.message.join(" ") : String(o.message) })
    }
  })]))

const alice: ChatTarget = { platform: "cli", externalUserId: "alice", userName: "Alice" }

describe("a summarizer outage during turns", () => {
  it.effect("40 turns make a bounded number of summary requests, compact deterministically, and warn once", () => {
    const logs: Array<{ level: string; text: string }> = []
    return Effect.gen(function*() {
      yield* (yield* ProviderStore).add(localProvider(suite.fake))
      yield* (yield* AgentStore).create("a1", {
        providerId: "local",
        summaryProviderId: "local",
        summaryModel: "fake-small",
        contextTokens: 6_000,
        tools: []
      })
      suite.fake.respondWith((req) =>
        isSummary(req)
          ? { kind: "error", status: 500, message: "the summarizer is down" }
          : { kind: "reply", parts: [{ type: "text", text: "Noted. ".repeat(40) }] }
      )
      const runtime = yield* Runtime
      const chat = yield* runtime.resolve(alice)
      // Summary requests made by each turn that compacted.
      const compactions: Array<number> = []
      for (let i = 0; i < 40; i++) {
        const before = suite.fake.requests.filter(isSummary).length
        const events = yield* Stream.runCollect(
          runtime.send(chat, `Fact number ${i}: the cabin code is ${1000 + i}. ${"Some more words to take space. ".repeat(40)}`)
        )
        const done = events[events.length - 1]
        assert.strictEqual(done?.type === "done" ? done.stopReason : "", "end_turn")
        if (events.some((e) => e.type === "notice" && e.text.startsWith("compacted"))) {
          compactions.push(suite.fake.requests.filter(isSummary).length - before)
        }
        // Ten seconds between messages, 400 s in all: the breaker's first cooldowns (60 s, then
        // 120 s) pass while the outage lasts, so it probes the provider again.
        yield* TestClock.adjust("10 seconds")
      }
      const summaryRequests = suite.fake.requests.filter(isSummary).length
      assert.strictEqual(suite.fake.requests.length - summaryRequests, 40, "one chat request per turn")
      // Without the breaker no turn compacted (each failed after 4 requests: 100 in all, 25 warnings).
      assert.isAtLeast(compactions.length, 4, "the turns compacted, deterministically")
      // The first compaction: one request and the 2 retries of a summary call. Later ones: none,
      // or one probe once a cooldown has passed — at most 2 in 400 s (after 60 s, then 120 s more).
      assert.strictEqual(compactions[0], 3)
      const probes = compactions.slice(1)
      assert.isTrue(probes.every((n) => n <= 1), JSON.stringify(compactions))
      assert.isAtLeast(probes.filter((n) => n === 1).length, 1, JSON.stringify(compactions))
      assert.isAtMost(summaryRequests, 3 + 2)
      // Skipped calls are not calls: the usage log has the first failure and the probes only.
      const totals = yield* (yield* UsageLog).totals({ sessionKey: chat.sessionKey })
      const summaries = totals.filter((t) => t.purpose === "summary")
      const probed = probes.filter((n) => n === 1).length
      assert.deepStrictEqual(summaries.map((t) => [t.calls, t.failed]), [[1 + probed, 1 + probed]])
      const warnings = logs.filter((l) => l.level === "Warn")
      assert.strictEqual(warnings.length, 1, JSON.stringify(warnings))
      assert.include(warnings[0]?.text ?? "", "provider local")
      assert.include(warnings[0]?.text ?? "", "the summarizer is down")
      const store = yield* MemoryStore
      const c = yield* store.getConversation(chat.sessionKey)
      const input = yield* store.verifyInput(c.id, chat.sessionKey)
      assert.deepStrictEqual(verifySession(input), [])
      const stored = yield* store.summariesByIds(input.summaries.map((s) => s.id))
      assert.isAbove(stored.length, 0)
      assert.deepStrictEqual([...new Set(stored.map((s) => s.mode))], ["truncated"])
    }).pipe(collectingLogs(logs), Effect.provide(stack()))
  })
})
