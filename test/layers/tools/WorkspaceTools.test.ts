/**
 * The built-in workspace tools: the shared cases over the local test sandbox (real files, real
 * processes, the production path confinement), plus what does not need a sandbox at all — output
 * formatting and truncation, the timeout cap, input schemas — and the tool layers themselves.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { lstatSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { SandboxFailure } from "../../../src/domain/sandbox/errors.ts"
import type { ExecOptions, ExecResult } from "../../../src/domain/sandbox/types.ts"
import type { Tool } from "../../../src/domain/tool.ts"
import { Bash, Edit, Read, Write } from "../../../src/layers/tools/WorkspaceTools.ts"
import * as WorkspaceTools from "../../../src/layers/tools/WorkspaceTools.ts"
import { omittedMarker, safeEnd, safeStart, shareBudget, truncateMiddle, utf8Length } from "../../../src/domain/text.ts"
import type { SandboxSession } from "../../../src/services/Sandbox.ts"
import * as LocalSandbox from "../../support/localSandbox.ts"
import { context, outsideFolder, workspaceToolCases } from "../../support/workspaceToolCases.ts"

describe("workspace tools over the local sandbox", () => {
  workspaceToolCases(LocalSandbox.make())
})

const wellFormed = (s: string) => Buffer.from(s, "utf8").toString("utf8") === s

const execResult = (overrides: Partial<ExecResult>): ExecResult => ({
  exitCode: 0,
  stdout: "",
  stderr: "",
  stdoutDropped: 0,
  stderrDropped: 0,
  timedOut: false,
  durationMs: 5,
  ...overrides
})

/** A session whose exec returns `result` and records the options it was called with. */
const scripted = (result: Effect.Effect<ExecResult, SandboxFailure>) =>
  Effect.gen(function*() {
    const session = yield* LocalSandbox.make()
    const calls: Array<{ command: string; options: ExecOptions | undefined }> = []
    const fake: SandboxSession = {
      ...session,
      exec: (command, options) => Effect.sync(() => calls.push({ command, options })).pipe(Effect.andThen(result))
    }
    return { bash: Bash.make(fake), calls }
  })

describe("text helpers", () => {
  it("never cut inside a surrogate pair", () => {
    const s = "a😀b"
    assert.strictEqual(safeEnd(s, 2), 1)
    assert.strictEqual(safeEnd(s, 3), 3)
    assert.strictEqual(safeStart(s, 2), 3)
    assert.strictEqual(safeStart(s, 1), 1)
  })

  it("truncateMiddle keeps head and tail, counts omitted UTF-8 bytes exactly, never splits a character", () => {
    for (let shift = 0; shift < 5; shift++) {
      const s = "é".repeat(shift) + "😀中a".repeat(5_000)
      const out = truncateMiddle(s, 1_000)
      assert.isTrue(wellFormed(out), `shift ${shift}`)
      const [head = "", tail = ""] = out.split(/\n\[… [\d,]+ bytes omitted …\]\n/)
      assert.isTrue(s.startsWith(head))
      assert.isTrue(s.endsWith(tail))
      assert.isAtMost(head.length + tail.length, 1_000)
      assert.isAtLeast(head.length + tail.length, 990)
      const omitted = utf8Length(s) - utf8Length(head) - utf8Length(tail)
      assert.include(out, omittedMarker(omitted))
    }
    assert.strictEqual(truncateMiddle("short", 10), "short")
  })

  it("shareBudget gives a short text all it needs and the rest to the other", () => {
    assert.deepStrictEqual(shareBudget(10, 20, 100), [10, 20])
    assert.deepStrictEqual(shareBudget(1_000, 20, 100), [80, 20])
    assert.deepStrictEqual(shareBudget(20, 1_000, 100), [20, 80])
    assert.deepStrictEqual(shareBudget(1_000, 1_000, 100), [50, 50])
  })
})

