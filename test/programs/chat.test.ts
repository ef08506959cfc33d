/**
 * `anna chat` against a scripted Runtime: the command itself (parsed with effect/cli, stdio from a
 * test `Stdio`) for -p, --json, exit codes, piped input and interruption; the terminal source over
 * fake streams (readline in terminal mode) for Ctrl-C and Ctrl-D.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Queue, Sink, Stdio, Stream } from "effect"
import { Command } from "effect/cli"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir, userInfo } from "node:os"
import { join } from "node:path"
import { PassThrough } from "node:stream"
import type { ResolvedChat, TurnEvent } from "../../src/domain/runtime/types.ts"
import * as TerminalChannel from "../../src/layers/channels/TerminalChannel.ts"
import { Channel } from "../../src/services/Channel.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import type { Runtime } from "../../src/services/Runtime.ts"
import { chatCommand, chatLoop, ExitCode } from "../../src/programs/chat.ts"
import { feedLine, type LineSource, nothingPending, type Pending, terminalSource } from "../../src/layers/channels/terminal/input.ts"
import { makeRenderer, type Writer } from "../../src/layers/channels/terminal/render.ts"
import { done, makeFakeRuntime, type Step, usage } from "../support/fakeRuntime.ts"

const script = (message: string): ReadonlyArray<Step> => {
  switch (message) {
    case "hello":
      return [
        { type: "text", text: "Hel" },
        { type: "text", text: "lo " },
        { type: "tool_start", id: "t1", name: "bash", input: { command: "ls -la" } },
        { type: "tool_end", id: "t1", name: "bash", output: "file.txt", isError: false },
        { type: "text", text: "there" },
        { type: "notice", text: "compacted" },
        done("end_turn")
      ]
    case "broken tool":
      return [
        { type: "tool_start", id: "t2", name: "read", input: { path: "/nope" } },
        { type: "tool_end", id: "t2", name: "read", output: "no such file\nat /nope", isError: true },
        { type: "text", text: "It is missing.\n" },
        done("end_turn")
      ]
    case "fail":
      return [{ type: "notice", text: "agent default has no usable model" }, done("unavailable")]
    case "halt":
      return [done("aborted")]
    case "hang":
      return [{ type: "text", text: "thinking" }, { type: "wait_for_abort" }]
    case "/whoami":
      return [{ type: "text", text: "user: u1 (me)" }, done("command")]
    default:
      return [{ type: "text", text: `echo: ${message}` }, done("end_turn")]
  }
}

interface Captured {
  stdout: string
  stderr: string
  readonly codes: Array<number>
}

const decoder = new TextDecoder()
const capture = (into: (s: string) => void) =>
  // biome-ignore lint/suspicious/useIterableCallbackReturn: Sink.forEach, not Array#forEach: its callback must return an Effect
  Sink.forEach((chunk: string | Uint8Array) => Effect.sync(() => into(typeof chunk === "string" ? chunk : decoder.decode(chunk))))

/** Runs `anna chat ARGS` as the CLI would parse it, with `stdin` piped in (not a terminal). */
const runChat = <E, R>(layer: Layer.Layer<Runtime, E, R>, args: ReadonlyArray<string>, stdin = "", out?: Captured) => {
  const captured: Captured = out ?? { stdout: "", stderr: "", codes: [] }
  const stdio = Stdio.layerTest({
    stdin: Stream.make(new TextEncoder().encode(stdin)),
    stdout: () => capture((s) => (captured.stdout += s)),
    stderr: () => capture((s) => (captured.stderr += s)),
    stdinIsTerminal: Effect.succeed(false),
    stderrIsTerminal: Effect.succeed(false)
  })
  return Command.runWith(chatCommand(layer), { version: "test" })(args).pipe(
    Effect.provideService(ExitCode, (code) => Effect.sync(() => captured.codes.push(code))),
    Effect.provide(stdio),
    Effect.provide(NodeServices.layer),
    Effect.as(captured)
  )
}

