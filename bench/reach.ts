/**
 * The agent's reach (issue 14) with real parts, each against the simplest raw way to the same result:
 *
 * - webfetch: the real tool (the agent's plugin configuration `allow_private=true` in SQLite, the
 *   only way the guard lets 127.0.0.1 through) against a local node:http server serving generated
 *   news pages of ~100 KB and ~1 MB (bench/support/pages.ts). A whole call = plugin reads, the guarded
 *   GET, Readability + Turndown, the text cut at the default max_chars. Floors: a raw node:http GET of
 *   the same bytes (a new connection each time, as the tool's own agent has no keep-alive), and the
 *   tool's two steps alone (guardedGet; render on bytes already in memory) to show where time goes.
 * - `anna mcp serve`: the official SDK client spawns the real CLI over stdio (as
 *   test/programs/mcpServe.test.ts does) on an ANNA_HOME whose user alice has 20,000 messages (and bob
 *   as many, outside alice's scope), appended through LcmMemory. Cold start = spawn until `tools/list`
 *   is answered; its floor is a minimal server written with the same SDK (one tool) spawned the same
 *   way. `search` calls over the connection; floor: the same search through the Searcher in-process.
 * - The MCP client against a remote server: `@modelcontextprotocol/server-everything` over Streamable
 *   HTTP on 127.0.0.1; an `echo` call through anna's `mcp` tool (sessionClients, no sandbox) against
 *   the SDK `Client` calling the same tool directly.
 * - ToolCatalog.version, read by the session pool on every turn: the built-in catalog
 *   (src/programs/compose.ts `tools`) on the real SQLite stores, an agent with 3 MCP servers; floor
 *   one `SELECT 1` through the same SqlClient.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Layer, Logger, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { createServer, get, type Server } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { createServer as createNetServer } from "node:net"
import { cpus, loadavg } from "node:os"
import { join, resolve } from "node:path"
import { sessionRefFromKey } from "../src/domain/memory/session.ts"
import type { McpServer } from "../src/domain/mcp/server.ts"
import { type FetchedBody, render } from "../src/domain/webfetch/render.ts"
import * as SqliteConfigStore from "../src/layers/config/SqliteConfigStore.ts"
import * as SqliteMcpServers from "../src/layers/mcp/SqliteMcpServers.ts"
import { DEFAULT_LIMITS, makeSessionClients } from "../src/layers/mcp/sessionClients.ts"
import * as DeterministicSummarizer from "../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../src/layers/memory/LcmMemory.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import { mcpTool } from "../src/layers/tools/mcp.ts"
import { DEFAULT_SEARCH_HITS } from "../src/layers/tools/memory.ts"
import { policyOf, webfetchTool } from "../src/layers/tools/webfetch.ts"
import { guardedGet, systemResolver } from "../src/layers/webfetch/guardedGet.ts"
import * as Compose from "../src/programs/compose.ts"
import { AgentStore } from "../src/services/AgentStore.ts"
import { AppConfig } from "../src/services/AppConfig.ts"
import { McpServers } from "../src/services/McpServers.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { PluginStore } from "../src/services/PluginStore.ts"
import { ProviderStore } from "../src/services/ProviderStore.ts"
import { Searcher } from "../src/services/Searcher.ts"
import { ToolCatalog } from "../src/services/ToolCatalog.ts"
import { dbBytes, ratios } from "./support/common.ts"
import { openEngine } from "./support/engine.ts"
import { int, ms, print, progress, ratio, sampleEffect, section, seconds, type Summary, summarize, table } from "./support/measure.ts"
import { newsPage } from "./support/pages.ts"
import { buildDist } from "./startup.ts"
import { makeTranscript } from "./support/transcript.ts"

const ROOT = resolve(import.meta.dirname, "..")
const SRC_MAIN = join(ROOT, "src", "main.ts")
const DIST_MAIN = join(ROOT, "dist", "main.js")
const EVERYTHING = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")

const AGENT = "bench"
const CTX = { sessionKey: `${AGENT}:cli:u1:dm`, userId: "u1", agentId: AGENT }
/** Calls: 5 untimed, then 30 timed (the whole-call and raw figures). */
const CALLS = { warmup: 5, min: 30, max: 30, budgetMs: 0 }
/** Per-turn reads: many samples, they take microseconds. */
const READS = { warmup: 500, min: 5_000, max: 5_000, budgetMs: 0 }
const COLD_STARTS = 5
const MCP_USER_SESSIONS = 20
const PER_SESSION = 1_000
const QUERIES = ["docker", "connection refused", "how did we fix the deploy timeout"]

