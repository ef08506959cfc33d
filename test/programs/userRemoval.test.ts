/**
 * `anna user remove` as an operator meets it (issue 23): real CLI processes on a fresh ANNA_HOME.
 * A removed user leaves nothing that a later user of the same id could reach — no scheduled job, no
 * session or memory hit, no diary entry, no playbook rule of theirs, no workspace file, no token,
 * no place in an agent's access list — while what the operator chose to keep stays readable under
 * an id no user can take. A removal cut short (a playbook file with a mistake) is finished by running
 * the command again, and the id cannot be given to a new user before.
 */
import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { Job } from "../../src/domain/scheduler/types.ts"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"
import { openHomeDb } from "../support/gatewayDb.ts"
import { toJsonl, transcript } from "../support/transcript.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  assert.strictEqual(r.stderr.trim().split("\n").length, 1, r.stderr)
  assert.include(r.stderr, says)
}

/** A usage error: exit 2, the problem on the first line, then the command's usage. */
const misused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 2, r.stdout + r.stderr)
  assert.match(r.stderr.split("\n")[0] ?? "", /^anna: /)
  assert.include(r.stderr.split("\n")[0], says)
  assert.match(r.stderr.split("\n")[1] ?? "", /^usage: anna /)
}

interface Report {
  readonly userId: string
  readonly resumed: boolean
  readonly removedAs: string
  readonly sessions: "kept" | "deleted"
  readonly identities: number
  readonly tokens: number
  readonly chatStates: number
  readonly jobs: ReadonlyArray<string>
  readonly keptSessions: ReadonlyArray<string>
  readonly deletedSessions: ReadonlyArray<{ readonly sessionKey: string; readonly messages: number }>
  readonly profiles: number
  readonly diaryEntries: number
  readonly skillStats: number
  readonly usageRecords: number
  readonly ruleVotes: number
  readonly rules: number
  readonly workspaces: ReadonlyArray<string>
  readonly accessLists: ReadonlyArray<string>
}

const SECRET = "marmalade lighthouse"

/**
 * alice and bob, each with what a user accumulates: a token, a scheduled job, two sessions (one with
 * Chinese text, which the search index cuts in TypeScript), a profile, a diary entry, a skill
 * record, usage, a playbook rule of their own, workspace files, a place in agent a1's access list.
 */
