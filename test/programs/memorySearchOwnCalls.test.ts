/**
 * `anna memory search` leaves the memory tool's own calls and results out (issue 24): a session where
 * the model searched its memory for "locker code" finds the messages that say it, not the searches;
 * a message that also holds something else (text, another tool's call or result) is found by that
 * part only, and its snippet comes from it. `--include-memory-calls` (and `tool:memory`) searches
 * them too. A database written before (at migration 0027, where the index held them like any text)
 * behaves the same once migrated. Real processes, a real ANNA_HOME, a session imported with its tool
 * calls.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { afterAll } from "vitest"
import type { SearchHit } from "../../src/domain/memory/types.ts"
import { continuesUnit, type NewMessage } from "../../src/domain/message.ts"
import { encodeMessage } from "../../src/layers/memory/rows.ts"
import { loadSqlMigrations, migrationsDir } from "../../src/layers/sql/Sqlite.ts"
import { anna, annaJson, newHome } from "../support/cli.ts"
import { sqliteHome } from "../support/suiteDatabase.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const KEY = "a1:cli:dana:dm"

const memoryCall = (id: string, input: { readonly [k: string]: string }) => ({ type: "tool_use" as const, id, name: "memory", input })
const result = (id: string, content: string) => ({ type: "tool_result" as const, tool_use_id: id, content })

/** Seqs 1–14: the fact, three rounds of memory calls (one beside a bash call), and plain answers. */
const SESSION: ReadonlyArray<NewMessage> = [
  { role: "user", content: "My locker code is 4821, remember it." },
  { role: "assistant", content: "Noted." },
  { role: "user", content: "What was that number again?" },
  { role: "assistant", content: [{ type: "text", text: "Let me look." }, memoryCall("m1", { action: "search", query: "locker code" })] },
  { role: "tool_result", content: [result("m1", "msg_1 [message, 2026-05-01 10:00] My «locker» «code» is 4821, remember it.")] },
  { role: "assistant", content: "It is 4821." },
  { role: "user", content: "And the gym one?" },
  {
    role: "assistant",
    content: [memoryCall("m2", { action: "search", query: "gym locker code" }), { type: "tool_use", id: "b1", name: "bash", input: { command: "cat gym.txt" } }]
  },
  { role: "tool_result", content: [result("m2", "No matches for \"gym locker code\"."), result("b1", "gym locker code: 1234")] },
  { role: "assistant", content: "The gym one is 1234." },
  { role: "user", content: "Thanks!" },
  { role: "assistant", content: [memoryCall("m3", { action: "search", query: "locker code 4821" })] },
  { role: "tool_result", content: [result("m3", "msg_1 [message, 2026-05-01 10:00] My «locker» «code» is «4821», remember it.")] },
  { role: "assistant", content: "You're welcome." }
]

const home = async () => {
  const h = newHome()
  homes.push(h)
  const lines = SESSION.map((m, i) => JSON.stringify({ ...m, ts: new Date(Date.UTC(2026, 4, 1, 10, i)).toISOString() }))
  const file = join(h, "t.jsonl")
  writeFileSync(file, `${lines.join("\n")}\n`)
  const r = await anna(h, "memory", "import", KEY, file)
  assert.strictEqual(r.code, 0, r.stderr)
  return h
}

