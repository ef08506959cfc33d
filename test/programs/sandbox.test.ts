/**
 * `anna sandbox` and `anna doctor` as a user runs them, against the real Docker engine (skipped with
 * a warning without one, unless ANNA_REQUIRE_DOCKER=1).
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { copyFileSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { imageOf, mounts } from "../../src/layers/sandbox/workspaceDisk.ts"
import { annaEnv, newHome } from "../support/cli.ts"
import { BUSYBOX, diskMountable, dockerReady, TEST_IMAGE } from "../support/docker.ts"
import { removeTemp } from "../support/cleanup.ts"

const homes: Array<string> = []
afterAll(async () => {
  for (const h of homes) await removeTemp(h)
})
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

describe.skipIf(!dockerReady)("anna sandbox and doctor (real Docker engine)", () => {
  it("doctor says what is missing and how to get it", async () => {
    const h = home()
    const set = await annaEnv(h, {}, "agent", "set", "a1", "--image", "anna-missing:never")
    assert.strictEqual(set.code, 0, set.stderr)
    const r = await annaEnv(h, {}, "doctor", "--agent", "a1")
    assert.strictEqual(r.code, 1)
    assert.match(r.stdout, /ok {3}sandbox\/docker: engine \S+ \(API/)
    assert.include(r.stdout, "FIX  sandbox/image (agent a1): anna-missing:never is missing")
    assert.include(r.stdout, "anna sandbox build-image")
    assert.include(r.stdout, "FIX  providers/providers: no enabled provider")
    const json = await annaEnv(h, {}, "doctor", "--agent", "a1", "--json")
    const parsed = JSON.parse(json.stdout) as { ok: boolean; checks: Array<{ area: string; name: string; ok: boolean }> }
    assert.isFalse(parsed.ok)
    assert.isTrue(parsed.checks.some((c) => c.area === "sandbox" && c.name.startsWith("image") && !c.ok))
  })

  it("runs a command in the container, not on the host, with the workspace mounted", async () => {
    const h = home()
    mkdirSync(join(h, "workspaces", "default", "shared"), { recursive: true })
    writeFileSync(join(h, "workspaces", "default", "shared", "hello.txt"), "hi")
    const name = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", "hostname")
    assert.strictEqual(name.code, 0, name.stderr)
    assert.match(name.stdout.trim(), /^[0-9a-f]{12}$/)
    assert.notStrictEqual(name.stdout.trim(), hostname())
    const ls = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", "ls", "/workspace")
    assert.strictEqual(ls.stdout.trim(), "hello.txt")
    const quoted = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", "sh", "-c", "echo \"$0 it's\" >&2; exit 5")
    assert.deepStrictEqual([quoted.code, quoted.stderr.trim()], [5, "sh it's"])
    const slow = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--timeout", "1", "--", "sleep", "30")
    assert.strictEqual(slow.code, 124)
    assert.include(slow.stderr, "timed out")
    const net = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--network", "allow_all", "--", "cat", "/proc/net/dev")
    assert.include(net.stdout, "eth0")
    const noNet = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", "cat", "/proc/net/dev")
    assert.notInclude(noNet.stdout, "eth0")
  })

  it.skipIf(!diskMountable)("anna sandbox disks lists a workspace's own filesystem; unmount releases it; the next use mounts it again, files and all", async () => {
    const h = home()
    const write = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", "sh", "-c", "echo kept > /workspace/kept.txt; df -k /workspace | tail -1")
    assert.strictEqual(write.code, 0, write.stderr)
    const listed = JSON.parse((await annaEnv(h, {}, "sandbox", "disks", "--json")).stdout) as {
      canMount: boolean
      disks: Array<{ workspace: string; bytes: number; mounted: boolean; used: number | null }>
    }
    assert.isTrue(listed.canMount)
    assert.deepStrictEqual(listed.disks.map((d) => [d.workspace, d.bytes, d.mounted]), [[join(h, "workspaces", "default", "shared"), 1024 * 1024 * 1024, true]])
    const text = await annaEnv(h, {}, "sandbox", "disks")
    assert.match(text.stdout, /shared +1024\.0 MiB +[\d.]+ MiB +[\d.]+ MiB +yes/)
    const off = await annaEnv(h, {}, "sandbox", "unmount")
    assert.strictEqual(off.code, 0, off.stderr)
    assert.include(off.stdout, "Unmounted 1 workspace filesystem(s)")
    const after = JSON.parse((await annaEnv(h, {}, "sandbox", "disks", "--json")).stdout) as { disks: Array<{ mounted: boolean }> }
    assert.deepStrictEqual(after.disks.map((d) => d.mounted), [false])
    const again = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", "cat", "/workspace/kept.txt")
    assert.strictEqual(again.stdout.trim(), "kept")
    const doctor = await annaEnv(h, {}, "doctor")
    assert.include(doctor.stdout, "each workspace is a filesystem of its own")
  })

  it.skipIf(!diskMountable)("anna user remove unmounts and deletes the user's workspace filesystems; a new user of the same id starts empty", async () => {
    const h = home()
    assert.strictEqual((await annaEnv(h, {}, "user", "add", "bob")).code, 0)
    const wrote = await annaEnv(h, {}, "sandbox", "exec", "--user", "bob", "--image", TEST_IMAGE, "--", "sh", "-c", "echo private > /workspace/diary.txt")
    assert.strictEqual(wrote.code, 0, wrote.stderr)
    const workspace = join(h, "workspaces", "default", "users", "bob")
    assert.isTrue(existsSync(imageOf(workspace)))
    const removed = await annaEnv(h, {}, "user", "remove", "bob", "--delete-sessions")
    assert.strictEqual(removed.code, 0, removed.stderr)
    assert.isFalse(existsSync(imageOf(workspace)), "the image went")
    assert.isFalse((await mounts()).some((m) => m.point === workspace), "nothing is mounted there any more")
    assert.strictEqual((await annaEnv(h, {}, "user", "add", "bob")).code, 0)
    const fresh = await annaEnv(h, {}, "sandbox", "exec", "--user", "bob", "--image", TEST_IMAGE, "--", "ls", "-A", "/workspace")
    assert.strictEqual(fresh.code, 0, fresh.stderr)
    assert.strictEqual(fresh.stdout.trim(), "")
  })

  it("with the daemon out of reach, fails at once with a clear message and runs nothing", async () => {
    const h = home()
    const started = Date.now()
    const r = await annaEnv(h, { DOCKER_HOST: "unix:///nonexistent/docker.sock" }, "sandbox", "exec", "--image", TEST_IMAGE, "--", "touch", "/tmp/should-not-exist")
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /^anna: Docker is not reachable .*nothing runs on the host/)
    assert.isBelow(Date.now() - started, 15_000)
    const doctor = await annaEnv(h, { DOCKER_HOST: "unix:///nonexistent/docker.sock" }, "doctor")
    assert.include(doctor.stdout, "FIX  sandbox/docker")
  })
})

describe("anna sandbox build-image without a source flag", () => {
  it("says how to get a static busybox when PATH has none (a dynamic one is named and passed over)", async () => {
    const h = home()
    const bin = join(h, "bin")
    mkdirSync(bin)
    // A dynamically linked program named busybox: it would not run in an image without libc.
    copyFileSync("/bin/ls", join(bin, "busybox"))
    const r = await annaEnv(h, { PATH: bin }, "sandbox", "build-image")
    assert.strictEqual(r.code, 2)
    const first = r.stderr.split("\n")[0] ?? ""
    assert.include(first, "no statically linked busybox on PATH")
    assert.include(first, `${join(bin, "busybox")} (not statically linked)`)
    assert.include(first, "apt-get install busybox-static")
  })
})

describe.skipIf(!dockerReady)("anna sandbox build-image finds the machine's static busybox (real Docker engine)", () => {
  it("builds a working image from the static busybox on PATH", async () => {
    const h = home()
    const bin = join(h, "bin")
    mkdirSync(bin)
    symlinkSync(BUSYBOX, join(bin, "busybox"))
    const tag = `anna-sandbox:auto-${process.pid}`
    try {
      const r = await annaEnv(h, { PATH: `${bin}:${process.env.PATH ?? ""}` }, "sandbox", "build-image", "--tag", tag)
      assert.strictEqual(r.code, 0, r.stderr)
      assert.include(r.stderr, `Using the static busybox at ${join(bin, "busybox")}.`)
      assert.include(r.stdout, `Built image ${tag}; /bin/sh runs in it.`)
      const ran = await annaEnv(h, {}, "sandbox", "exec", "--image", tag, "--", "echo", "works")
      assert.strictEqual(ran.stdout.trim(), "works", ran.stderr)
    } finally {
      await new Docker().getImage(tag).remove({ force: true }).catch(() => undefined)
    }
  }, 120_000)
})