const us = (milliseconds: number): string => {
  const x = milliseconds * 1000
  return !Number.isFinite(x) ? "–" : x < 10 ? x.toFixed(1) : x.toFixed(0)
}
const pair = (s: Summary) => `${ms(s.p50)} / ${ms(s.p95)}`
const kib = (bytes: number) => (bytes < 1048576 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / 1048576).toFixed(2)} MiB`)

/** Quiet: the tool logs each relaxed connection and each remote MCP connection (EX-009). */
const quiet = Logger.layer([])

/** The environment of a child `anna`: this home, no provider keys from the bench's environment. */
const childEnv = (home: string, extra: Readonly<Record<string, string>> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(ANTHROPIC|OPENAI)_/.test(k) && k !== "NODE_OPTIONS") env[k] = v
  }
  return { ...env, ANNA_HOME: home, ANNA_LOG_LEVEL: "warn", ...extra }
}

const timeAsync = async (n: number, warmup: number, run: () => Promise<unknown>): Promise<Summary> => {
  for (let i = 0; i < warmup; i++) await run()
  const times: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await run()
    times.push(performance.now() - t0)
  }
  return summarize(times)
}

const textOf = (result: unknown): { readonly text: string; readonly isError: boolean } => {
  const r = result as { readonly content?: unknown; readonly isError?: unknown }
  const content = Array.isArray(r.content) ? r.content : []
  const first: unknown = content[0]
  const text = typeof first === "object" && first !== null && "text" in first && typeof first.text === "string" ? first.text : ""
  return { text, isError: r.isError === true }
}

const freePort = (): Promise<number> =>
  new Promise((done, fail) => {
    const s = createNetServer()
    s.once("error", fail)
    s.listen(0, "127.0.0.1", () => {
      const address = s.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      s.close(() => done(port))
    })
  })

/** The stores and the built-in tool catalog on `home`/anna.db (migrated by Sqlite.layer). */
const storeStack = (home: string) => {
  mkdirSync(home, { recursive: true })
  return Compose.tools.pipe(
    Layer.provideMerge(SqliteMcpServers.layer),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteConfigStore.layerWithStores(home)),
    Layer.provideMerge(AppConfig.at(home)),
    Layer.provideMerge(Sqlite.layer(join(home, "anna.db"))),
    Layer.provideMerge(quiet)
  )
}

/** Provider `local` and the agent `bench` on it, its webfetch configuration `allow_private=true`. */
const seedAgent = Effect.gen(function*() {
  yield* (yield* ProviderStore).add({
    id: "local",
    type: "openai",
    baseUrl: "http://127.0.0.1:9/v1",
    apiKey: "sk-bench",
    models: [],
    defaultModel: "fake-large",
    headers: {},
    enabled: true
  })
  yield* (yield* AgentStore).create(AGENT, { providerId: "local" })
  yield* (yield* PluginStore).configure("webfetch", AGENT, { set: { allow_private: true }, unset: [] })
})

// ---------------------------------------------------------------------------------------------
// 1. webfetch

interface Page {
  readonly path: string
  readonly title: string
  readonly html: Buffer
}

/** A node:http server on 127.0.0.1 serving `pages` (no compression, Content-Length set). */
const pageServer = (pages: ReadonlyArray<Page>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly base: string; readonly server: Server; readonly sockets: Set<Socket> }>((done) => {
        const sockets = new Set<Socket>()
        const server = createServer((req, res) => {
          const page = pages.find((p) => `/${p.path}` === req.url)
          if (page === undefined) return res.writeHead(404, { "content-type": "text/plain" }).end("not found")
          res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": page.html.length }).end(page.html)
        })
        server.on("connection", (s) => {
          sockets.add(s)
          s.on("close", () => sockets.delete(s))
        })
        server.listen(0, "127.0.0.1", () => done({ base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, sockets }))
      })
    ),
    (s) =>
      Effect.promise(() =>
        new Promise<void>((done) => {
          for (const socket of s.sockets) socket.destroy()
          s.server.close(() => done())
        })
      )
  )

/** The floor: a plain GET of the same URL on a new connection, the body collected. */
const rawGet = (url: string): Promise<Buffer> =>
  new Promise((done, fail) => {
    get(url, { agent: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => done(Buffer.concat(chunks)))
      res.on("error", fail)
    }).on("error", fail)
  })

const webfetchPart = Effect.gen(function*() {
  const pages: ReadonlyArray<Page> = [
    { path: "news/tides.html", title: "How the harbour learned to live with the tides", html: Buffer.from(newsPage("How the harbour learned to live with the tides", 100 * 1024, 14_001)) },
    { path: "reference/canals.html", title: "The canals of the old city: a complete history", html: Buffer.from(newsPage("The canals of the old city: a complete history", 1024 * 1024, 14_002)) }
  ]
  const site = yield* pageServer(pages)
  const plugins = yield* PluginStore
  const config = yield* plugins.configFor("webfetch", AGENT)
  const tool = webfetchTool(plugins)
  const rows: Array<Array<string>> = []
  const notes: Array<string> = []
  for (const page of pages) {
    const url = `${site.base}/${page.path}`
    progress(`reach: webfetch ${kib(page.html.length)} page`)
    const call = tool.execute({ url }, CTX)
    const out = yield* call
    const rawBytes = yield* Effect.promise(() => rawGet(url))
    if (!rawBytes.equals(page.html)) throw new Error("reach: the raw GET did not return the page's bytes")
    const body: FetchedBody = { url, status: 200, contentType: "text/html; charset=utf-8", bytes: new Uint8Array(rawBytes), truncated: false }
    const rendered = render(body)
    const kept = ["NAVMARK", "SIDEMARK", "FOOTMARK"].filter((m) => rendered.text.includes(m))
    notes.push(
      `${kib(page.html.length)} page: Markdown of ${int(rendered.text.length)} characters (the tool returns the first 40,000), ` +
        `title ${out.includes(`# ${page.title}`) ? "first" : "MISSING"}, ` +
        (kept.length === 0 ? "navigation, sidebar and footer dropped" : `kept chrome: ${kept.join(", ")}`) +
        (rendered.notes.length === 0 ? "" : `; notes: ${rendered.notes.join("; ")}`)
    )
    const whole = yield* sampleEffect(CALLS, () => call)
    const raw = yield* sampleEffect(CALLS, () => Effect.promise(() => rawGet(url)))
    const policy = policyOf(config as Parameters<typeof policyOf>[0])
    const fetched = yield* sampleEffect(CALLS, () => guardedGet(url, { policy, resolver: systemResolver, maxBytes: 5 * 1024 * 1024, maxRedirects: 5 }))
    const rendering = yield* sampleEffect(CALLS, () => Effect.sync(() => render(body)))
    rows.push([
      kib(page.html.length),
      pair(whole),
      pair(raw),
      ratio(whole.p50, raw.p50),
      pair(fetched),
      pair(rendering),
      `${((rendering.p50 / whole.p50) * 100).toFixed(0)} %`,
      ms(whole.p50 - fetched.p50 - rendering.p50)
    ])
    ratios.push({ operation: `webfetch tool call, ${kib(page.html.length)} page`, ours: `${ms(whole.p50)} ms`, floor: `${ms(raw.p50)} ms (raw GET)`, ratio: ratio(whole.p50, raw.p50) })
  }
  return { rows, notes }
})

// ---------------------------------------------------------------------------------------------
// 2. anna mcp serve

const FLOOR_SERVER = (mcp: string, stdio: string) => `import { McpServer } from ${JSON.stringify(mcp)}
import { StdioServerTransport } from ${JSON.stringify(stdio)}
const server = new McpServer({ name: "floor", version: "1" })
server.registerTool("search", { description: "Answers at once" }, async () => ({ content: [{ type: "text", text: "nothing" }] }))
await server.connect(new StdioServerTransport())
`

interface Connection {
  readonly client: Client
  readonly stderr: () => string
}

const connectStdio = async (args: ReadonlyArray<string>, env: Record<string, string>): Promise<Connection> => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [...args], env, stderr: "pipe", cwd: ROOT })
  let stderr = ""
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()))
  const client = new Client({ name: "anna-bench", version: "1.0.0" })
  await client.connect(transport)
  return { client, stderr: () => stderr }
}

/** Spawn → initialize → tools/list answered; the process is closed afterwards (not timed). */
const coldStart = async (args: ReadonlyArray<string>, env: Record<string, string>, expect: number): Promise<number> => {
  const t0 = performance.now()
  const c = await connectStdio(args, env)
  try {
    const { tools } = await c.client.listTools()
    const dt = performance.now() - t0
    if (tools.length !== expect) throw new Error(`reach: ${args.join(" ")} listed ${tools.length} tools, expected ${expect}: ${c.stderr()}`)
    return dt
  } finally {
    await c.client.close()
  }
}

/** `withDist`: dist/main.js is built for this code (its cold start is measured too). */
const mcpServePart = async (dir: string, withDist: boolean) => {
  const home = join(dir, "reach-mcp-home")
  const env = childEnv(home)
  for (const user of ["alice", "bob"]) {
    execFileSync(process.execPath, [SRC_MAIN, "user", "add", user], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  }
  const file = join(home, "anna.db")
  progress(`reach: appending ${MCP_USER_SESSIONS * 2} sessions × ${int(PER_SESSION)} messages (alice and bob) to ${file}`)
  const t0 = performance.now()
  const engine = openEngine(file)
  for (let s = 0; s < MCP_USER_SESSIONS * 2; s++) {
    const user = s % 2 === 0 ? "alice" : "bob"
    const ref = sessionRefFromKey(`${AGENT}:cli:${user}:s${s}`)
    const transcript = makeTranscript({ seed: 30_000 + s })
    await engine.runPromise(MemoryProvider.use((m) => m.append(ref, transcript.take(PER_SESSION))))
  }
  const fillMs = performance.now() - t0

  // The floor of search: the Searcher in-process, alice's scope, as the memory tool asks it.
  const floors = new Map<string, Summary>()
  const hits = new Map<string, number>()
  for (const query of QUERIES) {
    const options = { scope: { _tag: "User", userId: "alice" } as const, limit: DEFAULT_SEARCH_HITS, mode: "ranked" as const, context: 0 }
    hits.set(query, (await engine.runPromise(Searcher.use((s) => s.search(query, options)))).length)
    floors.set(query, await engine.runPromise(Searcher.use((s) => sampleEffect(CALLS, () => s.search(query, options)))))
  }
  await engine.dispose()

  // Cold starts: the CLI from source (as the tests run it), the bundled binary when built, the SDK floor.
  const floorScript = join(dir, "reach-floor-server.mjs")
  writeFileSync(floorScript, FLOOR_SERVER(import.meta.resolve("@modelcontextprotocol/sdk/server/mcp.js"), import.meta.resolve("@modelcontextprotocol/sdk/server/stdio.js")))
  const starts: Array<{ readonly label: string; readonly args: ReadonlyArray<string>; readonly tools: number }> = [
    { label: "`node src/main.ts mcp serve --user alice`", args: [SRC_MAIN, "mcp", "serve", "--user", "alice"], tools: 4 },
    ...(withDist ? [{ label: "`node dist/main.js mcp serve --user alice`", args: [DIST_MAIN, "mcp", "serve", "--user", "alice"], tools: 4 }] : []),
    { label: "floor: a minimal SDK stdio server (one tool)", args: [floorScript], tools: 1 }
  ]
  const startRows: Array<Array<string>> = []
  const startFigures = new Map<string, Summary>()
  for (const [i, s] of starts.entries()) {
    progress(`reach: cold starts of ${s.label}`)
    const cache = join(dir, "reach-compile-cache", String(i))
    rmSync(cache, { recursive: true, force: true })
    mkdirSync(cache, { recursive: true })
    const startEnv = { ...env, NODE_COMPILE_CACHE: cache }
    const first = await coldStart(s.args, startEnv, s.tools)
    await coldStart(s.args, startEnv, s.tools)
    const times: Array<number> = []
    for (let n = 0; n < COLD_STARTS; n++) times.push(await coldStart(s.args, startEnv, s.tools))
    const warm = summarize(times)
    startFigures.set(s.label, warm)
    startRows.push([s.label, ms(first), `${ms(warm.p50)} / ${ms(Math.min(...times))} / ${ms(warm.max)}`])
  }
  const floorStart = startFigures.get(starts[starts.length - 1]?.label ?? "")
  for (const row of startRows.slice(0, -1)) {
    const label = row[0] ?? ""
    row.push(ratio(startFigures.get(label)?.p50 ?? Number.NaN, floorStart?.p50 ?? Number.NaN))
    ratios.push({ operation: `${label.replace(/`/g, "")}: spawn → tools/list`, ours: `${ms(startFigures.get(label)?.p50 ?? Number.NaN)} ms`, floor: `${ms(floorStart?.p50 ?? Number.NaN)} ms (SDK server)`, ratio: ratio(startFigures.get(label)?.p50 ?? Number.NaN, floorStart?.p50 ?? Number.NaN) })
  }
  startRows[startRows.length - 1]?.push("1.0×")

  // search over stdio, one connection, calls one after another; the SDK floor's tool for the transport's share.
  progress("reach: search over stdio")
  const searchRows: Array<Array<string>> = []
  const served = await connectStdio([SRC_MAIN, "mcp", "serve", "--user", "alice"], env)
  const floorServer = await connectStdio([floorScript], env)
  let roundTrip: Summary
  try {
    roundTrip = await timeAsync(CALLS.min, CALLS.warmup, () => floorServer.client.callTool({ name: "search", arguments: {} }))
    for (const query of QUERIES) {
      const first = textOf(await served.client.callTool({ name: "search", arguments: { query } }))
      const lines = first.text.split("\n").filter((l) => /^(msg|sum)_\d+ \[/.test(l)).length
      if (first.isError || lines !== hits.get(query)) {
        throw new Error(`reach: mcp serve search "${query}" gave ${lines} hits (in-process ${hits.get(query)}): ${first.text.slice(0, 300)} ${served.stderr()}`)
      }
      const ours = await timeAsync(CALLS.min, CALLS.warmup, () => served.client.callTool({ name: "search", arguments: { query } }))
      const floor = floors.get(query)
      searchRows.push([`search "${query}" (${lines} hits)`, pair(ours), floor === undefined ? "–" : pair(floor), ratio(ours.p50, floor?.p50 ?? Number.NaN)])
      ratios.push({ operation: `mcp serve search "${query}"`, ours: `${ms(ours.p50)} ms`, floor: `${ms(floor?.p50 ?? Number.NaN)} ms (Searcher)`, ratio: ratio(ours.p50, floor?.p50 ?? Number.NaN) })
    }
  } finally {
    await served.client.close()
    await floorServer.client.close()
  }
  const dbMiB = dbBytes(file) / 1048576
  return {
    startRows,
    searchRows,
    notes: [
      `ANNA_HOME: users alice and bob (anna user add), ${MCP_USER_SESSIONS} sessions × ${int(PER_SESSION)} messages each ` +
        `(${int(MCP_USER_SESSIONS * PER_SESSION)} per user, the bench transcripts), appended through LcmMemory in ${seconds(fillMs)}; ${dbMiB.toFixed(0)} MiB.`,
      `A call over stdio to the floor server's tool (returns at once): ${pair(roundTrip)} ms p50 / p95 — the SDK's JSON-RPC round trip through two pipes.`
    ]
  }
}

