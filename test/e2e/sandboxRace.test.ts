/**
 * The adversarial race (issue "Close the sandbox escapes", critical 2), against a real container:
 * a tiny static binary inside the sandbox swaps a folder and a symlink to a host folder with
 * renameat2(RENAME_EXCHANGE) in a tight loop, while the model's `read` and `write` calls run 60 at
 * a time through that folder, for a fixed number of rounds. Not one byte outside the workspace may
 * be read or written: the host folder's secret never appears in a tool result, nothing is created
 * there, and its listing never leaks. (With the old resolve-then-open tools this read the secret
 * and created files in the host folder within a few rounds.)
 *
 * Run on two layouts: a workspace folder of its own, and a cluster's (issue 28): the workspaces root
 * (`ANNA_WORKSPACES`) on another filesystem mounted through FUSE (bindfs), as a network share is —
 * no RENAME_EXCHANGE there, so the swapper falls back to plain renames — and the workspace where
 * the gateway puts a user's (`{root}/{agent}/users/{user}`).
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Effect, Fiber } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { chmodSync, copyFileSync, lstatSync, mkdtempSync, readdirSync, readFileSync, watch, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_LIMITS, type SandboxSpec } from "../../src/domain/sandbox/types.ts"
import { workspaceOf } from "../../src/domain/sandbox/spec.ts"
import * as DockerSandbox from "../../src/layers/sandbox/DockerSandbox.ts"
import * as Read from "../../src/layers/tools/read.ts"
import * as Write from "../../src/layers/tools/write.ts"
import { dockerReady, TEST_IMAGE } from "../support/docker.ts"
import { context } from "../support/workspaceToolCases.ts"
import { removeTemp } from "../support/cleanup.ts"

const ROUNDS = 15
const PARALLEL = 60

const scratch = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-race-"))),
  (dir) => Effect.promise(() => removeTemp(dir))
)

/**
 * Whether `dir/name` becomes a symlink: checked now and at every change the kernel reports in `dir`
 * (inotify sees the container's renames in the bind-mounted workspace); false after `timeoutMs`.
 */
const whenSymlink = (dir: string, name: string, timeoutMs = 20_000) =>
  Effect.promise(() =>
    new Promise<boolean>((done) => {
      const isLink = () => lstatSync(join(dir, name), { throwIfNoEntry: false })?.isSymbolicLink() === true
      let settled = false
      const finish = (seen: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        watcher.close()
        done(seen)
      }
      const watcher = watch(dir, () => {
        if (isLink()) finish(true)
      })
      const deadline = setTimeout(() => finish(false), timeoutMs)
      if (isLink()) finish(true)
    })
  )

/** The swapper, compiled statically from test/support/race/swap.c (gcc is on every machine here). */
const buildSwapper = (dir: string): string => {
  const out = join(dir, "swap")
  execFileSync("gcc", ["-static", "-O2", "-o", out, join(import.meta.dirname, "..", "support", "race", "swap.c")], { stdio: "pipe" })
  return out
}

/**
 * A filesystem of its own, mounted with bindfs (FUSE) over a backing folder, unmounted at the end:
 * where a cluster's shared workspaces root would be. bindfs is part of the test setup (.ci/run).
 */
const sharedMount = Effect.gen(function*() {
  const backing = yield* scratch
  const mountpoint = yield* scratch
  const mounted = spawnSync("bindfs", ["--no-allow-other", backing, mountpoint], { encoding: "utf8" })
  if (mounted.error !== undefined || mounted.status !== 0) {
    throw new Error(`bindfs could not mount a FUSE filesystem (apt-get install bindfs): ${mounted.error?.message ?? mounted.stderr}`)
  }
  yield* Effect.addFinalizer(() => Effect.sync(() => spawnSync("umount", ["-l", mountpoint])))
  return mountpoint
})

const layouts = [
  { name: "a workspace folder of its own", workspace: scratch },
  {
    name: "a user's workspace under ANNA_WORKSPACES on a shared (FUSE) filesystem",
    workspace: Effect.map(sharedMount, (root) => workspaceOf(join(root, "anna-workspaces"), "race", "user", "mallory"))
  }
] as const

describe.skipIf(!dockerReady)("sandbox race: a folder swapped for a symlink while the file tools run", () => {
  it.live.each(layouts)(`$name: no byte outside the workspace is read or written (${ROUNDS} rounds of ${PARALLEL} reads, ${PARALLEL} writes and listings)`, (layout) =>
    Effect.scoped(Effect.gen(function*() {
      const tools = yield* scratch
      const swapper = buildSwapper(tools)
      const outside = yield* scratch
      const secret = `TOP-SECRET-${randomUUID()}`
      writeFileSync(join(outside, "secret.txt"), `${secret}\n`, { mode: 0o600 })
      writeFileSync(join(outside, "outside-marker"), "")
      const before = readdirSync(outside).sort()
      const workspace = yield* layout.workspace
      const spec: SandboxSpec = {
        agentId: "race",
        userId: "",
        workspace,
        image: TEST_IMAGE,
        network: "disabled",
        limits: DEFAULT_LIMITS
      }
      const session = yield* (yield* DockerSandbox.make(new Docker())).start(spec)
      const setup = yield* session.exec(
        `mkdir -p /workspace/dir && echo harmless > /workspace/dir/secret.txt && ln -s ${outside} /workspace/link && ls -la /workspace`
      )
      assert.strictEqual(setup.exitCode, 0, setup.stderr)
      copyFileSync(swapper, join(workspace, "swap"))
      chmodSync(join(workspace, "swap"), 0o755)
      const read = Read.make(session)
      const write = Write.make(session)

      let harmless = 0
      let refused = 0
      const leaks: Array<string> = []
      const attacker = yield* Effect.forkChild(session.exec("/workspace/swap /workspace/dir /workspace/link 4000000000", { timeoutMs: 300_000 }))
      // Wait until the swapping is seen from the host, so the calls really race it.
      const seen = yield* whenSymlink(workspace, "dir")
      assert.isTrue(seen, "the swapper did not start")
      for (let round = 0; round < ROUNDS; round++) {
        const calls = [
          ...Array.from({ length: PARALLEL }, () => read.execute({ path: "dir/secret.txt" }, context)),
          ...Array.from({ length: PARALLEL }, (_, i) => write.execute({ path: `dir/pwn-${round}-${i}.txt`, content: `PWNED ${round} ${i}` }, context)),
          ...Array.from({ length: 8 }, () => read.execute({ path: "dir" }, context))
        ]
        const results = yield* Effect.all(calls.map((c) => Effect.result(c)), { concurrency: "unbounded" })
        for (const r of results) {
          const text = r._tag === "Success" ? r.success : r.failure.reason
          if (text.includes(secret) || text.includes("outside-marker")) leaks.push(text)
          if (r._tag === "Success" && text.includes("harmless")) harmless++
          if (r._tag === "Failure") refused++
        }
      }
      yield* Fiber.interrupt(attacker)

      assert.deepStrictEqual(leaks, [], "a tool returned bytes from outside the workspace")
      assert.deepStrictEqual(readdirSync(outside).sort(), before, "something was created outside the workspace")
      assert.strictEqual(readFileSync(join(outside, "secret.txt"), "utf8"), `${secret}\n`)
      // The attack was live: some calls met the link where the folder had been and were refused.
      assert.isAbove(refused, 0, "the swapper never got in the way; the test proved nothing")
      assert.isAbove(harmless, 0, "no read ever succeeded")
    })), { timeout: 300_000 })
})
