/**
 * `anna memory import` is all or nothing (every line checked first, one transaction, SIGKILL-safe),
 * and `anna memory delete` removes a session for good while raw messages stay protected otherwise.
 * Real processes on a fresh ANNA_HOME, real SQLite files.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { appendFileSync, closeSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { SearchHit, SessionStats } from "../../src/domain/memory/types.ts"
import { anna, annaEnv, annaJson, finish, newHome, type Run, start, waitForOutput } from "../support/cli.ts"
import { openHomeDb } from "../support/gatewayDb.ts"
import { toJsonl, transcript } from "../support/transcript.ts"

const homes: Array<string> = []
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  assert.include(r.stderr, says)
  assert.notInclude(r.stderr, "    at ")
}

const sessionKeys = async (h: string) =>
  (await annaJson<Array<{ sessionKey: string }>>(h, "memory", "sessions")).map((s) => s.sessionKey)

/** Messages and conversations stored for a key, read straight from the database file. */
const stored = (h: string, key: string) => {
  const db = openHomeDb(h, { readOnly: true })
  try {
    const c = db.get("SELECT count(*) AS n FROM ctx_conversations WHERE session_key = ?", key)
    const m = db.get(
      "SELECT count(*) AS n FROM ctx_messages WHERE conversation_id IN (SELECT id FROM ctx_conversations WHERE session_key = ?)",
      key
    )
    return { conversations: Number(c?.["n"]), messages: Number(m?.["n"]) }
  } finally {
    db.close()
  }
}

const lines = (count: number, seed: number) => toJsonl(transcript(count, seed))

