/**
 * The gateway's metrics as Prometheus scrapes them (issue 27): `anna gateway` (the built bundle)
 * runs a turn with two tool calls for a user over the HTTP channel (the fake LLM server scripts the
 * model), and `/metrics`, scraped with an admin's bearer token before and after and parsed by a
 * Prometheus text parser from npm, shows the turn, its tool calls, its tokens and cost, the channel's
 * messages and the HTTP requests — labelled by agent, tool, model and route pattern, never by the
 * user or the session. Anyone but an admin (no credentials, a user's token or console session) is
 * refused as the admin API refuses.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { annaEnv, finish, MAIN, newHome, start, waitForLine } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { allLabels, histogramCount, parseMetrics, type Scrape, typeOf, value } from "../support/prometheus.ts"
import { childEnv } from "../support/spawnAnna.ts"

const suite = fakeLlmSuite({ reset: false })

/** No Docker engine answers: the sandboxed tools are off, the memory tool is there (it needs none). */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const SESSION = "metrics-private-session"
/** A tool name the model makes up: it must not become a label. */
const INVENTED_TOOL = "alice_made_this_up"
const PASSWORD = "metrics-password-1234"

const createAccount = (home: string, env: Readonly<Record<string, string>>, user: string, role: "admin" | "user") => {
  const child = spawn(process.execPath, [MAIN, "admin", "create", user, "--role", role, "--password-stdin"], {
    env: { ...childEnv(home, env), ANNA_LOG_LEVEL: "warn" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdin.end(`${PASSWORD}\n`)
  return finish(child)
}

describe("e2e: /metrics on the gateway", () => {
  it("counts a real turn, its tools, tokens, cost, messages and requests with bounded labels; only an admin may read it", async () => {
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-metrics", ...NO_DOCKER }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    const [provider] = JSON.parse(await cli("provider", "list", "--json")) as Array<{ id: string; defaultModel: string }>
    assert.isDefined(provider)
    const model = provider?.defaultModel ?? ""
    await cli("provider", "price", provider?.id ?? "", model, "--input", "1", "--output", "2")
    for (const [user, role] of [["root", "admin"], ["alice", "user"]] as const) {
      const made = await createAccount(home, env, user, role)
      assert.strictEqual(made.code, 0, made.stderr)
    }
    const adminToken = (await cli("user", "token", "root", "--role", "admin")).trim()
    const userToken = (await cli("user", "token", "alice")).trim()

    const child = start(home, ["gateway", "--port", "0"], "info", env)
    const done = finish(child)
    try {
      const url = await waitForLine(child, (line) => /HTTP channel \(OpenAI-compatible\) on (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(line)?.[1])
      const scrape = async (): Promise<Scrape> => {
        const r = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })
        assert.strictEqual(r.status, 200)
        assert.strictEqual(r.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8")
        return parseMetrics(await r.text())
      }
      const before = await scrape()

      // A turn: the model calls the memory tool and a tool it made up, then answers.
      suite.fake.script(
        {
          kind: "reply",
          parts: [
            { type: "tool_call", id: "call_1", name: "memory", input: { action: "status" } },
            { type: "tool_call", id: "call_2", name: INVENTED_TOOL, input: {} }
          ],
          usage: { input: 100, output: 20 }
        },
        { kind: "reply", parts: [{ type: "text", text: "All done." }], usage: { input: 100, output: 20 } }
      )
      const ask = (content: string) =>
        fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${userToken}`, "content-type": "application/json", "x-anna-session": SESSION },
          body: JSON.stringify({ model: "default", messages: [{ role: "user", content }] })
        })
      const answer = await ask("check your memory")
      assert.strictEqual(answer.status, 200, await answer.clone().text())
      assert.include(((await answer.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content, "All done.")
      // A compaction asked for (/compact), a route with a parameter, and a path no route has.
      assert.strictEqual((await ask("/compact")).status, 200)
      assert.strictEqual((await fetch(`${url}/v1/models/default`, { headers: { authorization: `Bearer ${userToken}` } })).status, 200)
      assert.strictEqual((await fetch(`${url}/alice/${SESSION}/nothing-here`)).status, 404)

      // Refused as the admin API refuses: no credentials 401, a user's token or console session 403.
      assert.strictEqual((await fetch(`${url}/metrics`)).status, 401)
      const asUser = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${userToken}` } })
      assert.strictEqual(asUser.status, 403)
      assert.strictEqual(((await asUser.json()) as { error: { code: string } }).error.code, "forbidden")
      const login = async (username: string) => {
        const r = await fetch(`${url}/api/auth/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username, password: PASSWORD })
        })
        assert.strictEqual(r.status, 200)
        return (r.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
      }
      assert.strictEqual((await fetch(`${url}/metrics`, { headers: { cookie: await login("alice") } })).status, 403)
      const byConsole = await fetch(`${url}/metrics`, { headers: { cookie: await login("root") } })
      assert.strictEqual(byConsole.status, 200)
      assert.include(await byConsole.text(), "# TYPE anna_turns_total counter")

      const after = await scrape()
      const moved = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels)
      const observed = (name: string, labels: Record<string, string>) => histogramCount(after, name, labels) - histogramCount(before, name, labels)

      for (const [name, type] of [["anna_turns_total", "COUNTER"], ["anna_turn_duration_seconds", "HISTOGRAM"], ["anna_channel_up", "GAUGE"]] as const) {
        assert.strictEqual(typeOf(after, name), type, name)
      }
      // The turn, by agent, channel and outcome (a slash command is answered by the runtime, not run as a turn).
      assert.strictEqual(moved("anna_turns_total", { agent: "default", channel: "http", outcome: "end_turn" }), 1)
      assert.strictEqual(observed("anna_turn_duration_seconds", { agent: "default", channel: "http" }), 1)
      // Its tool calls: the memory tool answered; the made-up one is `unknown`, an error.
      assert.strictEqual(moved("anna_tool_calls_total", { tool: "memory", outcome: "ok" }), 1)
      assert.strictEqual(moved("anna_tool_calls_total", { tool: "unknown", outcome: "error" }), 1)
      assert.strictEqual(observed("anna_tool_call_duration_seconds", { tool: "memory" }), 1)
      // Its two model calls' tokens, and their cost at $1 / $2 per million.
      const call = { provider: provider?.id ?? "", model }
      assert.strictEqual(moved("anna_model_tokens_total", { ...call, kind: "input" }), 200)
      assert.strictEqual(moved("anna_model_tokens_total", { ...call, kind: "output" }), 40)
      assert.closeTo(moved("anna_model_cost_usd_total", call), (200 * 1 + 40 * 2) / 1e6, 1e-12)
      // /compact ran one compaction (little to compact yet, but it ran).
      assert.strictEqual(
        moved("anna_compactions_total", { mode: "manual", outcome: "unchanged" }) + moved("anna_compactions_total", { mode: "manual", outcome: "compacted" }),
        1
      )
      // The channel's messages (both requests) and its state.
      assert.strictEqual(moved("anna_channel_messages_total", { channel: "http", direction: "in", outcome: "accepted" }), 2)
      assert.strictEqual(moved("anna_channel_messages_total", { channel: "http", direction: "out", outcome: "sent" }), 2)
      assert.strictEqual(value(after, "anna_channel_up", { channel: "http" }), 1)
      assert.strictEqual(value(after, "anna_channel_up", { channel: "telegram" }), 0)
      // HTTP requests by route pattern and status.
      assert.strictEqual(moved("anna_http_requests_total", { method: "POST", route: "/v1/chat/completions", status: "200" }), 2)
      assert.strictEqual(moved("anna_http_requests_total", { method: "GET", route: "/v1/models/:model", status: "200" }), 1)
      assert.strictEqual(moved("anna_http_requests_total", { method: "GET", route: "/*", status: "404" }), 1)
      assert.strictEqual(moved("anna_http_requests_total", { method: "GET", route: "/metrics", status: "401" }), 1)
      assert.strictEqual(moved("anna_http_requests_total", { method: "GET", route: "/metrics", status: "403" }), 2)
      assert.strictEqual(observed("anna_http_request_duration_seconds", { method: "POST", route: "/v1/chat/completions" }), 2)

      // No label holds the user, the session or anything the model or a client made up.
      const labels = allLabels(after)
      for (const secret of ["alice", SESSION, INVENTED_TOOL, "nothing-here", "default:http"]) {
        assert.isEmpty(labels.filter((l) => l.includes(secret)), `a label holds ${secret}`)
      }
      const names = new Set(labels.map((l) => l.split("=")[0]))
      for (const name of ["user", "user_id", "session", "session_key"]) assert.isFalse(names.has(name), `a label is named ${name}`)
    } finally {
      child.kill("SIGTERM")
    }
    const r = await done
    assert.strictEqual(r.code, 0, r.stderr)
  }, 120_000)
})
