/**
 * The gateway's tracer wrappers (src/programs/telemetry.ts) over Effect's native tracer: the sampler
 * decides where a trace starts (a span without a parent) or enters (a caller's span), children
 * follow their parent; and a failed span ends with its errors' types only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Tracer } from "effect"
import { OtlpExporter } from "effect/observability"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import type { Sampler } from "../../src/domain/observability/otlp.ts"
import { exported, layerOtlp, privateSpans, withSampler } from "../../src/programs/telemetry.ts"

const sampledOf = (sampler: Sampler, parent?: Tracer.ExternalSpan) =>
  Effect.gen(function*() {
    const child = yield* Effect.withSpan(Effect.currentSpan, "child")
    const root = yield* Effect.currentSpan
    return [root.sampled, child.sampled]
  }).pipe(
    Effect.withSpan("root", parent === undefined ? { root: true } : { parent }),
    Effect.withTracer(withSampler(sampler)(Tracer.nativeTracer))
  )

const caller = (sampled: boolean) => Tracer.externalSpan({ traceId: "0".repeat(32), spanId: "1".repeat(16), sampled })

describe("withSampler", () => {
  it.effect("parent-based ratio: a new trace by the ratio, a caller's as the caller decided, children as their parent", () =>
    Effect.gen(function*() {
      const none: Sampler = { root: "traceidratio", ratio: 0, parentBased: true }
      const all: Sampler = { root: "traceidratio", ratio: 1, parentBased: true }
      assert.deepStrictEqual(yield* sampledOf(none), [false, false])
      assert.deepStrictEqual(yield* sampledOf(all), [true, true])
      assert.deepStrictEqual(yield* sampledOf(none, caller(true)), [true, true])
      assert.deepStrictEqual(yield* sampledOf(all, caller(false)), [false, false])
    }))

  it.effect("not parent-based: a caller's trace is decided by its id; always_off keeps nothing", () =>
    Effect.gen(function*() {
      // The trace id 000… is within any share above 0.
      assert.deepStrictEqual(yield* sampledOf({ root: "traceidratio", ratio: 0.5, parentBased: false }, caller(false)), [true, true])
      assert.deepStrictEqual(yield* sampledOf({ root: "always_off", ratio: 0, parentBased: false }, caller(true)), [false, false])
      assert.deepStrictEqual(yield* sampledOf({ root: "always_off", ratio: 0, parentBased: true }), [false, false])
    }))
})

describe("privateSpans", () => {
  it("ends a failed span with its error's type, not its message, and copies no events", () => {
    const ended: Array<Exit.Exit<unknown, unknown>> = []
    const events: Array<string> = []
    const inner = Tracer.make({
      span: (options) => {
        const span = Tracer.nativeTracer.span(options)
        span.end = (_, exit) => ended.push(exit)
        span.event = (name) => events.push(name)
        return span
      }
    })
    const span = privateSpans(inner).span({
      name: "x",
      parent: Option.none(),
      annotations: Context.empty(),
      links: [],
      startTime: 0n,
      kind: "internal",
      root: true,
      sampled: true
    })
    span.event("log line naming session alice", 0n)
    span.end(1n, Exit.fail({ _tag: "ToolError", message: "cannot read /workspace/secret.txt" }))
    assert.deepStrictEqual(events, [])
    const exit = ended[0]
    assert.isTrue(exit !== undefined && Exit.isFailure(exit))
    const text = JSON.stringify(exit !== undefined && Exit.isFailure(exit) ? exit.cause.reasons.map((r) => (r._tag === "Fail" ? [String(r.error), (r.error as Error).name] : r._tag)) : [])
    assert.include(text, "ToolError")
    assert.notInclude(text, "secret")
  })
})

describe("privateSpans: quiet spans", () => {
  it("leaves the stores' lookups out of export and hangs their children from the nearest exported span", () => {
    const exportedSpans: Array<Tracer.Span> = []
    const inner = Tracer.make({
      span: (options) => {
        const span = Tracer.nativeTracer.span(options)
        exportedSpans.push(span)
        return span
      }
    })
    const tracer = privateSpans(inner)
    const open = (name: string, parent: Tracer.AnySpan | undefined, kind: Tracer.SpanKind = "internal") =>
      tracer.span({
        name,
        parent: parent === undefined ? Option.none() : Option.some(parent),
        annotations: Context.empty(),
        links: [],
        startTime: 0n,
        kind,
        root: parent === undefined,
        sampled: true
      })
    const turn = open("turn", undefined)
    const store = open("MemoryStore.appendMessages", turn)
    const deeper = open("Memory.render", store)
    const search = open("Searcher.search", deeper)
    const model = open("chat fake-large", store, "client")
    assert.deepStrictEqual(exportedSpans.map((s) => s.name), ["turn", "Searcher.search", "chat fake-large"])
    for (const child of [search, model]) {
      assert.strictEqual(child.parent._tag === "Some" ? child.parent.value.spanId : "", turn.spanId)
      assert.strictEqual(child.traceId, turn.traceId)
    }
    assert.strictEqual(store.traceId, turn.traceId, "a quiet span is still in its trace (log lines inside it say so)")
    assert.deepStrictEqual(exported({ name: "SandboxSession.exec", kind: "internal" }), true)
    assert.deepStrictEqual(exported({ name: "ConfigStore.snapshot", kind: "internal" }), false)
    assert.deepStrictEqual(exported({ name: "POST", kind: "server" }), true)
  })
})

describe("layerOtlp: a collector that never answers", () => {
  it.live("gives each export request up after the signal's timeout (OTEL_EXPORTER_OTLP_TIMEOUT) instead of holding it forever", () =>
    Effect.gen(function*() {
      const requests: Array<IncomingMessage> = []
      const closed: Array<number> = []
      // Takes every request and never answers.
      const server = createServer((req) => {
        const i = requests.push(req) - 1
        req.socket.once("close", () => closed.push(i))
        req.resume()
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((ok) => server.listen(0, "127.0.0.1", () => ok()))),
        () => Effect.sync(() => server.close())
      )
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`
      const layer = layerOtlp({
        traces: { url, protocol: "http/protobuf", headers: {}, compression: "none", intervalMs: 3_600_000, timeoutMs: 300 },
        serviceName: "anna-test",
        serviceVersion: "0",
        sampler: { root: "always_on", ratio: 1, parentBased: true }
      })
      const context = yield* Layer.build(layer)
      yield* Effect.void.pipe(Effect.withSpan("turn"), Effect.provideContext(context))
      // Sends what it holds and returns: the first request and its retries each end at the timeout.
      yield* Effect.serviceOption(OtlpExporter.Flusher).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.die("layerOtlp gave no flusher"), onSome: (f) => f.flush })),
        Effect.provideContext(context)
      )
      assert.isAtLeast(requests.length, 2, "the request timed out and was retried")
      yield* Effect.promise(() => new Promise<void>((ok) => (closed.length >= requests.length ? ok() : requests.at(-1)?.socket.once("close", () => ok()))))
      assert.strictEqual(closed.length, requests.length, "every request it gave up on was closed")
    }).pipe(Effect.scoped), 30_000)
})
