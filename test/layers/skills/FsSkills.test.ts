/**
 * The operator's skills on a real folder: installs from a folder, a real git clone (file://) and
 * tarballs; every hostile source refused with nothing installed (each check fails without its guard:
 * `../`, absolute paths, symlinks out and in, hard links, devices, FIFOs, a traversing name);
 * --force; agent skills shadowing global ones; removal; and the prompt list read once until a change.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { PollFiles } from "../../../src/domain/config/filePolling.ts"
import { execFileSync } from "node:child_process"
import { createServer, type Server } from "node:http"
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, watch, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as FsSkills from "../../../src/layers/skills/FsSkills.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { tempDir } from "../../support/db.ts"
import { skillMd, type TarEntry, tarball } from "./tarballs.ts"

/** A temporary folder removed with the test's scope. */
const scopedDir = (prefix: string) => Effect.acquireRelease(Effect.sync(() => tempDir(prefix)), (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true })))

const setup = Effect.gen(function*() {
  const home = yield* scopedDir("anna-skills-")
  const skills = yield* FsSkills.make.pipe(Effect.provide(AppConfig.at(home)))
  return { home, skills, src: yield* scopedDir("anna-skill-src-") }
})

const folderWith = (root: string, files: Readonly<Record<string, string>>) => {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

/** Nothing but what was there before: no skill folder, no temporary one. */
const globalEntries = (home: string) => (existsSync(join(home, "skills")) ? readdirSync(join(home, "skills")) : [])

describe("installing skills", () => {
  it.effect("from a folder: files copied (scripts stay executable), listed, refused twice without --force, replaced with it", () =>
    Effect.gen(function*() {
      const { home, skills, src } = yield* setup
      folderWith(src, { "SKILL.md": skillMd("pdf"), "scripts/run.sh": "echo hi\n" })
      chmodSync(join(src, "scripts/run.sh"), 0o755)
      const [installed] = yield* skills.install(src, { force: false })
      assert.deepStrictEqual([installed?.name, installed?.scope, installed?.path], ["pdf", "global", join(home, "skills", "pdf")])
      assert.strictEqual(readFileSync(join(home, "skills/pdf/scripts/run.sh"), "utf8"), "echo hi\n")
      assert.isTrue(execFileSync("stat", ["-c", "%a", join(home, "skills/pdf/scripts/run.sh")]).toString().trim() === "755")
      assert.deepStrictEqual((yield* skills.list()).map((s) => [s.name, s.description]), [["pdf", "The pdf skill"]])
      const again = yield* Effect.flip(skills.install(src, { force: false }))
      assert.strictEqual(again._tag, "SkillExists")
      writeFileSync(join(src, "SKILL.md"), skillMd("pdf", "Better PDFs"))
      yield* skills.install(src, { force: true })
      assert.deepStrictEqual((yield* skills.list()).map((s) => s.description), ["Better PDFs"])
      assert.deepStrictEqual(globalEntries(home), ["pdf"])
    }))

  it.effect("from a real git clone (file:// URL), several skills in subfolders, the .git folder left out", () =>
    Effect.gen(function*() {
      const { home, skills, src } = yield* setup
      folderWith(src, { "skills/alpha/SKILL.md": skillMd("alpha"), "skills/beta/SKILL.md": skillMd("beta"), "skills/beta/ref.md": "ref", "README.md": "repo" })
      const git = (...args: Array<string>) => execFileSync("git", args, { cwd: src, env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } })
      git("init", "-q", "-b", "main")
      git("add", ".")
      git("commit", "-q", "-m", "skills")
      const installed = yield* skills.install(`file://${src}`, { force: false })
      assert.deepStrictEqual(installed.map((s) => s.name), ["alpha", "beta"])
      assert.deepStrictEqual(readdirSync(join(home, "skills/beta")).sort(), ["SKILL.md", "ref.md"])
      // A tag and a folder of the repository; a folder path that climbs out is refused.
      writeFileSync(join(src, "skills/alpha/SKILL.md"), skillMd("alpha", "Alpha v2"))
      git("commit", "-q", "-am", "v2")
      git("tag", "v2")
      const [v2] = yield* skills.install(`file://${src}#v2:skills/alpha`, { force: true })
      assert.deepStrictEqual([v2?.name, v2?.description], ["alpha", "Alpha v2"])
      assert.strictEqual((yield* Effect.flip(skills.install(`file://${src}#:../..`, { force: true })))._tag, "SkillUnsafe")
      const missing = yield* Effect.flip(skills.install(`file://${src}/nope.git`, { force: false }))
      assert.strictEqual(missing._tag, "SkillSourceError")
      assert.include(missing.message, "git clone failed")
    }))

  it.effect("from a .tgz and a plain .tar, for one agent", () =>
    Effect.gen(function*() {
      const { home, skills, src } = yield* setup
      writeFileSync(join(src, "s.tgz"), tarball([{ path: "pkg/", type: "Directory" }, { path: "pkg/SKILL.md", text: skillMd("tgz") }, { path: "pkg/run.sh", text: "x", mode: 0o755 }]))
      writeFileSync(join(src, "s.tar"), tarball([{ path: "./SKILL.md", text: skillMd("plain") }], false))
      const [a] = yield* skills.install(join(src, "s.tgz"), { agentId: "ops", force: false })
      const [b] = yield* skills.install(join(src, "s.tar"), { agentId: "ops", force: false })
      assert.deepStrictEqual([a?.path, a?.scope, a?.agentId, b?.name], [join(home, "workspaces/ops/skills/tgz"), "agent", "ops", "plain"])
      assert.deepStrictEqual(readdirSync(join(home, "workspaces/ops/skills/tgz")).sort(), ["SKILL.md", "run.sh"])
      writeFileSync(join(src, "junk.tgz"), "not a tarball at all")
      assert.strictEqual((yield* Effect.flip(skills.install(join(src, "junk.tgz"), { force: false })))._tag, "SkillSourceError")
    }))
})

