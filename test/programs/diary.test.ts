/**
 * `anna diary list|show` through the real CLI on a fresh ANNA_HOME: entries are written with the
 * diary layer into the home's own database file, then listed with each filter, shown as text and as
 * JSON; an unknown id is one line and exit 1; model text cannot drive the terminal.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import type { DiaryEntry } from "../../src/domain/learning/diary.ts"
import * as SqliteDiary from "../../src/layers/learning/SqliteDiary.ts"
import { Diary } from "../../src/services/Diary.ts"
import { anna, annaJson, newHome } from "../support/cli.ts"
import { homeDatabase } from "../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const entry = (over: Partial<DiaryEntry> & { id: string }): DiaryEntry => ({
  sessionKey: "default:telegram:alice:dm",
  agentId: "default",
  userId: "alice",
  fromSeq: 1,
  toSeq: 12,
  accomplishments: ["asked: deploy the site", "deployed to staging"],
  decisions: ["used rsync rather than scp"],
  challenges: ["tool bash failed: permission denied"],
  keyLearnings: ["the staging host needs sudo for /var/www"],
  tags: ["deploy", "Staging"],
  status: "success",
  qualityScore: 0.85,
  createdAt: Date.UTC(2026, 10, 20, 9, 30),
  source: "model",
  trigger: "idle",
  ...over
})

const ENTRIES: ReadonlyArray<DiaryEntry> = [
  entry({ id: "diary_a" }),
  entry({
    id: "diary_b",
    sessionKey: "coder:http:bob:main",
    agentId: "coder",
    userId: "bob",
    status: "failure",
    qualityScore: 0.2,
    tags: ["python"],
    source: "heuristic",
    createdAt: Date.UTC(2026, 10, 21, 8),
    accomplishments: ["asked: fix the \u001b[2Jtests"]
  }),
  entry({ id: "diary_c", status: "mixed", tags: ["docker"], createdAt: Date.UTC(2026, 10, 22, 7), fromSeq: 13, toSeq: 20, decisions: [] })
]

/** A home whose database holds ENTRIES, written through the diary layer. */
const seeded = async (): Promise<string> => {
  const h = newHome()
  homes.push(h)
  await Effect.runPromise(
    Effect.gen(function*() {
      const diary = yield* Diary
      for (const e of ENTRIES) yield* diary.add(e)
    }).pipe(Effect.provide(SqliteDiary.layer.pipe(Layer.provide(homeDatabase(h)))))
  )
  return h
}

type Listed = ReadonlyArray<DiaryEntry & { time: string }>
const ids = async (h: string, ...filters: ReadonlyArray<string>) =>
  (await annaJson<Listed>(h, "diary", "list", ...filters)).map((e) => e.id)

describe("anna diary", () => {
  it("list filters by session, agent, user, tag (any case), status and limit, newest first", async () => {
    const h = await seeded()
    const got = await Promise.all([
      ids(h),
      ids(h, "--session", "default:telegram:alice:dm"),
      ids(h, "--agent", "coder"),
      ids(h, "--user", "alice"),
      ids(h, "--tag", "STAGING"),
      ids(h, "--status", "mixed"),
      ids(h, "--limit", "1"),
      ids(h, "--user", "alice", "--tag", "docker")
    ])
    assert.deepStrictEqual(got, [
      ["diary_c", "diary_b", "diary_a"],
      ["diary_c", "diary_a"],
      ["diary_b"],
      ["diary_c", "diary_a"],
      ["diary_a"],
      ["diary_c"],
      ["diary_c"],
      ["diary_c"]
    ])
  })

  it("list prints a table of id, time, agent, user, status, quality, source, tags and first accomplishment", async () => {
    const h = await seeded()
    const r = await anna(h, "diary", "list")
    assert.strictEqual(r.code, 0, r.stderr)
    const [header, ...rows] = r.stdout.trimEnd().split("\n")
    assert.match(header ?? "", /^ID\s+TIME\s+AGENT\s+USER\s+STATUS\s+QUALITY\s+SOURCE\s+TAGS\s+ACCOMPLISHMENT$/)
    assert.strictEqual(rows.length, 3)
    assert.match(rows[2] ?? "", /^diary_a\s+2026-11-20T09:30:00Z\s+default\s+alice\s+success\s+0\.85\s+model\s+deploy,Staging\s+asked: deploy the site$/)
    // The escape sequence of diary_b's text is shown, not sent to the terminal.
    assert.notInclude(r.stdout, "\u001b")
    assert.include(rows[1] ?? "", "asked: fix the \\x1b[2Jtests")
  })

  it("show prints every field, lists as bullet lists; --json parses to the stored entry", async () => {
    const h = await seeded()
    const [text, json] = await Promise.all([anna(h, "diary", "show", "diary_c"), annaJson<DiaryEntry & { time: string }>(h, "diary", "show", "diary_a")])
    assert.strictEqual(text.code, 0, text.stderr)
    for (
      const part of [
        "Diary entry diary_c",
        "session  default:telegram:alice:dm",
        "burst    messages 13–20",
        "time     2026-11-22T07:00:00Z",
        "status   mixed",
        "quality  0.85",
        "trigger  idle",
        "tags     docker",
        "Accomplishments:\n  - asked: deploy the site\n  - deployed to staging",
        "Decisions:\n  (none)",
        "Challenges:\n  - tool bash failed: permission denied",
        "Key learnings:\n  - the staging host needs sudo for /var/www"
      ]
    ) assert.include(text.stdout, part)
    const { time, ...stored } = json
    assert.deepStrictEqual(stored, ENTRIES[0])
    assert.strictEqual(time, "2026-11-20T09:30:00Z")
  })

  it("an unknown id is one clear line and exit 1; an empty diary says so", async () => {
    const h = await seeded()
    const r = await anna(h, "diary", "show", "diary_nope")
    assert.strictEqual(r.code, 1)
    assert.strictEqual(r.stderr.trim(), 'anna: no diary entry "diary_nope"')
    const empty = newHome()
    homes.push(empty)
    const none = await anna(empty, "diary", "list")
    assert.strictEqual(none.code, 0, none.stderr)
    assert.include(none.stdout, "No diary entries")
    assert.deepStrictEqual(await ids(empty), [])
  })
})
