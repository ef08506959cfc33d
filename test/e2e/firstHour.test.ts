/**
 * The first hour with anna, as a newcomer meets it, through the real CLI (spawned processes; a pty for
 * the terminal chat): an agent without a sandbox still says hello; slash commands act at once inside
 * a running `anna chat`; Ctrl-D as a reply ends never crashes it; `npm start` stops cleanly on signals.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { join, resolve } from "node:path"
import { annaEnv, finish, newHome, start } from "../support/cli.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { ptyAnna } from "../support/pty.ts"
import { childEnv } from "../support/spawnAnna.ts"

const suite = fakeLlmSuite({ reset: false })

/** No Docker engine answers here, whatever the machine has. */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }

interface Body {
  readonly model?: string
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
  readonly tools?: ReadonlyArray<{ readonly function: { readonly name: string } }>
}
const body = (r: RecordedRequest | undefined) => (r?.body ?? {}) as Body
const lastUser = (b: Body) => [...(b.messages ?? [])].reverse().find((m) => m.role === "user")?.content

/** Answers "echo: <the user's last message> (<model>)". */
const echo = () => suite.fake.respondWith((r) => ({ kind: "reply", parts: [{ type: "text", text: `echo: ${String(lastUser(body(r)))} (${body(r).model})` }] }))

const onboarded = async () => {
  const home = newHome()
  suite.keep(home)
  const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-first-hour", ...NO_DOCKER }
  const cli = async (...args: Array<string>) => {
    const r = await annaEnv(home, env, ...args)
    assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
    return r
  }
  await cli("onboard", "--from-env")
  return { home, env, cli }
}

describe("e2e: the first hour", () => {
  it("an agent without Docker still says hello, without its workspace tools; the user is told once, the operator why (the log)", async () => {
    const { cli } = await onboarded()
    echo()
    const before = suite.fake.requests.length
    const r = await cli("chat", "-p", "just say hello")
    assert.strictEqual(r.stdout.trim(), "echo: just say hello (fake-large)")
    assert.include(r.stderr, "Tools are unavailable right now; the operator has been told.")
    // The operator (here the same person) reads why and the fix in the log.
    assert.match(r.stderr, /WARN .*Docker is not reachable.*anna doctor/)
    // The tools that need no sandbox stay (the scheduler and webfetch run outside it).
    assert.deepStrictEqual((body(suite.fake.requests[before]).tools ?? []).map((t) => t.function.name), ["memory", "scheduler", "webfetch", "playbook", "agent"])
  }, 60_000)

  it("slash commands act at once in a running anna chat: /model, /new, /agent", async () => {
    const { home, env, cli } = await onboarded()
    await cli("agent", "set", "default", "--allowed-models", "fake-small")
    await cli("agent", "set", "helper", "--model", "openai/fake-large")
    echo()
    const chat = ptyAnna(home, ["chat"], env)
    await chat.screen("> ")
    chat.type("first\r")
    await chat.screen("echo: first (fake-large)")
    chat.type("/model fake-small\r")
    await chat.screen("now uses fake-small")
    chat.type("second\r")
    await chat.screen("echo: second (fake-small)")
    chat.type("/new\r")
    await chat.screen("Started a new conversation")
    const before = suite.fake.requests.length
    chat.type("third\r")
    await chat.screen("echo: third")
    // /new also ended the old conversation's burst: its reflection (a request without tools) may come first.
    const turn = suite.fake.requests.slice(before).find((r) => (body(r).tools ?? []).length > 0)
    assert.deepStrictEqual((body(turn).messages ?? []).filter((m) => m.role !== "system").map((m) => m.content), ["third"], "a fresh conversation")
    chat.type("/agent helper\r")
    await chat.screen("You are now talking to helper")
    chat.type("/whoami\r")
    await chat.screen("agent: helper")
    chat.type("/exit\r")
    const done = await chat.done
    assert.strictEqual(done.code, 0, chat.output())
    assert.notInclude(chat.output(), "internal error")
  }, 60_000)

  it("Ctrl-D typed as a reply streams or just as it ends closes the chat cleanly, every time", async () => {
    const { home, env } = await onboarded()
    for (let round = 0; round < 4; round++) {
      // A reply streamed in many small pieces; Ctrl-D goes in as soon as its last piece shows, while the
      // turn is ending (rounds alternate with Ctrl-D at its first piece, mid-stream).
      suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: `piece ${"of the answer ".repeat(60)}done.` }], chunk: 4 }))
      const chat = ptyAnna(home, ["chat"], env)
      await chat.screen("> ")
      chat.type("tell me\r")
      await chat.screen(round % 2 === 0 ? "done." : "piece")
      chat.type("\x04")
      const done = await chat.done
      assert.strictEqual(done.code, 0, chat.output())
      assert.notInclude(chat.output(), "internal error")
    }
  }, 90_000)
})