describe("installing a tarball over http", () => {
  it.effect("downloads it (a 404 is a clear refusal)", () =>
    Effect.gen(function*() {
      const { skills } = yield* setup
      const body = tarball([{ path: "SKILL.md", text: skillMd("web") }])
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<Server>((done) => {
            const s = createServer((req, res) => {
              if (req.url === "/web.tgz") res.writeHead(200, { "content-type": "application/gzip" }).end(body)
              else res.writeHead(404).end()
            })
            s.listen(0, "127.0.0.1", () => done(s))
          })
        ),
        (s) => Effect.promise(() => new Promise<void>((done) => s.close(() => done())))
      )
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const [web] = yield* skills.install(`http://127.0.0.1:${port}/web.tgz`, { force: false })
      assert.strictEqual(web?.name, "web")
      const missing = yield* Effect.flip(skills.install(`http://127.0.0.1:${port}/gone.tar.gz`, { force: false }))
      assert.include(missing.message, "download failed: HTTP 404")
    }))
})

describe("hostile sources are refused whole", () => {
  const ok: TarEntry = { path: "SKILL.md", text: skillMd("evil") }
  const cases: ReadonlyArray<[string, TarEntry, string]> = [
    ["a ../ path", { path: "../evil", text: "pwned" }, "leads out of the folder"],
    ["a nested ../ path", { path: "docs/../../evil", text: "pwned" }, "leads out of the folder"],
    ["an absolute path", { path: "/tmp/anna-evil", text: "pwned" }, "absolute path"],
    ["a symlink to /etc/passwd", { path: "passwd", type: "SymbolicLink", linkpath: "/etc/passwd" }, "symbolic link (to /etc/passwd)"],
    ["a symlink ../../x", { path: "x", type: "SymbolicLink", linkpath: "../../x" }, "symbolic link (to ../../x)"],
    ["a hard link", { path: "hard", type: "Link", linkpath: "/etc/passwd" }, "hard link"],
    ["a device file", { path: "dev", type: "CharacterDevice" }, "device file"],
    ["a FIFO", { path: "fifo", type: "FIFO" }, "FIFO"]
  ]
  for (const [label, entry, says] of cases) {
    it.effect(`in a tarball: ${label}`, () =>
      Effect.gen(function*() {
        const { home, skills, src } = yield* setup
        writeFileSync(join(src, "evil.tgz"), tarball([ok, entry]))
        const e = yield* Effect.flip(skills.install(join(src, "evil.tgz"), { force: false }))
        assert.strictEqual(e._tag, "SkillUnsafe")
        assert.include(e.message, says)
        assert.deepStrictEqual(globalEntries(home), [])
        assert.isFalse(existsSync("/tmp/anna-evil"))
      }))
  }

  it.effect("in a folder: a symlink out (and even one that stays inside), a FIFO, a hard link is just a file", () =>
    Effect.gen(function*() {
      const { home, skills, src } = yield* setup
      const out = folderWith(join(src, "out"), { "SKILL.md": skillMd("out") })
      symlinkSync("/etc/passwd", join(out, "passwd"))
      const inside = folderWith(join(src, "inside"), { "SKILL.md": skillMd("inside"), "a.md": "a" })
      symlinkSync("a.md", join(inside, "b.md"))
      const fifo = folderWith(join(src, "fifo"), { "SKILL.md": skillMd("fifo") })
      execFileSync("mkfifo", [join(fifo, "pipe")])
      const linkedSkill = join(src, "linked")
      symlinkSync(out, linkedSkill)
      for (const [dir, says] of [[out, "symbolic link (to /etc/passwd)"], [inside, "symbolic link (to a.md)"], [fifo, "FIFO"], [linkedSkill, "symbolic link"]] as const) {
        const e = yield* Effect.flip(skills.install(dir, { force: false }))
        assert.strictEqual(e._tag, "SkillUnsafe", dir)
        assert.include(e.message, says)
      }
      assert.deepStrictEqual(globalEntries(home), [])
      // A hard link is one more name of a regular file: its bytes are copied, no link is made.
      const hard = folderWith(join(src, "hard"), { "SKILL.md": skillMd("hard"), "data.txt": "data" })
      linkSync(join(hard, "data.txt"), join(hard, "copy.txt"))
      yield* skills.install(hard, { force: false })
      assert.strictEqual(readFileSync(join(home, "skills/hard/copy.txt"), "utf8"), "data")
    }))

  it.effect("a name that would traverse (front matter `name: ../../x`) is refused", () =>
    Effect.gen(function*() {
      const { home, skills, src } = yield* setup
      folderWith(src, { "SKILL.md": "---\nname: ../../x\ndescription: d\n---\nbody\n" })
      const e = yield* Effect.flip(skills.install(src, { force: false }))
      assert.strictEqual(e._tag, "SkillInvalid")
      assert.include(e.message, "is not a skill name")
      assert.deepStrictEqual(globalEntries(home), [])
      assert.isFalse(existsSync(join(home, "x")))
    }))
})

