/**
 * Onboarding: the default model it offers, and the interactive wizard driven through a real
 * pseudo-terminal (util-linux `script` runs the CLI on a pty; the test types keystrokes and waits
 * for each prompt to appear in the output, never for a fixed time) against the fake LLM server, so
 * the model list is that server's. Without a terminal, `anna onboard` explains and exits 2.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { rmSync } from "node:fs"
import { afterAll, beforeAll } from "vitest"
import type { Agent } from "../../src/domain/config/agent.ts"
import type { ProviderConfig } from "../../src/domain/model/types.ts"
import { pickModel } from "../../src/programs/onboard.ts"
import { anna, annaJson, MAIN, newHome } from "../support/cli.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { childEnv } from "../support/spawnAnna.ts"

const models = (...ids: Array<string>) => ids.map((id) => ({ id }))

describe("onboarding's default model", () => {
  it("prefers a Sonnet for Anthropic, a small GPT on OpenAI's endpoint, and what the server lists first elsewhere", () => {
    assert.strictEqual(pickModel("anthropic", models("claude-opus-4", "claude-sonnet-4-5", "claude-haiku"), true), "claude-sonnet-4-5")
    assert.strictEqual(pickModel("anthropic", models("claude-haiku"), true), "claude-haiku")
    assert.strictEqual(pickModel("openai", models("o3", "gpt-4o", "gpt-4.1-mini"), true), "gpt-4.1-mini")
    assert.strictEqual(pickModel("openai", models("o3", "gpt-5"), true), "gpt-5")
    assert.strictEqual(pickModel("openai", models("llama3.1:8b", "qwen2.5"), false), "llama3.1:8b")
    assert.isUndefined(pickModel("openai", [], false))
  })
})

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

const KEY = "sk-wizard-0123456789abcdef"
const KEYS = { enter: "\r", down: "\u001b[B", ctrlC: "\u0003" }

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

/** `anna onboard` on a pseudo-terminal: type keystrokes, wait for text, collect the exit code. */
const onTerminal = (h: string, env: Readonly<Record<string, string>> = {}) => {
  const base: Record<string, string | undefined> = { ...process.env }
  for (const v of ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"]) delete base[v]
  const child: ChildProcessWithoutNullStreams = spawn(
    "script",
    // `stty raw -echo`: keys typed before a prompt has switched the terminal to raw mode itself reach
    // it unchanged (no line editing, no echo by the terminal), so the test never races the prompt and
    // the output shows only what anna printed.
    ["-q", "-e", "-c", `stty raw -echo; exec ${quote(process.execPath)} ${quote(MAIN)} onboard`, "/dev/null"],
    { env: { ...base, ...childEnv(h, env), ANNA_LOG_LEVEL: "warn", NO_COLOR: "1", TERM: "xterm", ...env } }
  )
  let output = ""
  let cursor = 0
  let exited: number | null | undefined
  const listeners = new Set<() => void>()
  const changed = () => {
    for (const l of [...listeners]) l()
  }
  child.stdout.on("data", (d: Buffer) => {
    output += d.toString()
    changed()
  })
  child.stderr.on("data", (d: Buffer) => {
    output += d.toString()
    changed()
  })
  const closed = new Promise<number | null>((done) =>
    child.on("close", (code) => {
      exited = code
      changed()
      done(code)
    })
  )
  /** Resolves once `text` appears after what earlier waits matched; rejects if the CLI exits first. */
  const waitFor = (text: string) =>
    new Promise<void>((done, fail) => {
      const check = () => {
        const at = output.indexOf(text, cursor)
        if (at >= 0) {
          cursor = at + text.length
          listeners.delete(check)
          done()
        } else if (exited !== undefined) {
          listeners.delete(check)
          fail(new Error(`anna onboard exited (${exited}) before writing "${text}"; its output:\n${output}`))
        }
      }
      listeners.add(check)
      check()
    })
  const type = (keys: string) => {
    child.stdin.write(keys)
  }
  /** Waits for a prompt, then answers it. */
  const answer = async (prompt: string, keys: string) => {
    await waitFor(prompt)
    type(keys)
  }
  const exit = async () => {
    const code = await closed
    return { code, output }
  }
  return { waitFor, type, answer, exit }
}

describe("anna onboard on a terminal (wizard)", () => {
  it("asks type, base URL, id and key, offers the server's models, creates the provider and agent default; never prints the key", async () => {
    fake.models = ["fake-large", "fake-small"]
    const h = home()
    const t = onTerminal(h)
    await t.answer("Provider type", KEYS.down + KEYS.enter) // anthropic → openai
    await t.answer("Base URL", fake.openAiUrl + KEYS.enter)
    await t.answer("Provider id", KEYS.enter) // the suggested "openai"
    await t.answer("API key", KEYS.enter) // "type it"
    await t.answer("API key (hidden)", KEY + KEYS.enter)
    await t.waitFor("Model (2 listed")
    await t.waitFor("fake-small")
    t.type("small")
    await t.answer("[filter: small]", KEYS.enter)
    await t.answer("Create provider openai", KEYS.enter)
    const r = await t.exit()
    assert.strictEqual(r.code, 0, r.output)
    assert.include(r.output, "Created provider openai (openai,")
    assert.include(r.output, "Created agent default on openai/fake-small.")
    assert.include(r.output, "Next: anna chat")
    assert.notInclude(r.output, KEY, "the key was printed")
    assert.include(r.output, "sk-…cdef")

    const providers = await annaJson<Array<ProviderConfig>>(h, "provider", "list")
    assert.deepStrictEqual(providers.map((p) => [p.id, p.type, p.baseUrl, p.defaultModel, p.enabled]), [
      ["openai", "openai", fake.openAiUrl, "fake-small", true]
    ])
    const agents = await annaJson<Array<Agent>>(h, "agent", "list")
    assert.deepStrictEqual(agents.map((a) => [a.id, a.providerId, a.model, a.enabled]), [["default", "openai", "fake-small", true]])
    // The key stored is the one typed: the agent answers through the fake server with it.
    fake.script({ kind: "reply", parts: [{ type: "text", text: "hello from the wizard's agent" }] })
    const chat = await anna(h, "chat", "-p", "hi")
    assert.strictEqual(chat.code, 0, chat.stderr)
    assert.include(chat.stdout, "hello from the wizard's agent")
    const last = fake.requests.at(-1)
    assert.strictEqual(last?.headers["authorization"], `Bearer ${KEY}`)
  })

  it("reads the key from an environment variable and lets the model be typed when the server cannot list models", async () => {
    const h = home()
    const t = onTerminal(h, { MY_WIZARD_KEY: KEY })
    await t.answer("Provider type", KEYS.enter) // anthropic
    // Nothing listens on port 1: listing fails, and the wizard says why.
    await t.answer("Base URL", "http://127.0.0.1:1" + KEYS.enter)
    await t.answer("Provider id", KEYS.enter)
    await t.answer("API key", KEYS.down + KEYS.enter) // "read it from an environment variable"
    await t.answer("Environment variable", "\u007f".repeat(40) + "MY_WIZARD_KEY" + KEYS.enter)
    await t.waitFor("could not be listed (")
    await t.answer("Model id", "claude-local" + KEYS.enter)
    await t.answer("Create provider anthropic", KEYS.enter)
    const r = await t.exit()
    assert.strictEqual(r.code, 0, r.output)
    assert.notInclude(r.output, KEY)
    const providers = await annaJson<Array<ProviderConfig>>(h, "provider", "list")
    assert.deepStrictEqual(providers.map((p) => [p.id, p.type, p.defaultModel, p.apiKey]), [["anthropic", "anthropic", "claude-local", "sk-…cdef"]])
    const agents = await annaJson<Array<Agent>>(h, "agent", "list")
    assert.deepStrictEqual(agents.map((a) => [a.id, a.providerId, a.model, a.enabled]), [["default", "anthropic", "claude-local", true]])
  })

  it("Ctrl-C leaves without creating anything (exit 130)", async () => {
    fake.models = ["fake-large", "fake-small"]
    const h = home()
    const t = onTerminal(h)
    await t.answer("Provider type", KEYS.down + KEYS.enter)
    await t.answer("Base URL", fake.openAiUrl + KEYS.enter)
    await t.answer("Provider id", KEYS.enter)
    await t.answer("API key", KEYS.enter)
    await t.answer("API key (hidden)", KEY + KEYS.enter)
    await t.answer("Model (2 listed", KEYS.ctrlC)
    const r = await t.exit()
    assert.strictEqual(r.code, 130, r.output)
    assert.include(r.output, "onboarding cancelled; nothing was created")
    assert.notInclude(r.output, KEY)
    assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "provider", "list"), [])
    assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "agent", "list"), [])
  })

  it("without a terminal, explains in one line what to do instead and exits 2 (nothing created)", async () => {
    const h = home()
    const r = await anna(h, "onboard")
    assert.strictEqual(r.code, 2, r.stdout + r.stderr)
    assert.strictEqual(r.stdout, "")
    const lines = r.stderr.trim().split("\n")
    assert.strictEqual(lines.length, 1, r.stderr)
    assert.match(lines[0] ?? "", /^anna: onboard asks its questions on a terminal/)
    assert.include(r.stderr, "anna onboard --from-env")
    assert.deepStrictEqual(await annaJson<Array<unknown>>(h, "provider", "list"), [])
  })
})
