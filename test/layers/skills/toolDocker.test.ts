/**
 * The `skills` tool on a real Docker sandbox session (skipped with a warning without Docker): the
 * operator's skills and the user's own, listed, searched and used; a user's install (a folder or a
 * tarball in their workspace) lands in /workspace/skills/ only, read and written through the
 * confined file access; hostile workspace sources (links, a FIFO, `..` in a tarball, binary files)
 * refused; an operator skill can be neither replaced nor removed from a chat; another user sees none
 * of it.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { workspaceOf } from "../../../src/domain/sandbox/spec.ts"
import { DEFAULT_LIMITS } from "../../../src/domain/sandbox/types.ts"
import * as DockerSandbox from "../../../src/layers/sandbox/DockerSandbox.ts"
import * as FsSkills from "../../../src/layers/skills/FsSkills.ts"
import { skillsTool } from "../../../src/layers/tools/skills.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import type { SandboxSession } from "../../../src/services/Sandbox.ts"
import { dockerReady, TEST_IMAGE } from "../../support/docker.ts"
import { skillMd, tarball } from "./tarballs.ts"
import { removeTemp } from "../../support/cleanup.ts"

const setup = Effect.gen(function*() {
  const home = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-skills-tool-"))),
    (dir) => Effect.promise(() => removeTemp(dir))
  )
  const skills = yield* FsSkills.make.pipe(Effect.provide(AppConfig.at(home)))
  const sandbox = yield* DockerSandbox.make(new Docker())
  const start = (userId: string) =>
    sandbox.start({ agentId: "a", userId, workspace: workspaceOf(join(home, "workspaces"), "a", "user", userId), image: TEST_IMAGE, network: "disabled", limits: DEFAULT_LIMITS })
  const toolFor = (userId: string, session: SandboxSession) => {
    const tool = skillsTool(skills, { agentId: "a", userId, sessionKey: `a:cli:${userId}:dm`, enabled: () => true, sandbox: Effect.succeed(session) })
    return {
      ok: (input: unknown) => tool.execute(input, { sessionKey: `a:cli:${userId}:dm`, userId, agentId: "a" }),
      refused: (input: unknown) => tool.execute(input, { sessionKey: `a:cli:${userId}:dm`, userId, agentId: "a" }).pipe(Effect.flip, Effect.map((e) => e.reason))
    }
  }
  // The operator's global skill.
  mkdirSync(join(home, "skills", "deploy"), { recursive: true })
  writeFileSync(join(home, "skills", "deploy", "SKILL.md"), skillMd("deploy", "Deploy the service", "Operator steps: run scripts/go.sh."))
  mkdirSync(join(home, "skills", "deploy", "scripts"))
  writeFileSync(join(home, "skills", "deploy", "scripts", "go.sh"), "echo deploying\n")
  writeFileSync(join(home, "skills", "deploy", "logo.bin"), Buffer.from([0xff, 0x00, 0xfe]))
  const ann = yield* start("ann")
  const ws = workspaceOf(join(home, "workspaces"), "a", "user", "ann")
  const put = (path: string, text: string | Buffer) => {
    mkdirSync(join(ws, path, ".."), { recursive: true })
    writeFileSync(join(ws, path), text)
  }
  return { home, ws, put, ann: toolFor("ann", ann), bob: toolFor("bob", yield* start("bob")) }
})

describe.skipIf(!dockerReady)("the skills tool on the Docker sandbox", () => {
  it.effect("lists, installs from a folder and a tarball in the workspace, searches, uses, removes the user's own", () =>
    Effect.gen(function*() {
      const { ws, put, ann, bob } = yield* setup
      assert.strictEqual(yield* ann.ok({ action: "list" }), "- deploy (global): Deploy the service")
      put("src/mine/SKILL.md", skillMd("mine", "My own checklist", "Check twice."))
      put("src/mine/refs/notes.md", "notes")
      assert.strictEqual(yield* ann.ok({ action: "install", path: "/workspace/src/mine" }), "Installed skill: mine → /workspace/skills/mine.")
      assert.isTrue(existsSync(join(ws, "skills/mine/refs/notes.md")))
      put("pkg.tgz", tarball([{ path: "a/SKILL.md", text: skillMd("tar-one") }, { path: "b/SKILL.md", text: skillMd("tar-two") }]))
      assert.include(yield* ann.ok({ action: "install", path: "pkg.tgz" }), "Installed 2 skills: tar-one")

      assert.strictEqual(yield* ann.ok({ action: "search", query: "CHECKLIST own" }), "- mine (yours; successes 0, failures 0): My own checklist")
      assert.strictEqual(yield* ann.ok({ action: "search", query: "nothing-like-this" }), "No skill matches.")
      const used = yield* ann.ok({ action: "use", name: "mine" })
      assert.include(used, "Check twice.")
      assert.include(used, "refs/notes.md")
      // An operator skill's files are copied into the workspace, where the agent can run them.
      const deploy = yield* ann.ok({ action: "use", name: "deploy" })
      assert.include(deploy, "Operator steps: run scripts/go.sh.")
      assert.include(deploy, "This skill's folder is /workspace/.anna-skills/deploy/ (paths in the instructions are relative to it): scripts/go.sh.")
      assert.include(deploy, "Not copied (binary): logo.bin.")
      assert.strictEqual(readFileSync(join(ws, ".anna-skills/deploy/scripts/go.sh"), "utf8"), "echo deploying\n")

      // Another user of the same agent sees the operator's skills only.
      assert.strictEqual(yield* bob.ok({ action: "list" }), "- deploy (global): Deploy the service")
      assert.include(yield* bob.refused({ action: "use", name: "mine" }), "no skill named mine")

      assert.include(yield* ann.refused({ action: "install", path: "/workspace/src/mine" }), "already have a skill named mine")
      assert.include(yield* ann.ok({ action: "install", path: "/workspace/src/mine", force: true }), "Installed skill: mine")
      assert.strictEqual(yield* ann.ok({ action: "remove", name: "mine" }), "Removed your skill mine.")
      assert.isFalse(existsSync(join(ws, "skills/mine")))
      assert.notInclude(yield* ann.ok({ action: "list" }), "mine")
    }))

  it.effect("refuses hostile sources, operator names, and removing the operator's skills", () =>
    Effect.gen(function*() {
      const { home, ws, put, ann } = yield* setup
      put("bad/SKILL.md", skillMd("bad"))
      symlinkSync("/etc/passwd", join(ws, "bad/passwd"))
      assert.include(yield* ann.refused({ action: "install", path: "bad" }), "passwd: symbolic link (to /etc/passwd); links are refused")
      put("inner/SKILL.md", skillMd("inner"))
      symlinkSync("../bad", join(ws, "inner/up"))
      assert.include(yield* ann.refused({ action: "install", path: "inner" }), "symbolic link (to ../bad)")
      put("piped/SKILL.md", skillMd("piped"))
      execFileSync("mkfifo", [join(ws, "piped/fifo")])
      assert.include(yield* ann.refused({ action: "install", path: "piped" }), "FIFO")
      symlinkSync("/etc", join(ws, "etc"))
      assert.include(yield* ann.refused({ action: "install", path: "/workspace/etc" }), "cannot read")
      put("evil.tar.gz", tarball([{ path: "SKILL.md", text: skillMd("evil") }, { path: "../../../../skills/x/SKILL.md", text: "pwned" }]))
      assert.include(yield* ann.refused({ action: "install", path: "evil.tar.gz" }), "leads out of the folder")
      put("bin/SKILL.md", skillMd("bin"))
      put("bin/blob", Buffer.from([0xff, 0xfe, 0x00, 0x80]))
      assert.include(yield* ann.refused({ action: "install", path: "bin" }), "binary files cannot be installed from a chat")
      put("fake-deploy/SKILL.md", skillMd("deploy", "Hijacked"))
      assert.include(yield* ann.refused({ action: "install", path: "fake-deploy", force: true }), "a skill the operator installed")
      assert.include(yield* ann.refused({ action: "remove", name: "deploy" }), "installed by the operator")
      assert.include(yield* ann.refused({ action: "remove", name: "../../skills" }), "no skill named")
      assert.isFalse(existsSync(join(ws, "skills")))
      assert.isTrue(existsSync(join(home, "skills/deploy/SKILL.md")))
      assert.include(yield* ann.refused({ action: "use" }), "use needs name")
    }))
})