describe("scopes and the prompt's list", () => {
  it.effect("an agent's own skill shadows the global one; remove; the prompt list is read once until something changes", () =>
    Effect.gen(function*() {
      const { home, skills, src } = yield* setup
      const g = folderWith(join(src, "g"), { "SKILL.md": skillMd("deploy", "Global deploy") })
      const o = folderWith(join(src, "o"), { "SKILL.md": skillMd("deploy", "Ops deploy") })
      const other = folderWith(join(src, "other"), { "SKILL.md": skillMd("notes", "Take notes") })
      yield* skills.install(g, { force: false })
      yield* skills.install(other, { force: false })
      yield* skills.install(o, { agentId: "ops", force: false })
      const seen = (agentId: string) => skills.list(agentId).pipe(Effect.map((l) => l.map((s) => `${s.name}:${s.scope}:${s.description}`)))
      assert.deepStrictEqual(yield* seen("ops"), ["deploy:agent:Ops deploy", "notes:global:Take notes"])
      assert.deepStrictEqual(yield* seen("dev"), ["deploy:global:Global deploy", "notes:global:Take notes"])
      assert.strictEqual((yield* skills.read("deploy", "ops")).body, "Instructions of deploy.")
      assert.strictEqual((yield* skills.all).length, 3)

      const reads = skills.reads
      assert.deepStrictEqual((yield* skills.forPrompt("ops")).map((s) => s.description), ["Ops deploy", "Take notes"])
      const first = yield* reads
      yield* skills.forPrompt("ops")
      yield* skills.forPrompt("ops")
      assert.strictEqual(yield* reads, first, "no read while nothing changed")
      // An in-place edit of an installed SKILL.md is seen (its folder is watched).
      writeFileSync(join(home, "skills/notes/SKILL.md"), skillMd("notes", "Take better notes"))
      yield* waitFor(skills.forPrompt("ops").pipe(Effect.map((l) => l.some((s) => s.description === "Take better notes"))))
      yield* skills.remove("deploy", "ops")
      assert.deepStrictEqual((yield* skills.forPrompt("ops")).map((s) => s.description), ["Global deploy", "Take better notes"])
      assert.strictEqual((yield* Effect.flip(skills.remove("deploy", "ops")))._tag, "SkillNotFound")
      assert.strictEqual((yield* Effect.flip(skills.remove("../skills", undefined)))._tag, "SkillNotFound")
    }))
})

