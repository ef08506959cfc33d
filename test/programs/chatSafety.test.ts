/**
 * `anna chat` never hands a terminal the control sequences in model, tool or user text (window
 * titles, OSC 52 clipboard writes, cursor movement, C1 controls, bidi overrides): a property of the
 * sanitiser, the renderer and --json on hostile events, and chat names that cannot be context ids.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema, Sink, Stdio, Stream } from "effect"
import { Command } from "effect/cli"
import type { TurnEvent } from "../../src/domain/runtime/types.ts"
import { chatCommand, ExitCode } from "../../src/programs/chat.ts"
import { makeRenderer, terminalJson, terminalSafe, type Writer } from "../../src/layers/channels/terminal/render.ts"
import { done, makeFakeRuntime } from "../support/fakeRuntime.ts"

/** What a terminal may act on; tab and newline are the only controls let through. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for control characters that must not reach the terminal
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u
const isUnsafe = (c: string) => UNSAFE.test(c)

const HOSTILE = [
  "\u001b]0;pwned title\u0007",
  "\u001b]52;c;ZWNobyBoaQ==\u0007",
  "\u001b[2J\u001b[H",
  "\u001b[31mred",
  "\u009b31m",
  "\u009d0;t\u009c",
  "\u202eevil\u202c",
  "\u2066iso\u2069",
  "over\rwrite",
  "bs\b\b",
  "\u007f",
  "\r\n"
]

/** Strings mixing any text, any code point up to U+2100 and known attack sequences. */
const piece = Arbitrary.all({
  kind: Arbitrary.schema(Schema.Literals(["text", "code", "hostile"])),
  text: Arbitrary.schema(Schema.String),
  code: Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0x2100 }))),
  hostile: Arbitrary.schema(Schema.Literals(HOSTILE))
})
const hostileText = Arbitrary.array(piece).pipe(
  Arbitrary.map((ps) => ps.map((p) => (p.kind === "text" ? p.text : p.kind === "code" ? String.fromCodePoint(p.code) : p.hostile)).join(""))
)

/** `small` occurs in `big` in order (not necessarily contiguously). */
const subsequence = (small: ReadonlyArray<string>, big: ReadonlyArray<string>): boolean => {
  let i = 0
  for (const c of big) if (i < small.length && c === small[i]) i++
  return i === small.length
}

describe("terminalSafe", () => {
  it.prop("leaves no ESC, C1, other C0 control or bidi override, and keeps every printable character in order", { s: hostileText }, ({ s }) => {
    const out = terminalSafe(s)
    assert.isFalse([...out].some(isUnsafe), JSON.stringify(out))
    assert.isTrue(subsequence([...s].filter((c) => !isUnsafe(c) && c !== "\r"), [...out]))
    assert.strictEqual(terminalSafe(out), out)
    const clean = [...s].filter((c) => !isUnsafe(c) && c !== "\r").join("")
    assert.strictEqual(terminalSafe(clean), clean)
  }, { arbitrary: { runs: 300 } })

  it.prop("--json text escapes what JSON.stringify writes raw (C1, DEL, bidi) and parses back to the same value", { s: hostileText }, ({ s }) => {
    const json = terminalJson({ reply: s, tools: [{ name: s }] }, 2)
    assert.isFalse([...json].some(isUnsafe), json)
    assert.deepStrictEqual(JSON.parse(json), { reply: s, tools: [{ name: s }] })
  }, { arbitrary: { runs: 200 } })

  it("shows the sequences instead of running them", () => {
    assert.strictEqual(terminalSafe("a\u001b]52;c;eA==\u0007b"), "a\\x1b]52;c;eA==\\x07b")
    assert.strictEqual(terminalSafe("\u009b2J \u202eabc\tx\r\ny"), "\\x9b2J \\u202eabc\tx\ny")
  })
})

const captureWriter = (color: boolean) => {
  const out = { stdout: "", stderr: "" }
  const writer: Writer = {
    out: (t) =>
      Effect.sync(() => {
        out.stdout += t
      }),
    err: (t) =>
      Effect.sync(() => {
        out.stderr += t
      }),
    color,
    sameTerminal: color
  }
  return { out, writer }
}

/** anna's own styling: dim on and off. Anything else that starts with ESC came from outside. */
const withoutOwnStyling = (s: string) => s.replaceAll("\u001b[2m", "").replaceAll("\u001b[22m", "")