const setUp = async () => {
  const h = newHome()
  homes.push(h)
  await annaJson(h, "agent", "set", "a1", "--access", "users:alice,bob")
  await annaJson(h, "user", "add", "alice")
  await annaJson(h, "user", "add", "bob")
  const token = (await anna(h, "user", "token", "alice", "--label", "laptop")).stdout.trim()
  const job = await annaJson<Job>(h, "schedule", "add", "--agent", "a1", "--every", "1m", "--prompt", "water the plants", "--user", "alice")
  const bobsJob = await annaJson<Job>(h, "schedule", "add", "--agent", "a1", "--every", "1h", "--prompt", "feed the cat", "--user", "bob")
  const file = join(h, "t.jsonl")
  const secret = [
    { role: "user", content: `my grandmother's ${SECRET} recipe is the one to keep`, ts: "2026-01-01T10:00:00Z" },
    { role: "assistant", content: "Noted.", ts: "2026-01-01T10:00:05Z" }
  ]
  writeFileSync(file, toJsonl([...secret as Array<never>, ...transcript(40, 3, Date.UTC(2026, 0, 2))]))
  await annaJson(h, "memory", "import", "a1:cli:alice:main", file)
  await annaJson(h, "memory", "import", "a1:telegram:alice:dm", file)
  await annaJson(h, "memory", "import", "a1:cli:bob:main", file)
  await annaJson(h, "playbook", "add", "--agent", "a1", "--user", "alice", "--text", "Alice wants metric units", "--tags", "units")
  await annaJson(h, "playbook", "add", "--agent", "a1", "--user", "bob", "--text", "Bob wants imperial units", "--tags", "units")
  await annaJson(h, "playbook", "add", "--agent", "a1", "--text", "Answer briefly", "--tags", "style")
  const workspace = join(h, "workspaces", "a1", "users", "alice")
  mkdirSync(join(workspace, "notes"), { recursive: true })
  writeFileSync(join(workspace, "notes", "diary.txt"), `the ${SECRET} is in the attic`)
  writeFileSync(join(workspace, "HEARTBEAT.md"), "remind alice of the attic")
  mkdirSync(join(h, "workspaces", "a1", "users", "bob"), { recursive: true })
  writeFileSync(join(h, "workspaces", "a1", "users", "bob", "todo.txt"), "bob's list")
  const db = openHomeDb(h)
  db.exec(`INSERT INTO user_identities (platform, external_id, user_id) VALUES ('telegram', '42', 'alice');
    INSERT INTO chat_contexts (agent_id, platform, user_id, chat_id, context) VALUES ('a1', 'telegram', 'alice', 'dm', 'dm');
    INSERT INTO ctx_agent_memory (user_id, agent_id, content, updated_at) VALUES
      ('alice', 'a1', 'keeps the ${SECRET} recipe', 0), ('bob', 'a1', 'likes coffee', 0);
    INSERT INTO diary_entries (id, session_key, agent_id, user_id, from_seq, to_seq, accomplishments, decisions, challenges,
      key_learnings, tags, status, quality_score, source, trigger, created_at) VALUES
      ('d-alice', 'a1:cli:alice:main', 'a1', 'alice', 1, 2, '["kept the ${SECRET} recipe"]', '[]', '[]', '[]', '["cooking"]', 'success', 0.8, 'heuristic', 'idle', 1),
      ('d-bob', 'a1:cli:bob:main', 'a1', 'bob', 1, 2, '["made coffee"]', '[]', '[]', '[]', '["cooking"]', 'success', 0.8, 'heuristic', 'idle', 2);
    INSERT INTO burst_uses (session_key, agent_id, user_id, kind, ref, scope, at) VALUES ('a1:cli:alice:main', 'a1', 'alice', 'skill', 'jam', 'user', 1);
    INSERT INTO skill_stats (agent_id, user_id, name, successes, failures, updated_at) VALUES ('a1', 'alice', 'jam', 3, 0, 1), ('a1', 'bob', 'coffee', 1, 0, 1);
    INSERT INTO rule_votes (scope, rule_id, user_id, vote, personal, at) VALUES ('a1', 'r-shared', 'alice', 'success', 0.5, 1);
    INSERT INTO scheduler_runs (job_id, trigger, started_at, ended_at, status, reply) VALUES
      ('heartbeat:a1:alice', 'heartbeat', 1, 2, 'ok', 'the attic needs airing, alice');
    INSERT INTO model_usage (at, provider_id, model, purpose, session_key, agent_id, user_id, input_tokens, output_tokens) VALUES
      (1, 'p', 'm', 'chat', 'a1:cli:alice:main', 'a1', 'alice', 100, 10), (2, 'p', 'm', 'chat', 'a1:cli:bob:main', 'a1', 'bob', 100, 10)`)
  db.close()
  return { h, token, job, bobsJob, workspace }
}

const count = (h: string, query: string, ...params: Array<string>) => {
  const db = openHomeDb(h, { readOnly: true })
  const r = db.get(query, ...params)
  db.close()
  return Number(r?.["n"])
}
const hashOf = (token: string) => createHash("sha256").update(token, "utf8").digest("hex")
const sessionsOf = async (h: string, user: string) =>
  (await annaJson<Array<{ sessionKey: string }>>(h, "memory", "sessions", "--user", user)).map((s) => s.sessionKey).sort()
const rulesOf = async (h: string) =>
  (await annaJson<Array<{ user: string | null; text: string }>>(h, "playbook", "list", "--agent", "a1")).map((r) => `${r.user ?? "*"}: ${r.text}`).sort()