describe("anna chat -p", () => {
  it.effect("streams the reply to stdout, the agent, tool activity and notices to stderr, as the local user", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const r = yield* runChat(fake.layer, ["-p", "hello"])
      assert.strictEqual(r.stdout, "Hello there\n")
      assert.strictEqual(r.stderr, "agent: default\n⚙ bash ls -la ✓\n[compacted]\n")
      assert.deepStrictEqual(r.codes, [0])
      assert.deepStrictEqual(fake.recorded.messages, ["hello"])
      const me = userInfo().username
      assert.deepStrictEqual(fake.recorded.targets, [
        // firstContactUser: the first chat of the OS user NAME goes to an existing user NAME (issue 24).
        { platform: "cli", externalUserId: me, userName: me, chatId: "dm", agentId: undefined, firstContactUser: me }
      ])
    }))

  it.effect("shows a failed tool with ✗ and its first line", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const r = yield* runChat(fake.layer, ["--prompt", "broken tool"])
      assert.strictEqual(r.stderr, "agent: default\n⚙ read /nope ✗ no such file at /nope\n")
      assert.strictEqual(r.stdout, "It is missing.\n")
    }))

  it.effect("--json prints one result object with the agent and session it was routed to", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const r = yield* runChat(fake.layer, ["--agent", "a2", "--session", "work", "-p", "hello", "--json"])
      assert.deepStrictEqual(JSON.parse(r.stdout), {
        reply: "Hello there",
        notices: ["compacted"],
        tools: [{ name: "bash", input: { command: "ls -la" }, output: "file.txt", isError: false }],
        usage,
        stopReason: "end_turn",
        sessionKey: "a2:cli:u1:work",
        agent: "a2"
      })
      assert.strictEqual(r.stderr, "")
      assert.strictEqual(fake.recorded.targets[0]?.agentId, "a2")
      assert.strictEqual(fake.recorded.targets[0]?.chatId, "work")
    }))

  it.effect("exits 1 when the agent is unavailable (the notice on stderr), 130 when the turn was aborted", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const unavailable = yield* runChat(fake.layer, ["-p", "fail"])
      assert.deepStrictEqual(unavailable.codes, [1])
      assert.strictEqual(unavailable.stderr, "agent: default\n[agent default has no usable model]\n")
      assert.strictEqual(unavailable.stdout, "")
      const json = yield* runChat(fake.layer, ["-p", "fail", "--json"])
      assert.deepStrictEqual(json.codes, [1])
      assert.strictEqual(JSON.parse(json.stdout).stopReason, "unavailable")
      const aborted = yield* runChat(fake.layer, ["-p", "halt"])
      assert.deepStrictEqual(aborted.codes, [130])
      const empty = yield* runChat(fake.layer, ["-p", "  "])
      assert.deepStrictEqual(empty.codes, [2])
      assert.include(empty.stderr, "the prompt is empty")
    }))

  it.effect("-p - reads the message from stdin", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const r = yield* runChat(fake.layer, ["-p", "-"], "two\nlines")
      assert.deepStrictEqual(fake.recorded.messages, ["two\nlines"])
      assert.strictEqual(r.stdout, "echo: two\nlines\n")
    }))

  it.effect("interrupting the command while a turn runs (Ctrl-C without a terminal) aborts the turn", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const out: Captured = { stdout: "", stderr: "", codes: [] }
      const fiber = yield* Effect.forkChild(runChat(fake.layer, ["-p", "hang"], "", out))
      yield* Deferred.await(fake.started)
      assert.strictEqual(fake.recorded.aborts, 0)
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(fake.recorded.aborts, 1)
      assert.deepStrictEqual(fake.recorded.messages, ["hang"])
      assert.deepStrictEqual(out.codes, [])
    }))
})

