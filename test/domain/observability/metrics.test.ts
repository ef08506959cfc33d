/**
 * The metrics the gateway end-to-end test cannot move without Docker or a failing summarizer
 * (test/e2e/metrics.test.ts has the rest): the sandbox containers gauge as the admission counts
 * containers in and out, the summarizer breaker gauge as the breaker opens and closes (TestClock),
 * and the label caps. Each test reads a registry of its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Metric } from "effect"
import { TestClock } from "effect/testing"
import * as Metrics from "../../../src/domain/observability/metrics.ts"
import * as SummaryBreaker from "../../../src/layers/memory/summaryBreaker.ts"
import * as Admission from "../../../src/layers/sandbox/admission.ts"

const isolated = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Metric.MetricRegistry, new Map())

const gauge = (metric: Metric.Gauge<number>, attributes: Record<string, string> = {}) =>
  Effect.map(Metric.value(Metric.withAttributes(metric, attributes)), (s) => s.value)

let slots = 0
const slot = (userId: string): Admission.Slot => ({ id: `slot-${++slots}`, userId, lastUsed: 0, busy: 0, evict: Effect.succeed(false) })

describe("metrics", () => {
  it.effect("anna_sandbox_containers follows the containers admitted and released", () =>
    isolated(Effect.gen(function*() {
      const admission = Admission.make()
      const caps = { perUser: 2, total: 3 }
      const [a, b, c] = [slot("u1"), slot("u2"), slot("u1")]
      yield* admission.admit(a, caps)
      yield* admission.admit(b, caps)
      assert.strictEqual(yield* gauge(Metrics.sandboxContainers), 2)
      yield* admission.admit(c, caps)
      // Refused (over the total): the gauge does not move.
      yield* Effect.flip(admission.admit(slot("u3"), caps))
      assert.strictEqual(yield* gauge(Metrics.sandboxContainers), 3)
      yield* admission.release(b)
      yield* admission.release(a)
      assert.strictEqual(yield* gauge(Metrics.sandboxContainers), 1)
    })))

  it.effect("anna_summarizer_breaker_open is 1 while a provider's breaker is open, per provider", () =>
    isolated(Effect.gen(function*() {
      const breaker = yield* SummaryBreaker.make
      const failing = yield* breaker.admit("summaries")
      yield* breaker.settle("summaries", failing, { _tag: "Outage", reason: "503 from the provider" })
      assert.strictEqual(yield* gauge(Metrics.summarizerBreakerOpen, { provider: "summaries" }), 1)
      // Another provider answering opens nothing.
      const fine = yield* breaker.admit("other")
      yield* breaker.settle("other", fine, { _tag: "Answered" })
      assert.strictEqual(yield* gauge(Metrics.summarizerBreakerOpen, { provider: "other" }), 0)
      assert.strictEqual(yield* gauge(Metrics.summarizerBreakerOpen, { provider: "summaries" }), 1)
      // After the cooldown a probe that gets an answer closes it.
      yield* TestClock.adjust(SummaryBreaker.FIRST_COOLDOWN_MS)
      const probe = yield* breaker.admit("summaries")
      assert.strictEqual(probe._tag, "Probe")
      yield* breaker.settle("summaries", probe, { _tag: "Answered" })
      assert.strictEqual(yield* gauge(Metrics.summarizerBreakerOpen, { provider: "summaries" }), 0)
    })))

  it("caps label values that could come from outside", () => {
    assert.strictEqual(Metrics.knownChannel("telegram"), "telegram")
    assert.strictEqual(Metrics.knownChannel("made-up-platform"), Metrics.OTHER)
    assert.strictEqual(Metrics.httpMethod("post"), "POST")
    assert.strictEqual(Metrics.httpMethod("PROPFIND"), Metrics.OTHER)
    assert.strictEqual(Metrics.labelValue("gpt-4.1-mini"), "gpt-4.1-mini")
    assert.strictEqual(Metrics.labelValue("mcp__search.query"), "mcp__search.query")
    assert.strictEqual(Metrics.labelValue("a label\nwith a newline"), Metrics.OTHER)
    assert.strictEqual(Metrics.labelValue("x".repeat(129)), Metrics.OTHER)
  })
})
