/**
 * The admin API (issue 13) on a realistic database: 1,000 sessions of 50 users and 5 agents
 * (~200k messages, one of 10,000), 20,000 model calls over 30 days, all written through the real
 * stores (MemoryProvider.append, ConfigStore, AgentStore, ProviderStore; the model_usage rows and
 * prices as UsageLog and `anna provider price` store them). The stack is the admin tests' own
 * (test/support/adminHarness.ts: the gateway's HTTP server on 127.0.0.1 port 0), called with an
 * admin bearer token over keep-alive `fetch`, one request at a time, each timed until its body is
 * read. Floors: the simplest raw SQL giving the same answer on the same file (node:sqlite,
 * read-only), so the ratio is what HTTP, auth, the handlers and the store's own SQL add.
 * Also the web console's first load: dist/web/index.html and what it pulls in, raw and gzipped.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes, scrypt } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { gzipSync } from "node:zlib"
import { sessionRefFromKey } from "../src/domain/memory/session.ts"
import { AgentStore } from "../src/services/AgentStore.ts"
import { ConfigStore } from "../src/services/ConfigStore.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { MemoryStore } from "../src/services/MemoryStore.ts"
import { ProviderStore } from "../src/services/ProviderStore.ts"
import { ADMIN, startAdminHarness } from "../test/support/adminHarness.ts"
import { ratios } from "./support/common.ts"
import { int, ms, progress, ratio, section, seconds, type Summary, summarize, table } from "./support/measure.ts"
import { buildDist } from "./startup.ts"
import { makeTranscript, prng } from "./support/transcript.ts"

const USERS = 50
const AGENTS = 5
const USAGE_ROWS = 20_000
const DAY = 86_400_000
const WARMUP = 10
const SAMPLES = 100
const LOGINS = 10
const QUERY = "deploy"

const ROOT = resolve(import.meta.dirname, "..")
const TOPICS = [
  "deploy pipeline",
  "docker build cache",
  "flaky test",
  "weekly report",
  "database migration",
  "travel plans",
  "invoice question",
  "memory leak",
  "release notes",
  "login problem",
  "grocery list",
  "deployment rollback"
]

/** Session `i`: user `i % 50`, agent `⌊i / 50⌋ % 5` (every user talks to every agent); session 0 is the large one. */
const keyOf = (i: number): string => `agent${Math.floor(i / USERS) % AGENTS}:cli:u${i % USERS}:s${i}`

/** Messages per session: ~190 on average, session 0 the large one. */
const sizesOf = (sessions: number, large: number) => {
  const rand = prng(1313)
  return Array.from({ length: sessions }, (_, i) => (i === 0 ? large : 20 + Math.floor(rand() * 341)))
}

/**
 * Times `run` `n` times after `warmup` untimed runs. A warm-up request may meet a keep-alive
 * connection the server closed while the floor ran (ECONNRESET): it is tried once more.
 */
const timeRequests = async (n: number, warmup: number, run: () => Promise<void>): Promise<Summary> => {
  for (let i = 0; i < warmup; i++) await run().catch(() => run())
  const times: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await run()
    times.push(performance.now() - t0)
  }
  return summarize(times)
}

const timeSync = (n: number, warmup: number, run: () => unknown): Summary => {
  for (let i = 0; i < warmup; i++) run()
  const times: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    run()
    times.push(performance.now() - t0)
  }
  return summarize(times)
}

