/**
 * `/agent` switches one chat, not the user's default everywhere (issue 24, item 5): typed in a
 * terminal chat it changes that chat (its later turns, an `anna chat -p` of the same session), while
 * other sessions keep the user's default; `/agent ID --default` changes the default. `anna chat -p`
 * says which agent answered (stderr, or `agent` with --json). Real processes, a pty, the fake LLM.
 */
import { assert, describe, it } from "@effect/vitest"
import { annaEnv, newHome } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { ptyAnna } from "../support/pty.ts"

const suite = fakeLlmSuite({ reset: false })
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }

const onboarded = async () => {
  const home = suite.keep(newHome())
  const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-agent-switch", ...NO_DOCKER }
  const cli = async (...args: Array<string>) => {
    const r = await annaEnv(home, env, ...args)
    assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
    return r
  }
  await cli("onboard", "--from-env")
  await cli("agent", "set", "helper", "--model", "openai/fake-large")
  suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Hi." }] }))
  return { home, env, cli }
}

/** The agent `anna chat -p` says answered: `agent: ID` on stderr, and `agent` in --json. */
const answeredBy = async (cli: (...args: Array<string>) => Promise<{ stdout: string; stderr: string }>, ...args: Array<string>) => {
  const text = await cli("chat", "-p", "hello", ...args)
  const line = text.stderr.split("\n").find((l) => l.startsWith("agent: "))
  const json = JSON.parse((await cli("chat", "-p", "hello", ...args, "--json")).stdout) as { agent?: string }
  assert.strictEqual(line?.slice("agent: ".length), json.agent, text.stderr)
  return json.agent
}

describe("e2e: /agent switches a chat, --default the default", () => {
  it("a switch typed in a terminal chat stays in that chat; anna chat -p says which agent answered", async () => {
    const { home, env, cli } = await onboarded()
    const chat = ptyAnna(home, ["chat", "--session", "side"], env)
    await chat.screen("> ")
    chat.type("/agent helper\r")
    await chat.screen("You are now talking to helper in this chat")
    chat.type("/exit\r")
    assert.strictEqual((await chat.done).code, 0, chat.output())

    // Not the user's default: other chats still go to it.
    assert.strictEqual(await answeredBy(cli), "default")
    assert.strictEqual(await answeredBy(cli, "--session", "other"), "default")
    // That chat keeps its switch.
    assert.strictEqual(await answeredBy(cli, "--session", "side"), "helper")

    // Asked for, it becomes the default.
    const made = await cli("chat", "-p", "/agent helper --default", "--session", "other")
    assert.include(made.stdout, "helper is now your default agent")
    assert.strictEqual(await answeredBy(cli), "helper")
    assert.strictEqual(await answeredBy(cli, "--session", "new-one"), "helper")
  }, 180_000)
})