describe("the chat renderer", () => {
  it.effect("prints hostile replies, tool names, inputs, errors and notices without their control sequences, keeping its own dimming", () =>
    Effect.gen(function*() {
      const evil = HOSTILE.join("")
      const events: ReadonlyArray<TurnEvent> = [
        { type: "text", text: `Here${evil}` },
        { type: "tool_start", id: "t1", name: `bash${evil}`, input: { command: `cat x${evil}` } },
        { type: "tool_end", id: "t1", name: `bash${evil}`, output: `boom${evil}`, isError: true },
        { type: "tool_start", id: "t2", name: "read", input: { other: evil } },
        { type: "tool_end", id: "t3", name: `orphan${evil}`, output: evil, isError: true },
        { type: "notice", text: `notice${evil}` },
        { type: "text", text: `tail${evil}` },
        done("end_turn")
      ]
      for (const color of [false, true]) {
        const { out, writer } = captureWriter(color)
        const renderer = makeRenderer(writer)
        for (const e of events) yield* renderer.event(e)
        for (const text of [out.stdout, withoutOwnStyling(out.stderr)]) {
          assert.isFalse([...text].some(isUnsafe), JSON.stringify(text))
        }
        assert.include(out.stdout, "Here\\x1b]0;pwned title\\x07")
        assert.include(out.stderr, "[notice\\x1b]0;pwned title\\x07\\x1b]52;c;ZWNobyBoaQ==\\x07")
        if (color) assert.include(out.stderr, "\u001b[2m")
      }
    }))
})

const decoder = new TextDecoder()

const runChat = (args: ReadonlyArray<string>, reply: string) =>
  Effect.gen(function*() {
    const fake = yield* makeFakeRuntime(() => [{ type: "text", text: reply }, { type: "notice", text: reply }, done("end_turn")])
    const captured = { stdout: "", stderr: "", codes: [] as Array<number> }
    const sink = (into: (s: string) => void) =>
      // biome-ignore lint/suspicious/useIterableCallbackReturn: Sink.forEach, not Array#forEach: its callback must return an Effect
      Sink.forEach((chunk: string | Uint8Array) => Effect.sync(() => into(typeof chunk === "string" ? chunk : decoder.decode(chunk))))
    const stdio = Stdio.layerTest({
      stdin: Stream.empty,
      stdout: () => sink((s) => (captured.stdout += s)),
      stderr: () => sink((s) => (captured.stderr += s)),
      stdinIsTerminal: Effect.succeed(false),
      stdoutIsTerminal: Effect.succeed(true),
      stderrIsTerminal: Effect.succeed(true)
    })
    const exit = yield* Command.runWith(chatCommand(fake.layer), { version: "test" })(args).pipe(
      Effect.provideService(ExitCode, (code) => Effect.sync(() => void captured.codes.push(code))),
      Effect.provide(stdio),
      Effect.provide(NodeServices.layer),
      Effect.exit
    )
    return { ...captured, exit, recorded: fake.recorded }
  })

describe("anna chat", () => {
  it.effect("-p on a terminal and --json never pass on escape sequences or C1 controls", () =>
    Effect.gen(function*() {
      const evil = HOSTILE.join("")
      const text = yield* runChat(["-p", "hi"], `ok${evil}`)
      assert.isFalse([...text.stdout].some(isUnsafe), JSON.stringify(text.stdout))
      assert.isFalse([...withoutOwnStyling(text.stderr)].some(isUnsafe), JSON.stringify(text.stderr))
      const json = yield* runChat(["-p", "hi", "--json"], `ok${evil}`)
      assert.isFalse([...json.stdout].some(isUnsafe), JSON.stringify(json.stdout))
      assert.strictEqual(JSON.parse(json.stdout).reply, `ok${evil}`)
    }))

  it.effect("refuses a --session name that could be another chat's /new context, or holds control characters", () =>
    Effect.gen(function*() {
      for (const name of ["w2y#2", "a\u001b]0;x\u0007"]) {
        const r = yield* runChat(["--session", name, "-p", "hi"], "ok")
        assert.strictEqual(r.exit._tag, "Failure", name)
        assert.deepStrictEqual(r.recorded.targets, [])
      }
      const ok = yield* runChat(["--session", "w2y-2", "-p", "hi"], "ok")
      assert.strictEqual(ok.exit._tag, "Success")
      assert.strictEqual(ok.recorded.targets[0]?.chatId, "w2y-2")
    }))
})