/** What a new alice (same id, another person) must not see of the old one, through every way in. */
const assertNothingInherited = async (h: string, token: string, workspace: string) => {
  assert.deepStrictEqual(await sessionsOf(h, "alice"), [], "no session of the old alice is the new one's")
  assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "memory", "search", "marmalade", "--user", "alice"), [], "memory search finds nothing of hers")
  assert.deepStrictEqual((await annaJson<Array<Job>>(h, "schedule", "list")).filter((j) => j.userId === "alice"), [], "no job")
  assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "diary", "list", "--user", "alice"), [], "no diary entry")
  assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "user", "token", "list", "alice"), [], "no token listed")
  assert.strictEqual(count(h, "SELECT count(*) AS n FROM user_tokens WHERE token_hash = ?", hashOf(token)), 0, "the old token works for nobody")
  assert.isFalse(existsSync(workspace), "no workspace file")
  assert.notInclude((await rulesOf(h)).join("\n"), "Alice wants metric units", "no rule of hers")
  for (
    const table of ["ctx_agent_memory", "diary_entries", "burst_uses", "skill_stats", "model_usage", "ctx_conversations", "scheduler_jobs", "chat_contexts", "rule_votes", "token_lineage"]
  ) {
    assert.strictEqual(count(h, `SELECT count(*) AS n FROM ${table} WHERE user_id = 'alice'`), 0, `${table} has nothing under alice`)
  }
  assert.strictEqual(count(h, "SELECT count(*) AS n FROM scheduler_runs WHERE job_id = 'heartbeat:a1:alice'"), 0, "no heartbeat history")
  const agent = await annaJson<{ access?: { kind: string; users?: ReadonlyArray<string> } }>(h, "agent", "show", "a1")
  assert.deepStrictEqual(agent.access, { kind: "users", users: ["bob"] }, "the new alice is not in a1's access list")
}

/** bob, who was not removed, keeps everything. */
const assertBobIntact = async (h: string, bobsJob: Job) => {
  assert.deepStrictEqual(await sessionsOf(h, "bob"), ["a1:cli:bob:main"])
  assert.deepStrictEqual((await annaJson<Array<Job>>(h, "schedule", "list")).map((j) => j.id), [bobsJob.id])
  assert.include((await rulesOf(h)).join("\n"), "bob: Bob wants imperial units")
  assert.include((await rulesOf(h)).join("\n"), "*: Answer briefly")
  assert.strictEqual(readFileSync(join(h, "workspaces", "a1", "users", "bob", "todo.txt"), "utf8"), "bob's list")
  for (const table of ["ctx_agent_memory", "diary_entries", "skill_stats", "model_usage"]) {
    assert.strictEqual(count(h, `SELECT count(*) AS n FROM ${table} WHERE user_id = 'bob'`), 1, `${table} keeps bob's`)
  }
}