/** A home whose database was written by the release before migration 0028, holding SESSION. */
const oldHome = () => {
  const h = sqliteHome(newHome())
  homes.push(h)
  const db = new DatabaseSync(join(h, "anna.db"))
  db.exec(`CREATE TABLE effect_sql_migrations (migration_id integer PRIMARY KEY NOT NULL,
    created_at datetime NOT NULL DEFAULT current_timestamp, name VARCHAR(255) NOT NULL)`)
  for (const [id, name, statements] of loadSqlMigrations(migrationsDir()).filter(([id]) => id < 28)) {
    for (const statement of statements) db.exec(statement)
    db.prepare("INSERT INTO effect_sql_migrations (migration_id, name) VALUES (?, ?)").run(id, name)
  }
  const t0 = Date.UTC(2026, 4, 1, 10)
  db.prepare("INSERT INTO ctx_conversations (id, session_key, agent_id, user_id, created_at, updated_at) VALUES (1, ?, 'a1', 'dana', ?, ?)")
    .run(KEY, t0, t0)
  const message = db.prepare(`INSERT INTO ctx_messages (conversation_id, seq, role, blocks, text, token_count, has_tool_results,
    continues_unit, has_cjk, created_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  const item = db.prepare("INSERT INTO ctx_items (conversation_id, position, message_id, tokens, continues_unit, depth) VALUES (1, ?, ?, ?, ?, -1)")
  let previous: { readonly role: NewMessage["role"]; readonly hasToolResults: boolean } | undefined
  SESSION.forEach((m, i) => {
    const e = encodeMessage(m, t0 + i * 60_000, i)
    if (e instanceof Error) throw e
    const unit = e.hasToolResults && continuesUnit(m, previous) ? 1 : 0
    previous = { role: e.role, hasToolResults: e.hasToolResults }
    const row = message.run(i + 1, e.role, e.blocks, e.text, e.tokens, e.hasToolResults ? 1 : 0, unit, e.hasCjk ? 1 : 0, e.createdAt)
    item.run(i + 1, row.lastInsertRowid, e.tokens, unit)
  })
  db.close()
  return h
}

const seqs = (hits: ReadonlyArray<SearchHit>) => hits.map((h) => h.seq ?? -1).sort((a, b) => a - b)

describe("anna memory search and the memory tool's own calls", () => {
  it("leaves them out by default; a mixed message is found by its other part, with its snippet", async () => {
    const h = await home()
    // --own-text: each turn on its own text (issue 25's neighbours aside)
    const hits = await annaJson<Array<SearchHit>>(h, "memory", "search", "locker code", "--session", KEY, "--own-text")
    assert.deepStrictEqual(seqs(hits), [1, 9])
    assert.strictEqual(hits[0]?.seq, 1)
    // by default the turns around them come after (matching nothing themselves), never a memory call or result
    const around = await annaJson<Array<SearchHit>>(h, "memory", "search", "locker code", "--session", KEY)
    assert.deepStrictEqual(seqs(around.slice(0, 2)), [1, 9])
    assert.isAbove(around.length, 2)
    for (const x of around.slice(2)) assert.deepStrictEqual(x.matched, [], `#${x.seq}`)
    for (const x of around) assert.notInclude([4, 5, 12, 13], x.seq, `#${x.seq} is a memory call or result`)
    const bash = hits.find((x) => x.seq === 9)
    assert.strictEqual(bash?.snippet, "[tool result] gym «locker» «code»: 1234")
    for (const x of hits) assert.notInclude(x.snippet, "memory")
    // strict mode, the user scope and the text view agree
    assert.deepStrictEqual(seqs(await annaJson<Array<SearchHit>>(h, "memory", "search", "locker code", "--strict")), [1, 9])
    assert.deepStrictEqual(seqs(await annaJson<Array<SearchHit>>(h, "memory", "search", "4821", "--user", "dana")), [1, 6])
    const text = await anna(h, "memory", "search", "locker code")
    assert.strictEqual(text.code, 0, text.stderr)
    assert.notInclude(text.stdout, "[tool call memory]")
  }, 60_000)

  it("--include-memory-calls and tool:memory search them too", async () => {
    const h = await home()
    const all = await annaJson<Array<SearchHit>>(h, "memory", "search", "locker code", "--include-memory-calls", "--own-text")
    assert.deepStrictEqual(seqs(all), [1, 4, 5, 8, 9, 12, 13])
    const mixed = all.find((x) => x.seq === 4)
    assert.include(mixed?.snippet ?? "", "[tool call memory] {\"action\":\"search\",\"query\":\"«locker» «code»\"}")
    const text = await anna(h, "memory", "search", "locker code", "--include-memory-calls")
    assert.include(text.stdout, "[tool call memory]")
    // A tool:memory filter asks for exactly these messages: it includes them without the flag.
    const filtered = await annaJson<Array<SearchHit>>(h, "memory", "search", "tool:memory locker")
    assert.deepStrictEqual(seqs(filtered), [4, 5, 8, 9, 12, 13])
  }, 60_000)

  it("a listing by filters only leaves out the messages that are nothing but memory calls or results", async () => {
    const h = await home()
    const assistant = await annaJson<Array<SearchHit>>(h, "memory", "search", "role:assistant", "--limit", "20")
    assert.deepStrictEqual(seqs(assistant), [2, 4, 6, 8, 10, 14])
    const results = await annaJson<Array<SearchHit>>(h, "memory", "search", "role:tool_result", "--limit", "20")
    assert.deepStrictEqual(seqs(results), [9])
    const everything = await annaJson<Array<SearchHit>>(h, "memory", "search", "role:tool_result", "--include-memory-calls")
    assert.deepStrictEqual(seqs(everything), [5, 9, 13])
  }, 60_000)

  it("a database written before migration 0028 is indexed again: the same hits, and it verifies", async () => {
    const h = oldHome()
    const verify = await anna(h, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stderr)
    assert.include(verify.stdout, "OK: 1 session(s), 14 messages")
    assert.deepStrictEqual(seqs(await annaJson<Array<SearchHit>>(h, "memory", "search", "locker code", "--session", KEY, "--own-text")), [1, 9])
    const all = await annaJson<Array<SearchHit>>(h, "memory", "search", "locker code", "--include-memory-calls", "--own-text")
    assert.deepStrictEqual(seqs(all), [1, 4, 5, 8, 9, 12, 13])
    const assistant = await annaJson<Array<SearchHit>>(h, "memory", "search", "role:assistant", "--limit", "20")
    assert.deepStrictEqual(seqs(assistant), [2, 4, 6, 8, 10, 14])
  }, 60_000)
})
