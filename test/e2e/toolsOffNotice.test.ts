/**
 * Tools off for want of a sandbox, as end users and the operator meet it (issue 24, item 10): the
 * end user gets one short neutral line once per conversation — across `anna chat -p` processes and
 * in an HTTP client's answer — while the operator's fix goes to a WARN log line (and `anna doctor`).
 * Real processes, the fake LLM server, no Docker engine reachable.
 */
import { assert, describe, it } from "@effect/vitest"
import { annaEnv, finish, newHome, start, waitForOutput } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"

const suite = fakeLlmSuite({ reset: false })

/** No Docker engine answers here, whatever the machine has. */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const NEUTRAL = "Tools are unavailable right now; the operator has been told."
/** Words of the operator's instructions that an end user must not be shown. */
const OPERATOR_WORDS = ["Docker", "docker", "anna doctor", "anna sandbox", "apt-get", "busybox"]

const onboarded = async () => {
  const home = suite.keep(newHome())
  const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-tools-off", ...NO_DOCKER }
  const cli = async (...args: Array<string>) => {
    const r = await annaEnv(home, env, ...args)
    assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
    return r
  }
  await cli("onboard", "--from-env")
  suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Hello there." }] }))
  return { home, env, cli }
}

describe("e2e: tools off, told once and neutrally", () => {
  it("anna chat -p tells the user once per conversation, not on every run; the fix goes to the log", async () => {
    const { home, env, cli } = await onboarded()
    const first = await cli("chat", "-p", "hello", "--json")
    const notices = (JSON.parse(first.stdout) as { notices: Array<string> }).notices
    assert.deepStrictEqual(notices, [NEUTRAL])
    assert.match(first.stderr, /WARN .*Docker is not reachable.*anna doctor/, "the operator's fix is in the log")
    for (const run of [await cli("chat", "-p", "hello again", "--json"), await cli("chat", "-p", "and again")]) {
      assert.notInclude(run.stdout + run.stderr, NEUTRAL, "told once per conversation, not once per process")
    }
    const other = await cli("chat", "-p", "hi", "--session", "other", "--json")
    assert.deepStrictEqual((JSON.parse(other.stdout) as { notices: Array<string> }).notices, [NEUTRAL], "another conversation is told")
    // anna doctor says what to fix.
    const doctor = await annaEnv(home, env, "doctor", "--json")
    const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ area: string; name: string; ok: boolean; fix?: string }> }).checks
    assert.deepInclude(checks.find((c) => c.area === "sandbox" && c.name === "docker"), { ok: false })
    assert.include(checks.find((c) => c.name === "docker")?.fix, "start the Docker daemon")
  }, 120_000)

  it("an HTTP client's answer carries only the neutral line, once; the gateway's log has the fix", async () => {
    const { home, env, cli } = await onboarded()
    await cli("user", "add", "hana")
    const token = (await cli("user", "token", "hana")).stdout.trim()
    const child = start(home, ["gateway", "--port", "0"], "warn", { ...env, ANNA_LOG_LEVEL: "info" })
    let log = ""
    child.stderr?.on("data", (d: Buffer) => (log += d.toString()))
    const done = finish(child)
    await waitForOutput(child, "press Ctrl+C")
    const url = /HTTP channel \(OpenAI-compatible\) on (\S+);/.exec(log)?.[1]
    const ask = async (content: string) => {
      const r = await fetch(`${url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-anna-session": "tools-off" },
        body: JSON.stringify({ model: "default", messages: [{ role: "user", content }] })
      })
      assert.strictEqual(r.status, 200)
      return ((await r.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content ?? ""
    }
    try {
      const first = await ask("hello")
      assert.isTrue(first.startsWith(`[${NEUTRAL}]`), first)
      for (const w of OPERATOR_WORDS) assert.notInclude(first, w)
      assert.include(first, "Hello there.")
      const second = await ask("hello again")
      assert.notInclude(second, NEUTRAL)
      assert.match(log, /WARN .*Docker is not reachable.*anna doctor/)
    } finally {
      child.kill("SIGTERM")
      await done
    }
  }, 120_000)
})
