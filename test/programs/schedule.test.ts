/**
 * `anna schedule` as an operator runs it: real processes on a fresh ANNA_HOME, --json output,
 * one-line errors for bad input.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import type { Job, Run as JobRun } from "../../src/domain/scheduler/types.ts"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  const lines = r.stderr.trim().split("\n")
  assert.strictEqual(lines.length, 1, r.stderr)
  assert.match(lines[0] ?? "", /^anna: /)
  assert.include(r.stderr, says)
}

/** A usage error: exit 2, the problem on the first line, then the command's usage. */
const misused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 2, r.stdout + r.stderr)
  assert.match(r.stderr.split("\n")[0] ?? "", /^anna: /)
  assert.include(r.stderr.split("\n")[0], says)
  assert.match(r.stderr.split("\n")[1] ?? "", /^usage: anna /)
}

describe("anna schedule", () => {
  it("adds, lists, runs, shows history and removes jobs; refuses bad input with one line", { timeout: 120_000 }, async () => {
    const h = newHome()
    homes.push(h)
    await annaJson(h, "agent", "set", "a1")
    await annaJson(h, "user", "add", "alice")

    const daily = await annaJson<Job>(h, "schedule", "add", "--agent", "a1", "--cron", "0 8 * * *", "--tz", "Europe/Berlin",
      "--prompt", "summarise my open tasks", "--deliver", "alice@telegram")
    assert.deepStrictEqual(
      [daily.agentId, daily.userId, daily.kind, daily.spec, daily.tz, daily.deliverUser, daily.deliverChannel, daily.sessionMode],
      ["a1", "alice", "cron", "0 8 * * *", "Europe/Berlin", "alice", "telegram", "reuse"]
    )
    assert.strictEqual(new Date(daily.nextRunAt ?? 0).toLocaleString("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit" }), "08:00")
    const stored = await annaJson<Job>(h, "schedule", "add", "--agent", "a1", "--every", "2h", "--prompt", "check", "--user", "alice",
      "--session-mode", "new", "--catch-up", "skip")
    assert.deepStrictEqual([stored.deliverUser, stored.sessionMode, stored.catchUp], [null, "new", "skip"])

    const jobs = await annaJson<Array<Job>>(h, "schedule", "list")
    assert.deepStrictEqual(jobs.map((j) => j.id), [daily.id, stored.id])
    const text = await anna(h, "schedule", "list")
    assert.include(text.stdout, "cron 0 8 * * * (Europe/Berlin)")
    assert.include(text.stdout, "alice@telegram")

    const run = await annaJson<{ requested: boolean }>(h, "schedule", "run", daily.id)
    assert.isTrue(run.requested)
    const asked = await annaJson<Array<Job>>(h, "schedule", "list")
    assert.isTrue(asked.find((j) => j.id === daily.id)?.runRequested)
    assert.deepStrictEqual(await annaJson<Array<JobRun>>(h, "schedule", "history", daily.id), [])

    refused(await anna(h, "schedule", "add", "--agent", "nope", "--every", "1h", "--prompt", "x", "--user", "alice"), `no agent "nope"`)
    // Values that cannot be scheduled are usage errors (exit 2); an agent or user that does not exist is refused (exit 1).
    misused(await anna(h, "schedule", "add", "--agent", "a1", "--cron", "0 8 * * *", "--every", "1h", "--prompt", "x", "--user", "alice"),
      "give exactly one of --cron, --every or --at")
    misused(await anna(h, "schedule", "add", "--agent", "a1", "--cron", "0 99 * * *", "--prompt", "x", "--user", "alice"), `bad cron "0 99 * * *"`)
    misused(await anna(h, "schedule", "add", "--agent", "a1", "--cron", "0 0 8 * * *", "--prompt", "x", "--user", "alice"), "use 5")
    misused(await anna(h, "schedule", "add", "--agent", "a1", "--cron", "0 8 * * *", "--tz", "Mars/Base", "--prompt", "x", "--user", "alice"),
      `unknown time zone "Mars/Base"`)
    misused(await anna(h, "schedule", "add", "--agent", "a1", "--at", "2020-01-01T08:00:00Z", "--prompt", "x", "--user", "alice"), "is in the past")
    misused(await anna(h, "schedule", "add", "--agent", "a1", "--every", "1h", "--prompt", "x"), "give --deliver USER[@CHANNEL]")
    refused(await anna(h, "schedule", "add", "--agent", "a1", "--every", "1h", "--prompt", "x", "--deliver", "bob"), `no user "bob"`)
    misused(await anna(h, "schedule", "add", "--agent", "a1", "--every", "1h", "--prompt", "x", "--deliver", "alice@http"), "cannot deliver")
    refused(await anna(h, "schedule", "remove", "job-nope"), `no scheduled job "job-nope"`)
    refused(await anna(h, "schedule", "history", "job-nope"), `no scheduled job "job-nope"`)

    const removed = await annaJson<{ removed: boolean }>(h, "schedule", "remove", stored.id)
    assert.isTrue(removed.removed)
    assert.deepStrictEqual((await annaJson<Array<Job>>(h, "schedule", "list")).map((j) => j.id), [daily.id])
  })
})