/** index.html, the files it links, and their static imports (what a first visit downloads). */
const firstLoad = (webRoot: string) => {
  const files = new Map<string, Buffer>()
  const visit = (path: string) => {
    if (files.has(path) || !existsSync(join(webRoot, path))) return
    const body = readFileSync(join(webRoot, path))
    files.set(path, body)
    const text = body.toString("utf8")
    const refs = path.endsWith(".html")
      ? [...text.matchAll(/(?:href|src)="\/?([^"]+\.(?:js|css))"/g)].map((m) => m[1] ?? "")
      : path.endsWith(".js")
      ? [...text.matchAll(/(?:^|[;}\n])\s*import\s*(?:[^"';]*?from\s*)?"\.\/([^"]+\.js)"/g)].map((m) => join("assets", m[1] ?? ""))
      : []
    for (const r of refs) visit(r)
  }
  visit("index.html")
  return [...files].map(([path, body]) => ({ path, raw: body.length, gzip: gzipSync(body).length }))
}

export const runAdmin = async (options: { readonly sessions?: number; readonly large?: number; readonly build?: boolean } = {}): Promise<void> => {
  const SESSIONS = options.sessions ?? 1_000
  const LARGE = options.large ?? 10_000
  const sizes = sizesOf(SESSIONS, LARGE)
  const rows: Array<Array<string>> = []
  const notes: Array<string> = []
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const h = yield* startAdminHarness()
    const file = join(h.home, "anna.db")
    const now = Date.now()

    progress(`admin: building ${int(SESSIONS)} sessions (~${int(sizes.reduce((n, s) => n + s, 0))} messages), ${USERS} users, ${AGENTS} agents`)
    const t0 = performance.now()
    yield* Effect.gen(function*() {
      const providers = yield* ProviderStore
      yield* providers.add({
        id: "bench",
        type: "openai",
        baseUrl: "http://127.0.0.1:9/v1",
        apiKey: "sk-bench",
        models: [],
        defaultModel: "gpt-4.1",
        headers: {},
        enabled: true
      })
      const agents = yield* AgentStore
      for (let a = 0; a < AGENTS; a++) yield* agents.create(`agent${a}`, { providerId: "bench" })
      const config = yield* ConfigStore
      for (let u = 0; u < USERS; u++) yield* config.createUser(`u${u}`, `User ${u}`)
      const memory = yield* MemoryProvider
      const store = yield* MemoryStore
      const rand = prng(77)
      for (let i = 0; i < SESSIONS; i++) {
        const size = sizes[i] ?? 0
        // Messages are ~62 s apart on average: the large session spans ~7 days, the others ~3 hours.
        const startAt = i === 0 ? now - 8 * DAY : now - 30 * DAY + Math.floor(rand() * 29 * DAY)
        const transcript = makeTranscript({ seed: 5000 + i, startAt })
        const ref = sessionRefFromKey(keyOf(i))
        for (let done = 0; done < size; done += 1_000) yield* memory.append(ref, transcript.take(Math.min(1_000, size - done)))
        const c = yield* store.loadConversation(ref.key)
        const topic = TOPICS[Math.floor(rand() * TOPICS.length)] ?? "chat"
        yield* store.saveInfo(c.id, { ...c.info, title: `${topic} #${i}` })
        if (i % 100 === 99) progress(`admin: ${i + 1} sessions`)
      }
      // The usage log as UsageLog.record writes it, spread over 30 days, with prices for two of three models.
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO model_prices ${
        sql.insert([
          { provider_id: "bench", model: "gpt-4.1", input: 2, output: 8, cache_read: 0.5, cache_write: null, updated_at: now },
          { provider_id: "bench", model: "gpt-4.1-mini", input: 0.4, output: 1.6, cache_read: 0.1, cache_write: null, updated_at: now }
        ])
      }`
      const urand = prng(4242)
      const models = ["gpt-4.1", "gpt-4.1-mini", "o3"]
      const usage = Array.from({ length: USAGE_ROWS }, (): Record<string, string | number> => {
        const i = Math.floor(urand() * SESSIONS)
        const ref = sessionRefFromKey(keyOf(i))
        const ok = urand() < 0.98
        return {
          at: now - Math.floor(urand() * 30 * DAY),
          provider_id: "bench",
          model: models[Math.floor(urand() * models.length)] ?? "o3",
          purpose: urand() < 0.9 ? "chat" : "summary",
          session_key: ref.key,
          agent_id: ref.agentId,
          user_id: ref.userId,
          input_tokens: ok ? 500 + Math.floor(urand() * 20_000) : 0,
          output_tokens: ok ? 20 + Math.floor(urand() * 1_500) : 0,
          cache_read_tokens: ok ? Math.floor(urand() * 10_000) : 0,
          cache_write_tokens: 0,
          ok: ok ? 1 : 0,
          error: ok ? "" : "timeout"
        }
      })
      yield* sql.withTransaction(Effect.forEach(
        Array.from({ length: USAGE_ROWS / 500 }, (_, b) => usage.slice(b * 500, (b + 1) * 500)),
        (batch) => sql`INSERT INTO model_usage ${sql.insert(batch as [Record<string, string | number>, ...Array<Record<string, string | number>>])}`,
        { discard: true }
      ))
    }).pipe(Effect.provide(h.services), Effect.orDie)
    const buildMs = performance.now() - t0

    const db = new DatabaseSync(file, { readOnly: true })
    const scalar = (q: string, ...args: Array<string | number>) => Number(Object.values(db.prepare(q).get(...args) ?? {})[0] ?? 0)
    const messageCount = scalar("SELECT count(*) FROM ctx_messages")
    const dbMiB = (scalar("PRAGMA page_count") * scalar("PRAGMA page_size")) / 1048576
    notes.push(
      `Database: ${int(scalar("SELECT count(*) FROM ctx_conversations"))} sessions, ${int(messageCount)} messages ` +
        `(largest ${int(LARGE)}), ${int(scalar("SELECT count(*) FROM model_usage"))} model_usage rows, ` +
        `${dbMiB.toFixed(0)} MiB; built through the stores in ${seconds(buildMs)}.`
    )

    const headers = { authorization: `Bearer ${h.adminToken}` }
    const get = (path: string) => async () => {
      const r = await fetch(`${h.url}${path}`, { headers })
      const body = await r.text()
      if (r.status !== 200) throw new Error(`admin bench: GET ${path} answered ${r.status}: ${body.slice(0, 300)}`)
    }
    const json = async (path: string) => (await (await fetch(`${h.url}${path}`, { headers })).json()) as Record<string, unknown>

    // Floors: prepared once, run as the simplest SQL that gives the same answer.
    const count = db.prepare("SELECT count(*) AS n FROM ctx_conversations")
    const pageSql = `WITH page AS (SELECT * FROM ctx_conversations c WHERE %WHERE% ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?)
      SELECT p.*,
        coalesce((SELECT max(seq) FROM ctx_messages m WHERE m.conversation_id = p.id), 0) AS messages,
        (SELECT coalesce(sum(token_count), 0) FROM ctx_messages m WHERE m.conversation_id = p.id) AS message_tokens,
        (SELECT created_at FROM ctx_messages m WHERE m.conversation_id = p.id ORDER BY seq DESC LIMIT 1) AS last_at
      FROM page p ORDER BY p.updated_at DESC, p.id DESC`
    const page = db.prepare(pageSql.replace("%WHERE%", "1"))
    const textWhere = "instr(lower(c.session_key), ?) > 0 OR instr(lower(coalesce(json_extract(c.info, '$.title'), '')), ?) > 0"
    const countText = db.prepare(`SELECT count(*) AS n FROM ctx_conversations c WHERE ${textWhere}`)
    const pageText = db.prepare(pageSql.replace("%WHERE%", textWhere))
    const convId = db.prepare("SELECT id FROM ctx_conversations WHERE session_key = ?")
    const messages = db.prepare(`SELECT id, seq, role, blocks, CASE WHEN blocks IS NULL THEN text ELSE '' END AS text, token_count, created_at
      FROM ctx_messages WHERE conversation_id = ? AND seq >= 1 ORDER BY seq LIMIT 101`)
    const messageTotal = db.prepare("SELECT count(*) AS n FROM ctx_messages WHERE conversation_id = ?")
    const turns = db.prepare(`SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS bucket, count(*) AS turns
      FROM ctx_messages WHERE role = 'user' AND created_at >= ? AND created_at < ? GROUP BY bucket ORDER BY bucket`)
    const usageBy = (key: string) =>
      db.prepare(`SELECT ${key} AS key, count(*) AS calls, sum(1 - ok) AS failed, sum(input_tokens) AS input, sum(output_tokens) AS output,
        sum(cache_read_tokens) AS cache_read, sum(cache_write_tokens) AS cache_write,
        sum(CASE WHEN p.input IS NULL THEN NULL ELSE (max(u.input_tokens - u.cache_read_tokens - u.cache_write_tokens, 0) * p.input
          + u.output_tokens * p.output + u.cache_read_tokens * coalesce(p.cache_read, p.input)) / 1e6 END) AS cost
        FROM model_usage u LEFT JOIN model_prices p ON p.provider_id = u.provider_id AND p.model = u.model
        WHERE at >= ? AND at < ? GROUP BY 1 ORDER BY 1`)
    const byDay = usageBy("strftime('%Y-%m-%d', at / 1000, 'unixepoch')")
    const byUser = usageBy("user_id")
    const byAgent = usageBy("agent_id")
    const byModel = usageBy("u.provider_id || '/' || u.model")
    const largeKey = keyOf(0)
    const since30 = () => Math.floor(Date.now() / DAY) * DAY - 29 * DAY

    // The list's SQL as it was before the page was taken first (totals computed for every session, then sorted).
    const before = db.prepare(`SELECT c.*,
        coalesce((SELECT max(seq) FROM ctx_messages m WHERE m.conversation_id = c.id), 0) AS messages,
        (SELECT coalesce(sum(token_count), 0) FROM ctx_messages m WHERE m.conversation_id = c.id) AS message_tokens,
        (SELECT created_at FROM ctx_messages m WHERE m.conversation_id = c.id ORDER BY seq DESC LIMIT 1) AS last_at
      FROM ctx_conversations c ORDER BY c.updated_at DESC, c.id DESC LIMIT 50 OFFSET 0`)
    const old = timeSync(20, 2, () => before.all())
    notes.push(
      `The session list's SQL before this phase's fix (totals in the sorted SELECT), raw: ${ms(old.p50)} / ${ms(old.p95)} ms ` +
        "p50 / p95 for the first page (20 runs): SQLite computed every session's totals before sorting."
    )

    const qTotal = Number((yield* Effect.promise(() => json(`/api/sessions?q=${QUERY}&limit=50`)))["total"])
    const cases: ReadonlyArray<{ label: string; run: () => Promise<void>; floor?: { label: string; run: () => unknown } }> = [
      {
        label: "GET /api/sessions?limit=50 (first page)",
        run: get("/api/sessions?limit=50"),
        floor: { label: "count + page of 50 with its totals", run: () => [count.get(), page.all(50, 0)] }
      },
      {
        label: "GET /api/sessions?limit=50&offset=900",
        run: get("/api/sessions?limit=50&offset=900"),
        floor: { label: "same, OFFSET 900", run: () => [count.get(), page.all(50, 900)] }
      },
      {
        label: `GET /api/sessions?q=${QUERY} (${int(qTotal)} match)`,
        run: get(`/api/sessions?q=${QUERY}&limit=50`),
        floor: { label: "count + page, instr on key and title", run: () => [countText.get(QUERY, QUERY), pageText.all(QUERY, QUERY, 50, 0)] }
      },
      {
        label: `GET /api/sessions/{key}/messages?limit=100 (${int(LARGE)}-message session)`,
        run: get(`/api/sessions/${encodeURIComponent(largeKey)}/messages?limit=100`),
        floor: {
          label: "key → id, 101 rows by seq, count(*)",
          run: () => {
            const id = Number(convId.get(largeKey)?.["id"])
            return [messages.all(id), messageTotal.get(id)]
          }
        }
      },
      {
        label: "GET /api/usage/dashboard?window=30d",
        run: get("/api/usage/dashboard?window=30d"),
        floor: {
          label: "turns by day + usage by day, user, agent",
          run: () => {
            const since = since30()
            const until = Date.now() + 1
            return [turns.all(since, until), byDay.all(since, until), byUser.all(since, until), byAgent.all(since, until)]
          }
        }
      },
      {
        label: "GET /api/usage (30 days)",
        run: get("/api/usage"),
        floor: {
          label: "usage by model, user, agent, day",
          run: () => {
            const until = Date.now()
            const since = until - 30 * DAY
            return [byModel.all(since, until), byUser.all(since, until), byAgent.all(since, until), byDay.all(since, until)]
          }
        }
      },
      { label: `GET /api/users (${USERS + 2} users)`, run: get("/api/users") },
      { label: `GET /api/agents (${AGENTS} agents)`, run: get("/api/agents") }
    ]
    for (const c of cases) {
      progress(`admin: ${c.label}`)
      const ours = yield* Effect.promise(() => timeRequests(SAMPLES, WARMUP, c.run))
      const floor = c.floor === undefined ? undefined : timeSync(SAMPLES, WARMUP, c.floor.run)
      rows.push([
        c.label,
        `${ms(ours.p50)} / ${ms(ours.p95)}`,
        floor === undefined ? "–" : `${ms(floor.p50)} / ${ms(floor.p95)}`,
        floor === undefined ? "–" : ratio(ours.p50, floor.p50),
        c.floor?.label ?? ""
      ])
      if (floor !== undefined) {
        ratios.push({ operation: `admin API, ${c.label}`, ours: `${ms(ours.p50)} ms`, floor: `${ms(floor.p50)} ms`, ratio: ratio(ours.p50, floor.p50) })
      }
    }

    progress(`admin: POST /api/auth/login × ${LOGINS}`)
    const login = async () => {
      const r = await fetch(`${h.url}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: ADMIN.user, password: ADMIN.password })
      })
      const body = await r.text()
      if (r.status !== 200) throw new Error(`admin bench: login answered ${r.status}: ${body.slice(0, 300)}`)
    }
    const logins = yield* Effect.promise(() => timeRequests(LOGINS, 1, login))
    // Floor: one scrypt with the stored hash's parameters (N=2^15, r=8, p=1, 32 bytes).
    const kdf = () =>
      new Promise<void>((done, fail) =>
        scrypt(ADMIN.password, randomBytes(16), 32, { N: 32768, r: 8, p: 1, maxmem: 256 * 32768 * 8 }, (e) => (e === null ? done() : fail(e)))
      )
    const kdfs = yield* Effect.promise(() => timeRequests(LOGINS, 1, kdf))
    rows.push([
      `POST /api/auth/login (${LOGINS})`,
      `${ms(logins.p50)} / ${ms(logins.p95)}`,
      `${ms(kdfs.p50)} / ${ms(kdfs.p95)}`,
      ratio(logins.p50, kdfs.p50),
      "one scrypt (N=2^15, r=8, p=1): deliberate"
    ])
    db.close()
  })))

  progress("admin: npm run build (the web console's files)")
  let built = options.build !== false
  try {
    if (built) buildDist()
  } catch (e) {
    built = false
    progress(`admin: the build failed, measuring dist/web as it is on disk: ${String(e).split("\n")[0]}`)
  }
  const web = firstLoad(join(ROOT, "dist", "web"))
  const raw = web.reduce((n, f) => n + f.raw, 0)
  const gz = web.reduce((n, f) => n + f.gzip, 0)
  const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`

  section(
    "Admin API (one request at a time, admin bearer token, keep-alive)",
    table(["request", "ours p50 / p95 (ms)", "floor p50 / p95 (ms)", "ours / floor (p50)", "floor: raw SQL on the same file"], rows),
    [
      ...notes,
      `${SAMPLES} requests each after ${WARMUP} untimed (logins: ${LOGINS} after 1), timed until the body is read. ` +
        "Floors run in this process on a read-only node:sqlite handle of the same file."
    ].join("\n")
  )
  section(
    `Web console first load (dist/web${built ? ", rebuilt" : ", as on disk"})`,
    table(["file", "raw", "gzip"], [...web.map((f) => [f.path, kib(f.raw), kib(f.gzip)]), ["total", kib(raw), kib(gz)]]),
    "index.html, the files it links and their static imports; gzip at zlib's default level. The server sends the build's gzipped copies (level 9) to browsers that accept gzip."
  )
}
