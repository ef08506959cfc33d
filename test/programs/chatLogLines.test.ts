/**
 * Log lines while `anna chat` owns the terminal (issue 24): a warning logged while the user types is
 * drawn above the prompt, which is drawn again with what was typed (readline keeps it, the next key
 * goes on where the user was); a log line during a turn never lands inside a tool line; the
 * `runtime.exception_path` audit line of a remote MCP server is one line, at debug level in a CLI
 * command. Through the real CLI: a pseudo-terminal for the interactive chat, a child process for -p.
 */
import { assert, describe, it } from "@effect/vitest"
import { finish, newHome, start, waitForOutput } from "../support/cli.ts"
import type { RecordedRequest, Scripted } from "../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { startEverythingHttp } from "../support/mcpServers.ts"
import { ptyAnna } from "../support/pty.ts"

const suite = fakeLlmSuite()

/** No Docker engine answers here, whatever the machine has: these runs do not need the sandbox. */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }

interface Body {
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
  readonly tools?: ReadonlyArray<unknown>
}
const body = (r: RecordedRequest | undefined) => (r?.body ?? {}) as Body
const lastUser = (r: RecordedRequest) => [...(body(r).messages ?? [])].reverse().find((m) => m.role === "user")?.content
/** A turn's request offers tools; the background reflection's does not. */
const isTurn = (r: RecordedRequest) => (body(r).tools ?? []).length > 0

const onboarded = async () => {
  const home = suite.keep(newHome())
  const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-log-lines", ...NO_DOCKER }
  const run = async (args: ReadonlyArray<string>, level = "warn") => {
    const r = await finish(start(home, args, level, env))
    assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
    return r
  }
  await run(["onboard", "--from-env"])
  return { home, env, run }
}