describe("e2e: npm start", () => {
  const ROOT = resolve(import.meta.dirname, "../..")

  /** A port nothing listens on right now. */
  const freePort = () =>
    new Promise<number>((done, fail) => {
      const server = createServer()
      server.on("error", fail)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        server.close(() => done(typeof address === "object" && address !== null ? address.port : 0))
      })
    })

  const reachable = (port: number) =>
    new Promise<boolean>((done) => {
      fetch(`http://127.0.0.1:${port}/health`).then(() => done(true), () => done(false))
    })

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} to npm start stops the gateway cleanly: exit 0, nothing left running`, async () => {
      const home = newHome()
      suite.keep(home)
      const port = await freePort()
      // npm on PATH runs the package's start script (its prestart builds dist/ first).
      const npm = spawn("npm", ["start", "--silent", "--", "gateway", "--port", String(port)], {
        cwd: ROOT,
        env: { ...childEnv(home, {}), ...NO_DOCKER },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true
      })
      const done = finish(npm)
      let seen = ""
      await new Promise<void>((ready, fail) => {
        const check = (d: Buffer) => {
          seen += d.toString()
          if (seen.includes("press Ctrl+C")) ready()
        }
        npm.stdout?.on("data", check)
        npm.stderr?.on("data", check)
        npm.on("close", () => fail(new Error(`npm start ended first:\n${seen}`)))
      })
      assert.isTrue(await reachable(port))
      // SIGTERM goes to npm's PID (a service manager); SIGINT to the whole group (Ctrl+C at a terminal).
      if (signal === "SIGTERM") npm.kill("SIGTERM")
      else process.kill(-(npm.pid ?? 0), "SIGINT")
      const r = await done
      assert.strictEqual(r.code, 0, `${r.stdout}\n${r.stderr}`)
      assert.isFalse(await reachable(port), "the gateway is gone with npm")
    }, 120_000)
  }
})

describe("e2e: what an operator reads", () => {
  it("search snippets show what follows the match; deterministic summaries list topics, not roles and dates", async () => {
    const home = newHome()
    suite.keep(home)
    const lines = Array.from({ length: 30 }, (_, i) =>
      JSON.stringify(
        i === 3
          ? { role: "user", content: "Remember this one: the staging database FACT-3003 is on port 6543 behind nginx.conf", ts: "2026-05-01T10:00:00Z" }
          : { role: i % 2 === 0 ? "user" : "assistant", content: `ordinary message number ${i} about the weather and lunch plans` }
      )
    )
    const file = join(home, "t.jsonl")
    writeFileSync(file, `${lines.join("\n")}\n`)
    const key = "a1:cli:u1:dm"
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, NO_DOCKER, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("memory", "import", key, file)
    const hits = JSON.parse(await cli("memory", "search", "FACT-3003", "--json")) as Array<{ snippet: string }>
    assert.include(hits[0]?.snippet ?? "", "«FACT-3003» is on port 6543")
    await cli("memory", "compact", key, "--full")
    const summary = await cli("memory", "describe", "sum_1")
    const expand = summary.split("\n").find((l) => l.startsWith("Expand for details about:")) ?? ""
    assert.notStrictEqual(expand, "")
    for (const noise of ["user", "assistant", "2026"]) assert.notInclude(expand, noise)
  }, 60_000)

  it("/agent over the HTTP channel of a running gateway says the channel routes by model", async () => {
    const { home, env, cli } = await onboarded()
    await cli("agent", "set", "helper", "--model", "openai/fake-large")
    await cli("user", "add", "ida")
    const token = (await cli("user", "token", "ida")).stdout.trim()
    const gateway = start(home, ["gateway", "--port", "0"], "info", env)
    const done = finish(gateway)
    try {
      let log = ""
      await new Promise<void>((ready) => {
        const check = (d: Buffer) => {
          log += d.toString()
          if (log.includes("press Ctrl+C")) ready()
        }
        gateway.stdout?.on("data", check)
        gateway.stderr?.on("data", check)
      })
      const url = /HTTP channel \(OpenAI-compatible\) on (\S+)\/v1;/.exec(log)?.[1] ?? ""
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "/agent helper" }] })
      })
      const answer = (await response.json()) as { choices?: Array<{ message?: { content?: string } }> }
      assert.include(answer.choices?.[0]?.message?.content ?? "", `Over HTTP the agent is the request's "model": send "model": "helper"`)
    } finally {
      gateway.kill("SIGTERM")
    }
    assert.strictEqual((await done).code, 0)
  }, 60_000)
})