describe("the prompt list on a shared volume (PollFiles: a cluster)", () => {
  it.effect("watches nothing: a list is kept for the interval, then read again", () =>
    Effect.gen(function*() {
      const home = yield* scopedDir("anna-skills-")
      const src = yield* scopedDir("anna-skill-src-")
      const skills = yield* FsSkills.make.pipe(Effect.provide(AppConfig.at(home)), Effect.provideService(PollFiles, 2_000))
      yield* skills.install(folderWith(join(src, "n"), { "SKILL.md": skillMd("notes", "Take notes") }), { force: false })
      assert.deepStrictEqual((yield* skills.forPrompt("ops")).map((s) => s.description), ["Take notes"])
      const first = yield* skills.reads
      // Another machine edits the skill: not seen (nor read) within the interval, seen after it.
      writeFileSync(join(home, "skills/notes/SKILL.md"), skillMd("notes", "Take better notes"))
      yield* TestClock.adjust(1_999)
      assert.deepStrictEqual((yield* skills.forPrompt("ops")).map((s) => s.description), ["Take notes"])
      assert.strictEqual(yield* skills.reads, first)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual((yield* skills.forPrompt("ops")).map((s) => s.description), ["Take better notes"])
      assert.strictEqual(yield* skills.reads, first + 1)
    }))
})

describe("the prompt list without any skills folder", () => {
  it.effect("is not read again when other files next to the missing folders change; a first skill is seen", () =>
    Effect.gen(function*() {
      const { home, skills, src } = yield* setup
      const agentFolder = join(home, "workspaces", "ops")
      mkdirSync(agentFolder, { recursive: true })
      assert.deepStrictEqual(yield* skills.forPrompt("ops"), [])
      const first = yield* skills.reads
      // The database and the agent's SYSTEM.md change all the time; neither is a skills folder. Once
      // this test's own watch on the same folder saw the change, the layer's watch got it too (one
      // inotify watch per folder in the process, its events handed to every watcher at once).
      yield* seen(home, "anna.db", () => writeFileSync(join(home, "anna.db"), "x"))
      yield* seen(agentFolder, "SYSTEM.md", () => writeFileSync(join(agentFolder, "SYSTEM.md"), "x"))
      yield* skills.forPrompt("ops")
      assert.strictEqual(yield* skills.reads, first, "not read again for files that are not skills")
      // A skills folder appearing (renamed into place with a skill in it) is seen.
      folderWith(join(src, "skills"), { "late/SKILL.md": skillMd("late") })
      renameSync(join(src, "skills"), join(home, "skills"))
      yield* waitFor(skills.forPrompt("ops").pipe(Effect.map((l) => l.length === 1)))
    }))
})

/** Runs `change` and resolves once a watch on `dir` saw `name` change. */
const seen = (dir: string, name: string, change: () => void) =>
  Effect.callback<void>((resume) => {
    const w = watch(dir, { persistent: false }, (_e, f) => {
      if (f !== name) return
      w.close()
      resume(Effect.void)
    })
    change()
  })

/** Retries `check` until it holds: the watch event arrives asynchronously (a deadline, not a sleep standing in for it). */
const waitFor = (check: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline) {
      if (yield* check) return
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 10)))
    }
    assert.fail("the change was not seen")
  })
