/**
 * Dense retrieval end to end (issue 25), through what users run: the built gateway against the fake
 * LLM server, an agent with `--embedding-model`, a chat through the HTTP channel (its messages
 * stored), the gateway's background worker embedding them (awaited by polling the database, not by
 * sleeping), then the admin API's search (the console's), `anna memory search` and `anna mcp serve
 * --agent` finding a message by meaning alone — "automobile" shares no
 * word with "car", which the fake's embeddings treat as one.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { annaEnv, finish, MAIN, newHome, start, waitForLine } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { readRows, until } from "../support/gatewayDb.ts"
import { childEnv } from "../support/spawnAnna.ts"

const suite = fakeLlmSuite()
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const READY = /HTTP channel \(OpenAI-compatible\) on http:\/\/127\.0\.0\.1:(\d+)\/v1.*press Ctrl\+C to stop/
const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

describe("dense retrieval through the gateway", () => {
  it("chat → the worker embeds in the background → memory search fuses a hit found by meaning alone", async () => {
    const h = newHome()
    homes.push(h)
    const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-dense", ...NO_DOCKER }
    const run = async (...args: ReadonlyArray<string>) => {
      const r = await annaEnv(h, env, ...args)
      assert.strictEqual(r.code, 0, r.stdout + r.stderr)
      return r
    }
    await run("onboard", "--from-env")
    await run("agent", "set", "default", "--embedding-model", "openai/fake-embed", "--tools", "none")
    const shown = JSON.parse((await run("agent", "show", "default", "--json")).stdout) as Record<string, unknown>
    assert.deepInclude(shown, { embeddingProviderId: "openai", embeddingModel: "fake-embed" })
    await run("user", "add", "alice")
    const token = (await run("user", "token", "alice")).stdout.trim()

    const child = start(h, ["gateway", "--port", "0"], "info", env)
    const exited = finish(child)
    try {
      const port = await waitForLine(child, (line) => {
        const m = READY.exec(line)
        return m === null ? undefined : Number(m[1])
      })
      const say = async (content: string) => {
        const r = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-anna-session": "garage" },
          body: JSON.stringify({ model: "default", messages: [{ role: "user", content }] })
        })
        assert.strictEqual(r.status, 200, await r.clone().text())
      }
      await say("We bought a new car last week, a blue one with a big trunk.")
      await say("The staging database was down during the deploy.")
      const db = join(h, "anna.db")
      const count = (sql: string) => Number(readRows(db, sql)[0]?.["n"] ?? 0)
      // 2 user messages + 2 replies, embedded by the worker with the agent's model
      await until(() => count("SELECT count(*) AS n FROM ctx_vectors WHERE model = 'openai/fake-embed'") >= 4, "4 vectors")
      assert.isAtLeast(suite.fake.requests.filter((r) => r.path === "/v1/embeddings").length, 1)
      assert.isAtLeast(count("SELECT count(*) AS n FROM model_usage WHERE purpose = 'embedding' AND agent_id = 'default' AND ok = 1"), 1)
      // the admin API's search (the console's): the session's agent's model, for the session's owner
      const garage = String(readRows(db, "SELECT session_key FROM ctx_conversations LIMIT 1")[0]?.["session_key"])
      const api = async (query: string) => {
        const r = await fetch(`http://127.0.0.1:${port}/api/sessions/search?${query}`, { headers: { authorization: `Bearer ${token}` } })
        assert.strictEqual(r.status, 200, await r.clone().text())
        return ((await r.json()) as { hits: Array<{ snippet: string; matched: Array<string>; similarity?: number }> }).hits
      }
      const byMeaning = await api(`q=automobile&session=${encodeURIComponent(garage)}`)
      assert.include(byMeaning[0]?.snippet ?? "", "new car")
      assert.isAbove(byMeaning[0]?.similarity ?? 0, 0)
      // the user's whole scope with the agent named; strict stays lexical
      assert.include((await api("q=automobile&agent=default"))[0]?.snippet ?? "", "new car")
      assert.deepStrictEqual(await api(`q=automobile&strict=true&session=${encodeURIComponent(garage)}`), [])
    } finally {
      child.kill("SIGTERM")
      await exited
    }
    const key = String(readRows(join(h, "anna.db"), "SELECT session_key FROM ctx_conversations LIMIT 1")[0]?.["session_key"])
    const search = async (...extra: ReadonlyArray<string>) =>
      JSON.parse((await run("memory", "search", "automobile", "--session", key, "--json", ...extra)).stdout) as Array<
        { snippet: string; matched: Array<string>; similarity?: number }
      >
    const hits = await search()
    assert.include(hits[0]?.snippet ?? "", "new car")
    assert.deepStrictEqual(hits[0]?.matched, [])
    assert.isAbove(hits[0]?.similarity ?? 0, 0)
    // strict mode is lexical only: nothing has the word
    assert.deepStrictEqual(await search("--strict"), [])
    // `anna mcp serve --agent`: the memory server's search fuses the agent's model too
    const base: Record<string, string> = {}
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("OPENAI_")) base[k] = v
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, "mcp", "serve", "--user", "alice", "--agent", "default"],
      env: { ...base, ...childEnv(h, env), ...env, ANNA_HOME: h, ANNA_LOG_LEVEL: "warn" },
      stderr: "pipe"
    })
    const client = new Client({ name: "dense-test", version: "1.0.0" })
    await client.connect(transport)
    try {
      const r = await client.callTool({ name: "search", arguments: { query: "automobile" } })
      const first: unknown = Array.isArray(r.content) ? r.content[0] : undefined
      const text = typeof first === "object" && first !== null && "text" in first ? String(first.text) : ""
      assert.match(text, /by meaning[^\n]*\] We bought a new car/, text)
    } finally {
      await client.close()
    }
  })
})