describe("e2e: who may use which agent", () => {
  it("anna agent set --access and anna user set --attr decide; the HTTP API answers 403 for a closed agent", async () => {
    const { home, env, cli } = await onboarded()
    await cli("agent", "set", "family", "--model", "openai/fake-large", "--access", "attr:group=family")
    const bad = await annaEnv(home, NO_DOCKER, "agent", "set", "family", "--access", "some people")
    assert.strictEqual(bad.code, 2)
    assert.include(bad.stderr, "access must be everyone, users:ID,… or attr:KEY=VALUE")
    assert.include((await cli("agent", "show", "family")).stdout, "attr:group=family")
    await cli("user", "add", "ida")
    await cli("user", "add", "max")
    await cli("user", "set", "ida", "--attr", "group=family")
    assert.include((await cli("user", "show", "ida")).stdout, "group=family")
    const ida = (await cli("user", "token", "ida")).stdout.trim()
    const max = (await cli("user", "token", "max")).stdout.trim()
    echo()
    const gateway = start(home, ["gateway", "--port", "0"], "info", env)
    const done = finish(gateway)
    try {
      let log = ""
      await new Promise<void>((ready) => {
        const check = (d: Buffer) => {
          log += d.toString()
          if (log.includes("press Ctrl+C")) ready()
        }
        gateway.stdout?.on("data", check)
        gateway.stderr?.on("data", check)
      })
      const url = /HTTP channel \(OpenAI-compatible\) on (\S+)\/v1;/.exec(log)?.[1] ?? ""
      const ask = (token: string) =>
        fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "family", messages: [{ role: "user", content: "hello" }] })
        })
      const refused = await ask(max)
      assert.strictEqual(refused.status, 403)
      const body = (await refused.json()) as { error?: { code?: string; message?: string } }
      assert.strictEqual(body.error?.code, "access_denied")
      assert.include(body.error?.message ?? "", "not open to you")
      assert.strictEqual((await ask(ida)).status, 200)
      // Taking the attribute away closes the agent to her at once.
      await cli("user", "set", "ida", "--remove-attr", "group")
      assert.strictEqual((await ask(ida)).status, 403)
    } finally {
      gateway.kill("SIGTERM")
    }
    assert.strictEqual((await done).code, 0)
  }, 60_000)
})

describe("e2e: anna chat shows what happened", () => {
  it("/compact shows the summary it just made, not an older one; parallel tool lines say which call finished", async () => {
    const { home, env, cli } = await onboarded()
    echo()
    const first = JSON.parse((await cli("chat", "-p", "hello", "--json")).stdout) as { sessionKey: string }
    const transcript = join(home, "more.jsonl")
    let n = 0
    const append = async (count: number) => {
      const lines = Array.from({ length: count }, () => {
        n++
        return JSON.stringify({ role: n % 2 === 1 ? "user" : "assistant", content: `Message ${n} with enough words to be worth summarizing later on.` })
      })
      writeFileSync(transcript, `${lines.join("\n")}\n`)
      await cli("memory", "import", first.sessionKey, transcript, "--append")
    }
    // Two rounds leave an older (condensed) summary at the head of the context …
    await append(80)
    await cli("chat", "-p", "/compact")
    await append(40)
    await cli("chat", "-p", "/compact")
    const assembled = (await cli("memory", "assemble", first.sessionKey, "--budget", "1000000", "--json")).stdout
    const older = Math.max(...[...assembled.matchAll(/sum_(\d+)/g)].map((m) => Number(m[1])))
    assert.isAbove(older, 0, assembled)
    // … so the third /compact must show what it made itself, not that one.
    await append(40)
    const reply = (await cli("chat", "-p", "/compact")).stdout
    const shown = [...reply.matchAll(/Summary \(sum_(\d+)\)/g)].map((m) => Number(m[1]))
    assert.isNotEmpty(shown, reply)
    for (const id of shown) assert.isAbove(id, older, `shows sum_${id}, made before this /compact:\n${reply}`)

    // Two identical calls of a slow tool (sub-agents: each asks the model) run at once: the second line
    // is numbered, and each ✓ names its call.
    const task = { tasks: [{ task: "Say ok." }] }
    suite.fake.respondWith((r) => {
      const b = body(r)
      const names = (b.tools ?? []).map((t) => t.function.name)
      const last = b.messages?.at(-1)
      if (names.includes("agent") && last?.role === "user") {
        return { kind: "reply", parts: [{ type: "tool_call", id: "c1", name: "agent", input: task }, { type: "tool_call", id: "c2", name: "agent", input: task }] }
      }
      return { kind: "reply", parts: [{ type: "text", text: names.includes("agent") ? "delegated twice" : "ok" }] }
    })
    const tools = await annaEnv(home, env, "chat", "-p", "delegate twice")
    assert.strictEqual(tools.code, 0, tools.stderr)
    const lines = tools.stderr.split("\n").filter((l) => l.startsWith("⚙ agent"))
    assert.isTrue(lines.some((l) => l.includes("#2")), tools.stderr)
    assert.strictEqual(lines.filter((l) => l.endsWith("✓")).length, 2, tools.stderr)
    assert.strictEqual(tools.stdout.trim(), "delegated twice")
  }, 90_000)
})