describe("anna chat with piped stdin", () => {
  it.effect("sends one message per line, joins \\ continuations and \"\"\" blocks, passes slash commands through", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const input = [
        "hello",
        "",
        "first \\",
        "second",
        '"""',
        "block a",
        "",
        "  block b \\",
        '"""',
        "/whoami",
        "/exit",
        "last \\"
      ].join("\n")
      const r = yield* runChat(fake.layer, ["--session", "work"], input)
      assert.deepStrictEqual(fake.recorded.messages, [
        "hello",
        "first \nsecond",
        "block a\n\n  block b \\",
        "/whoami",
        "/exit",
        "last "
      ])
      assert.strictEqual(
        r.stdout,
        "Hello there\necho: first \nsecond\necho: block a\n\n  block b \\\nuser: u1 (me)\necho: /exit\necho: last \n"
      )
      assert.isTrue(r.stderr.startsWith("session default:cli:u1:work\n"))
      assert.deepStrictEqual(r.codes, [0])
    }))

  it.effect("--json prints one result per line", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const r = yield* runChat(fake.layer, ["--json"], "hello\n/whoami\n")
      const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l))
      assert.deepStrictEqual(lines.map((l) => [l.reply, l.stopReason]), [["Hello there", "end_turn"], ["user: u1 (me)", "command"]])
    }))

  it.effect("says how many messages the session has when the layer also provides memory", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const memory = Layer.succeed(MemoryProvider, MemoryProvider.of({
        name: "memory/fake",
        bootstrap: () => Effect.die("unused"),
        append: () => Effect.die("unused"),
        assemble: () => Effect.die("unused"),
        stats: (sessionKey) =>
          Effect.succeed({
            sessionKey,
            agentId: "default",
            userId: "u1",
            messages: 42,
            messageTokens: 0,
            summaries: 0,
            maxDepth: 0,
            contextItems: 0,
            contextTokens: 0,
            firstMessageAt: null,
            lastMessageAt: null
          }),
        close: Effect.void
      }))
      const r = yield* runChat(Layer.merge(fake.layer, memory), [], "")
      assert.strictEqual(r.stderr, "continuing session default:cli:u1:dm (42 messages)\n")
      assert.deepStrictEqual(fake.recorded.messages, [])
    }))
})

describe("multi-line input", () => {
  const feedAll = (lines: ReadonlyArray<string>) => {
    let p: Pending = nothingPending
    const messages: Array<string> = []
    for (const l of lines) {
      const r = feedLine(p, l)
      p = r.pending
      if (r.message !== undefined) messages.push(r.message)
    }
    return { messages, pending: p }
  }
  it("keeps \\ and \"\"\" literal inside a block and lets a continuation open one", () => {
    const r = feedAll(["intro \\", '"""', 'a """ b', "c \\", '  """  ', "x"])
    assert.deepStrictEqual(r.messages, ['intro \na """ b\nc \\', "x"])
    assert.deepStrictEqual(r.pending, nothingPending)
  })
})

describe("rendering on one terminal", () => {
  it.effect("breaks the reply's line before tool and notice lines without blank lines, and dims them", () =>
    Effect.gen(function*() {
      let screen = ""
      const write = (s: string) =>
        Effect.sync(() => {
          screen += s
        })
      const plain = makeRenderer({ out: write, err: write, color: false, sameTerminal: true })
      for (const e of script("hello")) if (e.type !== "wait_for_abort") yield* plain.event(e)
      assert.strictEqual(screen, "Hello \n⚙ bash ls -la ✓\nthere\n[compacted]\n")
      screen = ""
      const dimmed = makeRenderer({ out: write, err: write, color: true, sameTerminal: true })
      yield* dimmed.event({ type: "notice", text: "stopped" })
      assert.strictEqual(screen, "\x1b[2m[stopped]\x1b[22m\n")
    }))

  it.effect("says which of several calls in flight finished", () =>
    Effect.gen(function*() {
      let screen = ""
      const write = (s: string) =>
        Effect.sync(() => {
          screen += s
        })
      const r = makeRenderer({ out: write, err: write, color: false, sameTerminal: true })
      const events: ReadonlyArray<TurnEvent> = [
        { type: "tool_start", id: "a", name: "bash", input: { command: "sleep 5" } },
        { type: "tool_start", id: "b", name: "bash", input: { command: "ls" } },
        { type: "tool_start", id: "c", name: "bash", input: { command: "ls" } },
        { type: "tool_end", id: "b", name: "bash", output: "x", isError: false },
        { type: "tool_end", id: "a", name: "bash", output: "killed", isError: true },
        { type: "tool_end", id: "c", name: "bash", output: "y", isError: false },
        { type: "tool_start", id: "d", name: "read", input: { path: "a.txt" } },
        { type: "tool_end", id: "d", name: "read", output: "z", isError: false }
      ]
      for (const e of events) yield* r.event(e)
      assert.strictEqual(
        screen,
        [
          "⚙ bash sleep 5",
          "⚙ bash ls",
          "⚙ bash ls #2",
          "⚙ bash ls ✓",
          "⚙ bash sleep 5 ✗ killed",
          "⚙ bash ls #2 ✓",
          "⚙ read a.txt ✓",
          ""
        ].join("\n")
      )
    }))
})

