/**
 * Cases for the built-in workspace tools that hold for any `SandboxSession` faithful to the
 * contract: run them over the local test sandbox (test/layers/WorkspaceTools.test.ts) or over a
 * real Docker session. `acquire` gives a fresh session per test whose workspace is a host folder
 * (fixtures are written there directly); commands only use paths relative to the workspace.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import type { Tool, ToolCallContext } from "../../src/domain/tool.ts"
import * as Bash from "../../src/layers/tools/bash.ts"
import * as Edit from "../../src/layers/tools/edit.ts"
import * as Read from "../../src/layers/tools/read.ts"
import * as Write from "../../src/layers/tools/write.ts"
import type { SandboxSession } from "../../src/services/Sandbox.ts"
import { hostRoot } from "./localSandbox.ts"

export const context: ToolCallContext = { sessionKey: "a1:cli:alice:main", userId: "alice", agentId: "a1" }

/** A host folder outside any workspace, removed with the scope. */
export const outsideFolder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-outside-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** Files in `dir` that look like leftovers of an atomic write. */
export const tempLeftovers = (dir: string): Array<string> => readdirSync(dir).filter((f) => f.includes(".anna-tmp"))

const ERROR_MARKER = "\u0000error\u0000"
/** The tool's reason when it fails, prefixed so a test can tell failure from success. */
const outcome = (effect: Effect.Effect<string, { readonly reason: string }>) =>
  effect.pipe(Effect.catch((e) => Effect.succeed(`${ERROR_MARKER}${e.reason}`)))

const expectError = (text: string, pattern: RegExp) => {
  assert.isTrue(text.startsWith(ERROR_MARKER), `expected a ToolError, got: ${text.slice(0, 300)}`)
  assert.match(text.slice(ERROR_MARKER.length), pattern)
}
const expectOk = (text: string): string => {
  assert.isFalse(text.startsWith(ERROR_MARKER), `expected success, got error: ${text.slice(ERROR_MARKER.length)}`)
  return text
}

/** Lone surrogates mean a character was split; valid UTF-16 survives a UTF-8 round trip unchanged. */
const wellFormed = (s: string) => Buffer.from(s, "utf8").toString("utf8") === s