describe("anna user remove leaves nothing to a later user of the same id", () => {
  it("--keep-sessions: jobs, tokens, rules, workspace and access go; sessions, profile, diary and usage stay under the removed id", { timeout: 120_000 }, async () => {
    const { h, token, job, bobsJob, workspace } = await setUp()
    const r = await annaJson<Report>(h, "user", "remove", "alice", "--keep-sessions")
    assert.match(r.removedAs, /^alice~removed-[0-9a-f]{16}$/)
    assert.deepStrictEqual(
      [r.sessions, r.identities, r.tokens, r.chatStates, r.jobs, r.profiles, r.diaryEntries, r.skillStats, r.usageRecords, r.ruleVotes, r.rules, r.workspaces, r.accessLists],
      ["kept", 1, 1, 1, [job.id], 1, 1, 1, 1, 1, 1, ["a1"], ["a1"]]
    )
    assert.deepStrictEqual([...r.keptSessions].sort(), [`a1:cli:${r.removedAs}:main`, `a1:telegram:${r.removedAs}:dm`])

    await annaJson(h, "user", "add", "alice")
    await assertNothingInherited(h, token, workspace)
    await assertBobIntact(h, bobsJob)

    // What was kept is the operator's to read, under the id no user can take.
    assert.deepStrictEqual(await sessionsOf(h, r.removedAs), [...r.keptSessions].sort())
    const hits = await annaJson<Array<{ sessionKey: string }>>(h, "memory", "search", "marmalade", "--user", r.removedAs)
    assert.deepStrictEqual([...new Set(hits.map((x) => x.sessionKey))].sort(), [...r.keptSessions].sort())
    assert.deepStrictEqual((await annaJson<Array<{ id: string; sessionKey: string }>>(h, "diary", "list", "--user", r.removedAs)).map((e) => [e.id, e.sessionKey]),
      [["d-alice", `a1:cli:${r.removedAs}:main`]])
    assert.strictEqual(count(h, "SELECT count(*) AS n FROM ctx_agent_memory WHERE user_id = ?", r.removedAs), 1)
    assert.strictEqual(count(h, "SELECT count(*) AS n FROM scheduler_runs WHERE job_id = ?", `heartbeat:a1:${r.removedAs}`), 1)
    assert.strictEqual(count(h, "SELECT count(*) AS n FROM rule_votes WHERE user_id = ? AND personal = 0.5", r.removedAs), 1)
    assert.strictEqual(count(h, "SELECT count(*) AS n FROM token_lineage WHERE user_id = ?", r.removedAs), 1, "her revoked token is still known as hers")
    assert.strictEqual(count(h, "SELECT count(*) AS n FROM model_usage WHERE user_id = ? AND session_key = ?", r.removedAs, `a1:cli:${r.removedAs}:main`), 1)
    misused(await anna(h, "user", "add", r.removedAs), "must be 1–64 letters")
    const verify = await anna(h, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stdout + verify.stderr)

    // Removing the new alice keeps her (empty) data apart from the first one's.
    const again = await annaJson<Report>(h, "user", "remove", "alice", "--keep-sessions")
    assert.notStrictEqual(again.removedAs, r.removedAs)
  })

  it("--delete-sessions: the sessions, profile and diary go for good; usage stays under the removed id; the text says what was done", { timeout: 120_000 }, async () => {
    const { h, token, bobsJob, workspace } = await setUp()
    const r = await anna(h, "user", "remove", "alice", "--delete-sessions")
    assert.strictEqual(r.code, 0, r.stderr)
    const out = r.stdout
    for (
      const says of [
        "Removed user alice",
        "1 identity",
        "1 token",
        "1 scheduled job",
        "Deleted 2 sessions",
        "1 playbook rule",
        "workspace of agent a1",
        "access list of agent a1",
        "usage (1 record) and 1 vote on shared rules are kept as alice~removed-"
      ]
    ) assert.include(out, says)
    await annaJson(h, "user", "add", "alice")
    await assertNothingInherited(h, token, workspace)
    await assertBobIntact(h, bobsJob)
    assert.strictEqual(count(h, "SELECT count(*) AS n FROM ctx_conversations WHERE user_id LIKE 'alice~%'"), 0, "deleted, not kept")
    assert.strictEqual(count(h, "SELECT count(*) AS n FROM diary_entries WHERE user_id LIKE 'alice~%'"), 0)
    const verify = await anna(h, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stdout + verify.stderr)
  })

  it("a removal cut short is finished by running it again; meanwhile the id cannot be given to a new user", { timeout: 120_000 }, async () => {
    const { h, token, bobsJob, workspace } = await setUp()
    const playbook = join(h, "workspaces", "a1", "playbook.yaml")
    const good = readFileSync(playbook, "utf8")
    writeFileSync(playbook, `${good}\n  - this: [is not yaml\n`)
    const cut = await anna(h, "user", "remove", "alice", "--keep-sessions")
    assert.strictEqual(cut.code, 1, cut.stdout + cut.stderr)
    assert.include(cut.stderr, "could not be removed from agent a1's playbook")
    assert.include(cut.stderr, "run anna user remove alice again")
    assert.deepStrictEqual((await annaJson<Array<{ id: string }>>(h, "user", "list")).map((u) => u.id), ["bob"], "alice is gone already")
    assert.isFalse(existsSync(workspace), "what could go went: a step that failed does not hold the others back")
    refused(await anna(h, "user", "add", "alice"), "the removal of alice is not finished")
    writeFileSync(playbook, good)
    const finished = await annaJson<Report>(h, "user", "remove", "alice", "--keep-sessions")
    assert.deepStrictEqual([finished.resumed, finished.rules, finished.workspaces, finished.sessions], [true, 1, [], "kept"])
    refused(await anna(h, "user", "remove", "alice", "--keep-sessions"), "no user \"alice\"")
    await annaJson(h, "user", "add", "alice")
    await assertNothingInherited(h, token, workspace)
    await assertBobIntact(h, bobsJob)
  })
})
