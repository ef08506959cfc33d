/**
 * `anna memory export` through the real CLI on a fresh ANNA_HOME: an export imported into a new
 * session exports again byte for byte (content blocks, tool calls and results, errors, multibyte
 * text, times to the millisecond); a long session is paged and shows progress; an unknown session is
 * one line and exit 1; `--output` never replaces a file without `--force` and leaves no temporary file.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { EXPORT_PAGE, PROGRESS_FROM } from "../../src/programs/exportJsonl.ts"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"
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

const ok = (r: Run): Run => {
  assert.strictEqual(r.code, 0, r.stdout + r.stderr)
  return r
}

const SESSION = "default:cli:alice:dm"

/** Every kind of content: multibyte text, blocks, a tool call with nested input, an error result, an image. */
const MESSAGES = [
  { role: "user", content: "Räum bitte /tmp auf — 清理临时文件 🧹", ts: "2026-03-01T10:00:00.123Z" },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Ich sehe nach." },
      { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "ls -la /tmp", env: { LANG: "de_DE.UTF-8" }, n: [1, 2.5, null, true] } },
      { type: "tool_use", id: "toolu_2", name: "webfetch", input: { url: "https://example.com/ü" } }
    ],
    ts: "2026-03-01T10:00:01.000Z"
  },
  {
    role: "tool_result",
    content: [
      { type: "tool_result", tool_use_id: "toolu_1", content: "ls: cannot open directory '/tmp/x': Permission denied", is_error: true },
      { type: "tool_result", tool_use_id: "toolu_2", content: [{ type: "text", text: "<html>…</html>" }] }
    ],
    ts: "2026-03-01T10:00:02.500Z"
  },
  {
    role: "user",
    content: [{ type: "text", text: "und das Bild?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }],
    ts: "2026-03-01T10:05:00.000Z"
  },
  { role: "assistant", content: "Erledigt.\nZeile zwei\twith a tab and \"quotes\" and \\ backslash", ts: "2026-03-01T10:05:09.999Z" }
]

const lines = (text: string): ReadonlyArray<unknown> => text.trimEnd().split("\n").map((l) => JSON.parse(l))

describe("anna memory export", () => {
  it("round trip: export, import into a new session, export again gives the same lines and the original messages", async () => {
    const h = home()
    const source = join(h, "source.jsonl")
    writeFileSync(source, MESSAGES.map((m) => JSON.stringify(m)).join("\n") + "\n")
    ok(await anna(h, "memory", "import", SESSION, source))

    const first = ok(await anna(h, "memory", "export", SESSION, "--jsonl"))
    assert.deepStrictEqual(lines(first.stdout), MESSAGES)
    assert.strictEqual(first.stderr, "")

    const file = join(h, "export.jsonl")
    const written = await annaJson<{ exported: number; output: string; sessionKey: string }>(h, "memory", "export", SESSION, "--output", file)
    assert.deepStrictEqual({ ...written, millis: undefined }, { sessionKey: SESSION, exported: MESSAGES.length, output: file, millis: undefined })
    assert.strictEqual(readFileSync(file, "utf8"), first.stdout)

    ok(await anna(h, "memory", "import", "default:cli:alice:copy", file))
    const again = ok(await anna(h, "memory", "export", "default:cli:alice:copy"))
    assert.strictEqual(again.stdout, first.stdout)
  })

  it("round trip with dense retrieval vectors: a line's embeddings are stored and exported again, byte for byte", async () => {
    const h = home()
    const vector = (seed: number, dims: number) => {
      const v = Float32Array.from({ length: dims }, (_, i) => Math.sin(seed * 7.3 + i) / 3)
      return Buffer.from(v.buffer).toString("base64")
    }
    const withVectors = MESSAGES.map((m, i) =>
      i === 2
        ? m
        : { ...m, embeddings: [{ model: "local/fake-embed", dims: 8, vector: vector(i, 8) }, ...(i === 0 ? [{ model: "other/e5", dims: 4, vector: vector(9, 4) }] : [])] }
    )
    // (a message's vectors are exported by model name: these are in that order already)
    const source = join(h, "vectors.jsonl")
    writeFileSync(source, withVectors.map((m) => JSON.stringify(m)).join("\n") + "\n")
    ok(await anna(h, "memory", "import", SESSION, source))
    const first = ok(await anna(h, "memory", "export", SESSION))
    assert.deepStrictEqual(lines(first.stdout), withVectors)
    assert.strictEqual(first.stdout, readFileSync(source, "utf8"))
    const copy = join(h, "copy.jsonl")
    writeFileSync(copy, first.stdout)
    ok(await anna(h, "memory", "import", "default:cli:alice:copy", copy))
    const again = ok(await anna(h, "memory", "export", "default:cli:alice:copy"))
    assert.strictEqual(again.stdout, first.stdout)
    // a vector that is not dims float32 values is refused with its line, and nothing is imported
    const bad = join(h, "bad.jsonl")
    writeFileSync(bad, JSON.stringify({ ...MESSAGES[0], embeddings: [{ model: "m", dims: 3, vector: vector(1, 8) }] }) + "\n")
    const refused = await anna(h, "memory", "import", "default:cli:alice:bad", bad)
    assert.strictEqual(refused.code, 1, refused.stderr)
    assert.match(refused.stderr, /line 1: an embedding is not 3 float32 values/)
  })

  it(`pages a long session (${EXPORT_PAGE} messages a page) in order, with progress on stderr`, async () => {
    const h = home()
    const count = PROGRESS_FROM + EXPORT_PAGE + 37
    const source = transcript(count, 7)
    writeFileSync(join(h, "long.jsonl"), toJsonl(source))
    ok(await anna(h, "memory", "import", SESSION, join(h, "long.jsonl")))
    const r = ok(await anna(h, "memory", "export", SESSION))
    assert.deepStrictEqual(lines(r.stdout), source)
    assert.include(r.stderr, `exporting ${SESSION}: ${count}/${count} (100%)`)
  })

  it("an unknown session is one line and exit 1, and writes no file", async () => {
    const h = home()
    const file = join(h, "none.jsonl")
    const r = await anna(h, "memory", "export", "default:cli:nobody:dm", "--output", file)
    assert.strictEqual(r.code, 1)
    assert.strictEqual(r.stderr.trim(), 'anna: no session "default:cli:nobody:dm" in memory')
    assert.strictEqual(r.stdout, "")
    assert.notInclude(readdirSync(h), "none.jsonl")
  })

  it("--output refuses an existing file unless --force, and leaves no temporary file", async () => {
    const h = home()
    writeFileSync(join(h, "source.jsonl"), MESSAGES.map((m) => JSON.stringify(m)).join("\n"))
    ok(await anna(h, "memory", "import", SESSION, join(h, "source.jsonl")))
    const file = join(h, "keep.jsonl")
    writeFileSync(file, "precious\n")
    const refused = await anna(h, "memory", "export", SESSION, "--output", file)
    assert.strictEqual(refused.code, 1)
    assert.strictEqual(refused.stderr.trim(), `anna: ${file} exists; pass --force to replace it (nothing was written)`)
    assert.strictEqual(readFileSync(file, "utf8"), "precious\n")

    const forced = ok(await anna(h, "memory", "export", SESSION, "--output", file, "--force"))
    assert.include(forced.stdout, `Exported ${MESSAGES.length} messages of ${SESSION} to ${file}`)
    assert.deepStrictEqual(lines(readFileSync(file, "utf8")), MESSAGES)
    assert.deepStrictEqual(readdirSync(h).filter((f) => f.includes("partial")), [])
  })

  it("--json goes with --output only: alone it is a usage error (exit 2), stdout stays empty", async () => {
    const h = home()
    const r = await anna(h, "memory", "export", SESSION, "--json")
    assert.strictEqual(r.code, 2)
    assert.strictEqual(r.stdout, "")
    assert.include(r.stderr, "--json describes the result of --output FILE")
  })
})
