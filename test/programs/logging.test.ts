/**
 * anna's log line format (src/programs/logging.ts): one line per event — the message, the
 * annotations as logfmt `key=value` pairs, a cause's messages — and a cause's full text after it only
 * when the operator asked for details (debug level). The CLI tests check it on real commands
 * (test/programs/logNoise.test.ts, chatLogLines.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Logger, Redacted, References } from "effect"
import { formatJsonLine, formatLine, type LineInput, loggersFor } from "../../src/programs/logging.ts"
import { LogOutput, makeLogOutput } from "../../src/services/LogOutput.ts"

const at = new Date(2026, 10, 28, 14, 2, 7, 118)
const base: LineInput = { date: at, level: "Info", fiberId: 16, message: ["hello"], annotations: {}, spans: [], cause: Cause.empty, details: false }

describe("log lines", () => {
  it("annotations are key=value pairs on the same line, quoted when they need it, secrets redacted", () => {
    const line = formatLine({
      ...base,
      message: ["runtime.exception_path"],
      annotations: { exception_id: "EX-009", host: "mcp.example.com:443", note: "two words", empty: "", n: 3, token: Redacted.make("s3cret"), obj: { a: 1, b: [2] } }
    })
    assert.strictEqual(
      line,
      `[14:02:07.118] INFO (#16): runtime.exception_path exception_id=EX-009 host=mcp.example.com:443 note="two words" empty="" n=3 token=<redacted> obj="{ a: 1, b: [ 2 ] }"`
    )
  })

  it("folds a message's lines (stack frames dropped) and adds the cause's messages; the stack and lines only with details", () => {
    const cause = Cause.fail(new Error("provider refused (HTTP 400)"))
    const message = "learning: catch-up failed: Error: disk full\n    at write (file:///a.js:1:2)\n    at run (file:///b.js:3:4)"
    const line = formatLine({ ...base, level: "Warn", message: [message], cause })
    assert.strictEqual(line, "[14:02:07.118] WARN (#16): learning: catch-up failed: Error: disk full — provider refused (HTTP 400)")
    assert.deepStrictEqual(formatLine({ ...base, level: "Debug", message: [message], details: true }).split("\n"), [
      "[14:02:07.118] DEBUG (#16): learning: catch-up failed: Error: disk full",
      "      at write (file:///a.js:1:2)",
      "      at run (file:///b.js:3:4)"
    ])
    const detailed = formatLine({ ...base, level: "Warn", message: ["learning: reflection failed"], cause, details: true }).split("\n")
    assert.strictEqual(detailed[0], "[14:02:07.118] WARN (#16): learning: reflection failed — provider refused (HTTP 400)")
    assert.isAbove(detailed.length, 1)
    assert.isTrue(detailed.slice(1).every((l) => l.startsWith("  ")))
  })

  it("spans are label=Nms before the colon, as Effect's logger writes them", () => {
    const line = formatLine({ ...base, spans: [["turn", at.getTime() - 250]] })
    assert.strictEqual(line, "[14:02:07.118] INFO (#16) turn=250ms: hello")
  })

  it("ANNA_LOG_FORMAT=json: one JSON object per line — time, level, fiber, message, annotations as fields, the error; secrets masked", () => {
    const cause = Cause.fail(new Error("provider refused (HTTP 400)"))
    const line = formatJsonLine({
      ...base,
      level: "Warn",
      message: ["learning: reflection failed\n    at run (file:///b.js:3:4)"],
      annotations: { agent: "default", n: 3, ok: true, token: Redacted.make("s3cret"), level: "spoofed" },
      spans: [["turn", at.getTime() - 250]],
      cause
    })
    assert.notInclude(line, "\n")
    assert.notInclude(line, "s3cret")
    assert.deepStrictEqual(JSON.parse(line), {
      time: at.toISOString(),
      level: "WARN",
      fiber: 16,
      message: "learning: reflection failed",
      spans: { turn: 250 },
      agent: "default",
      n: 3,
      ok: true,
      token: "<redacted>",
      "annotation.level": "spoofed",
      error: "provider refused (HTTP 400)"
    })
    const detailed = JSON.parse(formatJsonLine({ ...base, cause, details: true }))
    assert.include(detailed.cause, "provider refused (HTTP 400)")
  })

  it.effect("a JSON line logged inside a span carries its trace and span ids", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const ids = yield* Effect.gen(function*() {
        yield* Effect.logInfo("inside").pipe(Effect.annotateLogs("agent", "a1"))
        const span = yield* Effect.currentSpan
        return { trace_id: span.traceId, span_id: span.spanId }
      }).pipe(
        Effect.withSpan("turn"),
        Effect.provideService(LogOutput, makeLogOutput((l) => lines.push(l))),
        Effect.provideService(Logger.CurrentLoggers, loggersFor("json")),
        Effect.provideService(References.MinimumLogLevel, "Info")
      )
      assert.lengthOf(lines, 1)
      assert.deepInclude(JSON.parse(lines[0] ?? ""), { ...ids, level: "INFO", message: "inside", agent: "a1" })
      assert.match(ids.trace_id, /^[0-9a-f]{32}$/)
    }))
})
