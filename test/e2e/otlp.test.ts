/**
 * The gateway's OpenTelemetry export (issue 27), end to end: `anna gateway` (the built bundle) with
 * `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a fake collector (OTLP/HTTP JSON) runs one turn over the
 * HTTP channel in which the model (the fake LLM server) searches memory, then answers. The collector
 * receives the turn as one trace continuing the caller's `traceparent`: the request's server span,
 * under it the turn, under the turn the context assemblies, both model calls (GenAI attributes:
 * provider, model, tokens, finish reasons) and the tool call; no span anywhere holds the user's
 * message, the model's reply, the tool's arguments, the session's name or the user's id. Metrics
 * arrive as they are exported, and the logs held back (a long export interval) arrive when SIGTERM
 * stops the gateway: the exporters flush on a normal shutdown.
 *
 * Without any OTEL_* variable a gateway has no exporter: it says nothing about telemetry and a
 * collector on the specification's default address (127.0.0.1:4318, when free) receives nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import type { ChildProcess } from "node:child_process"
import { annaEnv, finish, newHome, start, waitForLine } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { startFakeTelegram } from "../support/fakeTelegram/server.ts"
import { type CollectedSpan, startOtlpCollector } from "../support/otlpCollector.ts"

const suite = fakeLlmSuite({ reset: false })

/** No Docker engine answers: the sandboxed tools are off, the memory tool is there (it needs none). */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const USER = "otlp-user-quokka"
const SESSION = "otlp-private-session-heron"
const USER_TEXT = "please find my plum-colored umbrella receipt"
const QUERY = "umbrella-receipt-query-7319"
const REPLY = "Found it: the receipt says forty-two marigolds."

const setUp = async (env: Readonly<Record<string, string>>) => {
  const home = suite.keep(newHome())
  const cli = async (...args: Array<string>) => {
    const r = await annaEnv(home, env, ...args)
    assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
    return r.stdout
  }
  await cli("onboard", "--from-env")
  await cli("user", "add", USER)
  const token = (await cli("user", "token", USER)).trim()
  const [provider] = JSON.parse(await cli("provider", "list", "--json")) as Array<{ id: string; defaultModel: string }>
  return { home, token, model: provider?.defaultModel ?? "" }
}

const startGateway = async (home: string, env: Readonly<Record<string, string>>) => {
  const child = start(home, ["gateway", "--port", "0"], "info", env)
  const done = finish(child)
  const url = await waitForLine(child, (line) => /HTTP channel \(OpenAI-compatible\) on (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(line)?.[1])
  return { child, done, url }
}

/** The model searches memory, then answers. */
const scriptTurn = () =>
  suite.fake.script(
    {
      kind: "reply",
      parts: [{ type: "tool_call", id: "call_otlp_1", name: "memory", input: { action: "search", query: QUERY } }],
      usage: { input: 100, output: 20 }
    },
    { kind: "reply", parts: [{ type: "text", text: REPLY }], usage: { input: 130, output: 12 } }
  )

const ask = (url: string, token: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-anna-session": SESSION, ...headers },
    body: JSON.stringify({ model: "default", messages: [{ role: "user", content: USER_TEXT }] })
  })

const stop = async (gateway: { readonly child: ChildProcess; readonly done: Promise<{ code: number | null; stderr: string }> }) => {
  gateway.child.kill("SIGTERM")
  const r = await gateway.done
  assert.strictEqual(r.code, 0, r.stderr)
  return r
}

/** Whether `span` is `ancestor` or below it, following parentSpanId within one trace. */
const under = (spans: ReadonlyArray<CollectedSpan>, span: CollectedSpan, ancestor: CollectedSpan): boolean => {
  const byId = new Map(spans.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]))
  let at: CollectedSpan | undefined = span
  for (let depth = 0; at !== undefined && depth < 64; depth++) {
    if (at.spanId === ancestor.spanId && at.traceId === ancestor.traceId) return true
    at = at.parentSpanId === undefined ? undefined : byId.get(at.parentSpanId)
  }
  return false
}

