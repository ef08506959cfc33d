/**
 * Hostile users, round three (the sandbox's part), end to end through the runtime with the real
 * Docker sandbox and a scripted model that makes the tool calls the user asks for:
 * - a workspace's disk quota is a bound against files, folders, symlinks, hard links and inodes
 *   (each workspace is its own filesystem of the quota's size, loop-mounted at the folder);
 * - the caps on live containers reach live conversations from their next tool call.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { DEFAULT_LIMITS } from "../../src/domain/sandbox/types.ts"
import * as DockerSandbox from "../../src/layers/sandbox/DockerSandbox.ts"
import { owner } from "../../src/layers/sandbox/DockerSandbox.ts"
import { AGENT_LABEL, OWNER_LABEL } from "../../src/layers/sandbox/docker/policy.ts"
import { detach, imageOf, mounts } from "../../src/layers/sandbox/workspaceDisk.ts"
import { AgentStore } from "../../src/services/AgentStore.ts"
import { ConfigStore } from "../../src/services/ConfigStore.ts"
import { diskMountable, dockerReady, TEST_IMAGE, whenContainers } from "../support/docker.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { compliant, say } from "../support/hostileUser.ts"
import { configureAgent, runtimeStack, tempHome } from "../support/runtimeStack.ts"

let fake: FakeLlm
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

const MIB = 1024 * 1024

/** Whether the kernel lets this process grow a mounted ext4 (CAP_SYS_RESOURCE, which root has unless a container took it away). */
const canGrowMounted = (BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? "0"}`) & (1n << 24n)) !== 0n

/** Whether every container of the agent that this process started is gone (waits for the engine's events, false after 20 s). */
const agentContainersGone = (agentId: string) =>
  Effect.promise(() => whenContainers([`${AGENT_LABEL}=${agentId}`, `${OWNER_LABEL}=${owner()}`], (cs) => cs.length === 0, 20_000)).pipe(
    Effect.map((cs) => cs !== undefined)
  )

/**
 * What the workspace takes of the host's disk: its image's allocated blocks when it has one, else
 * the allocated blocks of everything in the folder (du, links not followed).
 */
const hostBytes = (workspace: string): number => {
  const image = imageOf(workspace)
  if (existsSync(image)) return statSync(image).blocks * 512
  return Number(execFileSync("du", ["-s", "--block-size=1", workspace], { encoding: "utf8" }).split(/\s/)[0])
}

/** Runs a Node script in the container (the test image has Node), as the user asked for it. */
const node = (script: string) => `RUN: node -e '${script}'`

const liveContainers = (agentId: string) =>
  Effect.promise(async () => (await new Docker().listContainers({ filters: { label: [`dev.anna.agent=${agentId}`] } })).length)

describe.skipIf(!dockerReady || !diskMountable)("e2e: hostile users, round three — the workspace disk is a bound", () => {
  it.live("folders, long symlinks, files and hard links stop at the quota; the host never pays more than it", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        const quota = 20 * MIB
        yield* configureAgent(fake, "a1", { tools: ["bash"], sandboxImage: TEST_IMAGE, sandboxDiskMb: 20, sandboxWorkspace: "shared" })
        fake.respondWith(compliant)
        const workspace = join(home, "workspaces", "a1", "shared")

        // 30,000 folders (the attack, 117 MiB of blocks on the host's ext4 without a bound).
        const dirs = yield* say("mallory", node(`const fs=require("fs");let n=0,e="";for(;n<30000;n++){try{fs.mkdirSync("/workspace/d"+n)}catch(x){e=x.code;break}}console.log("dirs",n,e)`))
        assert.match(dirs.tool?.output ?? "", /dirs \d+ ENOSPC/, dirs.reply.slice(0, 400))
        assert.isAtMost(hostBytes(workspace), quota)
        yield* say("mallory", "RUN: rm -rf /workspace/d* && echo cleaned")

        // Symlinks with 1,000-byte targets (each a block of its own), as many as it takes.
        const links = yield* say("mallory", node(`const fs=require("fs");const t="x".repeat(1000);let n=0,e="";for(;n<50000;n++){try{fs.symlinkSync(t,"/workspace/l"+n)}catch(x){e=x.code;break}}console.log("links",n,e)`))
        assert.match(links.tool?.output ?? "", /links \d+ ENOSPC/, links.reply.slice(0, 400))
        assert.isAtMost(hostBytes(workspace), quota)
        yield* say("mallory", "RUN: rm -f /workspace/l* && echo cleaned")

        // Files (each under the per-file limit) until the disk is full, then hard links to one of them.
        const files = yield* say("mallory", node(`const fs=require("fs");let n=0,e="";for(;n<100;n++){try{fs.writeFileSync("/workspace/f"+n,Buffer.alloc(1<<20,1))}catch(x){e=x.code;break}}console.log("files",n,e)`))
        assert.match(files.tool?.output ?? "", /files \d+ ENOSPC/, files.reply.slice(0, 400))
        const hard = yield* say("mallory", node(`const fs=require("fs");let n=0,e="";for(;n<100000;n++){try{fs.linkSync("/workspace/f0","/workspace/h"+n)}catch(x){e=x.code;break}}console.log("hard",n,e)`))
        assert.match(hard.tool?.output ?? "", /hard \d+ (ENOSPC|EMLINK)/, hard.reply.slice(0, 400))
        assert.isAtMost(hostBytes(workspace), quota)
        // The image is exactly the quota; the host sees the workspace as that filesystem.
        assert.strictEqual(statSync(imageOf(workspace)).size, quota)
        const mounted = (yield* Effect.promise(() => mounts())).find((m) => m.point === workspace)
        assert.strictEqual(mounted?.fstype, "ext4")
        // Deleting gives the space back: the user can work again.
        const freed = yield* say("mallory", "RUN: rm -f /workspace/f* /workspace/h* && echo ok > /workspace/after.txt && cat /workspace/after.txt")
        assert.include(freed.tool?.output ?? "", "ok")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 180_000 })

  it.live("an existing workspace moves into its own filesystem as it was (links, FIFOs, modes); one over its quota keeps every file", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      const shared = join(home, "workspaces", "a1", "shared")
      mkdirSync(join(shared, "notes"), { recursive: true })
      writeFileSync(join(shared, "notes", "plan.md"), "the plan\n")
      symlinkSync("notes/plan.md", join(shared, "plan-link"))
      symlinkSync("/etc/shadow", join(shared, "outside-link"))
      execFileSync("mkfifo", [join(shared, "pipe")])
      writeFileSync(join(shared, "big.bin"), Buffer.alloc(3 * MIB, 7))
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash"], sandboxImage: TEST_IMAGE, sandboxDiskMb: 1, sandboxWorkspace: "shared" })
        fake.respondWith(compliant)
        const seen = yield* say("erin", "RUN: cat /workspace/plan-link; readlink /workspace/outside-link; ls -l /workspace/pipe | cut -c1; wc -c < /workspace/big.bin")
        const out = seen.tool?.output ?? ""
        assert.include(out, "the plan")
        assert.include(out, "/etc/shadow", "a link is copied as a link, never followed")
        assert.match(out, /^p$/m, "a FIFO stays a FIFO")
        assert.include(out, String(3 * MIB))
        assert.include(out, "over its disk quota", "3 MiB in a 1 MiB workspace: the model is told")
        assert.isTrue(existsSync(imageOf(shared)))
        // Nothing is left under the mount on the host's own disk.
        const under = yield* Effect.promise(() => mounts())
        assert.isTrue(under.some((m) => m.point === shared))
        assert.strictEqual(lstatSync(shared).isDirectory(), true)
        assert.strictEqual(readFileSync(join(shared, "notes", "plan.md"), "utf8"), "the plan\n", "the host's file tools see the same filesystem")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 120_000 })

  it.live("an existing folder is not moved into its filesystem while a container (of any anna) runs on it: its code could swap what mkfs reads", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      const workspace = join(home, "workspaces", "a1", "users", "u1")
      mkdirSync(workspace, { recursive: true })
      writeFileSync(join(workspace, "notes.txt"), "mine\n")
      const docker = new Docker()
      // A container of an older anna still running on the folder (the label is all anna's containers carry).
      const other = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const c = await docker.createContainer({
            Image: TEST_IMAGE,
            Cmd: ["/bin/sh", "-c", "sleep 600"],
            Labels: { "dev.anna.sandbox": "1" },
            HostConfig: { NetworkMode: "none", Binds: [`${workspace}:/workspace`] }
          })
          await c.start()
          return c
        }),
        (c) => Effect.promise(() => c.remove({ force: true }).catch(() => undefined))
      )
      const spec = { agentId: "a1", userId: "u1", workspace, image: TEST_IMAGE, network: "disabled", limits: { ...DEFAULT_LIMITS, diskMb: 4 } }
      const sandbox = yield* DockerSandbox.make(docker)
      const refused = yield* Effect.flip(sandbox.prepare(spec))
      assert.include(refused.message, `is used by sandbox container ${other.id.slice(0, 12)}`)
      assert.isFalse(existsSync(imageOf(workspace)), "nothing was moved")
      yield* Effect.promise(() => other.remove({ force: true }))
      assert.strictEqual(yield* sandbox.prepare(spec), workspace)
      assert.isTrue(existsSync(imageOf(workspace)))
      assert.strictEqual(readFileSync(join(workspace, "notes.txt"), "utf8"), "mine\n")
    })), { timeout: 60_000 })

  it.live("a raised quota grows the workspace's filesystem: mounted where the kernel allows it, else when it is next mounted", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      const workspace = join(home, "workspaces", "a1", "shared")
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash"], sandboxImage: TEST_IMAGE, sandboxDiskMb: 8, sandboxWorkspace: "shared" })
        fake.respondWith(compliant)
        const df = Effect.map(say("erin", "RUN: echo blocks $(df -k /workspace | tail -1 | awk '{print $2}')"), (r) => Number(/blocks (\d+)/.exec(r.tool?.output ?? "")?.[1] ?? 0))
        assert.isAtMost(yield* df, 8 * 1024)
        yield* (yield* AgentStore).update("a1", { sandboxDiskMb: 32 })
        const grownNow = yield* df
        if (canGrowMounted) assert.isAbove(grownNow, 24 * 1024, "grown online")
        else assert.isAtMost(grownNow, 8 * 1024, "the kernel refuses to grow a mounted ext4 without CAP_SYS_RESOURCE")
        // Not mounted anywhere (after a reboot, or `anna sandbox unmount`): grown before it is mounted again.
        yield* (yield* AgentStore).update("a1", { sandboxDiskMb: 40 })
        assert.isTrue(yield* agentContainersGone("a1"))
        yield* Effect.promise(() => detach(workspace))
        assert.isAbove(yield* df, 32 * 1024)
        assert.strictEqual(statSync(imageOf(workspace)).size, 40 * MIB)
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 120_000 })

  it.live("a workspace whose filesystem is not mounted (after a reboot) is mounted again before the host looks into it (the heartbeat's lstat)", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      const workspace = join(home, "workspaces", "a1", "users", "u1")
      const spec = { agentId: "a1", userId: "u1", workspace, image: TEST_IMAGE, network: "disabled", limits: { ...DEFAULT_LIMITS, diskMb: 4 } }
      const sandbox = yield* DockerSandbox.make(new Docker())
      yield* Effect.scoped(Effect.gen(function*() {
        const session = yield* sandbox.start(spec)
        yield* session.writeFile("HEARTBEAT.md", "check the build\n")
      }))
      yield* Effect.promise(() => detach(workspace))
      assert.isFalse(existsSync(join(workspace, "HEARTBEAT.md")), "unmounted: the folder under it is empty")
      assert.strictEqual(yield* sandbox.prepare(spec), workspace)
      assert.isTrue(lstatSync(join(workspace, "HEARTBEAT.md")).isFile())
    })), { timeout: 60_000 })
})

describe.skipIf(!dockerReady)("e2e: hostile users, round three — the soft quota (no filesystem of its own)", () => {
  it.live("a command that takes the workspace past the soft quota is stopped while it runs, not only measured after", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "a1", { tools: ["bash"], sandboxImage: TEST_IMAGE, sandboxDiskMb: 1, sandboxWorkspace: "shared" })
        yield* (yield* ConfigStore).setSetting("sandbox.disk_bound", "quota")
        fake.respondWith(compliant)
        // 20,000 folders, a hundred every 300 ms (a minute in all, if nothing stops it): each takes a block
        // of the host's disk, and none is a file that ulimit -f could stop. The watch, which measures every
        // few seconds even on a loaded machine, must stop it long before the end.
        const flood = (prefix: string) =>
          node(`const fs=require("fs");const w=new Int32Array(new SharedArrayBuffer(4));for(let n=0;n<20000;n++){fs.mkdirSync("/workspace/${prefix}"+n);if(n%100===0)Atomics.wait(w,0,0,300)}console.log("all made")`)
        const first = yield* say("mallory", flood("d"))
        assert.include(first.tool?.output ?? "", "the command was stopped: it took the workspace past its disk quota", first.reply.slice(0, 400))
        assert.notInclude(first.tool?.output ?? "", "all made")
        assert.isFalse(existsSync(imageOf(join(home, "workspaces", "a1", "shared"))), "no filesystem of its own in quota mode")
        // Over the quota now, the next command that grows anything is stopped too; deleting works.
        const second = yield* say("mallory", flood("e"))
        assert.include(second.tool?.output ?? "", "the command was stopped")
        assert.notInclude(second.tool?.output ?? "", "all made")
        const clean = yield* say("mallory", "RUN: rm -rf /workspace/d* /workspace/e* && echo cleaned")
        assert.include(clean.tool?.output ?? "", "cleaned")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true })))
    })), { timeout: 120_000 })
})

describe.skipIf(!dockerReady)("e2e: hostile users, round three — live-container caps reach live conversations", () => {
  it.live("lowering sandbox.max_per_user removes the user's idle containers at their next tool call; raising it lets a refused one start", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "caps", { tools: ["bash"], sandboxImage: TEST_IMAGE })
        const config = yield* ConfigStore
        fake.respondWith(compliant)
        for (const chat of ["c1", "c2", "c3"]) {
          const ran = yield* say("carol", "RUN: echo up", chat)
          assert.include(ran.tool?.output ?? "", "up")
        }
        assert.strictEqual(yield* liveContainers("caps"), 3)

        yield* config.setSetting("sandbox.max_per_user", "1")
        const next = yield* say("carol", "RUN: echo still-here", "c1")
        assert.include(next.tool?.output ?? "", "still-here")
        assert.strictEqual(yield* liveContainers("caps"), 1, "the two idle containers beyond the new cap are gone")
        const refused = yield* say("carol", "RUN: echo two", "c2")
        assert.isTrue(refused.tool?.isError)
        assert.include(refused.tool?.output ?? "", "already has 1 live sandbox")

        yield* config.setSetting("sandbox.max_per_user", "2")
        const allowed = yield* say("carol", "RUN: echo two", "c2")
        assert.include(allowed.tool?.output ?? "", "two", allowed.reply.slice(0, 300))
        assert.strictEqual(yield* liveContainers("caps"), 2)
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true, runnerIdle: "10 minutes" })))
    })), { timeout: 120_000 })

  it.live("lowering sandbox.max_total removes the least recently used idle containers of anyone", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      yield* Effect.gen(function*() {
        yield* configureAgent(fake, "total", { tools: ["bash"], sandboxImage: TEST_IMAGE })
        const config = yield* ConfigStore
        fake.respondWith(compliant)
        for (const user of ["u1", "u2", "u3"]) yield* say(user, "RUN: echo up")
        assert.strictEqual(yield* liveContainers("total"), 3)
        yield* config.setSetting("sandbox.max_total", "2")
        const next = yield* say("u3", "RUN: echo mine")
        assert.include(next.tool?.output ?? "", "mine")
        assert.strictEqual(yield* liveContainers("total"), 2)
        // u1's was the least recently used: it went, and u1 now waits for room.
        const u1 = yield* say("u1", "RUN: echo again")
        assert.isTrue(u1.tool?.isError)
        assert.include(u1.tool?.output ?? "", "already runs 2 sandboxes")
      }).pipe(Effect.provide(runtimeStack(home, { sandbox: true, runnerIdle: "10 minutes" })))
    })), { timeout: 120_000 })
})