describe("anna memory import: all or nothing", () => {
  it("refuses a message over 8 MiB after 2,500 good lines and stores nothing", async () => {
    const h = home()
    const file = join(h, "big.jsonl")
    writeFileSync(file, lines(2500, 1) + JSON.stringify({ role: "assistant", content: "x".repeat(9 * 1024 * 1024) }) + "\n")
    const r = await anna(h, "memory", "import", "k", file)
    refused(r, "line 2501: the message is 9.0 MiB; the limit is 8 MiB")
    assert.deepStrictEqual(stored(h, "k"), { conversations: 0, messages: 0 })
  })

  it("refuses a 100 MiB line as soon as it passes the line limit, never holding it whole, storing nothing", async () => {
    const h = home()
    // 10 good lines, then a line of `mib` MiB of content (closed when `close`).
    const write = (name: string, mib: number, close: boolean) => {
      const file = join(h, name)
      const fd = openSync(file, "w")
      writeSync(fd, lines(10, 2) + "{\"role\":\"user\",\"content\":\"")
      const oneMib = "y".repeat(1024 * 1024)
      for (let i = 0; i < mib; i++) writeSync(fd, oneMib)
      if (close) writeSync(fd, "\"}\n")
      closeSync(fd)
      return file
    }
    // The child's peak RSS, written by a preloaded module when it exits.
    const preload = join(h, "peak.mjs")
    writeFileSync(
      preload,
      "import { writeFileSync } from \"node:fs\"\n" +
        "process.on(\"exit\", () => writeFileSync(process.env.ANNA_TEST_PEAK, String(process.resourceUsage().maxRSS)))\n"
    )
    const importMeasured = async (file: string) => {
      const out = join(h, "peak.txt")
      const r = await annaEnv(h, {
        NODE_OPTIONS: `${process.env["NODE_OPTIONS"] ?? ""} --import=${preload}`,
        ANNA_TEST_PEAK: out
      }, "memory", "import", "k", file)
      return { r, peakMib: Number(readFileSync(out, "utf8")) / 1024 }
    }
    // Baseline: the same command refusing a 1 MiB line that is not JSON.
    const small = await importMeasured(write("small.jsonl", 1, false))
    refused(small.r, "line 11: not valid JSON")
    const huge = await importMeasured(write("huge.jsonl", 100, true))
    refused(huge.r, "line 11 is longer than 16 MiB")
    assert.include(huge.r.stderr, "nothing was imported")
    assert.deepStrictEqual(stored(h, "k"), { conversations: 0, messages: 0 })
    // Held whole, the line alone would take 100 MiB (twice that once decoded); refused at the
    // 16 MiB limit, it takes at most that.
    assert.isBelow(huge.peakMib - small.peakMib, 48, `peak RSS ${huge.peakMib.toFixed(0)} MiB vs ${small.peakMib.toFixed(0)} MiB`)
  })

  it("refuses a pipe up front, since the file is read twice", async () => {
    const h = home()
    const fifo = join(h, "pipe.jsonl")
    execFileSync("mkfifo", [fifo])
    // Open read-write (never blocks on Linux), so the import could open and read it if it tried.
    const fd = openSync(fifo, "r+")
    try {
      writeSync(fd, lines(3, 5))
      const r = await anna(h, "memory", "import", "k", fifo)
      refused(r, `${fifo} is not a regular file (FIFO); the import reads it twice`)
      assert.include(r.stderr, "save it to a file first")
      assert.strictEqual(r.stderr.trim().split("\n").length, 1, r.stderr)
    } finally {
      closeSync(fd)
    }
    assert.deepStrictEqual(stored(h, "k"), { conversations: 0, messages: 0 })
  })

  it("refuses a file that changed after it was checked, storing nothing", async () => {
    const h = home()
    const file = join(h, "t.jsonl")
    writeFileSync(file, lines(40_000, 8))
    const child = start(h, ["memory", "import", "k", file])
    const done = finish(child)
    // The first progress line comes after the whole file was checked and the first batch stored.
    await waitForOutput(child, "importing k: ")
    appendFileSync(file, lines(3, 9))
    refused(await done, "changed while it was being imported (it now has more than the 40000 messages checked); nothing was imported")
    assert.deepStrictEqual(stored(h, "k"), { conversations: 0, messages: 0 })
  })

  it("refuses invalid UTF-8 and nonsense timestamps with their line numbers", async () => {
    const h = home()
    const file = join(h, "bad.jsonl")
    const good = Buffer.from(JSON.stringify({ role: "user", content: "fine" }) + "\n")
    const badUtf8 = Buffer.concat([Buffer.from("{\"role\":\"user\",\"content\":\"caf"), Buffer.from([0xc3, 0x28]), Buffer.from("\"}\n")])
    const rest = [
      { role: "user", content: "zero", ts: "0" },
      { role: "user", content: "feb 30", ts: "2026-02-30T10:00:00Z" },
      { role: "user", content: "ok", ts: "2026-03-01T09:30:00Z" },
      { role: "user", content: "old", ts: "0001-01-01T00:00:00Z" }
    ].map((l) => JSON.stringify(l)).join("\n")
    writeFileSync(file, Buffer.concat([good, badUtf8, Buffer.from(rest + "\n")]))
    const r = await anna(h, "memory", "import", "k", file)
    refused(r, "line 2: not valid UTF-8")
    assert.include(r.stderr, "line 3: \"ts\" is not an ISO-8601 time: \"0\"")
    assert.include(r.stderr, "line 4: \"ts\" is not an ISO-8601 time")
    assert.include(r.stderr, "line 6: \"ts\" is before 1970")
    assert.notInclude(r.stderr, "line 5")
    assert.deepStrictEqual(stored(h, "k"), { conversations: 0, messages: 0 })
  })

  it("SIGKILLed mid-import leaves no session; the same import then runs to the end", async () => {
    const h = home()
    const file = join(h, "t.jsonl")
    writeFileSync(file, lines(60_000, 7))
    const child = start(h, ["memory", "import", "a1:cli:u1:main", file])
    const done = finish(child)
    // The first progress line is written after the first batch was appended (not committed).
    await waitForOutput(child, "importing a1:cli:u1:main: ")
    child.kill("SIGKILL")
    const killed = await done
    assert.strictEqual(killed.signal, "SIGKILL")
    const after = stored(h, "a1:cli:u1:main")
    assert.deepStrictEqual(after, { conversations: 0, messages: 0 })

    const ok = await annaJson<{ imported: number; lastSeq: number }>(h, "memory", "import", "a1:cli:u1:main", file)
    assert.deepStrictEqual([ok.imported, ok.lastSeq], [60_000, 60_000])
    assert.deepStrictEqual(stored(h, "a1:cli:u1:main"), { conversations: 1, messages: 60_000 })
    assert.strictEqual((await anna(h, "memory", "verify")).code, 0)
  })
})