describe("anna chat on a terminal", () => {
  const chatOf = (runtime: Runtime["Service"]) => runtime.resolve({ platform: "cli", externalUserId: "me" })

  /** A terminal over fake streams; `prompts` receives every prompt shown (true: continuation). */
  const terminal = (historyFile?: string) => Effect.gen(function*() {
    const input = new PassThrough()
    const output = new PassThrough()
    output.resume()
    const source = yield* terminalSource({ input, output, historyFile })
    const prompts = yield* Queue.unbounded<boolean>()
    const wrapped: LineSource = {
      ...source,
      prompt: (c) => source.prompt(c).pipe(Effect.andThen(Queue.offer(prompts, c)))
    }
    return { input, source: wrapped, prompts }
  })

  /** stdout and stderr on one screen, as on a terminal. */
  const writer = (into: Captured): Writer => ({
    out: (s) =>
      Effect.sync(() => {
        into.stdout += s
      }),
    err: (s) =>
      Effect.sync(() => {
        into.stdout += s
      }),
    color: false,
    sameTerminal: true
  })

  const start = (runtime: Runtime["Service"], source: LineSource, out: Captured) =>
    Effect.gen(function*() {
      const chat: ResolvedChat = yield* chatOf(runtime)
      return yield* Effect.forkChild(chatLoop(runtime, chat, source, { json: false, writer: writer(out) }))
    })

  it.effect("Ctrl-C during a turn aborts it and the prompt returns; Ctrl-C drops typed or pending input; on an empty prompt it leaves", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const t = yield* terminal()
      const out: Captured = { stdout: "", stderr: "", codes: [] }
      const loop = yield* start(fake.service, t.source, out)
      assert.isFalse(yield* Queue.take(t.prompts))
      t.input.write("hang\n")
      yield* Deferred.await(fake.started)
      t.input.write("\x03")
      assert.isFalse(yield* Queue.take(t.prompts))
      assert.strictEqual(fake.recorded.aborts, 1)
      assert.isTrue(out.stdout.endsWith("thinking\n[stopped]\n"))

      t.input.write("one \\\n")
      assert.isTrue(yield* Queue.take(t.prompts))
      t.input.write("\x03")
      assert.isFalse(yield* Queue.take(t.prompts))
      t.input.write("half typed")
      t.input.write("\x03")
      assert.isFalse(yield* Queue.take(t.prompts))
      t.input.write('"""\nx\n"""\n')
      assert.isTrue(yield* Queue.take(t.prompts))
      assert.isTrue(yield* Queue.take(t.prompts))
      assert.isFalse(yield* Queue.take(t.prompts))
      t.input.write("\x03")
      yield* Fiber.join(loop)
      assert.deepStrictEqual(fake.recorded.messages, ["hang", "x"])
      assert.strictEqual(fake.recorded.aborts, 1)
    }))

  it.effect("/abort typed during a turn stops it at once; lines typed meanwhile are queued, said so, and sent after it (an /abort inside a message is its text)", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const t = yield* terminal()
      const out: Captured = { stdout: "", stderr: "", codes: [] }
      const loop = yield* start(fake.service, t.source, out)
      assert.isFalse(yield* Queue.take(t.prompts))
      t.input.write("hang\n")
      yield* Deferred.await(fake.started)
      t.input.write('"""\n/abort\n"""\n')
      t.input.write("/abort\n")
      // The prompt comes back once the turn was stopped and the queued message was answered.
      assert.isFalse(yield* Queue.take(t.prompts))
      assert.strictEqual(fake.recorded.aborts, 1)
      assert.deepStrictEqual(fake.recorded.messages, ["hang", "/abort"])
      assert.include(out.stdout, "thinking\n[queued: sent when this reply ends; /abort stops the reply]\n[stopped]\n")
      assert.strictEqual(out.stdout.split("[queued: ").length - 1, 1)
      assert.include(out.stdout, "echo: /abort")
      t.input.write("\x03")
      yield* Fiber.join(loop)
    }))

  it.effect("Ctrl-D that closes the terminal while a reply streams: the prompt asked for afterwards is not shown and nothing fails", () =>
    Effect.gen(function*() {
      const t = yield* terminal()
      t.input.write("\x04")
      const end = yield* Queue.take(t.source.inputs)
      assert.strictEqual(end._tag, "end")
      // The loop asks for the prompt when the turn ends; readline is closed by then (it used to throw),
      // and the end of input is what the loop reads next (even if it had taken it once already).
      const prompted = yield* Effect.exit(t.source.prompt(false))
      assert.isTrue(Exit.isSuccess(prompted), String(prompted))
      assert.strictEqual((yield* Queue.take(t.source.inputs))._tag, "end")
    }).pipe(Effect.scoped))

  it.effect("Ctrl-D and /exit leave; the input history survives a restart", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const out: Captured = { stdout: "", stderr: "", codes: [] }
      const dir = mkdtempSync(join(tmpdir(), "anna-chat-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const historyFile = join(dir, "chat_history")
      const a = yield* terminal(historyFile)
      const first = yield* start(fake.service, a.source, out)
      yield* Queue.take(a.prompts)
      a.input.write("hello\n")
      yield* Queue.take(a.prompts)
      a.input.write("\x04")
      yield* Fiber.join(first)
      assert.strictEqual(readFileSync(historyFile, "utf8"), "hello\n")
      const b = yield* terminal(historyFile)
      const second = yield* start(fake.service, b.source, out)
      yield* Queue.take(b.prompts)
      // Up arrow recalls the line typed before the restart.
      b.input.write("\x1b[A\n")
      yield* Queue.take(b.prompts)
      b.input.write("/exit\n")
      yield* Fiber.join(second)
      assert.deepStrictEqual(fake.recorded.messages, ["hello", "hello"])
      assert.include(out.stdout, "/exit or Ctrl-D leaves")
      assert.include(out.stdout, "there\n[compacted]\n")
    }))
})

