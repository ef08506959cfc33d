/**
 * `anna memory import` and times: a message without `ts` takes the time of the message before it
 * (before the first dated one, that one's), so times stay in order; only a file with no `ts` at all
 * takes the import time. And `anna memory stats` says "no summaries yet" instead of "max depth -1"
 * (its JSON keeps the number). Real processes on a fresh ANNA_HOME, real SQLite files.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { SessionStats } from "../../src/domain/memory/types.ts"
import { anna, annaJson, newHome } from "../support/cli.ts"
import { openHomeDb } from "../support/gatewayDb.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

/** created_at of a session's messages in seq order, read straight from the database file. */
const times = (h: string, key: string): Array<number> => {
  const db = openHomeDb(h, { readOnly: true })
  try {
    return db.all(
      `SELECT m.created_at AS at FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
       WHERE c.session_key = ? ORDER BY m.seq`,
      key
    ).map((r) => Number(r["at"]))
  } finally {
    db.close()
  }
}

const jsonl = (lines: ReadonlyArray<{ readonly content: string; readonly ts?: string }>) =>
  lines.map((l, i) => JSON.stringify({ role: i % 2 === 0 ? "user" : "assistant", ...l })).join("\n") + "\n"

describe("anna memory import: times of messages without ts", () => {
  it("take the previous message's time (before the first dated one, its time); a file without any takes the import time", async () => {
    const h = newHome()
    homes.push(h)
    const mixed = join(h, "mixed.jsonl")
    writeFileSync(mixed, jsonl([
      { content: "undated, before any dated line" },
      { content: "undated too" },
      { content: "first dated", ts: "2025-05-01T10:00:00Z" },
      { content: "undated after it" },
      { content: "second dated", ts: "2025-05-02T08:30:00Z" },
      { content: "undated at the end" }
    ]))
    const started = Date.now()
    await annaJson(h, "memory", "import", "mixed", mixed)
    const may1 = Date.parse("2025-05-01T10:00:00Z")
    const may2 = Date.parse("2025-05-02T08:30:00Z")
    assert.deepStrictEqual(times(h, "mixed"), [may1, may1, may1, may1, may2, may2])

    const none = join(h, "none.jsonl")
    writeFileSync(none, jsonl([{ content: "no ts" }, { content: "none here either" }]))
    await annaJson(h, "memory", "import", "none", none)
    for (const at of times(h, "none")) assert.isAtLeast(at, started)

    // Stats of a session without summaries: words in the text, the number in JSON.
    const stats = await anna(h, "memory", "stats", "mixed")
    assert.strictEqual(stats.code, 0, stats.stderr)
    assert.match(stats.stdout, /summaries\s+0 \(no summaries yet\)/)
    assert.notInclude(stats.stdout, "max depth -1")
    const json = await annaJson<SessionStats>(h, "memory", "stats", "mixed")
    assert.strictEqual(json.summaries, 0)
    assert.strictEqual(json.maxDepth, -1)
  })
})