describe("e2e: OTLP export from the gateway", () => {
  it("exports a turn as one trace (GenAI attributes, no text), metrics, and logs flushed at shutdown", async () => {
    const collector = await startOtlpCollector()
    try {
      const llm = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-otlp", ...NO_DOCKER }
      const { home, token, model } = await setUp(llm)
      const gateway = await startGateway(home, {
        ...llm,
        // Every signal in the default protocol, http/protobuf (the next test sends traces as JSON).
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_SERVICE_NAME: "anna-under-test",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_METRIC_EXPORT_INTERVAL: "300",
        // Logs wait for the shutdown's flush (an hour is longer than this test).
        OTEL_BLRP_SCHEDULE_DELAY: "3600000"
      })
      let stopped = false
      try {
        scriptTurn()
        const callerTrace = randomBytes(16).toString("hex")
        const callerSpan = randomBytes(8).toString("hex")
        const answer = await ask(gateway.url, token, { traceparent: `00-${callerTrace}-${callerSpan}-01` })
        assert.strictEqual(answer.status, 200, await answer.clone().text())
        assert.include(((await answer.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content, REPLY)

        // The whole turn: the request's span, the turn's, both model calls and the tool call, in the caller's trace.
        const spans = await collector.waitFor("the turn's spans", () => {
          const all = collector.spans()
          const trace = all.filter((s) => s.traceId === callerTrace)
          const ready = trace.some((s) => s.parentSpanId === callerSpan) && trace.some((s) => s.name === "turn") && trace.filter((s) => s.name.startsWith("chat ")).length === 2 &&
            trace.some((s) => s.name.startsWith("execute_tool "))
          return ready ? all : undefined
        })
        const trace = spans.filter((s) => s.traceId === callerTrace)
        const one = (name: string) => {
          const found = trace.filter((s) => s.name === name)
          assert.lengthOf(found, 1, `${name} in ${trace.map((s) => s.name).join(", ")}`)
          return found[0] as CollectedSpan
        }

        // The request's server span continues the caller's span; the turn is under it.
        const server = trace.find((s) => s.parentSpanId === callerSpan)
        assert.isDefined(server, "a span whose parent is the caller's")
        assert.strictEqual(server?.kind, 2, "the request's span is a server span")
        // Its route's pattern, not its path (an admin API path can hold a session key).
        assert.strictEqual(server?.attributes["http.route"], "/v1/chat/completions")
        assert.strictEqual(server?.attributes["http.response.status_code"], 200)
        assert.isEmpty(spans.filter((s) => "url.path" in s.attributes || "url.full" in s.attributes || "url.query" in s.attributes))
        const turn = one("turn")
        assert.isTrue(server !== undefined && under(spans, turn, server), "the turn is under the request's span")
        assert.strictEqual(turn.resource["service.name"], "anna-under-test")
        assert.strictEqual(turn.attributes["gen_ai.operation.name"], "invoke_agent")
        assert.strictEqual(turn.attributes["anna.channel"], "http")
        assert.strictEqual(turn.attributes["gen_ai.agent.id"], "default")
        assert.strictEqual(turn.attributes["anna.turn.outcome"], "end_turn")
        const hash = turn.attributes["anna.session.hash"]
        assert.match(String(hash), /^[0-9a-f]{16}$/)

        // Two model calls, in order, with the GenAI conventions' attributes.
        const calls = trace.filter((s) => s.name.startsWith("chat ")).sort((a, b) => Number(a.attributes["anna.round"]) - Number(b.attributes["anna.round"]))
        assert.deepStrictEqual(calls.map((c) => c.name), [`chat ${model}`, `chat ${model}`])
        for (const [call, tokens, finish] of [[calls[0], [100, 20], "tool_use"], [calls[1], [130, 12], "end_turn"]] as const) {
          assert.isTrue(call !== undefined && under(spans, call, turn), "a model call is under the turn")
          assert.strictEqual(call?.kind, 3, "a model call is a client span")
          assert.strictEqual(call?.attributes["gen_ai.operation.name"], "chat")
          assert.strictEqual(call?.attributes["gen_ai.provider.name"], "openai")
          assert.strictEqual(call?.attributes["gen_ai.request.model"], model)
          assert.strictEqual(call?.attributes["gen_ai.usage.input_tokens"], tokens[0])
          assert.strictEqual(call?.attributes["gen_ai.usage.output_tokens"], tokens[1])
          assert.deepStrictEqual(call?.attributes["gen_ai.response.finish_reasons"], [finish])
        }
        // The tool call, under the turn, with the tool's own spans (the memory search) under it.
        const tool = one("execute_tool memory")
        assert.isTrue(under(spans, tool, turn), "the tool call is under the turn")
        assert.strictEqual(tool.attributes["gen_ai.operation.name"], "execute_tool")
        assert.strictEqual(tool.attributes["gen_ai.tool.name"], "memory")
        assert.strictEqual(tool.attributes["gen_ai.tool.call.id"], "call_otlp_1")
        assert.strictEqual(tool.attributes["anna.tool.outcome"], "ok")
        assert.isNotEmpty(trace.filter((s) => s !== tool && under(spans, s, tool)), "the tool's own spans are under it")
        // The context was assembled for each model call, under the turn.
        const assemblies = trace.filter((s) => s.name === "turn.assemble")
        assert.lengthOf(assemblies, 2)
        for (const a of assemblies) assert.isTrue(under(spans, a, turn))
        // The hot inner spans are left out: no SQL statement or transaction, no store or configuration
        // lookup; what they did hangs from the spans that explain the turn (the search under the tool call).
        assert.deepStrictEqual(spans.filter((s) => "db.system.name" in s.attributes || s.name === "sql.transaction").map((s) => s.name), [])
        assert.deepStrictEqual(trace.filter((s) => /^(MemoryStore|ConfigStore|AgentStore|ToolRegistry|Memory)\./.test(s.name)).map((s) => s.name), [])
        assert.isAtMost(trace.length, 30, trace.map((s) => s.name).join(", "))
        assert.isTrue(under(spans, one("Searcher.search"), tool), "the search hangs from the tool call")
        // Every span of the trace hangs from the caller's span: one tree.
        for (const s of trace) assert.isTrue(s === server || (server !== undefined && under(spans, s, server)), `${s.name} is in the request's tree`)

        // Metrics, as they are exported.
        await collector.waitFor("the turn's metrics", () => (collector.metricNames().has("anna_turns_total") ? true : undefined))
        assert.isEmpty(collector.logs(), "logs wait for the shutdown")

        const { stderr } = await stop(gateway)
        stopped = true
        assert.include(stderr, `telemetry: exporting traces to ${collector.url}/v1/traces (http/protobuf), metrics to`)
        // All of it came as protobuf, which the collector read (and would have refused, broken).
        assert.deepStrictEqual([...new Set(collector.requests().map((r) => r.contentType))], ["application/x-protobuf"])
        // The logs held back were sent as the gateway stopped, its last line among them.
        const logs = await collector.waitFor("the gateway's logs", () => {
          const all = collector.logs()
          return all.some((l) => String(l.body).includes("anna gateway: stopping")) ? all : undefined
        })
        assert.isTrue(logs.some((l) => String(l.body).includes("anna gateway: database")), "the start's lines are among them")

        // No span holds text, arguments or who (names, attributes, events, statuses); the logs carry
        // the log lines (which name sessions and users, as on stderr) but no text either.
        const texts = [USER_TEXT, "umbrella", QUERY, REPLY, "marigolds"]
        const leaks = (items: ReadonlyArray<unknown>, secrets: ReadonlyArray<string>) =>
          items.map((item) => JSON.stringify(item)).filter((e) => secrets.some((s) => e.includes(s)))
        assert.deepStrictEqual(leaks(collector.spans(), [...texts, SESSION, USER]), [], "spans hold text, the session or the user")
        assert.deepStrictEqual(leaks(collector.logs(), texts), [], "logs hold text")
      } finally {
        if (!stopped) gateway.child.kill("SIGTERM")
      }
    } finally {
      await collector.close()
    }
  }, 120_000)

  it("a platform's message is one trace: routing, the turn and the delivery under the message's span", async () => {
    const collector = await startOtlpCollector()
    const token = "515151:OtlpTraceTokenOtlpTraceTokenOtlpTr"
    const tg = await startFakeTelegram({ token, botUsername: "otlp_bot" })
    try {
      const llm = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-otlp", ...NO_DOCKER }
      const { home } = await setUp(llm)
      const cli = async (...args: Array<string>) => {
        const r = await annaEnv(home, llm, ...args)
        assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      }
      await cli("channel", "set", "telegram", "--config", `token=${token}`, "--config", `base_url=${tg.apiRoot}`)
      await cli("channel", "enable", "telegram")
      const gateway = await startGateway(home, {
        ...llm,
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_LOGS_EXPORTER: "none",
        // The metrics in the default protocol (what a collector gets when only the endpoint is set).
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/protobuf",
        OTEL_METRIC_EXPORT_INTERVAL: "300"
      })
      try {
        suite.fake.script({ kind: "reply", parts: [{ type: "text", text: REPLY }], usage: { input: 50, output: 9 } })
        tg.sendUserMessage({ chatId: 918273645, chatType: "private", from: { id: 918273645 }, text: USER_TEXT })
        await tg.waitFor(() => (tg.messages(918273645).some((m) => (m.text ?? "").includes("marigolds")) ? true : undefined), "the reply in the chat")
        const spans = await collector.waitFor("the message's trace", () => {
          const all = collector.spans()
          const root = all.find((s) => s.name === "channel.message")
          const trace = root === undefined ? [] : all.filter((s) => s.traceId === root.traceId)
          return ["Runtime.resolve", "turn", "channel.deliver"].every((n) => trace.some((s) => s.name === n)) && trace.some((s) => s.name.startsWith("chat "))
            ? all
            : undefined
        })
        const root = spans.find((s) => s.name === "channel.message") as CollectedSpan
        assert.isUndefined(root.parentSpanId || undefined, "the message's span is its trace's root")
        assert.strictEqual(root.attributes["anna.channel"], "telegram")
        assert.strictEqual(root.attributes["anna.message.outcome"], "accepted")
        const named = (name: string) => spans.find((s) => s.traceId === root.traceId && s.name === name) as CollectedSpan
        for (const name of ["Runtime.resolve", "turn", "channel.deliver"]) assert.isTrue(under(spans, named(name), root), `${name} is under the message's span`)
        assert.strictEqual(named("turn").attributes["anna.channel"], "telegram")
        const call = spans.find((s) => s.traceId === root.traceId && s.name.startsWith("chat ")) as CollectedSpan
        assert.isTrue(under(spans, call, named("turn")), "the model call is under the turn")
        const leaks = spans.map((item) => JSON.stringify(item)).filter((e) => [USER_TEXT, REPLY, "marigolds", "918273645"].some((t) => e.includes(t)))
        assert.deepStrictEqual(leaks, [], "spans hold text or the Telegram user")
        // Protobuf: an ExportMetricsServiceRequest (field 1, resource_metrics, length-delimited: 0x0a)
        // naming the turn's counter (protobuf keeps strings as they are).
        const metrics = await collector.waitFor("the metrics in protobuf", () =>
          collector.requests().find((r) => r.path === "/v1/metrics" && r.body.includes("anna_turns_total")))
        assert.strictEqual(metrics.contentType, "application/x-protobuf")
        assert.strictEqual(metrics.body.charCodeAt(0), 0x0a)
      } finally {
        await stop(gateway)
      }
    } finally {
      await tg.close()
      await collector.close()
    }
  }, 120_000)

  it("sends nothing without OTEL_* variables", async () => {
    // The specification's default endpoint, when this machine has it free; else any port (still never told).
    const collector = await startOtlpCollector(4318).catch(() => startOtlpCollector())
    try {
      const llm = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-otlp", ...NO_DOCKER }
      const { home, token } = await setUp(llm)
      const gateway = await startGateway(home, llm)
      scriptTurn()
      const answer = await ask(gateway.url, token, { traceparent: `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01` })
      assert.strictEqual(answer.status, 200, await answer.clone().text())
      const r = await stop(gateway)
      assert.notInclude(r.stderr, "telemetry:")
      assert.deepStrictEqual(collector.requests(), [])
    } finally {
      await collector.close()
    }
  }, 120_000)
})
