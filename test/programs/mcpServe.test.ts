/**
 * `anna mcp serve` as an MCP client sees it: the official SDK client spawns the real CLI over stdio
 * on an ANNA_HOME with real, compacted sessions of two users with two agents each. It lists the
 * four tools with schemas; search finds the user's text and never the other user's (whose sessions
 * hold the same word); describe/expand of the other user's summaries (or, with --agent, of the other
 * agent's) are refused exactly as an unknown id is; status lists the scope's sessions; an unknown user
 * is a usage error (exit 2) with nothing on stdout; what another process writes meanwhile is seen; stdout carries only JSON-RPC lines, and the
 * server exits when stdin closes.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import type { CompactionReport } from "../../src/domain/memory/types.ts"
import { anna, annaJson, MAIN, newHome } from "../support/cli.ts"
import { childEnv } from "../support/spawnAnna.ts"

const home = newHome()
const SESSIONS = {
  aliceA1: "a1:cli:alice:dm",
  aliceA2: "a2:cli:alice:dm",
  bobA1: "a1:cli:bob:dm",
  bobA2: "a2:cli:bob:dm"
} as const
type Name = keyof typeof SESSIONS
/** Each session's marker word, written next to the shared word "zebracorn". */
const MARK: Record<Name, string> = { aliceA1: "alicealpha", aliceA2: "alicebeta", bobA1: "bobalpha", bobA2: "bobbeta" }
const summaries: Partial<Record<Name, ReadonlyArray<string>>> = {}
const summaryOf = (n: Name): string => summaries[n]?.[0] ?? assert.fail(`no summary in ${n}`)

const env = (level = "warn"): Record<string, string> => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(childEnv(home, {}))) {
    if (v !== undefined && !k.startsWith("ANTHROPIC_") && !k.startsWith("OPENAI_")) base[k] = v
  }
  return { ...base, ANNA_LOG_LEVEL: level }
}

beforeAll(async () => {
  for (const u of ["alice", "bob"]) {
    const r = await anna(home, "user", "add", u)
    assert.strictEqual(r.code, 0, r.stderr)
  }
  for (const [name, key] of Object.entries(SESSIONS) as ReadonlyArray<[Name, string]>) {
    const texts = [
      `Remember the zebracorn codeword ${MARK[name]} for later.`,
      "Noted, I will remember it.",
      ...Array.from({ length: 60 }, (_, i) => `ordinary message number ${i} about the garden, the weather and lunch plans`)
    ]
    const file = join(home, `${name}.jsonl`)
    const line = (content: string, i: number) =>
      JSON.stringify({ role: i % 2 === 0 ? "user" : "assistant", content, ts: new Date(Date.UTC(2026, 4, 1, 10, i)).toISOString() })
    writeFileSync(file, `${texts.map(line).join("\n")}\n`)
    const imported = await anna(home, "memory", "import", key, file)
    assert.strictEqual(imported.code, 0, imported.stderr)
    const report = await annaJson<CompactionReport>(home, "memory", "compact", key, "--full")
    assert.isAbove(report.summaryIds.length, 0)
    summaries[name] = report.summaryIds
  }
}, 180_000)

afterAll(() => rmSync(home, { recursive: true, force: true }))

interface Connected {
  readonly client: Client
  readonly errors: Array<Error>
  readonly stderr: () => string
}

const connect = async (...args: ReadonlyArray<string>): Promise<Connected> => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "mcp", "serve", ...args],
    env: env("debug"),
    stderr: "pipe"
  })
  let stderr = ""
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()))
  const errors: Array<Error> = []
  const client = new Client({ name: "anna-test", version: "1.0.0" })
  client.onerror = (e) => errors.push(e)
  await client.connect(transport)
  return { client, errors, stderr: () => stderr }
}

const call = async (c: Connected, name: string, args: Record<string, unknown> = {}) => {
  const r = await c.client.callTool({ name, arguments: args })
  const content = Array.isArray(r.content) ? r.content : []
  const first: unknown = content[0]
  const text = typeof first === "object" && first !== null && "text" in first && typeof first.text === "string" ? first.text : ""
  return { text, isError: r.isError === true }
}

/** An error's text with the id it names replaced, to compare the refusals of two ids. */
const refusal = async (c: Connected, tool: string, id: string) => {
  const r = await call(c, tool, { id })
  return { isError: r.isError, text: r.text.replaceAll(id, "ID") }
}