describe("bash formatting", () => {
  it("labels the timeout, exit code and both streams, with what the sandbox dropped", () => {
    const out = Bash.formatResult(execResult({ exitCode: 137, stdout: "partial\n", stderr: "warn", stderrDropped: 1234, timedOut: true }), 2.5)
    assert.strictEqual(
      out,
      [
        "[timed out after 2.5 s; the command and its children were killed]",
        "exit code: 137",
        "--- stdout ---",
        "partial",
        "--- stderr ---",
        "warn",
        "[… a further 1,234 bytes of stderr were not captured (sandbox output limit) …]"
      ].join("\n")
    )
  })

  it("keeps a short stderr whole while a huge stdout is cut in the middle", () => {
    const stdout = Array.from({ length: 50_000 }, (_, i) => `out ${i}`).join("\n")
    const out = Bash.formatResult(execResult({ exitCode: 2, stdout, stderr: "fatal: the real error\n" }), 120)
    assert.isTrue(out.endsWith("--- stderr ---\nfatal: the real error"))
    assert.include(out, "out 0\nout 1\n")
    assert.include(out, "out 49999\n--- stderr ---")
    assert.match(out, /\n\[… [\d,]+ bytes omitted …\]\n/)
    assert.isAtMost(out.length, Bash.OUTPUT_BUDGET + 200)
  })

  it("never splits a character at the cut", () => {
    for (let shift = 0; shift < 3; shift++) {
      const out = Bash.formatResult(execResult({ stdout: "x".repeat(shift) + "😀".repeat(40_000) }), 1)
      assert.isTrue(wellFormed(out))
    }
  })

  it.effect("caps the timeout at 600 s and defaults to 120 s", () =>
    Effect.gen(function*() {
      const { bash, calls } = yield* scripted(Effect.succeed(execResult({ timedOut: true, exitCode: 137 })))
      const capped = yield* bash.execute({ command: "sleep 9999", timeout_seconds: 10_000 }, context)
      assert.isTrue(capped.startsWith("[timed out after 600 s;"))
      yield* bash.execute({ command: "true" }, context)
      assert.deepStrictEqual(calls.map((c) => c.options?.timeoutMs), [600_000, 120_000])
      assert.deepStrictEqual(calls.map((c) => c.command), ["sleep 9999", "true"])
    }))

  it.effect("turns sandbox failures and bad input into ToolErrors", () =>
    Effect.gen(function*() {
      const { bash, calls } = yield* scripted(Effect.fail(new SandboxFailure({ operation: "exec", detail: "container gone" })))
      const failed = yield* Effect.flip(bash.execute({ command: "ls" }, context))
      assert.strictEqual(failed.message, "bash: sandbox exec failed: container gone")
      const bad = yield* Effect.flip(bash.execute({ command: "ls", timeout_seconds: -1, colour: true }, context))
      assert.match(bad.reason, /^invalid input: /)
      assert.include(bad.reason, "colour")
      assert.include(bad.reason, "timeout_seconds")
      assert.strictEqual(calls.length, 1)
    }))
})

describe("tool definitions", () => {
  type Input = Schema.ConstraintDecoder<unknown> & { readonly fields: Readonly<Record<string, unknown>> }
  type Case = readonly [string, (session: SandboxSession) => Tool, Input, Readonly<Record<string, unknown>>]
  const cases: ReadonlyArray<Case> = [
    ["bash", Bash.make, Bash.Input, { command: "ls", timeout_seconds: 5, cwd: "." }],
    ["read", Read.make, Read.Input, { path: "a", offset: 1, limit: 2 }],
    ["write", Write.make, Write.Input, { path: "a", content: "" }],
    ["edit", Edit.make, Edit.Input, { path: "a", old_text: "x", new_text: "y", replace_all: true }]
  ]
  for (const [name, make, input, full] of cases) {
    it.effect(`${name}: the JSON schema lists exactly the fields the decoder accepts`, () =>
      Effect.gen(function*() {
        const tool = make(yield* LocalSandbox.make())
        const schema = tool.definition.inputSchema
        assert.strictEqual(tool.definition.name, name)
        assert.isAbove(tool.definition.description.length, 40)
        assert.strictEqual(schema.type, "object")
        assert.strictEqual(schema.additionalProperties, false)
        const properties = schema.properties
        assert.isTrue(typeof properties === "object" && properties !== null)
        assert.deepStrictEqual(Object.keys(properties ?? {}).sort(), Object.keys(input.fields).sort())
        assert.deepStrictEqual(Object.keys(full).sort(), Object.keys(input.fields).sort())
        assert.strictEqual(Schema.decodeUnknownExit(input)(full)._tag, "Success")
        // Required in the JSON schema = the decoder fails without it.
        const required = Object.keys(full).filter((k) =>
          Schema.decodeUnknownExit(input)(Object.fromEntries(Object.entries(full).filter(([f]) => f !== k)))._tag === "Failure"
        )
        assert.deepStrictEqual(schema.required, required)
      }))
  }
})

