/**
 * A database written by an earlier release (test/fixtures/anna-0009.db: made by the code at migration
 * 0009 — an agent, a user with a token, channel settings, a compacted session of 240 messages with tool
 * calls and Chinese text, a second session) opens with this release: its migrations run, `anna memory
 * verify` passes, and what was stored is found and listed as before.
 */
import { assert, describe, it } from "@effect/vitest"
import { chmodSync, copyFileSync, rmSync } from "node:fs"
import { join, resolve } from "node:path"
import { afterAll } from "vitest"
import { anna, annaJson, newHome } from "../support/cli.ts"
import { sqliteHome } from "../support/suiteDatabase.ts"

const FIXTURE = resolve(import.meta.dirname, "../fixtures/anna-0009.db")
const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

describe("a database from an earlier release", () => {
  it("migrates, verifies, and keeps its sessions, summaries, search, agents, users and channels", async () => {
    const home = sqliteHome(newHome())
    homes.push(home)
    copyFileSync(FIXTURE, join(home, "anna.db"))
    chmodSync(join(home, "anna.db"), 0o600)
    const verify = await anna(home, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stderr)
    assert.include(verify.stdout, "OK: 2 session(s), 270 messages, lossless and DAG intact.")
    const sessions = await annaJson<Array<{ sessionKey: string; messages: number }>>(home, "memory", "sessions")
    assert.deepStrictEqual(sessions.map((s) => [s.sessionKey, s.messages]).sort(), [["a1:cli:carol:dm", 240], ["a1:http:carol:trip", 30]])
    const hits = await annaJson<Array<{ id: string; sessionKey: string }>>(home, "memory", "search", "FACT-3003")
    assert.strictEqual(hits[0]?.sessionKey, "a1:cli:carol:dm")
    // A row with Chinese text, written before migration 0010: queued by it and indexed when the store
    // starts, so the ASCII glued to the Chinese and a two-character word are found.
    for (const query of ["FACT-9648", "备份"]) {
      const cjk = await annaJson<Array<{ id: string }>>(home, "memory", "search", query)
      assert.strictEqual(cjk[0]?.id, "msg_10", query)
    }
    const summary = await anna(home, "memory", "describe", "sum_1")
    assert.strictEqual(summary.code, 0, summary.stderr)
    const agents = await annaJson<Array<{ id: string }>>(home, "agent", "list")
    assert.deepStrictEqual(agents.map((a) => a.id), ["a1"])
    const users = await annaJson<Array<{ id: string }>>(home, "user", "list")
    assert.deepStrictEqual(users.map((u) => u.id), ["carol"])
    const channels = await annaJson<Array<{ id: string; config: Record<string, unknown> }>>(home, "channel", "list")
    assert.deepStrictEqual(channels.find((c) => c.id === "http")?.config, { host: "127.0.0.1", port: 8788 })
    // And it still takes new messages.
    const stats = await annaJson<{ messages: number }>(home, "memory", "stats", "a1:http:carol:trip")
    assert.strictEqual(stats.messages, 30)
  }, 60_000)
})