// ---------------------------------------------------------------------------------------------
// 3. The mcp tool against a remote server

const everything = Effect.acquireRelease(
  Effect.promise(async () => {
    const port = await freePort()
    const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] })
    await new Promise<void>((done, fail) => {
      let seen = ""
      const check = (d: Buffer) => {
        seen += d.toString()
        if (seen.includes(`listening on port ${port}`)) done()
      }
      child.stdout?.on("data", check)
      child.stderr?.on("data", check)
      child.on("exit", (code) => fail(new Error(`server-everything exited (${code}) before listening: ${seen}`)))
    })
    return { url: `http://127.0.0.1:${port}/mcp`, child }
  }),
  (s) =>
    Effect.promise(() =>
      new Promise<void>((done) => {
        if (s.child.exitCode !== null || s.child.signalCode !== null) return done()
        s.child.once("exit", () => done())
        s.child.kill("SIGKILL")
      })
    )
)

const remotePart = Effect.gen(function*() {
  const server = yield* everything
  const remote: McpServer = { agentId: AGENT, name: "web", transport: "http", command: undefined, url: server.url, headers: {}, createdAt: 0, updatedAt: 0 }
  const noSandbox = Effect.die(new Error("a remote MCP server asked for the sandbox"))
  const message = "hello from the bench"
  const input = { action: "call", server: "web", tool: "echo", arguments: { message } }
  const args = { name: "echo", arguments: { message } }

  progress("reach: echo through the mcp tool and through the SDK client")
  const clients = yield* makeSessionClients([remote], noSandbox, DEFAULT_LIMITS)
  const tool = mcpTool(clients, DEFAULT_LIMITS)
  const answer = yield* tool.execute(input, CTX)
  if (answer !== `Echo: ${message}`) throw new Error(`reach: the mcp tool answered ${answer}`)
  const ours = yield* sampleEffect(CALLS, () => tool.execute(input, CTX))

  const client = new Client({ name: "anna-bench", version: "1.0.0" })
  yield* Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(server.url))))
  const direct = textOf(yield* Effect.promise(() => client.callTool(args)))
  if (direct.text !== `Echo: ${message}`) throw new Error(`reach: the SDK client got ${direct.text}`)
  const floor = yield* sampleEffect(CALLS, () => Effect.promise(() => client.callTool(args)))
  yield* Effect.promise(() => client.close())

  // The first call of a session: connect (initialize, initialized) + the call, 5 times each.
  const firstOurs: Array<number> = []
  const firstFloor: Array<number> = []
  for (let i = 0; i < COLD_STARTS; i++) {
    const t0 = performance.now()
    yield* Effect.scoped(Effect.gen(function*() {
      const fresh = mcpTool(yield* makeSessionClients([remote], noSandbox, DEFAULT_LIMITS), DEFAULT_LIMITS)
      yield* fresh.execute(input, CTX)
      firstOurs.push(performance.now() - t0)
    }))
    const t1 = performance.now()
    const c = new Client({ name: "anna-bench", version: "1.0.0" })
    yield* Effect.promise(async () => {
      await c.connect(new StreamableHTTPClientTransport(new URL(server.url)))
      await c.callTool(args)
      firstFloor.push(performance.now() - t1)
      await c.close()
    })
  }
  const first = { ours: summarize(firstOurs), floor: summarize(firstFloor) }
  ratios.push({ operation: "mcp tool → remote echo (connected)", ours: `${ms(ours.p50)} ms`, floor: `${ms(floor.p50)} ms (SDK Client)`, ratio: ratio(ours.p50, floor.p50) })
  return [
    ["`echo`, connection open", pair(ours), pair(floor), ratio(ours.p50, floor.p50)],
    [`first call of a session: connect + \`echo\` (${COLD_STARTS} each)`, pair(first.ours), pair(first.floor), ratio(first.ours.p50, first.floor.p50)]
  ]
})

