/**
 * `anna playbook` as an operator runs it: real processes on a fresh ANNA_HOME. A hand-edited file
 * with a typo is reported with its line and left alone; add → list → context prints exactly the
 * injected text; a rule that failed three times is proposed for inversion, approved, and shows
 * under "Patterns to Avoid"; user-scoped rules stay out of other users' context until promoted.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
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

interface RuleJson {
  readonly id: string
  readonly source: string
  readonly user: string | null
  readonly text: string
  readonly confidence: number
  readonly confidenceNow: number
  readonly maturity: string
  readonly failureCount: number
  readonly antiPattern: boolean
  readonly tags: ReadonlyArray<string>
}
interface ContextJson {
  readonly text: string
  readonly tokens: number
  readonly chosen: ReadonlyArray<string>
  readonly considered: ReadonlyArray<{ readonly id: string; readonly chosen: boolean; readonly why: string; readonly score: number }>
}

const GUIDELINES = "## Relevant Guidelines\n\nThe following rules are based on past experience with similar tasks:\n\n"
const AVOID = "## Patterns to Avoid\n\nThese patterns have caused problems in similar past work:\n\n"

describe("anna playbook", () => {
  it("a hand-edited file with a typo is reported with its line and never overwritten", { timeout: 120_000 }, async () => {
    const h = newHome()
    homes.push(h)
    const path = join(h, "playbook.yaml")
    const text = "rules:\n  - id: pin-tags\n    text: Pin image tags\n    tags: [docker]\n    confidense: 0.9\n    created_at: 2026-01-01\n"
    writeFileSync(path, text)
    refused(await anna(h, "playbook", "list"), `${path}:5: unknown field "confidense"`)
    refused(await anna(h, "playbook", "add", "--text", "Another rule", "--tags", "docker"), `${path}:5: unknown field "confidense"`)
    refused(await anna(h, "playbook", "sweep"), `${path}:5:`)
    assert.strictEqual(readFileSync(path, "utf8"), text)
    writeFileSync(path, text.replace("confidense", "confidence"))
    const rules = await annaJson<Array<RuleJson>>(h, "playbook", "list")
    assert.deepStrictEqual(rules.map((r) => [r.id, r.confidence, r.source, r.user]), [["pin-tags", 0.9, "global", null]])
  })

  it("add, list, show and context print exactly what would be injected; user-scoped rules wait for promote", { timeout: 120_000 }, async () => {
    const h = newHome()
    homes.push(h)
    await annaJson(h, "agent", "set", "a1")
    await annaJson(h, "user", "add", "alice")
    await annaJson(h, "user", "add", "bob")

    const global = await annaJson<RuleJson & { created: boolean }>(h, "playbook", "add", "--text", "Pin image tags", "--tags", "docker")
    assert.isTrue(global.created)
    const merged = await annaJson<RuleJson & { created: boolean }>(h, "playbook", "add", "--text", "pin image tags.", "--tags", "CI")
    assert.deepStrictEqual([merged.created, merged.id, merged.tags], [false, global.id, ["docker", "ci"]])
    const own = await annaJson<RuleJson>(h, "playbook", "add", "--agent", "a1", "--user", "alice", "--text", "Alice wants compose files", "--tags", "docker")
    assert.deepStrictEqual([own.source, own.user], ["agent", "alice"])

    const list = await annaJson<Array<RuleJson>>(h, "playbook", "list", "--agent", "a1")
    assert.deepStrictEqual(list.map((r) => [r.id, r.source, r.user]), [[own.id, "agent", "alice"], [global.id, "global", null]])
    assert.deepStrictEqual((await annaJson<Array<RuleJson>>(h, "playbook", "list", "--agent", "a1", "--user", "bob")).map((r) => r.id), [global.id])
    assert.deepStrictEqual((await annaJson<Array<RuleJson>>(h, "playbook", "list", "--tag", "CI")).map((r) => r.id), [global.id])
    const table = await anna(h, "playbook", "list", "--agent", "a1")
    assert.include(table.stdout, "Alice wants compose files")
    assert.match(table.stdout, /alice\s+nascent\s+0\.50\s+0\.50\s+0\/0/)
    const shown = await anna(h, "playbook", "show", own.id, "--agent", "a1")
    assert.include(shown.stdout, join(h, "workspaces", "a1", "playbook.yaml"))
    assert.include(shown.stdout, "user alice only")

    // Alice's rule matches its one tag (score 0.5), the global one half of its two (0.25).
    const forAlice = await anna(h, "playbook", "context", "--tags", "docker", "--agent", "a1", "--user", "alice")
    assert.strictEqual(forAlice.code, 0, forAlice.stderr)
    assert.strictEqual(forAlice.stdout, `${GUIDELINES}1. [NASCENT] Alice wants compose files (confidence: 0.50)\n2. [NASCENT] Pin image tags (confidence: 0.50)`)
    const forBob = await annaJson<ContextJson>(h, "playbook", "context", "--tags", "docker,ci", "--agent", "a1", "--user", "bob")
    assert.deepStrictEqual(forBob.chosen, [global.id])
    assert.deepStrictEqual(forBob.considered.map((c) => [c.id, c.chosen, c.why]), [[global.id, true, "chosen"], [own.id, false, "scoped to another user"]])
    assert.strictEqual(forBob.text, `${GUIDELINES}1. [NASCENT] Pin image tags (confidence: 0.50)`)
    const nothing = await anna(h, "playbook", "context", "--tags", "python", "--agent", "a1")
    assert.deepStrictEqual([nothing.code, nothing.stdout], [0, ""])
    const low = await annaJson<ContextJson>(h, "playbook", "context", "--tags", "ci", "--agent", "a1")
    assert.deepStrictEqual(low.considered.map((c) => [c.score, c.why]), [[0.25, "chosen"], [0, "scoped to another user"]])

    const promoted = await annaJson<{ id: string }>(h, "playbook", "promote", own.id, "--agent", "a1")
    assert.strictEqual(promoted.id, own.id)
    assert.deepStrictEqual((await annaJson<ContextJson>(h, "playbook", "context", "--tags", "docker", "--agent", "a1", "--user", "bob")).chosen.length, 2)
    await annaJson(h, "playbook", "promote", own.id, "--agent", "a1", "--global")
    assert.deepStrictEqual((await annaJson<Array<RuleJson>>(h, "playbook", "list")).map((r) => r.id).sort(), [global.id, own.id].sort())
    assert.deepStrictEqual(await annaJson(h, "playbook", "remove", own.id), { id: own.id, removed: true })
    assert.deepStrictEqual((await annaJson<Array<RuleJson>>(h, "playbook", "list", "--agent", "a1")).map((r) => r.id), [global.id])

    refused(await anna(h, "playbook", "list", "--agent", "nope"), `no agent "nope"`)
    refused(await anna(h, "playbook", "context", "--tags", "docker"), "give --agent")
    refused(await anna(h, "playbook", "add", "--text", "x", "--tags", "docker", "--user", "carol"), `no user "carol"`)
    refused(await anna(h, "playbook", "add", "--text", "", "--tags", "docker"), "rule refused: the text is empty")
    refused(await anna(h, "playbook", "show", "rule_nope"), `no playbook rule "rule_nope"`)
    refused(await anna(h, "playbook", "remove", global.id, "--agent", "a1"), `no playbook rule "${global.id}" in agent a1's playbook`)
  })

  it("anna playbook feedback: the operator's word applies to every user at once; show counts users' feedback that is not yet", { timeout: 120_000 }, async () => {
    const h = newHome()
    homes.push(h)
    await annaJson(h, "agent", "set", "a1")
    const rule = await annaJson<RuleJson>(h, "playbook", "add", "--agent", "a1", "--text", "Deploy with the blue-green script", "--tags", "deploy")
    const bad = await annaJson<RuleJson & { outcome: string }>(h, "playbook", "feedback", rule.id, "bad", "--agent", "a1")
    assert.deepStrictEqual([bad.id, bad.outcome, bad.confidence, bad.failureCount], [rule.id, "failure", 0.3, 1])
    const ctx = await anna(h, "playbook", "context", "--tags", "deploy", "--agent", "a1", "--user", "anyone")
    assert.strictEqual(ctx.stdout, `${GUIDELINES}1. [NASCENT] Deploy with the blue-green script (confidence: 0.30)`)
    const good = await anna(h, "playbook", "feedback", rule.id, "good", "--agent", "a1")
    assert.strictEqual(good.stdout.trim(), `${rule.id}: success recorded for every user; confidence now 0.35 (1 success, 1 failure).`)
    const shown = await anna(h, "playbook", "show", rule.id, "--agent", "a1")
    assert.match(shown.stdout, /users' feedback\s+none yet/)
    misused(await anna(h, "playbook", "feedback", rule.id, "meh", "--agent", "a1"), "good or bad")
    refused(await anna(h, "playbook", "feedback", "rule_nope", "bad", "--agent", "a1"), `no playbook rule "rule_nope"`)
  })

  it("a rule that failed three times is proposed for inversion, approved, and then injected as a pattern to avoid", { timeout: 120_000 }, async () => {
    const h = newHome()
    homes.push(h)
    await annaJson(h, "agent", "set", "a1")
    const folder = join(h, "workspaces", "a1")
    mkdirSync(folder, { recursive: true })
    const now = new Date().toISOString()
    writeFileSync(join(folder, "playbook.yaml"), [
      "rules:",
      "  - id: latest-tags",
      "    text: Use the latest tag of base images",
      "    confidence: 0.6",
      "    failure_count: 3",
      "    tags: [docker]",
      `    created_at: ${now}`,
      `    last_applied_at: ${now}`,
      "  - id: fine",
      "    text: Keep Dockerfiles short",
      "    success_count: 1",
      "    failure_count: 1",
      "    tags: [docker]",
      `    created_at: ${now}`,
      ""
    ].join("\n"))
    const proposals = await annaJson<Array<{ id: string; failures: number; successes: number; text: string; inverted: { id: string; text: string } }>>(
      h, "playbook", "review", "--agent", "a1"
    )
    const avoid = "AVOID: Use the latest tag of base images -- this pattern has caused repeated issues (3 failures vs 0 successes)."
    assert.deepStrictEqual(proposals, [{ id: "latest-tags", failures: 3, successes: 0, text: "Use the latest tag of base images", inverted: { id: "latest-tags-avoid", text: avoid } }])
    const review = await anna(h, "playbook", "review", "--agent", "a1")
    assert.include(review.stdout, "latest-tags: 3 failures vs 0 successes")
    assert.include(review.stdout, `proposed: ${avoid}`)
    refused(await anna(h, "playbook", "apply", "fine", "--agent", "a1"), `no playbook rule "fine"`)
    refused(await anna(h, "playbook", "apply", "latest-tags"), `no playbook rule "latest-tags"`)

    const applied = await annaJson<Array<{ id: string; inverted: string }>>(h, "playbook", "apply", "latest-tags", "--agent", "a1")
    assert.deepStrictEqual(applied.map((a) => [a.id, a.inverted]), [["latest-tags", "latest-tags-avoid"]])
    const rules = await annaJson<Array<RuleJson>>(h, "playbook", "list", "--agent", "a1")
    assert.deepStrictEqual(rules.map((r) => [r.id, r.confidence, r.antiPattern]), [["latest-tags", 0, false], ["fine", 0.5, false], ["latest-tags-avoid", 0.5, true]])
    assert.deepStrictEqual(await annaJson(h, "playbook", "review", "--agent", "a1"), [])

    const ctx = await anna(h, "playbook", "context", "--tags", "docker", "--agent", "a1")
    assert.strictEqual(ctx.stdout, `${GUIDELINES}1. [NASCENT] Keep Dockerfiles short (confidence: 0.50)\n\n${AVOID}1. ${avoid} (confidence: 0.50)`)
    const why = await annaJson<ContextJson>(h, "playbook", "context", "--tags", "docker", "--agent", "a1")
    assert.deepStrictEqual(why.considered.map((c) => [c.id, c.why]), [["latest-tags-avoid", "chosen"], ["fine", "chosen"], ["latest-tags", "score below 0.05"]])
    assert.isAbove(why.tokens, 0)

    const swept = await annaJson<{ promoted: number; demoted: number; flagged: number; demotionCandidates: Array<string> }>(h, "playbook", "sweep", "--agent", "a1")
    assert.deepStrictEqual([swept.promoted, swept.demoted, swept.flagged, swept.demotionCandidates], [0, 0, 1, ["latest-tags"]])
    const sweptText = await anna(h, "playbook", "sweep", "--agent", "a1")
    assert.include(sweptText.stdout, "Swept agent a1's playbook: 0 promoted, 0 demoted, 1 flagged.")
    assert.include(sweptText.stdout, "Demotion candidates (confidence now < 0.2): latest-tags")
  })
})
