/**
 * The self-improving loop end to end (issue 15), through the real CLI and the fake LLM: a pattern
 * the agent learns in one burst, injected into the next three, fails in each of them; the playbook
 * then proposes its inversion, an operator approves it, and the next turn's system prompt carries it
 * under "Patterns to Avoid" — exactly the text `anna playbook context` prints.
 */
import { assert, describe, it } from "@effect/vitest"
import { annaEnv, newHome } from "../support/cli.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"

const suite = fakeLlmSuite({ reset: false })

/** No Docker engine answers here, whatever the machine has. */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }

interface Body {
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
  readonly tools?: ReadonlyArray<unknown>
}
const body = (r: RecordedRequest | undefined) => (r?.body ?? {}) as Body
const systemOf = (r: RecordedRequest | undefined) => String(body(r).messages?.find((m) => m.role === "system")?.content ?? "")
/** Chat turns offer tools; reflection asks the summary model with none. */
const isReflection = (r: RecordedRequest) => (body(r).tools ?? []).length === 0

const RULE = "Force-push to main when a deploy is rejected"

/** Every reflection says the burst failed, and proposes the same rule (deduplicated after the first). */
const reflection = JSON.stringify({
  accomplishments: ["tried to deploy the app"],
  decisions: ["force-pushed to main"],
  challenges: ["the deploy broke production"],
  key_learnings: ["force-pushing hides the reason a deploy was rejected"],
  tags: ["deploy", "git"],
  status: "failure",
  quality_score: 0.2,
  rules: [{ text: RULE, tags: ["deploy", "git"] }]
})

describe("e2e: the learning loop", () => {
  it("a failing pattern across three bursts becomes an anti-pattern proposal, is approved, and is then injected under Patterns to Avoid", async () => {
    const home = newHome()
    suite.keep(home)
    const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-learning", ...NO_DOCKER }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    suite.fake.respondWith((r) => ({ kind: "reply", parts: [{ type: "text", text: isReflection(r) ? reflection : "Deployed (forced)." }] }))

    const turn = async (text: string) => {
      const before = suite.fake.requests.length
      assert.strictEqual((await cli("chat", "-p", text)).trim(), "Deployed (forced).")
      const chat = suite.fake.requests.slice(before).find((r) => !isReflection(r))
      assert.isDefined(chat, "the turn reached the model")
      return systemOf(chat)
    }
    const sessionKey = async () => {
      const sessions = JSON.parse(await cli("memory", "sessions", "--json")) as Array<{ sessionKey: string; userId: string }>
      assert.lengthOf(sessions, 1)
      return sessions[0] as { sessionKey: string; userId: string }
    }
    const reflect = async (key: string) => {
      const r = JSON.parse(await cli("diary", "reflect", key, "--json")) as { reflected: boolean; entry?: { id: string; status: string } }
      assert.isTrue(r.reflected, JSON.stringify(r))
      return r.entry as { id: string; status: string }
    }

    // Burst 1: nothing learned yet, nothing injected; reflection learns the rule (scoped to this user).
    assert.notInclude(await turn("please deploy the app"), "## Relevant Guidelines")
    const { sessionKey: key, userId } = await sessionKey()
    assert.strictEqual((await reflect(key)).status, "failure")
    const learned = JSON.parse(await cli("playbook", "list", "--agent", "default", "--json")) as Array<{ id: string; text: string; user?: string }>
    assert.lengthOf(learned, 1)
    const rule = learned[0] as { id: string; text: string; user?: string }
    assert.strictEqual(rule.text, RULE)

    // Bursts 2–4: the rule is injected (the message says "deploy"), and each burst fails.
    const confidences: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const system = await turn(`deploy again, attempt ${i + 2}`)
      assert.include(system, "## Relevant Guidelines")
      const line = system.split("\n").find((l) => l.includes(RULE)) ?? ""
      assert.match(line, /^1\. \[NASCENT\] Force-push to main when a deploy is rejected \(confidence: \d\.\d\d\)$/)
      confidences.push(line.replace(/.*confidence: /, "").replace(")", ""))
      await reflect(key)
    }
    // −0.20 per failure from 0.50: 0.50, 0.30, 0.10 when injected; then 0.00 after the third failure.
    assert.deepStrictEqual(confidences, ["0.50", "0.30", "0.10"])

    // The operator reviews: one inversion proposal, worded as the design says; approves it.
    const proposals = JSON.parse(await cli("playbook", "review", "--agent", "default", "--json")) as Array<Record<string, unknown>>
    assert.lengthOf(proposals, 1)
    const avoid = `AVOID: ${RULE} -- this pattern has caused repeated issues (3 failures vs 0 successes).`
    assert.include(JSON.stringify(proposals[0]), avoid)
    await cli("playbook", "apply", rule.id, "--agent", "default")

    // The next turn carries it under "Patterns to Avoid", exactly as `anna playbook context` prints it.
    const system = await turn("deploy once more")
    assert.include(system, "## Patterns to Avoid")
    assert.include(system, `1. ${avoid} (confidence: 0.50)`)
    assert.notInclude(system, "## Relevant Guidelines", "the deprecated original (0.00) is not injected")
    const context = await cli("playbook", "context", "--tags", "deploy", "--agent", "default", "--user", userId)
    assert.include(system, context.trimEnd())
    assert.include(context, "These patterns have caused problems in similar past work:")
    // Another user does not get a rule learned from this user's conversations.
    assert.strictEqual((await cli("playbook", "context", "--tags", "deploy,git", "--agent", "default", "--user", "someone-else")).trim(), "")
  }, 180_000)
})