// ---------------------------------------------------------------------------------------------
// 4. ToolCatalog.version

const versionPart = Effect.gen(function*() {
  const catalog = yield* ToolCatalog
  const servers = yield* McpServers
  const plugins = yield* PluginStore
  const sql = yield* SqlClient.SqlClient
  for (let i = 1; i <= 3; i++) {
    yield* servers.add(AGENT, `remote${i}`, { transport: "http", url: `https://mcp${i}.example.com/mcp`, headers: { Authorization: `Bearer token-${i}` } })
  }
  const version = yield* catalog.version(AGENT)
  progress(`reach: ToolCatalog.version = ${version}`)
  const cases: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
    ["ToolCatalog.version (every source: mcp + webfetch)", catalog.version(AGENT)],
    ["mcp source: PluginStore.enabledFor + McpServers.list", Effect.all([plugins.enabledFor("mcp", AGENT), servers.list(AGENT)])],
    ["McpServers.list (3 rows, Schema-decoded)", servers.list(AGENT)],
    ["webfetch source: PluginStore.enabledFor", plugins.enabledFor("webfetch", AGENT)],
    ["floor: `SELECT 1` through the same SqlClient", sql`SELECT 1`]
  ]
  const figures: Array<readonly [string, Summary]> = []
  for (const [label, effect] of cases) figures.push([label, yield* sampleEffect(READS, () => effect)])
  const floor = figures[figures.length - 1]?.[1].p50 ?? Number.NaN
  const whole = figures[0]?.[1].p50 ?? Number.NaN
  ratios.push({ operation: "ToolCatalog.version per turn (3 MCP servers)", ours: `${us(whole)} µs`, floor: `${us(floor)} µs (SELECT 1)`, ratio: ratio(whole, floor) })
  return {
    version,
    rows: figures.map(([label, s]) => [label, `${us(s.p50)} / ${us(s.p95)}`, ratio(s.p50, floor)])
  }
})