describe("the terminal channel", () => {
  it.effect("is a Channel: built, it runs the conversation; notify prints a message for the user on stderr, terminal-safe", () =>
    Effect.gen(function*() {
      const fake = yield* makeFakeRuntime(script)
      const captured: Captured = { stdout: "", stderr: "", codes: [] }
      const stdio = Stdio.layerTest({
        stdin: Stream.make(new TextEncoder().encode("")),
        stdout: () => capture((s) => (captured.stdout += s)),
        stderr: () => capture((s) => (captured.stderr += s)),
        stdinIsTerminal: Effect.succeed(false),
        stderrIsTerminal: Effect.succeed(false)
      })
      const finished = yield* Deferred.make<void>()
      yield* Effect.gen(function*() {
        const channel = yield* Channel
        assert.strictEqual(channel.id, "cli")
        assert.include(channel.description, "terminal chat with default")
        yield* Deferred.await(finished)
        assert.strictEqual(captured.stdout, "echo: hi\n")
        yield* channel.notify({ userId: "u1" }, { text: "backup done \x1b]52;c;aGk=\x07" })
        assert.include(captured.stderr, "[notice] backup done \\x1b]52;c;aGk=\\x07\n")
        const empty = yield* Effect.flip(channel.notify({ userId: "u1" }, { text: "  " }))
        assert.strictEqual(empty.message, "channel cli: an empty message")
      }).pipe(
        Effect.provide(TerminalChannel.layer({ session: "dm", prompt: "hi", json: false, finished })),
        Effect.provideService(ExitCode, (code) => Effect.sync(() => captured.codes.push(code))),
        Effect.provide(Layer.merge(fake.layer, stdio))
      )
      assert.deepStrictEqual(captured.codes, [0])
    }))
})
