/**
 * Where a log line goes among a turn's lines in `anna chat` (the renderer's `interject`, issue 24):
 * never inside a tool line, never inside the reply's line on the same terminal. The pty test
 * (test/programs/chatLogLines.test.ts) checks the prompt side through the real CLI; these check every
 * case of the renderer's own, one screen as a person sees it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeRenderer } from "../../../src/layers/channels/terminal/render.ts"

const LOG = "[14:02:07.118] WARN (#12): something to know"

const screen = (sameTerminal = true) => {
  let text = ""
  const write = (s: string) =>
    Effect.sync(() => {
      text += s
    })
  return { renderer: makeRenderer({ out: write, err: write, color: false, sameTerminal }), text: () => text }
}

describe("a log line among a turn's lines", () => {
  it.effect("ends an open tool line first; the tool's ✓ then repeats the call on a line of its own", () =>
    Effect.gen(function*() {
      const s = screen()
      yield* s.renderer.event({ type: "tool_start", id: "t", name: "bash", input: { command: "ls" } })
      yield* s.renderer.interject(LOG)
      yield* s.renderer.event({ type: "tool_end", id: "t", name: "bash", output: "x", isError: false })
      yield* s.renderer.end
      assert.strictEqual(s.text(), `⚙ bash ls\n${LOG}\n⚙ bash ls ✓\n`)
    }))

  it.effect("waits for the end of the reply's line on the same terminal", () =>
    Effect.gen(function*() {
      const s = screen()
      yield* s.renderer.event({ type: "text", text: "Hello wor" })
      yield* s.renderer.interject(LOG)
      assert.strictEqual(s.text(), "Hello wor")
      yield* s.renderer.event({ type: "text", text: "ld.\nAnd" })
      assert.strictEqual(s.text(), "Hello world.\nAnd", "the line break is not the last thing written: still waiting")
      yield* s.renderer.event({ type: "text", text: " more.\n" })
      yield* s.renderer.event({ type: "text", text: "Next" })
      yield* s.renderer.end
      assert.strictEqual(s.text(), `Hello world.\nAnd more.\n${LOG}\nNext\n`)
    }))

  it.effect("goes before the next line the turn writes on stderr, or at the end of the turn", () =>
    Effect.gen(function*() {
      const s = screen()
      yield* s.renderer.event({ type: "text", text: "Let me look" })
      yield* s.renderer.interject(LOG)
      yield* s.renderer.event({ type: "tool_start", id: "t", name: "read", input: { path: "a.txt" } })
      yield* s.renderer.event({ type: "tool_end", id: "t", name: "read", output: "x", isError: false })
      yield* s.renderer.event({ type: "text", text: "Done" })
      yield* s.renderer.interject(LOG)
      yield* s.renderer.end
      assert.strictEqual(s.text(), `Let me look\n${LOG}\n⚙ read a.txt ✓\nDone\n${LOG}\n`)
    }))

  it.effect("is written at once when the reply goes elsewhere (stdout is not the terminal)", () =>
    Effect.gen(function*() {
      const s = screen(false)
      yield* s.renderer.event({ type: "text", text: "Hello wor" })
      yield* s.renderer.interject(LOG)
      assert.strictEqual(s.text(), `Hello wor${LOG}\n`)
    }))
})