// ---------------------------------------------------------------------------------------------

/** Runs one part; a failure is printed as the part's result and the others still run. */
const attempt = async <A>(name: string, run: () => Promise<A>): Promise<A | undefined> => {
  try {
    return await run()
  } catch (e) {
    const text = e instanceof Error ? `${e.message}` : String(e)
    section(`${name}: not measured`, "```\n" + text.slice(0, 2000) + "\n```")
    return undefined
  }
}

export const runReach = async (dir: string, options: { readonly build?: boolean } = {}): Promise<void> => {
  if (options.build !== false) buildDist()
  const loadBefore = loadavg()[0] ?? Number.NaN
  const home = join(dir, "reach-home")
  const stack = storeStack(home)
  const run = <A, E>(effect: Effect.Effect<A, E, Layer.Success<typeof stack> | Scope.Scope>): Promise<A> =>
    Effect.runPromise(Effect.scoped(effect).pipe(Effect.provide(stack)))

  await run(seedAgent)

  const web = await attempt("webfetch", () => run(webfetchPart))
  if (web !== undefined) {
    section(
      "webfetch: one tool call against a local server (127.0.0.1)",
      table(
        ["page", "whole tool call p50 / p95 (ms)", "raw node:http GET p50 / p95 (ms)", "call / GET", "guardedGet alone (ms)", "render alone (ms)", "render share of the call", "call − fetch − render, p50s (ms)"],
        web.rows
      ),
      `${CALLS.min} calls after ${CALLS.warmup} untimed, one at a time. The page is generated (bench/support/pages.ts: head with styles and an\n` +
        "inline script, navigation, sidebar, footer, one long article of paragraphs with links, headings, lists, quotes, figures,\n" +
        "code and tables), served uncompressed with Content-Length. The whole call = the plugin reads (enabled? configuration),\n" +
        "the guarded GET (its own connection, no keep-alive), render (linkedom DOM → Readability → Turndown), the text cut at\n" +
        "40,000 characters. The raw GET is `http.get` on a new connection (agent: false), body collected. \"render alone\" is\n" +
        "render() on the bytes already in memory; \"guardedGet alone\" the tool's fetch without rendering.\n" +
        web.notes.map((n) => `- ${n}`).join("\n")
    )
  }

  const serve = await attempt("anna mcp serve", () => mcpServePart(dir, existsSync(DIST_MAIN)))
  if (serve !== undefined) {
    section(
      "`anna mcp serve`: cold start (spawn → initialize → tools/list answered)",
      table(["server", "first run, empty compile cache (ms)", `p50 / min / max of ${COLD_STARTS} (ms)`, "p50 / floor"], serve.startRows),
      `Each start: the SDK's StdioClientTransport spawns \`${process.execPath}\` with the arguments shown, Client.connect\n` +
        "(initialize + initialized), then tools/list; the process is closed after (not timed). NODE_COMPILE_CACHE is a fresh\n" +
        `folder per server: the first run fills it, one untimed run, then ${COLD_STARTS} timed. src/main.ts runs through Node's type stripping.`
    )
    section(
      "`anna mcp serve`: search over stdio, user alice (20,000 messages of 40,000)",
      table(["call", "over stdio p50 / p95 (ms)", "Searcher in-process p50 / p95 (ms)", "stdio / in-process"], serve.searchRows),
      `${CALLS.min} calls after ${CALLS.warmup} untimed on one connection (the CLI from source), one at a time; the floor is\n` +
        `Searcher.search with alice's User scope, ranked, limit ${DEFAULT_SEARCH_HITS}, on an engine over the same file (the hit counts agree).\n` +
        serve.notes.map((n) => `- ${n}`).join("\n")
    )
  }

  const remote = await attempt("mcp tool → remote server", () => run(remotePart))
  if (remote !== undefined) {
    section(
      "The `mcp` tool against server-everything (Streamable HTTP, 127.0.0.1)",
      table(["call", "anna's mcp tool p50 / p95 (ms)", "SDK Client directly p50 / p95 (ms)", "ours / floor"], remote),
      `@modelcontextprotocol/server-everything in its own process (\`streamableHttp\`, PORT set). Ours: the mcp tool over\n` +
        "makeSessionClients with the server as an agent's remote server (no sandbox), `{action: \"call\", server, tool: \"echo\"}`.\n" +
        `Floor: the SDK Client with StreamableHTTPClientTransport calling echo. ${CALLS.min} calls after ${CALLS.warmup}, one at a time.`
    )
  }

  const version = await attempt("ToolCatalog.version", () => run(versionPart))
  if (version !== undefined) {
    section(
      "ToolCatalog.version, read on every turn (agent with 3 MCP servers)",
      table(["read", "p50 / p95 (µs)", "p50 / SELECT 1"], version.rows),
      `The built-in catalog (compose.ts \`tools\`: workspace, memory, skills, scheduler, mcp, webfetch) on the real SQLite stores;\n` +
        `only mcp and webfetch have a version. ${int(READS.min)} reads after ${READS.warmup} untimed, one at a time. The version read: \`${version.version}\`.`
    )
  }
  const loadAfter = loadavg()[0] ?? Number.NaN
  print(`\nLoad average (1 min) ${loadBefore.toFixed(2)} as the reach phase began, ${loadAfter.toFixed(2)} as it ended (${cpus().length} cores).`)
}
