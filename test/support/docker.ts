/**
 * The real Docker engine for sandbox tests. Without a reachable engine the sandbox tests skip with a
 * visible message — unless ANNA_REQUIRE_DOCKER=1 (CI), where that is a failure. The test image
 * (ANNA_TEST_IMAGE, default anna-sandbox:test) is built from a static busybox when missing
 * (ANNA_TEST_BUSYBOX, default /bin/busybox), through the same code as `anna sandbox build-image`.
 */
import Docker from "dockerode"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { mountTools } from "../../src/layers/sandbox/workspaceDisk.ts"
import { busyboxRootfs, imagePresent, importRootfs, nodeIntoRootfs, smokeTest } from "../../src/layers/sandbox/docker/client.ts"

export const TEST_IMAGE = process.env.ANNA_TEST_IMAGE ?? "anna-sandbox:test"
export const BUSYBOX = process.env.ANNA_TEST_BUSYBOX ?? "/bin/busybox"

const reachable = async (): Promise<boolean> => {
  try {
    await new Docker({ timeout: 3000 }).ping()
    return true
  } catch {
    return false
  }
}

const ensureTestImage = async (docker: Docker) => {
  if (await Effect.runPromise(imagePresent(docker, TEST_IMAGE))) return
  const dir = mkdtempSync(join(tmpdir(), "anna-test-rootfs-"))
  try {
    // With this Node inside (the stdio MCP servers run in the sandbox), as .ci/run builds it.
    await Effect.runPromise(
      busyboxRootfs(BUSYBOX, dir).pipe(
        Effect.andThen(nodeIntoRootfs(process.execPath, dir)),
        Effect.andThen(importRootfs(docker, dir, TEST_IMAGE)),
        Effect.andThen(smokeTest(docker, TEST_IMAGE))
      )
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export const dockerReady: boolean = await (async () => {
  const up = await reachable()
  if (!up) {
    if (process.env.ANNA_REQUIRE_DOCKER === "1") throw new Error("ANNA_REQUIRE_DOCKER=1 but the Docker engine is not reachable")
    console.warn("⚠ Docker is not reachable: the sandbox tests are SKIPPED (set ANNA_REQUIRE_DOCKER=1 to make this an error)")
    return false
  }
  await ensureTestImage(new Docker())
  return true
})()

/**
 * Whether this process can give workspaces their own filesystems (root, loop devices, e2fsprogs):
 * in CI (ANNA_REQUIRE_DOCKER=1) it must; elsewhere the tests of the hard disk bound skip, visibly.
 */
export const diskMountable: boolean = await (async () => {
  const tools = await mountTools()
  if (typeof tools !== "string") return true
  if (process.env.ANNA_REQUIRE_DOCKER === "1") throw new Error(`ANNA_REQUIRE_DOCKER=1 but workspaces cannot have their own filesystems here: ${tools}`)
  console.warn(`⚠ workspace filesystems cannot be mounted here (${tools}): the disk bound tests are SKIPPED`)
  return false
})()

/** Containers carrying anna's sandbox label. */
export const sandboxContainers = async (): Promise<Array<string>> =>
  (await new Docker().listContainers({ all: true, filters: { label: ["dev.anna.sandbox"] } })).map((c) => c.Id)

/**
 * Resolves with the containers carrying every one of `labels` (running or not) once `check` holds
 * for them. The listing is taken now and again at every event the engine reports for such a
 * container (create, start, die, destroy, …), so a test waits for what the engine did, without
 * polling. Resolves undefined after `timeoutMs` (a deadline for a failing test, not a wait).
 */
export const whenContainers = async (
  labels: ReadonlyArray<string>,
  check: (containers: ReadonlyArray<Docker.ContainerInfo>) => boolean,
  timeoutMs = 30_000
): Promise<ReadonlyArray<Docker.ContainerInfo> | undefined> => {
  const docker = new Docker()
  // Subscribed before the first listing, so no change falls between the two.
  const events = (await docker.getEvents({ filters: { type: ["container"], label: [...labels] } })) as NodeJS.ReadableStream & {
    destroy: () => void
  }
  const list = () => docker.listContainers({ all: true, filters: { label: [...labels] } })
  let deadline: ReturnType<typeof setTimeout> | undefined
  try {
    return await new Promise<ReadonlyArray<Docker.ContainerInfo> | undefined>((done, fail) => {
      deadline = setTimeout(() => done(undefined), timeoutMs)
      // One listing at a time; an event during a listing asks for one more after it.
      let looking = false
      let again = false
      const look = async () => {
        if (looking) {
          again = true
          return
        }
        looking = true
        try {
          do {
            again = false
            const containers = await list()
            if (check(containers)) return done(containers)
          } while (again)
        } catch (e) {
          fail(e)
        } finally {
          looking = false
        }
      }
      events.on("data", () => void look())
      events.on("error", fail)
      void look()
    })
  } finally {
    clearTimeout(deadline)
    events.destroy()
  }
}