export const workspaceToolCases = <E>(acquire: Effect.Effect<SandboxSession, E, Scope.Scope>) => {
  const setup = Effect.gen(function*() {
    const session = yield* acquire
    const root = yield* hostRoot(session)
    const tools: Record<"bash" | "read" | "write" | "edit", Tool> = {
      bash: Bash.make(session),
      read: Read.make(session),
      write: Write.make(session),
      edit: Edit.make(session)
    }
    const run = (tool: keyof typeof tools, input: unknown) => outcome(tools[tool].execute(input, context))
    return { session, root, run }
  })

  describe("path confinement", () => {
    it.live("refuses `..` that climbs out, for every tool", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        mkdirSync(join(root, "sub"))
        for (const path of ["../escape.txt", "sub/../../escape.txt", "/workspace/../escape.txt"]) {
          expectError(yield* run("read", { path }), /outside the workspace/)
          expectError(yield* run("write", { path, content: "x" }), /outside the workspace/)
          expectError(yield* run("edit", { path, old_text: "a", new_text: "b" }), /outside the workspace/)
        }
        expectError(yield* run("bash", { command: "pwd", cwd: ".." }), /outside the workspace/)
        assert.isFalse(existsSync(join(dirname(root), "escape.txt")))
        // `..` that stays inside is just a path.
        writeFileSync(join(root, "inside.txt"), "ok\n")
        assert.include(expectOk(yield* run("read", { path: "sub/../inside.txt" })), "ok")
      }))

    it.live("refuses absolute paths outside /workspace and accepts those inside", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        expectError(yield* run("read", { path: "/etc/passwd" }), /outside the workspace/)
        expectError(yield* run("write", { path: "/tmp/anna-escape.txt", content: "x" }), /outside the workspace/)
        assert.isFalse(existsSync("/tmp/anna-escape.txt"))
        expectError(yield* run("edit", { path: "/etc/hostname", old_text: "a", new_text: "b" }), /outside the workspace/)
        expectError(yield* run("read", { path: root }), /outside the workspace/)
        writeFileSync(join(root, "a.txt"), "alpha\n")
        assert.include(expectOk(yield* run("read", { path: "/workspace/a.txt" })), "alpha")
      }))

    it.live("refuses symlinks that lead outside: no read, no write or edit through them", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        const outside = yield* outsideFolder
        writeFileSync(join(outside, "secret.txt"), "top secret\n")
        symlinkSync(outside, join(root, "dirlink"))
        symlinkSync(join(outside, "secret.txt"), join(root, "filelink"))
        symlinkSync(join(outside, "not-yet.txt"), join(root, "dangling"))
        symlinkSync("../../", join(root, "relative-up"))

        for (const path of ["dirlink/secret.txt", "filelink", "relative-up"]) {
          const read = yield* run("read", { path })
          expectError(read, /outside the workspace/)
          assert.notInclude(read, "top secret")
        }
        expectError(yield* run("read", { path: "dirlink" }), /outside the workspace/)
        expectError(yield* run("write", { path: "filelink", content: "pwned" }), /outside the workspace/)
        expectError(yield* run("write", { path: "dirlink/new.txt", content: "pwned" }), /outside the workspace/)
        expectError(yield* run("write", { path: "dangling", content: "pwned" }), /outside the workspace/)
        expectError(yield* run("write", { path: "dirlink/deeper/new.txt", content: "pwned" }), /outside the workspace/)
        expectError(yield* run("edit", { path: "filelink", old_text: "top", new_text: "pwned" }), /outside the workspace/)
        expectError(yield* run("bash", { command: "pwd", cwd: "dirlink" }), /outside the workspace/)

        assert.strictEqual(readFileSync(join(outside, "secret.txt"), "utf8"), "top secret\n")
        assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
        // The links themselves are untouched.
        assert.isTrue(lstatSync(join(root, "filelink")).isSymbolicLink())
        assert.isTrue(lstatSync(join(root, "dangling")).isSymbolicLink())
      }))

    it.live("follows symlinks that stay inside the workspace", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        mkdirSync(join(root, "real"))
        writeFileSync(join(root, "real", "a.txt"), "one\n")
        symlinkSync("real", join(root, "alias"))
        symlinkSync("real/a.txt", join(root, "a-link.txt"))

        assert.include(expectOk(yield* run("read", { path: "alias/a.txt" })), "one")
        expectOk(yield* run("write", { path: "alias/b.txt", content: "two\n" }))
        assert.strictEqual(readFileSync(join(root, "real", "b.txt"), "utf8"), "two\n")
        expectOk(yield* run("edit", { path: "a-link.txt", old_text: "one", new_text: "uno" }))
        assert.strictEqual(readFileSync(join(root, "real", "a.txt"), "utf8"), "uno\n")
        // Writing through a link updates its target; the link stays a link.
        expectOk(yield* run("write", { path: "a-link.txt", content: "eins\n" }))
        assert.isTrue(lstatSync(join(root, "a-link.txt")).isSymbolicLink())
        assert.strictEqual(readFileSync(join(root, "real", "a.txt"), "utf8"), "eins\n")
      }))
  })

  describe("read", () => {
    it.live("shows numbered lines, a range, and where to continue", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        writeFileSync(join(root, "f.txt"), Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n") + "\n")
        const all = expectOk(yield* run("read", { path: "f.txt" }))
        assert.strictEqual(all.split("\n").length, 10)
        assert.strictEqual(all.split("\n")[0], "     1\tline 1")
        assert.strictEqual(all.split("\n")[9], "    10\tline 10")

        const range = expectOk(yield* run("read", { path: "f.txt", offset: 3, limit: 2 }))
        assert.strictEqual(range, "     3\tline 3\n     4\tline 4\n[showing lines 3–4 of 10; continue with offset=5]")
        assert.strictEqual(expectOk(yield* run("read", { path: "f.txt", offset: 9, limit: 50 })), "     9\tline 9\n    10\tline 10")
        expectError(yield* run("read", { path: "f.txt", offset: 11 }), /offset 11 is past the end of f\.txt, which has 10 lines/)
        expectError(yield* run("read", { path: "f.txt", offset: 0 }), /invalid input/)
      }))

    it.live("cuts at the budget on a line boundary and continues from there", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        const line = "x".repeat(99)
        writeFileSync(join(root, "big.txt"), `${line}\n`.repeat(1000))
        const first = expectOk(yield* run("read", { path: "big.txt" }))
        assert.isAtMost(first.length, Read.READ_BUDGET + 200)
        const note = /\[showing lines 1–(\d+) of 1,000; continue with offset=(\d+)\]$/.exec(first)
        assert.isNotNull(note)
        const shown = Number(note?.[1])
        assert.strictEqual(Number(note?.[2]), shown + 1)
        // Every shown line is whole.
        for (const l of first.split("\n").slice(0, -1)) assert.strictEqual(l.split("\t")[1], line)
        const next = expectOk(yield* run("read", { path: "big.txt", offset: shown + 1, limit: 1 }))
        assert.isTrue(next.startsWith(`${String(shown + 1).padStart(6)}\t${line}`))
      }))

    it.live("never splits a character when a line is longer than the budget", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        // Shift the cut through every position of the 2-unit emoji and the 3-byte CJK character.
        for (let shift = 0; shift < 4; shift++) {
          const text = "a".repeat(shift) + "😀中".repeat(Read.READ_BUDGET)
          writeFileSync(join(root, "wide.txt"), `${text}\nsecond\n`)
          const out = expectOk(yield* run("read", { path: "wide.txt" }))
          assert.isTrue(wellFormed(out), `split character at shift ${shift}`)
          const [numbered = "", ...notes] = out.split("\n")
          const content = numbered.slice(numbered.indexOf("\t") + 1)
          assert.isTrue(text.startsWith(content))
          assert.isAbove(content.length, Read.READ_BUDGET - 20)
          assert.match(notes.join("\n"), /\[line 1 was cut: [\d,]+ more characters not shown/)
          assert.include(notes.join("\n"), "continue with offset=2")
        }
      }))

    it.live("reports binary files by size instead of content", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        writeFileSync(join(root, "nul.bin"), Buffer.from([0x68, 0x69, 0x00, 0x21]))
        writeFileSync(join(root, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])) // "café" in Latin-1
        writeFileSync(join(root, "cut.txt"), Buffer.from("中", "utf8").subarray(0, 2))
        assert.strictEqual(expectOk(yield* run("read", { path: "nul.bin" })), "binary file, 4 bytes (nul.bin); not shown")
        assert.match(expectOk(yield* run("read", { path: "latin1.txt" })), /^binary file, 5 bytes/)
        assert.match(expectOk(yield* run("read", { path: "cut.txt" })), /^binary file, 2 bytes/)
        writeFileSync(join(root, "utf8.txt"), "café 中文 😀\n")
        assert.strictEqual(expectOk(yield* run("read", { path: "utf8.txt" })), "     1\tcafé 中文 😀")
      }))

    it.live("lists directories, reports missing and empty files, hides CR of CRLF", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        mkdirSync(join(root, "d", "inner"), { recursive: true })
        writeFileSync(join(root, "d", "b.txt"), "")
        writeFileSync(join(root, "d", "a.txt"), "")
        symlinkSync("a.txt", join(root, "d", "l"))
        assert.strictEqual(
          expectOk(yield* run("read", { path: "d" })),
          "d is a directory with 4 entries:\na.txt\nb.txt\ninner/\nl -> a.txt"
        )
        assert.strictEqual(expectOk(yield* run("read", { path: "d/inner" })), "d/inner is an empty directory")
        assert.strictEqual(expectOk(yield* run("read", { path: "d/a.txt" })), "(empty file)")
        expectError(yield* run("read", { path: "nope.txt" }), /^no such file: nope\.txt$/)
        writeFileSync(join(root, "crlf.txt"), "a\r\nb\r\n")
        assert.strictEqual(expectOk(yield* run("read", { path: "crlf.txt" })), "     1\ta\n     2\tb")
      }))
    it.live("refuses files too large to load and files that are not regular files", () =>
      Effect.gen(function*() {
        const { session, root, run } = yield* setup
        writeFileSync(join(root, "huge.log"), Buffer.alloc(10 * 1024 * 1024 + 1, 0x61))
        expectError(yield* run("read", { path: "huge.log" }), /huge\.log is 10,485,761 bytes, more than the 10 MiB this tool loads; use bash/)
        expectError(yield* run("edit", { path: "huge.log", old_text: "a", new_text: "b" }), /more than the 10 MiB/)
        const made = yield* session.exec("mkfifo pipe")
        assert.strictEqual(made.exitCode, 0, made.stderr)
        expectError(yield* run("read", { path: "pipe" }), /pipe is not a regular file/)
      }))
  })

  describe("write", () => {
    it.live("creates parents and reports the bytes written", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        const out = expectOk(yield* run("write", { path: "a/b/c.txt", content: "héllo 😀\n" }))
        assert.strictEqual(out, "wrote 12 bytes to a/b/c.txt (new file)")
        assert.strictEqual(readFileSync(join(root, "a", "b", "c.txt"), "utf8"), "héllo 😀\n")
        assert.deepStrictEqual(tempLeftovers(join(root, "a", "b")), [])
      }))

    it.live("replaces a file whole, by rename, keeping its permissions", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        const file = join(root, "script.sh")
        writeFileSync(file, "#!/bin/sh\necho a long previous content that must not survive\n")
        chmodSync(file, 0o750)
        const inode = statSync(file).ino
        const out = expectOk(yield* run("write", { path: "script.sh", content: "#!/bin/sh\necho new\n" }))
        assert.strictEqual(out, "wrote 19 bytes to script.sh (replaced the previous 61 bytes)")
        assert.strictEqual(readFileSync(file, "utf8"), "#!/bin/sh\necho new\n")
        // A new inode: the content was renamed into place, not rewritten in the old file.
        assert.notStrictEqual(statSync(file).ino, inode)
        assert.strictEqual(statSync(file).mode & 0o777, 0o750)
        assert.deepStrictEqual(readdirSync(root), ["script.sh"])
      }))

    it.live("fails cleanly on directories and files in the way, leaving no temp file", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        mkdirSync(join(root, "dir"))
        writeFileSync(join(root, "file.txt"), "keep\n")
        expectError(yield* run("write", { path: "dir", content: "x" }), /dir is a directory/)
        expectError(yield* run("write", { path: "dir/", content: "x" }), /names a directory/)
        expectError(yield* run("write", { path: "file.txt/child.txt", content: "x" }), /file\.txt\/child\.txt: /)
        expectError(yield* run("write", { path: "file.txt" }), /invalid input/)
        assert.strictEqual(readFileSync(join(root, "file.txt"), "utf8"), "keep\n")
        assert.deepStrictEqual(tempLeftovers(root), [])
        assert.deepStrictEqual(tempLeftovers(join(root, "dir")), [])
      }))
  })

  describe("edit", () => {
    it.live("replaces one exact occurrence and leaves every other byte alone", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        const file = join(root, "doc.txt")
        const before = "\uFEFFfirst line\r\nkeep  two spaces\tand tab\r\ntarget here\nlast line without newline 😀"
        writeFileSync(file, before)
        chmodSync(file, 0o600)
        const out = expectOk(yield* run("edit", { path: "doc.txt", old_text: "target", new_text: "$& replaced $1" }))
        assert.strictEqual(out, "edited doc.txt: replaced 1 occurrence at line 3")
        const expected = Buffer.from(before.replace("target", () => "$& replaced $1"), "utf8")
        assert.isTrue(readFileSync(file).equals(expected))
        assert.strictEqual(statSync(file).mode & 0o777, 0o600)
        assert.deepStrictEqual(tempLeftovers(root), [])
      }))

    it.live("fails when the text is missing or not unique, changing nothing", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        const file = join(root, "f.txt")
        writeFileSync(file, "a = 1\nb = 2\na = 1\nc = 3\na = 1\n")
        const inode = statSync(file).ino
        expectError(yield* run("edit", { path: "f.txt", old_text: "d = 4", new_text: "x" }), /old_text was not found in f\.txt/)
        expectError(
          yield* run("edit", { path: "f.txt", old_text: "a = 1", new_text: "a = 9" }),
          /old_text occurs 3 times in f\.txt \(lines 1, 3, 5\); .*replace_all/
        )
        expectError(yield* run("edit", { path: "f.txt", old_text: "", new_text: "x" }), /old_text is empty/)
        expectError(yield* run("edit", { path: "f.txt", old_text: "b = 2", new_text: "b = 2" }), /the same/)
        assert.strictEqual(readFileSync(file, "utf8"), "a = 1\nb = 2\na = 1\nc = 3\na = 1\n")
        assert.strictEqual(statSync(file).ino, inode)
      }))

    it.live("replace_all replaces every occurrence", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        writeFileSync(join(root, "f.txt"), "aaa\nb\naaa")
        const out = expectOk(yield* run("edit", { path: "f.txt", old_text: "aa", new_text: "x", replace_all: true }))
        // Non-overlapping, left to right: "aaa" holds one "aa".
        assert.strictEqual(out, "edited f.txt: replaced 2 occurrences (lines 1, 3)")
        assert.strictEqual(readFileSync(join(root, "f.txt"), "utf8"), "xa\nb\nxa")
      }))

    it.live("explains line-ending mismatches, refuses binary and missing files", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        writeFileSync(join(root, "win.txt"), "one\r\ntwo\r\n")
        expectError(yield* run("edit", { path: "win.txt", old_text: "one\ntwo", new_text: "x" }), /Windows line endings/)
        writeFileSync(join(root, "ws.txt"), "if (x) {\n    go()\n}\n")
        expectError(yield* run("edit", { path: "ws.txt", old_text: "if (x) {\n  go()\n}", new_text: "y" }), /different whitespace/)
        writeFileSync(join(root, "b.bin"), Buffer.from([1, 0, 2]))
        expectError(yield* run("edit", { path: "b.bin", old_text: "a", new_text: "b" }), /binary file \(3 bytes\)/)
        expectError(yield* run("edit", { path: "nope.txt", old_text: "a", new_text: "b" }), /no such file: nope\.txt \(use write/)
      }))
  })

  describe("bash", () => {
    it.live("reports the exit code with stdout and stderr apart", () =>
      Effect.gen(function*() {
        const { run } = yield* setup
        assert.strictEqual(expectOk(yield* run("bash", { command: "echo hello" })), "exit code: 0\n--- stdout ---\nhello")
        const mixed = expectOk(yield* run("bash", { command: "echo out; echo err >&2; exit 3" }))
        assert.strictEqual(mixed, "exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr")
        assert.strictEqual(expectOk(yield* run("bash", { command: "true" })), "exit code: 0\n(no output)")
        assert.strictEqual(expectOk(yield* run("bash", { command: "echo oops >&2; false" })), "exit code: 1\n--- stderr ---\noops")
      }))

    it.live("kills the command and its children at the timeout", () =>
      Effect.gen(function*() {
        const { session, run } = yield* setup
        const out = expectOk(yield* run("bash", { command: "sleep 30 & echo $! > bg.pid; echo started; sleep 30", timeout_seconds: 0.5 }))
        assert.isTrue(out.startsWith("[timed out after 0.5 s; the command and its children were killed]\n"), out)
        assert.include(out, "--- stdout ---\nstarted")
        // The background child is gone too (a zombie awaiting its reaper counts as gone).
        const check = yield* session.exec(
          `pid=$(cat bg.pid); state=$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null); if [ -z "$state" ] || [ "$state" = Z ]; then echo dead; else echo alive; fi`
        )
        assert.strictEqual(check.stdout.trim(), "dead")
      }))

    it.live("keeps the head and tail of huge output and says how much was left out", () =>
      Effect.gen(function*() {
        const { run } = yield* setup
        // 20,000 numbered lines of 10 bytes (200,000 bytes): far beyond the budget.
        const out = expectOk(yield* run("bash", { command: "i=0; while [ $i -lt 20000 ]; do printf '%09d\\n' $i; i=$((i+1)); done" }))
        assert.isAtMost(out.length, Bash.OUTPUT_BUDGET + 200)
        const lines = out.split("\n")
        assert.strictEqual(lines[2], "000000000")
        assert.strictEqual(lines.at(-1), "000019999")
        const marker = lines.find((l) => l.startsWith("[… "))
        const omitted = Number(/\[… ([\d,]+) bytes omitted …\]/.exec(marker ?? "")?.[1]?.replaceAll(",", ""))
        const kept = lines.filter((l) => /^\d{9}$/.test(l)).length
        assert.strictEqual(omitted + kept * 10, 200_000)
      }))

    it.live("mentions output the sandbox did not keep", () =>
      Effect.gen(function*() {
        const { run } = yield* setup
        const out = expectOk(yield* run("bash", { command: "head -c 2000000 /dev/zero | tr '\\0' a" }))
        assert.include(out, "[… a further 951,424 bytes of stdout were not captured (sandbox output limit) …]")
        assert.isAtMost(out.length, Bash.OUTPUT_BUDGET + 300)
      }))

    it.live("runs in cwd when given, inside the workspace only", () =>
      Effect.gen(function*() {
        const { root, run } = yield* setup
        mkdirSync(join(root, "sub"))
        writeFileSync(join(root, "sub", "here.txt"), "")
        writeFileSync(join(root, "file.txt"), "")
        assert.strictEqual(expectOk(yield* run("bash", { command: "ls", cwd: "sub" })), "exit code: 0\n--- stdout ---\nhere.txt")
        expectError(yield* run("bash", { command: "ls", cwd: "file.txt" }), /cwd file\.txt is not a directory/)
        expectError(yield* run("bash", { command: "ls", cwd: "missing" }), /cwd missing: no such file or directory/)
        expectError(yield* run("bash", { command: "" }), /invalid input/)
      }))
  })
}