describe("anna mcp serve", () => {
  it("lists four tools and keeps to the user's sessions", async () => {
    const c = await connect("--user", "alice")
    try {
      const { tools } = await c.client.listTools()
      assert.deepStrictEqual(tools.map((t) => t.name), ["status", "search", "describe", "expand"])
      const search = tools.find((t) => t.name === "search")
      assert.strictEqual(search?.inputSchema.type, "object")
      assert.includeMembers(Object.keys(search?.inputSchema.properties ?? {}), ["query", "limit", "strict", "context"])
      assert.notInclude(search?.inputSchema.required ?? [], "action")
      assert.notProperty(search?.inputSchema.properties ?? {}, "action")
      assert.deepStrictEqual(Object.keys(tools.find((t) => t.name === "expand")?.inputSchema.properties ?? {}).sort(), ["cursor", "id"])

      // search: alice's two sessions, neither of bob's (which hold the same word)
      const found = await call(c, "search", { query: "zebracorn codeword", limit: 20 })
      assert.isFalse(found.isError, found.text)
      assert.include(found.text, MARK.aliceA1)
      assert.include(found.text, MARK.aliceA2)
      assert.notInclude(found.text, "bob")
      const bobWord = await call(c, "search", { query: MARK.bobA1 })
      assert.strictEqual(bobWord.text, `No matches for "${MARK.bobA1}".`)

      // describe/expand: alice's summary opens; bob's is refused exactly like one that does not exist
      const own = await call(c, "describe", { id: summaryOf("aliceA1") })
      assert.isFalse(own.isError, own.text)
      assert.match(own.text, new RegExp(`^${summaryOf("aliceA1")}: (leaf|condensed) summary`))
      const expanded = await call(c, "expand", { id: summaryOf("aliceA1") })
      assert.isFalse(expanded.isError, expanded.text)
      assert.include(expanded.text, `(end of ${summaryOf("aliceA1")}`)
      const unknown = await refusal(c, "describe", "sum_999999")
      assert.deepStrictEqual(unknown, { isError: true, text: "no summary \"ID\"" })
      for (const id of [...(summaries.bobA1 ?? []), ...(summaries.bobA2 ?? [])]) {
        assert.deepStrictEqual(await refusal(c, "describe", id), unknown)
        assert.deepStrictEqual(await refusal(c, "expand", id), await refusal(c, "expand", "sum_999999"))
      }

      // status: alice's sessions only
      const status = await call(c, "status")
      assert.isFalse(status.isError)
      assert.match(status.text, /^user alice: 2 sessions, 124 messages, \d+ summaries\./)
      assert.include(status.text, SESSIONS.aliceA1)
      assert.include(status.text, SESSIONS.aliceA2)
      assert.notInclude(status.text, "bob")

      // a bad input is a tool error, not a broken connection
      const bad = await call(c, "search", { query: "x", limit: 0 })
      assert.isTrue(bad.isError)
      assert.include(bad.text, "invalid input")
      assert.deepStrictEqual(c.errors, [])
    } finally {
      await c.client.close()
    }
  }, 60_000)

  it("--agent narrows to that agent's sessions", async () => {
    const c = await connect("--user", "alice", "--agent", "a1")
    try {
      const found = await call(c, "search", { query: "zebracorn codeword", limit: 20 })
      assert.include(found.text, MARK.aliceA1)
      assert.notInclude(found.text, MARK.aliceA2)
      assert.notInclude(found.text, "bob")
      assert.isFalse((await call(c, "describe", { id: summaryOf("aliceA1") })).isError)
      const unknown = await refusal(c, "describe", "sum_999999")
      for (const n of ["aliceA2", "bobA1"] as const) {
        assert.deepStrictEqual(await refusal(c, "describe", summaryOf(n)), unknown)
        assert.deepStrictEqual(await refusal(c, "expand", summaryOf(n)), await refusal(c, "expand", "sum_999999"))
      }
      const status = await call(c, "status")
      assert.match(status.text, /^user alice with agent a1: 1 sessions, 62 messages/)
      assert.notInclude(status.text, SESSIONS.aliceA2)
    } finally {
      await c.client.close()
    }
  }, 60_000)

  it("an unknown user or agent: a usage error on stderr (the problem first), exit 2, nothing on stdout", async () => {
    const r = await anna(home, "mcp", "serve", "--user", "zed")
    assert.strictEqual(r.code, 2)
    assert.strictEqual(r.stdout, "")
    assert.strictEqual(r.stderr.split("\n")[0], "anna: no user \"zed\" (see: anna user list)")
    assert.notInclude(r.stderr, "    at ")
    const a = await anna(home, "mcp", "serve", "--user", "alice", "--agent", "nobody")
    assert.strictEqual(a.code, 2)
    assert.strictEqual(a.stdout, "")
    assert.include(a.stderr, "anna: no agent \"nobody\"")
  }, 60_000)

  it("stdout holds only JSON-RPC lines (logs at debug go to stderr) and the server answers everything, then exits, when stdin closes", async () => {
    const child = spawn(process.execPath, [MAIN, "mcp", "serve", "--user", "bob"], { env: env("debug"), stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)))
    const send = (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`)
    const clientInfo = { name: "raw", version: "1" }
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo } })
    send({ jsonrpc: "2.0", method: "notifications/initialized" })
    send({ jsonrpc: "2.0", id: 2, method: "tools/list" })
    send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "search", arguments: { query: "zebracorn" } } })
    // as a shell pipe does: stdin closes right after the requests, and every answer still comes
    child.stdin.end()
    assert.strictEqual(await exited, 0, stderr)
    const lines = stdout.trimEnd().split("\n")
    assert.strictEqual(lines.length, 3)
    const messages = lines.map((l) => JSON.parse(l) as { jsonrpc: string; id: number; result: unknown })
    assert.deepStrictEqual(messages.map((m) => [m.jsonrpc, m.id]), [["2.0", 1], ["2.0", 2], ["2.0", 3]])
    assert.include(JSON.stringify(messages[2]?.result), MARK.bobA1)
    assert.notInclude(JSON.stringify(messages[2]?.result), "alice")
    // the log went to stderr
    assert.include(stderr, "mcp serve: memory of bob on stdio")
  }, 60_000)

  it("sees what another process writes while it serves (a running gateway)", async () => {
    const c = await connect("--user", "alice")
    try {
      assert.match((await call(c, "status")).text, /^user alice: 2 sessions/)
      const file = join(home, "later.jsonl")
      writeFileSync(file, `${JSON.stringify({ role: "user", content: "the new quasarfish plan" })}\n`)
      const r = await anna(home, "memory", "import", "a1:cli:alice:later", file)
      assert.strictEqual(r.code, 0, r.stderr)
      assert.match((await call(c, "status")).text, /^user alice: 3 sessions/)
      assert.include((await call(c, "search", { query: "quasarfish" })).text, "the new «quasarfish» plan")
      assert.deepStrictEqual(c.errors, [])
    } finally {
      await c.client.close()
    }
  }, 60_000)
})