describe("anna memory delete", () => {
  it("asks for --yes, then deletes one session whole; the rest verifies and raw messages stay protected", async () => {
    const h = home()
    const a = join(h, "a.jsonl")
    const b = join(h, "b.jsonl")
    writeFileSync(a, lines(1000, 3))
    writeFileSync(b, lines(500, 4) + JSON.stringify({ role: "user", content: "zebracornflake 斑马玉米片" }) + "\n")
    await annaJson(h, "memory", "import", "keep", a)
    await annaJson(h, "memory", "import", "gone", b)
    await annaJson(h, "memory", "compact", "gone", "--full")
    await annaJson(h, "memory", "compact", "keep")
    const before = await annaJson<SessionStats>(h, "memory", "stats", "gone")
    assert.isAbove(before.summaries, 0)
    assert.isAbove((await annaJson<Array<SearchHit>>(h, "memory", "search", "zebracornflake")).length, 0)

    const asked = await anna(h, "memory", "delete", "gone")
    refused(asked, "pass --yes")
    assert.strictEqual(asked.stderr.trim().split("\n").length, 1)
    assert.deepStrictEqual((await sessionKeys(h)).sort(), ["gone", "keep"])
    refused(await anna(h, "memory", "delete", "nope", "--yes"), "no session \"nope\"")

    const text = await anna(h, "memory", "delete", "gone", "--yes")
    assert.strictEqual(text.code, 0, text.stderr)
    assert.strictEqual(text.stdout.trim(), `Deleted gone: 501 messages, ${before.summaries} summaries.`)
    assert.deepStrictEqual(await sessionKeys(h), ["keep"])
    assert.deepStrictEqual(stored(h, "gone"), { conversations: 0, messages: 0 })
    assert.deepStrictEqual(await annaJson<Array<SearchHit>>(h, "memory", "search", "zebracornflake"), [])
    assert.deepStrictEqual(await annaJson<Array<SearchHit>>(h, "memory", "search", "斑马玉米"), [])
    const verify = await anna(h, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stderr)
    assert.include(verify.stdout, "OK: 1 session(s), 1000 messages")

    // No trace is left in the link tables, and an ordinary DELETE of a message is still refused.
    const db = openHomeDb(h)
    const orphans = db.get(`SELECT
        (SELECT count(*) FROM ctx_summaries WHERE conversation_id NOT IN (SELECT id FROM ctx_conversations)) +
        (SELECT count(*) FROM ctx_items WHERE conversation_id NOT IN (SELECT id FROM ctx_conversations)) +
        (SELECT count(*) FROM ctx_summary_messages WHERE summary_id NOT IN (SELECT id FROM ctx_summaries)) AS n`)
    assert.strictEqual(Number(orphans?.["n"]), 0)
    assert.throws(() => db.exec("DELETE FROM ctx_messages WHERE seq = 1"), /immutable/)
    db.close()

    const json = await annaJson<{ deleted: { sessionKey: string; messages: number; summaries: number } }>(
      h, "memory", "delete", "keep", "--yes"
    )
    assert.deepStrictEqual([json.deleted.sessionKey, json.deleted.messages], ["keep", 1000])
    assert.deepStrictEqual(await sessionKeys(h), [])
    assert.strictEqual((await anna(h, "memory", "verify")).code, 0)
  })
})