/**
 * What a terminal shows after `output`: enough of a VT100 for readline and anna (CR, LF, backspace,
 * cursor moves CUU/CUD/CUF/CUB/CHA, erase EL/ED; colors and private modes ignored). Trailing
 * spaces trimmed.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: a terminal's control sequences are what it reads
const CSI = /^\x1b\[([?>]?)([\d;]*)([A-Za-z@])/

const screenOf = (output: string): Array<string> => {
  const rows: Array<Array<string>> = [[]]
  let r = 0
  let c = 0
  const row = () => {
    while (rows.length <= r) rows.push([])
    return rows[r] as Array<string>
  }
  for (let i = 0; i < output.length; i++) {
    const ch = output[i] as string
    if (ch === "\x1b") {
      const m = CSI.exec(output.slice(i))
      if (m === null) {
        i += 1
        continue
      }
      i += m[0].length - 1
      if (m[1] !== "") continue
      const n = Number.parseInt(m[2] || "0", 10)
      switch (m[3]) {
        case "A":
          r = Math.max(0, r - (n || 1))
          break
        case "B":
          r += n || 1
          break
        case "C":
          c += n || 1
          break
        case "D":
          c = Math.max(0, c - (n || 1))
          break
        case "G":
          c = Math.max(0, (n || 1) - 1)
          break
        case "K":
          if (n === 0) row().length = Math.min(row().length, c)
          else if (n === 2) row().length = 0
          else for (let k = 0; k <= c && k < row().length; k++) row()[k] = " "
          break
        case "J":
          if (n === 0) {
            row().length = Math.min(row().length, c)
            rows.length = r + 1
          }
          break
      }
      continue
    }
    if (ch === "\r") c = 0
    else if (ch === "\n") {
      r++
      c = 0
      row()
    } else if (ch === "\b") c = Math.max(0, c - 1)
    else if (ch >= " ") {
      const line = row()
      while (line.length < c) line.push(" ")
      line[c] = ch
      c++
    }
  }
  return rows.map((l) => l.join("").trimEnd())
}

const LOG_LINE = /^\[\d\d:\d\d:\d\d\.\d{3}\] [A-Z]+ \(#\d+\)/

describe("anna chat: log lines and the prompt", () => {
  it("a warning logged while the user types is drawn above the prompt, which comes back with what was typed", async () => {
    const { home, env } = await onboarded()
    // The background reflection of the first burst (a request without tools) is answered only once
    // the user has half typed the next message; it fails, and anna logs a warning.
    let fail: (s: Scripted) => void = () => undefined
    const failed = new Promise<Scripted>((settle) => (fail = settle))
    suite.fake.respondWith((r) =>
      isTurn(r) ? { kind: "reply", parts: [{ type: "text", text: `echo: ${String(lastUser(r))}` }] } : failed
    )
    const chat = ptyAnna(home, ["chat"], env)
    await chat.screen("> ")
    chat.type("first\r")
    await chat.screen("echo: first")
    await chat.screen("> ", 1)
    chat.type("/new\r")
    await chat.screen("Started a new conversation")
    await chat.screen("> ", 2)
    await suite.fake.when(() => suite.fake.requests.some((r) => !isTurn(r)), { what: "the reflection's request" })
    chat.type("half typed")
    await chat.screen("half typed")
    const warned = chat.count("WARN")
    fail({ kind: "error", status: 400, message: "reflection refused by the test" })
    await chat.screen("WARN", warned)
    // The next keys go on from where the user was.
    chat.type(" more\r")
    await chat.screen("echo: half typed more")
    chat.type("/exit\r")
    const done = await chat.done
    assert.strictEqual(done.code, 0, chat.output())

    const sent = suite.fake.requests.filter(isTurn).map(lastUser)
    assert.deepStrictEqual(sent.slice(-1), ["half typed more"])
    const screen = screenOf(chat.output())
    const shown = screen.join("\n")
    for (const w of screen.filter((l) => l.includes("WARN"))) {
      assert.match(w, LOG_LINE, `a log line of its own:\n${shown}`)
      assert.notInclude(w, "half typed", `drawn over the typed text:\n${shown}`)
    }
    // The reflection's warning, then the prompt with the whole message as it was sent.
    const warning = screen.findIndex((l) => /WARN .*learning/.test(l))
    assert.isAtLeast(warning, 0, shown)
    assert.strictEqual(screen[warning + 1], "> half typed more", shown)
  }, 60_000)
})

describe("the EX-009 exception path of a remote MCP server", () => {
  it("anna chat -p logs it as one line, at debug level, never inside the tool line", async () => {
    const { run } = await onboarded()
    const server = await startEverythingHttp()
    try {
      await run(["mcp", "add", "live", "--url", server.url])
      let calls = 0
      suite.fake.respondWith((r) => {
        if (!isTurn(r)) return { kind: "reply", parts: [{ type: "text", text: "{}" }] }
        calls++
        return calls % 2 === 1
          ? { kind: "reply", parts: [{ type: "tool_call", id: `c${calls}`, name: "mcp", input: { action: "call", server: "live", tool: "echo", arguments: { message: "hi" } } }] }
          : { kind: "reply", parts: [{ type: "text", text: "done" }] }
      })
      const debug = await run(["chat", "-p", "use the tool"], "debug")
      assert.strictEqual(debug.stdout.trim(), "done")
      const lines = debug.stderr.split("\n")
      const audit = lines.filter((l) => l.includes("runtime.exception_path"))
      assert.strictEqual(audit.length, 1, debug.stderr)
      assert.match(
        audit[0] ?? "",
        /^\[\d\d:\d\d:\d\d\.\d{3}\] DEBUG \(#\d+\): runtime\.exception_path exception_id=EX-009 mcp_server=live agent=default host=127\.0\.0\.1:\d+ transport=http$/
      )
      // The tool line is whole: "⚙ mcp call" then its ✓, on its own line or repeated on one of its own.
      assert.isTrue(lines.some((l) => /^⚙ mcp call.* ✓$/.test(l)), debug.stderr)
      for (const l of lines) if (l.includes("⚙")) assert.notMatch(l, /\] [A-Z]+ \(#/, debug.stderr)

      const quiet = await run(["chat", "-p", "use the tool again"], "info")
      assert.notInclude(quiet.stderr, "exception_path", quiet.stderr)
      assert.notInclude(quiet.stderr, "EX-009", quiet.stderr)
    } finally {
      await server.stop()
    }
  }, 60_000)

  it("the gateway logs it at info level, as one line: the operator's trail of what it reached outside the sandbox", async () => {
    const { home, env, run } = await onboarded()
    const server = await startEverythingHttp()
    await run(["mcp", "add", "live", "--url", server.url])
    await run(["user", "add", "hana"])
    const token = (await run(["user", "token", "hana"])).stdout.trim()
    suite.fake.respondWith((r) =>
      isTurn(r) && !(body(r).messages ?? []).some((m) => m.role === "tool")
        ? { kind: "reply", parts: [{ type: "tool_call", id: "c1", name: "mcp", input: { action: "call", server: "live", tool: "echo", arguments: { message: "hi" } } }] }
        : { kind: "reply", parts: [{ type: "text", text: "done" }] }
    )
    const child = start(home, ["gateway", "--port", "0"], "info", env)
    let log = ""
    child.stderr?.on("data", (d: Buffer) => (log += d.toString()))
    const done = finish(child)
    try {
      await waitForOutput(child, "press Ctrl+C")
      const url = /HTTP channel \(OpenAI-compatible\) on (\S+);/.exec(log)?.[1]
      const r = await fetch(`${url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "use the tool" }] })
      })
      assert.strictEqual(r.status, 200)
      assert.include(JSON.stringify(await r.json()), "done")
    } finally {
      child.kill("SIGTERM")
      await done
      await server.stop()
    }
    const audit = log.split("\n").filter((l) => l.includes("exception_path") || l.includes("EX-009"))
    assert.strictEqual(audit.length, 1, log)
    assert.match(
      audit[0] ?? "",
      /^\[[\d:.]+\] INFO \(#\d+\): runtime\.exception_path exception_id=EX-009 mcp_server=live agent=default host=127\.0\.0\.1:\d+ transport=http$/
    )
  }, 60_000)
})