describe("links that lead outside the workspace", () => {
  it.effect("read, write and edit refuse links that lead outside and follow those inside", () =>
    Effect.gen(function*() {
      const session = yield* LocalSandbox.make()
      const root = yield* LocalSandbox.hostRoot(session)
      const outside = yield* outsideFolder
      writeFileSync(join(outside, "secret.txt"), "top secret\n")
      symlinkSync(outside, join(root, "dirlink"))
      symlinkSync(join(outside, "secret.txt"), join(root, "filelink"))
      symlinkSync(join(outside, "later"), join(root, "dangling-dir"))
      symlinkSync("../../../../..", join(root, "up"))
      writeFileSync(join(root, "real.txt"), "one\n")
      symlinkSync("real.txt", join(root, "inside-link"))
      const read = Read.make(session)
      const write = Write.make(session)
      const edit = Edit.make(session)
      for (const attempt of [
        read.execute({ path: "filelink" }, context),
        read.execute({ path: "dirlink" }, context),
        read.execute({ path: "dirlink/secret.txt" }, context),
        read.execute({ path: "up/etc/hostname" }, context),
        write.execute({ path: "filelink", content: "pwned" }, context),
        write.execute({ path: "dirlink/secret.txt", content: "pwned" }, context),
        write.execute({ path: "dirlink/sub/new.txt", content: "pwned" }, context),
        write.execute({ path: "dangling-dir", content: "pwned" }, context),
        write.execute({ path: "dangling-dir/sub/new.txt", content: "pwned" }, context),
        edit.execute({ path: "filelink", old_text: "top", new_text: "pwned" }, context)
      ]) {
        const failed = yield* Effect.flip(attempt)
        assert.include(failed.reason, "outside the workspace")
      }
      assert.strictEqual(readFileSync(join(outside, "secret.txt"), "utf8"), "top secret\n")
      assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])

      assert.strictEqual(yield* read.execute({ path: "inside-link" }, context), "     1\tone")
      yield* write.execute({ path: "inside-link", content: "two\n" }, context)
      yield* edit.execute({ path: "inside-link", old_text: "two", new_text: "three" }, context)
      assert.strictEqual(readFileSync(join(root, "real.txt"), "utf8"), "three\n")
      assert.isTrue(lstatSync(join(root, "inside-link")).isSymbolicLink())
    }))
})

describe("WorkspaceTools.toolsFor", () => {
  it.effect("gives the four tools bound to one sandbox session", () =>
    Effect.gen(function*() {
      const [bash, read, write, edit] = WorkspaceTools.toolsFor(yield* LocalSandbox.make())
      assert.deepStrictEqual([bash, read, write, edit].map((t) => t?.definition.name), ["bash", "read", "write", "edit"])
      if (read === undefined || write === undefined || edit === undefined) return assert.fail("four tools")
      assert.strictEqual(yield* write.execute({ path: "n.txt", content: "hi\n" }, context), "wrote 3 bytes to n.txt (new file)")
      assert.strictEqual(yield* edit.execute({ path: "n.txt", old_text: "hi", new_text: "ho" }, context), "edited n.txt: replaced 1 occurrence at line 1")
      assert.strictEqual(yield* read.execute({ path: "n.txt" }, context), "     1\tho")
    }))
})
